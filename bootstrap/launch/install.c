/*
 * Self-copy bootstrap: this executable onto a node, then its supervisor up. The protocol
 * is in bootstrap/launch/install.h and docs/bootstrap.md; what is sent (the image, its
 * seed file, its packed cache) is bootstrap/launch/selfimage.c's. The node needs a POSIX sh, cat,
 * mkdir, chmod, mv, ln, rm and wc (sha256sum when it has one): busybox has them all.
 *
 * The scripts hold only constants and the sha256 (hex) and size (digits) of the binary,
 * so nothing in them comes from outside; the binary itself goes through stdin.
 */
#include "bootstrap/launch/install.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap/launch/selfimage.h"
#include "bootstrap/launch/stub/pack.h"

#include "lib/buf.h"
#include "lib/exit.h"
#include "lib/log.h"
#include "lib/proto.h"
#include "lib/sha256.h"
#include "lib/util.h"
#include "lib/banned.h"

/*
 * A few MB over a slow link, then `node up` (which waits up to 15 s for the supervisor).
 * The install session's own limit, kept by session_talk(): its process runs without one,
 * as it may go on as the node's next call (a followed submit lasts as long as its job).
 */
#define COPY_TIMEOUT_MS 600000
/*
 * How long a spare that is not needed may take to end (it ends at once at EOF), and how
 * long a session's process may live on once it has closed its output.
 */
#define SPARE_CLOSE_MS 5000
/* A bigger pipe for the copy a script's session may send: fewer wake-ups between us and ssh. */
#define COPY_PIPE_SIZE (1 << 20)

#define NEED_COPY "SKIFF-NEED-COPY"
#define COPY_FAILED "SKIFF-COPY-FAILED: "

/* --- a node that is a directory here ----------------------------------------------------- */

/*
 * 1 when the node's binary is now a hard link of the seed; 0 when the node is not a
 * directory here, has it already, or cannot take a link (then the session copies it).
 */
static int seed_node(struct runner *r, const char *data, size_t len, const char *sha)
{
	const char *home = r->ops->home_here ? r->ops->home_here(r) : NULL, *src;
	char *bin, *exe, *tmp, *lnk, *cur, *name;
	struct stat st;
	int done = 0;

	if (!home)
		return 0;
	bin = xasprintf("%s/.skiff/bin", home);
	exe = xasprintf("%s/skiff-%s", bin, sha);
	tmp = xasprintf("%s/.skiff-%s.%ld.link", bin, sha, (long)getpid());
	lnk = xasprintf("%s/.skiff.%ld.link", bin, (long)getpid());
	cur = xasprintf("%s/skiff", bin);
	name = xasprintf("skiff-%s", sha);
	if (!lstat(exe, &st) && S_ISREG(st.st_mode) && (size_t)st.st_size == len)
		goto out; /* there already: the session's probe finds it */
	src = boot_self_seed(data, len, sha);
	if (!src || mkdir_p(bin, 0700))
		goto out;
	unlink(tmp);
	if (link(src, tmp) < 0) {
		debug("node %s: cannot link '%s' (%s): copying it", r->name, src, strerror(errno));
		goto out;
	}
	if (rename(tmp, exe) < 0) {
		unlink(tmp);
		goto out;
	}
	/* As the copy's `ln -sfn`: bin/skiff names the newest. */
	unlink(lnk);
	if (!symlink(name, lnk) && rename(lnk, cur) < 0)
		unlink(lnk);
	done = 1;
out:
	free(bin);
	free(exe);
	free(tmp);
	free(lnk);
	free(cur);
	free(name);
	return done;
}

/* --- the scripts ----------------------------------------------------------------------- */

/*
 * First round trip: the content-addressed binary is either there (only a verified copy
 * ever gets that name) and starts the supervisor, or we are told to send it.
 */
static const char probe_fmt[] = "exe=\"$HOME/.skiff/bin/skiff-%s\"\n"
                                "if [ -x \"$exe\" ]; then\n"
                                "\texec \"$exe\" node up --frame\n"
                                "fi\n"
                                "echo " NEED_COPY "\n";

/*
 * Second round trip. The temp file is in the same dir (rename is atomic there) and named
 * per shell pid (two launchers may install at once; both renames give the same bytes).
 * Its size is checked before anything runs it, then its sha256: by sha256sum, else by
 * the binary's own `__verify-self`, which hashes its file before doing anything else.
 * Every failure removes the temp file and says why on stdout.
 */
