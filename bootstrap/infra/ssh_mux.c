/*
 * OpenSSH's multiplexing protocol, the passenger side (see ssh_mux.h). Every packet is
 * a uint32 length and then a body that starts with a uint32 type; integers are
 * big-endian, strings are a uint32 length and the bytes, booleans are uint32s.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap/infra/ssh_mux.h"
#include "lib/util.h"
#include "lib/banned.h"

#define MUX_VERSION 4
#define MUX_MSG_HELLO 0x00000001U
#define MUX_C_NEW_SESSION 0x10000002U
#define MUX_C_OPEN_FWD 0x10000006U
#define MUX_S_OK 0x80000001U
#define MUX_S_PERMISSION_DENIED 0x80000002U
#define MUX_S_FAILURE 0x80000003U
#define MUX_S_EXIT_MESSAGE 0x80000004U
#define MUX_S_SESSION_OPENED 0x80000006U
#define MUX_S_TTY_ALLOC_FAIL 0x80000008U
#define MUX_FWD_LOCAL 1U
#define PORT_STREAMLOCAL 0xfffffffeU /* ssh's -2: the address is a Unix socket's path */

/* The master answers a hello at once: a silent one is wedged. */
#define HELLO_TIMEOUT_MS 10000
/* A master gone after this long waiting for the node to open our session lost the node. */
#define LOST_WAIT_MS 1000
/* open_session(): what it returns then (never an errno). */
#define NODE_LOST 2
/* Our packets are small; the master's too (a reason string at most). */
#define MAX_PACKET (64 * 1024)
#define REQUEST_ID 1

static void put_u32(struct buf *b, uint32_t v)
{
	unsigned char x[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
	                      (unsigned char)(v >> 8), (unsigned char)v};

	buf_add(b, x, 4);
}

static void put_str(struct buf *b, const char *s)
{
	put_u32(b, (uint32_t)strlen(s));
	buf_adds(b, s);
}

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A received packet's body and a read position in it. */
struct pkt {
	unsigned char *p;
	size_t len, off;
};

static int pkt_u32(struct pkt *k, uint32_t *v)
{
	if (k->len - k->off < 4)
		return -EPROTO;
	*v = get_u32(k->p + k->off);
	k->off += 4;
	return 0;
}

/* A string field into why (bounded), for the master's reasons. */
static void pkt_reason(struct pkt *k, struct buf *why)
{
	uint32_t n;

	if (pkt_u32(k, &n) || n > k->len - k->off)
		return;
	buf_add(why, k->p + k->off, n > 512 ? 512 : n);
}

static int send_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Sends b as one packet (length first). */
static int send_packet(int fd, const struct buf *b)
{
	struct buf out = BUF_INIT(0);
	int r;

	put_u32(&out, (uint32_t)b->len);
	buf_add(&out, b->p, b->len);
	r = send_all(fd, out.p, out.len);
	buf_release(&out);
	return r;
}

