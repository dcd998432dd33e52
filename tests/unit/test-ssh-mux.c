/*
 * The passenger side of OpenSSH's multiplexing protocol (bootstrap/infra/ssh_mux.c) against a
 * master written here from PROTOCOL.mux: the packets it sends, the three fds it passes,
 * and each way a session ends. The real master (ssh -M) is driven by t0610.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/harness.h"
#include "bootstrap/infra/ssh_mux.h"
#include "lib/buf.h"
#include "lib/util.h"
#include "lib/banned.h"

enum mode { EXIT_42, DROP, REFUSE, OLD_VERSION, GONE_AT_ONCE, GONE_AFTER_WAIT };

static char sock_path[108];

static void put_u32(struct buf *b, uint32_t v)
{
	unsigned char x[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
	                      (unsigned char)(v >> 8), (unsigned char)v};

	buf_add(b, x, 4);
}

static uint32_t u32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int read_n(int fd, void *p, size_t n)
{
	char *c = p;

	while (n) {
		ssize_t r = read(fd, c, n);

		if (r <= 0)
			return -1;
		c += r;
		n -= (size_t)r;
	}
	return 0;
}

static void send_pkt(int fd, struct buf *body)
{
	struct buf b = BUF_INIT(0);

	put_u32(&b, (uint32_t)body->len);
	buf_add(&b, body->p, body->len);
	if (write_all(fd, b.p, b.len))
		_exit(90);
	buf_release(&b);
	buf_reset(body);
}

static unsigned char *recv_pkt(int fd, uint32_t *len)
{
	unsigned char h[4], *p;

	if (read_n(fd, h, 4))
		_exit(91);
	*len = u32(h);
	p = xmalloc(*len);
	if (read_n(fd, p, *len))
		_exit(92);
	return p;
}

static int recv_fd(int sock)
{
	char byte, ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {&byte, 1};
	struct msghdr mh = {0};
	struct cmsghdr *cm;
	int fd;

	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = ctl;
	mh.msg_controllen = sizeof(ctl);
	if (recvmsg(sock, &mh, 0) != 1 || !(cm = CMSG_FIRSTHDR(&mh)) || cm->cmsg_type != SCM_RIGHTS)
		_exit(93);
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/*
 * The master: one connection. Checks the session request field by field (exit 94 on a
 * mismatch), writes "out: COMMAND" and "err" into the passed stdout and stderr, echoes
 * what stdin holds, then ends the session as mode says.
 */
static _Noreturn void master(int lfd, enum mode mode, const char *want_cmd)
{
	struct buf b = BUF_INIT(0);
	unsigned char *p, line[64];
	uint32_t len, off, n;
	int c, fds[3], i;
	ssize_t got;

	c = accept(lfd, NULL, NULL);
	if (c < 0)
		_exit(95);
	put_u32(&b, 0x00000001);
	put_u32(&b, mode == OLD_VERSION ? 3 : 4);
	send_pkt(c, &b);
	p = recv_pkt(c, &len);
	if (len != 8 || u32(p) != 0x00000001 || u32(p + 4) != 4)
		_exit(94);
	free(p);
	if (mode == OLD_VERSION) {
		/* A real master would now close: the client must not go on. */
		got = read(c, line, sizeof(line));
		_exit(got == 0 ? 0 : 96);
	}
	p = recv_pkt(c, &len);
	/* type, request id, reserved "", tty, x11, agent, subsystem, escape, term "", cmd */
	if (len < 44 || u32(p) != 0x10000002 || u32(p + 8) != 0 || u32(p + 12) != 0 ||
	    u32(p + 16) != 0 || u32(p + 20) != 0 || u32(p + 24) != 0 ||
	    u32(p + 28) != 0xffffffffU || u32(p + 32) != 0)
		_exit(94);
	off = 36;
	n = u32(p + off);
	if (off + 4 + n != len || n != strlen(want_cmd) || memcmp(p + off + 4, want_cmd, n))
		_exit(94);
	for (i = 0; i < 3; i++)
		fds[i] = recv_fd(c);
	if (mode == GONE_AT_ONCE || mode == GONE_AFTER_WAIT) {
		/* No answer: as a master that dies while the node does not open the channel. */
		if (mode == GONE_AFTER_WAIT)
			usleep(1200 * 1000);
		_exit(0);
	}
	put_u32(&b, mode == REFUSE ? 0x80000003 : 0x80000006);
	put_u32(&b, u32(p + 4));
	if (mode == REFUSE) {
		put_u32(&b, 4);
		buf_add(&b, "nope", 4);
		send_pkt(c, &b);
		_exit(0);
	}
	put_u32(&b, 7);
	send_pkt(c, &b);
	free(p);
	got = read(fds[0], line, sizeof(line) - 1);
	if (got < 0)
		got = 0;
	dprintf(fds[1], "out: %s; in: %.*s\n", want_cmd, (int)got, (char *)line);
	dprintf(fds[2], "err\n");
	if (mode == EXIT_42) {
		put_u32(&b, 0x80000004);
		put_u32(&b, 7);
		put_u32(&b, 42);
		send_pkt(c, &b);
	}
	_exit(0);
}