static const char copy_fmt[] =
        "umask 077\n"
        "d=\"$HOME/.skiff/bin\"\n"
        "exe=\"$d/skiff-%1$s\"\n"
        "tmp=\"$d/.skiff-%1$s.$$.tmp\"\n"
        "fail() {\n"
        "\trm -f \"$tmp\"\n"
        "\techo \"" COPY_FAILED "$*\"\n"
        "\texit 1\n"
        "}\n"
        "trap 'rm -f \"$tmp\"; exit 1' HUP INT TERM\n"
        "mkdir -p \"$d\" || fail \"cannot create $d\"\n"
        "cat >\"$tmp\" || fail \"cannot write $tmp\"\n"
        "n=$(wc -c <\"$tmp\") || fail \"cannot measure $tmp (no wc?)\"\n"
        "n=$((n + 0))\n"
        "[ \"$n\" -eq %2$zu ] || fail \"received $n of %2$zu bytes\"\n"
        "chmod 755 \"$tmp\" || fail \"cannot chmod $tmp\"\n"
        "if %3$s; then\n"
        "\th=$(sha256sum <\"$tmp\") || fail \"sha256sum failed\"\n"
        "\th=${h%%%% *}\n"
        "\t[ \"$h\" = %1$s ] || fail \"sha256 mismatch: received $h\"\n"
        "else\n"
        "\t\"$tmp\" __verify-self %1$s || fail \"the received binary failed its self-check\"\n"
        "fi\n"
        "mv -f \"$tmp\" \"$exe\" || fail \"cannot rename $tmp to $exe\"\n"
        "ln -sfn \"skiff-%1$s\" \"$d/skiff\" || :\n"
        "echo SKIFF-COPIED\n"
        "exec \"$exe\" node up --frame\n";

/*
 * The session (BOOT_SCRIPT_SESSION): the probe; then, when the binary is missing, the
 * splitter written with printf from this very text, SKIFF-NEED-COPY, and the splitter run
 * on stdin: it takes the unzstd stub (its size and sha256 given), which takes the packed
 * image (a length header, then exactly that many bytes), decompresses it into the temp
 * file and checks our size and sha256 (bootstrap/launch/stub/). The stubs' own message,
 * if any, goes into the failure line. Either way `node up --then-call` ends it: after its
 * lines and BOOT_UP_MARK, the rest of stdin is one `node call` request, the launcher's
 * next (bootstrap/launch/install.h, struct boot_spare). A node that had the binary skips
 * first what the launcher sent ahead (%2$zu bytes: BOOT_SEND_AHEAD).
 */
static const char session_head_fmt[] =
        "exe=\"$HOME/.skiff/bin/skiff-%1$s\"\n"
        "if [ -x \"$exe\" ]; then\n"
        "\texec \"$exe\" node up%3$s --then-call %2$zu\n"
        "fi\n"
        "umask 077\n"
        "d=\"$HOME/.skiff/bin\"\n"
        "tmp=\"$d/.skiff-%1$s.$$.tmp\"\n"
        "split=\"$d/.skiff-split.$$\"\n"
        "unz=\"$d/.skiff-unzstd.$$\"\n"
        "fail() {\n"
        "\trm -f \"$tmp\" \"$split\" \"$unz\"\n"
        "\techo \"" COPY_FAILED "$*\"\n"
        "\texit 1\n"
        "}\n"
        "trap 'rm -f \"$tmp\" \"$split\" \"$unz\"; exit 1' HUP INT TERM\n"
        "mkdir -p \"$d\" || fail \"cannot create $d\"\n"
        ": >\"$split\" || fail \"cannot write $split\"\n";

static const char session_tail_fmt[] =
        "chmod 700 \"$split\" || fail \"cannot chmod $split\"\n"
        "echo " NEED_COPY "\n"
        "msg=$(\"$split\" %2$zu %3$s \"$unz\" \"$tmp\" %4$zu %1$s 2>&1) ||\n"
        "\tfail \"the binary did not arrive whole: $msg\"\n"
        "rm -f \"$split\" \"$unz\"\n"
        "chmod 755 \"$tmp\" || fail \"cannot chmod $tmp\"\n"
        "mv -f \"$tmp\" \"$exe\" || fail \"cannot rename $tmp to $exe\"\n"
        "ln -sfn \"skiff-%1$s\" \"$d/skiff\" || :\n"
        "echo SKIFF-COPIED\n"
        "exec \"$exe\" node up%5$s --then-call 0\n";