/* Reads exactly n bytes; -EPIPE at EOF, -ETIMEDOUT after timeout_ms (< 0: none). */
static int recv_all(int fd, void *p, size_t n, int timeout_ms)
{
	char *c = p;

	while (n) {
		struct pollfd pf = {fd, POLLIN, 0};
		ssize_t got;
		int pr = poll(&pf, 1, timeout_ms);

		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			return -errno;
		if (pr == 0)
			return -ETIMEDOUT;
		got = recv(fd, c, n, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			return -EPIPE;
		c += got;
		n -= (size_t)got;
	}
	return 0;
}

static int recv_packet(int fd, struct pkt *k, int timeout_ms)
{
	unsigned char hdr[4];
	uint32_t n;
	int r;

	free(k->p);
	memset(k, 0, sizeof(*k));
	r = recv_all(fd, hdr, 4, timeout_ms);
	if (r)
		return r;
	n = get_u32(hdr);
	if (n < 4 || n > MAX_PACKET)
		return -EPROTO;
	k->p = xmalloc(n);
	k->len = n;
	return recv_all(fd, k->p, n, timeout_ms);
}

/* Passes one fd with one byte of data, as the master's mm_receive_fd() expects. */
static int send_fd(int sock, int fd)
{
	char byte = 0, ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {&byte, 1};
	struct msghdr mh = {0};
	struct cmsghdr *cm;
	ssize_t n;

	memset(ctl, 0, sizeof(ctl));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = ctl;
	mh.msg_controllen = sizeof(ctl);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == 1 ? 0 : n < 0 ? -errno : -EIO;
}

/* Hello both ways; 0 when the master speaks our version. */
static int hello(int fd, struct pkt *k, struct buf *why)
{
	struct buf b = BUF_INIT(0);
	uint32_t type, ver;
	int r;

	put_u32(&b, MUX_MSG_HELLO);
	put_u32(&b, MUX_VERSION);
	r = send_packet(fd, &b);
	buf_release(&b);
	if (!r)
		r = recv_packet(fd, k, HELLO_TIMEOUT_MS);
	if (r) {
		buf_addf(why, "no hello from the master: %s", strerror(-r));
		return r;
	}
	if (pkt_u32(k, &type) || pkt_u32(k, &ver) || type != MUX_MSG_HELLO || ver != MUX_VERSION) {
		buf_addf(why, "the master speaks another multiplexing protocol");
		return -EPROTO;
	}
	return 0;
}

/*
 * Asks for the session and passes our stdio; 0 and *sid once it is open, NODE_LOST, or a
 * negative errno (no session).
 */
static int open_session(int fd, const char *sock, const char *command, struct pkt *k, uint32_t *sid,
                        struct buf *why)
{
	struct buf b = BUF_INIT(0);
	uint32_t type, rid;
	int64_t t0;
	int r, i;

	put_u32(&b, MUX_C_NEW_SESSION);
	put_u32(&b, REQUEST_ID);
	put_str(&b, "");          /* reserved */
	put_u32(&b, 0);           /* want a tty */
	put_u32(&b, 0);           /* X11 forwarding */
	put_u32(&b, 0);           /* agent forwarding */
	put_u32(&b, 0);           /* subsystem */
	put_u32(&b, 0xffffffffU); /* no escape character */
	put_str(&b, "");          /* terminal type */
	put_str(&b, command);
	r = send_packet(fd, &b);
	buf_release(&b);
	for (i = 0; i < 3 && !r; i++)
		r = send_fd(fd, i);
	if (r) {
		buf_addf(why, "cannot send the session request: %s", strerror(-r));
		return r;
	}
	/* The answer comes once the node has opened the channel: no timeout of ours. */
	t0 = now_ms();
	r = recv_packet(fd, k, -1);
	if (r) {
		/*
		 * A master that goes away while it waits on the node for our channel has lost
		 * the node (ServerAlive): running ssh now would only wait out ConnectTimeout.
		 */
		if (now_ms() - t0 >= LOST_WAIT_MS) {
			buf_addf(why,
			         "no answer from the node: its shared ssh connection (master %s) "
			         "closed after waiting %lld ms for it to open a session",
			         sock, (long long)(now_ms() - t0));
			return NODE_LOST;
		}
		buf_addf(why, "no answer to the session request: %s", strerror(-r));
		return r;
	}
	if (pkt_u32(k, &type) || pkt_u32(k, &rid) || rid != REQUEST_ID) {
		buf_addf(why, "a garbled answer to the session request");
		return -EPROTO;
	}
	if (type == MUX_S_SESSION_OPENED && !pkt_u32(k, sid))
		return 0;
	buf_addf(why, "the master %s the session: ",
	         type == MUX_S_PERMISSION_DENIED ? "refused" : "failed to open");
	pkt_reason(k, why);
	return -EPROTO;
}

/*
 * A connection to the master at sock that has said hello: its fd, or -errno (closed)
 * with why said in *why. k holds the last packet read (the caller frees k->p).
 */
static int mux_open(const char *sock, struct pkt *k, struct buf *why)
{
	int fd, r;

	signal(SIGPIPE, SIG_IGN);
	fd = unix_connect(sock);
	if (fd < 0) {
		buf_addf(why, "no master at %s: %s", sock, strerror(-fd));
		return fd;
	}
	r = hello(fd, k, why);
	if (r) {
		close(fd);
		return r;
	}
	return fd;
}

int ssh_mux_run(const char *sock, const char *command, int *status, struct buf *why)
{
	struct pkt k = {0};
	uint32_t sid, type, esid, code = 255;
	int fd, r, seen = 0;

	*status = 255;
	fd = mux_open(sock, &k, why);
	r = fd < 0 ? fd : open_session(fd, sock, command, &k, &sid, why);
	if (r) {
		free(k.p);
		if (fd >= 0)
			close(fd);
		return r == NODE_LOST ? -EPIPE : SSH_MUX_NO_SESSION;
	}
	/*
	 * The session runs. The master sends the exit status, then closes the connection
	 * once the command's output is written: wait for both, as ssh does.
	 */
	while (!(r = recv_packet(fd, &k, -1))) {
		if (pkt_u32(&k, &type))
			break;
		if (type == MUX_S_EXIT_MESSAGE && !pkt_u32(&k, &esid) && esid == sid &&
		    !pkt_u32(&k, &code))
			seen = 1;
		/* MUX_S_TTY_ALLOC_FAIL (we ask for no tty) and anything newer: ignored. */
	}
	free(k.p);
	close(fd);
	if (!seen) {
		buf_addf(why, "the shared connection (master %s) closed before the command ended",
		         sock);
		return -EPIPE;
	}
	*status = (int)(code & 0xff);
	return 0;
}

int ssh_mux_forward(const char *sock, const char *local, const char *remote, struct buf *why)
{
	struct buf b = BUF_INIT(0);
	struct pkt k = {0};
	uint32_t type, rid;
	int fd = mux_open(sock, &k, why), r = fd < 0 ? fd : 0;

	if (!r) {
		put_u32(&b, MUX_C_OPEN_FWD);
		put_u32(&b, REQUEST_ID);
		put_u32(&b, MUX_FWD_LOCAL);
		put_str(&b, local);
		put_u32(&b, PORT_STREAMLOCAL);
		put_str(&b, remote);
		put_u32(&b, PORT_STREAMLOCAL);
		r = send_packet(fd, &b);
		if (!r)
			r = recv_packet(fd, &k, HELLO_TIMEOUT_MS);
		if (r)
			buf_addf(why, "no answer to the forward request: %s", strerror(-r));
	}
	if (!r && (pkt_u32(&k, &type) || pkt_u32(&k, &rid) || rid != REQUEST_ID)) {
		buf_addf(why, "a garbled answer to the forward request");
		r = -EPROTO;
	}
	if (!r && type != MUX_S_OK) {
		buf_addf(why, "the master %s the forward: ",
		         type == MUX_S_PERMISSION_DENIED ? "refused" : "failed to open");
		pkt_reason(&k, why);
		r = -EPROTO;
	}
	buf_release(&b);
	free(k.p);
	if (fd >= 0)
		close(fd);
	return r;
}