struct result {
	int r, status, master_exit;
	struct buf out, err, why;
};

/* Runs ssh_mux_run() with our 0/1/2 on pipes, against a master in mode (or none). */
static void run(enum mode mode, int with_master, struct result *res)
{
	const char *cmd = "exec sh -c 'echo hi'";
	int in[2], out[2], err[2], save[3], lfd = -1, i, st = 0;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char blk[256];
	pid_t pid = -1;
	ssize_t n;

	memset(res, 0, sizeof(*res));
	buf_init(&res->out, 0);
	buf_init(&res->err, 0);
	buf_init(&res->why, 0);
	unlink(sock_path);
	if (with_master) {
		memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
		lfd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1))
			return;
		pid = fork();
		if (pid == 0)
			master(lfd, mode, cmd);
		close(lfd);
	}
	fflush(stdout);
	if (pipe(in) || pipe(out) || pipe(err))
		return;
	if (write_all(in[1], "ping", 4))
		return;
	close(in[1]);
	for (i = 0; i < 3; i++)
		save[i] = dup(i);
	dup2(in[0], 0);
	dup2(out[1], 1);
	dup2(err[1], 2);
	close(in[0]);
	close(out[1]);
	close(err[1]);
	res->r = ssh_mux_run(sock_path, cmd, &res->status, &res->why);
	for (i = 0; i < 3; i++) {
		dup2(save[i], i);
		close(save[i]);
	}
	while ((n = read(out[0], blk, sizeof(blk))) > 0)
		buf_add(&res->out, blk, (size_t)n);
	while ((n = read(err[0], blk, sizeof(blk))) > 0)
		buf_add(&res->err, blk, (size_t)n);
	close(out[0]);
	close(err[0]);
	if (pid > 0 && waitpid(pid, &st, 0) == pid)
		res->master_exit = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void release(struct result *res)
{
	buf_release(&res->out);
	buf_release(&res->err);
	buf_release(&res->why);
}

static void test_session(void)
{
	struct result res;

	run(EXIT_42, 1, &res);
	is_int(res.master_exit, 0, "the master got a well-formed hello, request and three fds");
	is_int(res.r, 0, "a session that ran");
	is_int(res.status, 42, "its exit status is ours");
	is_str(res.out.p, "out: exec sh -c 'echo hi'; in: ping\n",
	       "the command as sent; our stdin and stdout were the session's");
	is_str(res.err.p, "err\n", "and our stderr");
	release(&res);

	run(DROP, 1, &res);
	is_int(res.r, -EPIPE, "a master that closes without an exit status: -EPIPE");
	ok(strstr(res.why.p, "closed before the command ended") != NULL, "saying so: %s",
	   res.why.p);
	ok(strstr(res.out.p, "out: ") != NULL, "what it wrote before is there");
	release(&res);
}