/* Bytes of the splitter per printf line. */
#define PRINTF_CHUNK 1024

/* p[0..n) as a printf format that writes exactly those bytes: octal escapes where needed. */
static int printf_bytes(struct buf *out, const unsigned char *p, size_t n)
{
	size_t i;
	char *o;
	/* Each byte is at most 4 of the script's: room once, then written in place. */
	int r = buf_grow(out, 4 * n);

	if (r)
		return r;
	o = out->p + out->len;
	for (i = 0; i < n; i++) {
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\' && p[i] != '%' && p[i] != '\'') {
			*o++ = (char)p[i];
			continue;
		}
		/* Always 3 digits: a digit may follow. */
		*o++ = '\\';
		*o++ = (char)('0' + (p[i] >> 6));
		*o++ = (char)('0' + ((p[i] >> 3) & 7));
		*o++ = (char)('0' + (p[i] & 7));
	}
	out->len = (size_t)(o - out->p);
	out->p[out->len] = '\0';
	return 0;
}

static int session_script(struct buf *out, const char *sha, size_t size, size_t ahead,
                          const char *up_args)
{
	struct boot_stub split, unz;
	char usha[SHA256_HEX_LEN + 1];
	size_t off, take;
	int r;

	boot_stubs(&split, &unz);
	sha256_hex(unz.data, unz.len, usha);
	r = buf_addf(out, session_head_fmt, sha, ahead, up_args);
	for (off = 0; !r && off < split.len; off += take) {
		take = split.len - off < PRINTF_CHUNK ? split.len - off : PRINTF_CHUNK;
		r = buf_adds(out, "printf '");
		if (!r)
			r = printf_bytes(out, split.data + off, take);
		if (!r)
			r = buf_adds(out, "' >>\"$split\" || fail \"cannot write $split\"\n");
	}
	return r ? r : buf_addf(out, session_tail_fmt, sha, unz.len, usha, size, up_args);
}

int boot_install_script(struct buf *out, int kind, const char *sha, size_t size, unsigned flags,
                        const char *up_args)
{
	if (!sha256_hex_valid(sha))
		return -EINVAL;
	if (kind == BOOT_SCRIPT_PROBE)
		return buf_addf(out, probe_fmt, sha);
	if (kind == BOOT_SCRIPT_SESSION)
		return session_script(out, sha, size,
		                      flags & BOOT_SEND_AHEAD ? BOOT_AHEAD_BYTES : 0,
		                      up_args ? up_args : "");
	return buf_addf(out, copy_fmt, sha, size,
	                flags & BOOT_NO_SHA256SUM ? "false"
	                                          : "command -v sha256sum >/dev/null 2>&1");
}

/* --- round trips ----------------------------------------------------------------------- */

/* The first line of s that starts with prefix (a pointer into s), or NULL. */
static const char *find_line(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);

	while (s && *s) {
		if (!strncmp(s, prefix, n))
			return s;
		s = strchr(s, '\n');
		if (s)
			s++;
	}
	return NULL;
}

/*
 * node up's frame in out (cmd/node.c say_up(): BOOT_UP_MARK on a line, then one frame;
 * the install script's own lines, before the mark, are text, never binary): 1 when it is
 * whole (*body at its fields, *len their size), -EPROTO when its header is malformed, 0
 * while the mark or the frame is still to come. *end: where what follows it begins (the
 * frame's header when malformed).
 */
static int up_frame(const struct buf *out, const char **body, size_t *len, const char **end)
{
	const char *l = out->len ? find_line(out->p, BOOT_UP_MARK "\n") : NULL;
	size_t have;

	if (!l)
		return 0;
	l += strlen(BOOT_UP_MARK "\n");
	have = out->len - (size_t)(l - out->p);
	if (have < PROTO_HDR)
		return 0;
	if (proto_parse_header((const unsigned char *)l, len)) {
		*end = l;
		return -EPROTO;
	}
	if (have - PROTO_HDR < *len)
		return 0;
	*body = l + PROTO_HDR;
	*end = *body + *len;
	return 1;
}

/* What `node up` answered, in its frame (up_frame()). */
static int parse_up(struct runner *r, struct install_result *res, struct buf *out, struct buf *err,
                    int status)
{
	const char *body = NULL, *end, *why = "cut short or malformed", *a;
	struct msg m;
	size_t len = 0;
	int64_t v;
	int rc = 0, got = up_frame(out, &body, &len, &end);

	if (status == EXIT_HELD) {
		/* Not a failure of the node: the launcher may try another host. */
		const char *held = buf_last_line(err->len ? err : out);

		if (starts_with(held, "skiff: error: "))
			held += strlen("skiff: error: ");
		warning("node %s (%s): %s", r->name, r->ip, held);
		return -EADDRINUSE;
	}
	if (status || (!got && !find_line(out->p, BOOT_UP_MARK "\n"))) {
		return error("node %s (%s): 'skiff node up' failed (exit %d): %s", r->name, r->ip,
		             status, buf_last_line(err->len ? err : out));
	}
	msg_init(&m);
	if (got != 1 || msg_decode(&m, body, len, &why) || !msg_get(&m, "ok") ||
	    msg_get_int(&m, "pid", &v) || v <= 0) {
		rc = error("node %s (%s): 'skiff node up' gave no answer that skiff reads (%s)",
		           r->name, r->ip, msg_get(&m, "ok") ? "no pid" : why);
		goto out;
	}
	res->sup_pid = (long)v;
	res->sup_started = msg_get(&m, "started") && !strcmp(msg_get(&m, "started"), "1");
	res->active = msg_get_int(&m, "active", &v) ? -1 : (long)v;
	res->address[0] = '\0';
	a = msg_get(&m, "address");
	if (a && strlen(a) < sizeof(res->address) &&
	    strspn(a, "0123456789abcdefABCDEF.:") == strlen(a))
		xsnprintf(res->address, sizeof(res->address), "%s", a);
	/* A share runs from its own home: that binary, a word with nothing to quote. */
	a = msg_get(&m, "exe");
	if (a) {
		char *home = cluster_home_of(a);

		if (!home || strlen(a) + 3 > sizeof(res->remote_exe) || strpbrk(a, "\"$`\\\n"))
			rc = error("node %s (%s): 'skiff node up' named a binary skiff does not "
			           "call: '%.200s'",
			           r->name, r->ip, a);
		else
			xsnprintf(res->remote_exe, sizeof(res->remote_exe), "\"%s\"", a);
		free(home);
	}
out:
	msg_release(&m);
	return rc;
}

void boot_exe_word(const char *sha, char *out, size_t size)
{
	xsnprintf(out, size, "\"$HOME/.skiff/bin/skiff-%s\"", sha);
}

char *boot_exe_path_here(const char *word, const char *home)
{
	static const char pre[] = "\"$HOME/";
	size_t n = strlen(word);

	if (n < sizeof(pre) || !starts_with(word, pre) || word[n - 1] != '"')
		return NULL;
	return xasprintf("%s/%.*s", home, (int)(n - sizeof(pre)), word + sizeof(pre) - 1);
}

static void set_remote_exe(struct install_result *res, const char *sha)
{
	boot_exe_word(sha, res->remote_exe, sizeof(res->remote_exe));
}

int boot_install_send(struct runner *r, const char *data, size_t len, const char *sha, size_t size,
                      unsigned flags, struct install_result *res)
{
	struct buf script = BUF_INIT(0), out = BUF_INIT(1 << 20), err = BUF_INIT(1 << 20);
	const char *why;
	int64_t t0 = now_ms();
	int rc, status = 0;

	res->copied = 0;
	res->sent = 0;
	set_remote_exe(res, sha ? sha : "");
	rc = boot_install_script(&script, BOOT_SCRIPT_COPY, sha, size, flags, NULL);
	if (rc) {
		rc = error("node %s: bad binary hash '%s'", r->name, sha ? sha : "");
		goto out;
	}
	rc = runner_capture(r, script.p, data, len, &out, &err, COPY_TIMEOUT_MS, &status);
	if (rc)
		goto out;
	res->sent = len;
	why = find_line(out.p, COPY_FAILED);
	if (why) {
		rc = error("node %s (%s): cannot install skiff: %.*s", r->name, r->ip,
		           (int)strcspn(why + strlen(COPY_FAILED), "\n"),
		           why + strlen(COPY_FAILED));
		goto out;
	}
	if (!find_line(out.p, "SKIFF-COPIED")) {
		rc = error("node %s (%s): cannot install skiff (exit %d): %s", r->name, r->ip,
		           status, buf_last_line(err.len ? &err : &out));
		goto out;
	}
	res->copied = 1;
	debug("node %s: sent %zu bytes in %lld ms", r->name, len, (long long)(now_ms() - t0));
	rc = parse_up(r, res, &out, &err, status);
out:
	buf_release(&script);
	buf_release(&out);
	buf_release(&err);
	return rc;
}