static void test_no_session(void)
{
	struct result res;

	run(REFUSE, 1, &res);
	is_int(res.r, SSH_MUX_NO_SESSION, "a refused session: no session (ssh runs instead)");
	ok(strstr(res.why.p, "nope") != NULL, "with the master's reason: %s", res.why.p);
	release(&res);

	run(OLD_VERSION, 1, &res);
	is_int(res.r, SSH_MUX_NO_SESSION, "another protocol version: no session");
	is_int(res.master_exit, 0, "and no request was sent after the hello");
	release(&res);

	run(GONE_AT_ONCE, 1, &res);
	is_int(res.r, SSH_MUX_NO_SESSION, "a master gone at once, without an answer: no session");
	release(&res);

	run(GONE_AFTER_WAIT, 1, &res);
	is_int(res.r, -EPIPE,
	       "a master gone after waiting on the node: the node is lost (no ssh to wait out)");
	ok(strstr(res.why.p, "no answer from the node") != NULL, "saying so: %s", res.why.p);
	release(&res);

	run(EXIT_42, 0, &res);
	is_int(res.r, SSH_MUX_NO_SESSION, "no master listening: no session");
	ok(strstr(res.why.p, "no master at") != NULL, "saying so: %s", res.why.p);
	release(&res);
}

/* A string field at p + *off: 0 when it is want, and *off past it. */
static int str_at(const unsigned char *p, uint32_t len, uint32_t *off, const char *want)
{
	uint32_t n;

	if (*off + 4 > len)
		return -1;
	n = u32(p + *off);
	if (*off + 4 + n > len || n != strlen(want) || memcmp(p + *off + 4, want, n))
		return -1;
	*off += 4 + n;
	return 0;
}

/*
 * A master for one forward request: checks it field by field (exit 94 on a mismatch) and
 * answers MUX_S_OK, or MUX_S_FAILURE with a reason when refuse is set.
 */
static _Noreturn void fwd_master(int lfd, int refuse, const char *local, const char *remote)
{
	struct buf b = BUF_INIT(0);
	unsigned char *p;
	uint32_t len, off = 12;
	int c = accept(lfd, NULL, NULL);

	if (c < 0)
		_exit(95);
	put_u32(&b, 0x00000001);
	put_u32(&b, 4);
	send_pkt(c, &b);
	free(recv_pkt(c, &len));
	p = recv_pkt(c, &len);
	/* type, request id, local forward, listen path, PORT_STREAMLOCAL, connect path, it */
	if (len < 12 || u32(p) != 0x10000006 || u32(p + 8) != 1 || str_at(p, len, &off, local) ||
	    off + 4 > len || u32(p + off) != 0xfffffffeU)
		_exit(94);
	off += 4;
	if (str_at(p, len, &off, remote) || off + 4 != len || u32(p + off) != 0xfffffffeU)
		_exit(94);
	put_u32(&b, refuse ? 0x80000003 : 0x80000001);
	put_u32(&b, u32(p + 4));
	if (refuse) {
		put_u32(&b, 6);
		buf_add(&b, "denied", 6);
	}
	send_pkt(c, &b);
	_exit(0);
}

static void test_forward(void)
{
	const char *local = "/tmp/here.sock", *remote = "/home/u/.skiff/supervisor.sock";
	int refuse;

	for (refuse = 0; refuse < 2; refuse++) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		struct buf why = BUF_INIT(0);
		int lfd, r, st = 0;
		pid_t pid;

		unlink(sock_path);
		memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
		lfd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1))
			return;
		fflush(stdout);
		pid = fork();
		if (pid == 0)
			fwd_master(lfd, refuse, local, remote);
		close(lfd);
		r = ssh_mux_forward(sock_path, local, remote, &why);
		waitpid(pid, &st, 0);
		is_int(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0,
		       "the master got a local Unix-socket forward of both paths, as sent");
		if (refuse) {
			is_int(r, -EPROTO, "a refused forward: -EPROTO");
			ok(strstr(why.p, "denied") != NULL, "with the master's reason: %s", why.p);
		} else {
			is_int(r, 0, "a forward the master took");
		}
		buf_release(&why);
	}
	{
		struct buf why = BUF_INIT(0);
		int r;

		unlink(sock_path);
		r = ssh_mux_forward(sock_path, local, remote, &why);
		ok(r < 0 && strstr(why.p, "no master at"), "no master: an error, saying so: %s",
		   why.p);
		buf_release(&why);
	}
}

int main(void)
{
	char dir[] = "/tmp/skiff-unit-mux.XXXXXX";

	if (!mkdtemp(dir))
		return 1;
	snprintf(sock_path, sizeof(sock_path), "%s/m", dir);
	plan_run(test_session);
	plan_run(test_no_session);
	plan_run(test_forward);
	unlink(sock_path);
	rmdir(dir);
	return done_testing();
}