/* --- the session ------------------------------------------------------------------------ */

/* The copy as the session sends it: the unzstd stub, the packed image's header, the image. */
struct stream {
	const unsigned char *p[3];
	size_t len[3];
	char head[PACK_HEAD_LEN + 1];
	size_t k, done; /* the part being sent, and how much of it is */
	size_t sent, total;
	int loaded;
};

static int stream_load(struct stream *st)
{
	struct boot_stub split, unz;
	const char *img;
	size_t img_len;
	int rc = boot_self_packed(&img, &img_len);

	if (rc)
		return rc;
	boot_stubs(&split, &unz);
	xsnprintf(st->head, sizeof(st->head), "%0*zu\n", PACK_HEAD_LEN - 1, img_len);
	st->p[0] = unz.data, st->len[0] = unz.len;
	st->p[1] = (const unsigned char *)st->head, st->len[1] = PACK_HEAD_LEN;
	st->p[2] = (const unsigned char *)img, st->len[2] = img_len;
	st->total = unz.len + PACK_HEAD_LEN + img_len;
	st->loaded = 1;
	return 0;
}

/*
 * Writes what `to` takes now of the stream, up to byte `upto` of it; past its end (a node
 * that skips more than there is), zero bytes. 0, or -errno when the node stopped reading.
 */
static int stream_write(int to, struct stream *st, size_t upto)
{
	static const unsigned char zeros[4096];

	while (st->sent < upto) {
		const unsigned char *p = st->k < 3 ? st->p[st->k] + st->done : zeros;
		size_t want = st->k < 3 ? st->len[st->k] - st->done : sizeof(zeros);
		ssize_t n;

		if (want > upto - st->sent)
			want = upto - st->sent;
		n = write(to, p, want);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		st->sent += (size_t)n;
		if (st->k < 3 && (st->done += (size_t)n) == st->len[st->k])
			st->k++, st->done = 0;
	}
	return 0;
}

/* poll()'s timeout for an absolute deadline (now_ms() based): 0 once it has passed. */
static int poll_left(int64_t deadline)
{
	int64_t left = deadline - now_ms();

	return left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

/* Waits until `to` takes the stream up to byte upto: 0, or -errno (-ETIMEDOUT at deadline). */
static int stream_finish(int to, struct stream *st, size_t upto, int64_t deadline)
{
	while (st->sent < upto) {
		struct pollfd p = {to, POLLOUT, 0};
		int rc, n = poll(&p, 1, poll_left(deadline));

		if (n < 0 && errno != EINTR)
			return -errno;
		if (!n)
			return -ETIMEDOUT;
		rc = stream_write(to, st, upto);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * The session's talk, from our side. We read what the node says and send it the copy: the
 * first `ahead` bytes at once (a node not known to have our binary: the copy starts while
 * the script's first answer is on its way), all of it once the node asks; we read on
 * meanwhile, so that neither side can wait on a full pipe. Returns 1 at BOOT_UP_MARK, `to`
 * still open and the node having been sent what it reads (the copy, or the `ahead` bytes
 * it skips); 0 at EOF, or when the node stopped reading (it says why), `to` closed; or a
 * negative error (printed; -ETIMEDOUT at deadline: the caller stops the session). out gets
 * all the node said.
 */
static int session_talk(int to, int from, size_t ahead, int64_t deadline, struct buf *out,
                        size_t *sent)
{
	struct stream st = {0};
	char blk[16384];
	const char *body, *end;
	size_t blen;
	int asked = 0, open_to = 1, rc = 0, up = 0;

	set_nonblock(to);
	while (!up) {
		struct pollfd p[2] = {{from, POLLIN, 0}, {to, POLLOUT, 0}};
		size_t upto = 0;
		int np = 1;
		ssize_t n;

		if (open_to && (asked || ahead)) {
			/* Loaded while the channel opens (the packed image is read and checked). */
			if (!st.loaded && (rc = stream_load(&st)))
				break;
			upto = asked ? st.total : ahead < st.total ? ahead : st.total;
			np = st.sent < upto ? 2 : 1;
		}
		n = poll(p, (nfds_t)np, poll_left(deadline));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = error_errno("poll");
			break;
		}
		if (!n) {
			rc = -ETIMEDOUT;
			break;
		}
		if (p[0].revents) {
			n = read(from, blk, sizeof(blk));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			buf_add(out, blk, (size_t)n);
			if (!asked && find_line(out->p, NEED_COPY))
				asked = 1;
			up = up_frame(out, &body, &blen, &end) != 0;
		}
		if (np == 2 && (p[1].revents & (POLLOUT | POLLERR | POLLHUP)) &&
		    stream_write(to, &st, upto)) {
			/* The node stopped reading: its answer says why. */
			close(to);
			open_to = 0;
		}
	}
	/* A node that had the binary skips all of what was to go ahead. */
	if (up && open_to && !asked && ahead && (rc = stream_finish(to, &st, ahead, deadline))) {
		if (rc != -ETIMEDOUT)
			rc = 0; /* it stopped reading: its call finds it gone */
		close(to);
		open_to = 0;
	}
	if (open_to && (!up || rc)) {
		close(to);
		open_to = 0;
	}
	*sent = st.sent;
	if (rc)
		return rc;
	if (up && open_to)
		fcntl(to, F_SETFL, fcntl(to, F_GETFL) & ~O_NONBLOCK); /* for the call's request */
	return up && open_to;
}

/*
 * A node's `node up --then-call` (node.h), waiting on the install session's channel for
 * one request: the launcher's next call to the node costs no new channel (a round trip on
 * ssh). The session is a runner process (runner_open(): two pipe ends here, no thread),
 * on a twin of the node's runner (runner_twin()), which keeps its own messages while the
 * node's runner makes other calls.
 */
struct boot_spare {
	struct runner_proc p; /* p.to: its stdin; p.from: its stdout and stderr */
	struct runner *twin;
	struct buf early; /* what the node said after BOOT_UP_MARK (nothing, from a sound node) */
};

/*
 * Ends the session, whose process has closed its output or was killed: it has
 * SPARE_CLOSE_MS to exit, then its group is killed (runner_close_within()).
 * runner_close()'s result.
 */
static int spare_end(struct boot_spare *sp, int *status)
{
	int rc = runner_close_within(sp->twin, &sp->p, SPARE_CLOSE_MS, status);

	runner_free(sp->twin);
	buf_release(&sp->early);
	free(sp);
	return rc;
}

/* Reads from into out until EOF or the deadline: 0, -ETIMEDOUT or -ENOBUFS (kept reading). */
static int spare_read(int from, struct buf *out, int64_t deadline)
{
	char blk[16384];
	int rc = 0;

	for (;;) {
		struct pollfd p = {from, POLLIN, 0};
		int64_t left = deadline - now_ms();
		ssize_t n;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left) < 0 && errno != EINTR)
			return -errno;
		if (!p.revents)
			continue;
		n = read(from, blk, sizeof(blk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return rc;
		if (out && !rc && buf_add(out, blk, (size_t)n))
			rc = -ENOBUFS;
	}
}

/*
 * Sends the request in[0..in_len) to a spare: 0 once written; -EAGAIN (the spare freed)
 * when it cannot carry it, nothing having reached the node; another -errno when the write
 * failed (the spare still held).
 */
static int spare_send(struct boot_spare *sp, const char *in, size_t in_len)
{
	struct pollfd p = {sp->p.from, POLLIN, 0};
	int rc;

	/*
	 * Only a node that is still waiting (nothing said, not hung up): else a new channel,
	 * which the request has not reached.
	 */
	if (sp->early.len || poll(&p, 1, 0) != 0) {
		boot_spare_close(sp);
		return -EAGAIN;
	}
	/*
	 * The request is one frame, read by its length: the node needs no EOF after it, and
	 * stdin stays open until the node has answered and ended (spare_end()). Closed at
	 * once, it raced the request through kubectl exec: the node saw EOF first, now and
	 * then under load, and ended without an answer (exit status 0).
	 */
	rc = write_all(sp->p.to, in, in_len);
	if (rc == -EPIPE) {
		/* It went away before it had read the whole request: nothing was done. */
		boot_spare_close(sp);
		return -EAGAIN;
	}
	return rc;
}

int boot_spare_call(struct boot_spare *sp, const char *in, size_t in_len, struct buf *out,
                    int timeout_ms, int *status)
{
	int64_t deadline = now_ms() + timeout_ms;
	int rc = spare_send(sp, in, in_len), rc2;

	if (rc == -EAGAIN)
		return rc;
	if (!rc)
		rc = spare_read(sp->p.from, out, deadline);
	if (rc == -ETIMEDOUT) {
		runner_proc_kill(&sp->p);
		error("node %s (%s): no answer within %d.%03d s; stopped the call", sp->twin->name,
		      sp->twin->ip, timeout_ms / 1000, timeout_ms % 1000);
	} else if (rc == -ENOBUFS) {
		error("node %s (%s): the answer is over the limit; it was cut", sp->twin->name,
		      sp->twin->ip);
	}
	rc2 = spare_end(sp, status);
	return rc ? rc : rc2;
}

int boot_spare_open(struct boot_spare *sp, const char *in, size_t in_len, int *from)
{
	int rc = spare_send(sp, in, in_len), status;

	*from = -1;
	if (rc == -EAGAIN)
		return rc;
	if (rc) {
		rc = error("node %s (%s): cannot send the request: %s", sp->twin->name,
		           sp->twin->ip, strerror(-rc));
		runner_proc_kill(&sp->p);
		spare_end(sp, &status); /* frees sp */
		return rc;
	}
	*from = sp->p.from;
	sp->p.from = -1; /* the caller's now */
	return 0;
}

void boot_spare_kill(struct boot_spare *sp, int sig)
{
	pid_t pid = __atomic_load_n(&sp->p.pid, __ATOMIC_ACQUIRE);

	/* Its own group, as runner_proc_kill()'s; async-signal-safe. */
	if (pid > 0)
		kill(-pid, sig);
}

int boot_spare_end(struct boot_spare *sp, int *status)
{
	return spare_end(sp, status);
}

void boot_spares_close(struct boot_spare **v, size_t n)
{
	int64_t deadline = now_ms() + SPARE_CLOSE_MS;
	size_t i;
	int status;

	/* EOF before a request: each node's `node call` ends at once, all of them together. */
	for (i = 0; i < n; i++)
		if (v[i] && v[i]->p.to >= 0) {
			close(v[i]->p.to);
			v[i]->p.to = -1;
		}
	for (i = 0; i < n; i++) {
		if (!v[i])
			continue;
		if (spare_read(v[i]->p.from, NULL, deadline) == -ETIMEDOUT)
			runner_proc_kill(&v[i]->p);
		spare_end(v[i], &status);
		v[i] = NULL;
	}
}

void boot_spare_close(struct boot_spare *sp)
{
	boot_spares_close(&sp, 1);
}

/*
 * The node's binary as a path here (malloc'd), for a session that execs it with no shell:
 * a node that is a directory here and whose runner can (build_exec), that has it already
 * (linked a moment ago, or there before: nothing goes ahead), and needs no more of `node
 * up`'s options (shell words). Else NULL: the script.
 */
static char *direct_up(struct runner *r, const char *exe_word, size_t ahead, const char *up_args)
{
	const char *home = r->ops->home_here ? r->ops->home_here(r) : NULL;
	char *exe;

	if (!home || !r->ops->build_exec || ahead || (up_args && *up_args))
		return NULL;
	exe = boot_exe_path_here(exe_word, home);
	if (exe && access(exe, X_OK)) {
		free(exe);
		exe = NULL;
	}
	return exe;
}

int boot_install_and_up(struct runner *r, unsigned flags, const char *up_args,
                        struct install_result *res)
{
	struct buf script = BUF_INIT(0), out = BUF_INIT(1 << 20), err = BUF_INIT(0);
	size_t ahead = flags & BOOT_HAS_SKIFF ? 0 : BOOT_AHEAD_BYTES;
	int64_t t0 = now_ms(), deadline = t0 + COPY_TIMEOUT_MS;
	struct boot_spare *sp = xcalloc(1, sizeof(*sp));
	const char *data, *sha, *why;
	int rc, up = 0, status = 0;
	size_t len, sent = 0;
	char *direct;

	memset(res, 0, sizeof(*res));
	sp->p.pid = -1;
	sp->p.to = sp->p.from = sp->p.err = -1;
	rc = boot_self_image(&data, &len, &sha);
	if (rc)
		goto out;
	set_remote_exe(res, sha);
	if ((flags & (BOOT_LINK_HERE | BOOT_HAS_SKIFF)) == BOOT_LINK_HERE &&
	    seed_node(r, data, len, sha)) {
		res->copied = res->linked = 1;
		ahead = 0; /* the probe finds it */
	}
	sp->twin = runner_twin(r);
	if ((direct = direct_up(r, res->remote_exe, ahead, up_args))) {
		/* The script's probe would find it and exec it: exec'd here, no shell first. */
		char *argv[] = {direct, "node", "up", "--then-call", "0", NULL};

		debug("node %s: its skiff is here: 'node up' runs with no shell first", r->name);
		rc = runner_open_argv(sp->twin, argv, RUNNER_PROC_MERGE_ERR, &sp->p);
		free(direct);
	} else {
		rc = boot_install_script(&script, BOOT_SCRIPT_SESSION, sha, len,
		                         ahead ? BOOT_SEND_AHEAD : 0, up_args);
		if (!rc)
			rc = runner_open(sp->twin, script.p, RUNNER_PROC_MERGE_ERR, &sp->p);
		if (!rc)
			fcntl(sp->p.to, F_SETPIPE_SZ, COPY_PIPE_SIZE);
	}
	if (rc)
		goto out;
	up = session_talk(sp->p.to, sp->p.from, ahead, deadline, &out, &sent);
	if (up == 1 && (flags & BOOT_KEEP_CALL)) {
		const char *body, *rest = out.p + out.len;
		size_t blen;

		up_frame(&out, &body, &blen, &rest);
		buf_init(&sp->early, 1 << 16);
		buf_add(&sp->early, rest, out.len - (size_t)(rest - out.p));
		res->spare = sp;
		sp = NULL;
	} else {
		/* No call to come: EOF, and the node's `node call` ends. */
		if (up == 1)
			close(sp->p.to);
		sp->p.to = -1;
		if (up == -ETIMEDOUT || spare_read(sp->p.from, &out, deadline) == -ETIMEDOUT) {
			runner_proc_kill(&sp->p);
			error("node %s (%s): no end of the install session within %d s; stopped it",
			      r->name, r->ip, COPY_TIMEOUT_MS / 1000);
			up = -ETIMEDOUT;
		}
		rc = spare_end(sp, &status);
		sp = NULL;
		if (up < 0 && !rc)
			rc = up;
	}
	if (rc)
		goto out;
	debug("node %s: install session took %lld ms, %zu bytes sent%s", r->name,
	      (long long)(now_ms() - t0), sent, res->spare ? "; its call waits" : "");
	why = find_line(out.p, COPY_FAILED);
	if (why) {
		rc = error("node %s (%s): cannot install skiff: %.*s", r->name, r->ip,
		           (int)strcspn(why + strlen(COPY_FAILED), "\n"),
		           why + strlen(COPY_FAILED));
		goto out;
	}
	if (find_line(out.p, NEED_COPY)) {
		if (!find_line(out.p, "SKIFF-COPIED")) {
			rc = error("node %s (%s): cannot install skiff (exit %d): %s", r->name,
			           r->ip, status, buf_last_line(&out));
			goto out;
		}
		res->copied = 1;
		res->packed = 1;
		res->sent = sent;
	}
	/* node up said its lines and the mark: it succeeded, whatever its call did since. */
	rc = parse_up(r, res, &out, &err, up == 1 ? 0 : status);
out:
	if (rc && res->spare) {
		boot_spare_close(res->spare);
		res->spare = NULL;
	}
	if (sp) { /* the session never started */
		runner_free(sp->twin);
		free(sp);
	}
	buf_release(&script);
	buf_release(&out);
	buf_release(&err);
	return rc;
}
