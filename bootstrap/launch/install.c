/*
 * Self-copy bootstrap: this executable onto a node, then its supervisor up. The protocol
 * is in bootstrap/launch/install.h and docs/bootstrap.md. The node needs a POSIX sh, cat, mkdir,
 * chmod, mv, ln, rm and wc (sha256sum when it has one): busybox has them all.
 *
 * The scripts hold only constants and the sha256 (hex) and size (digits) of the binary,
 * so nothing in them comes from outside; the binary itself goes through stdin.
 */
#include "bootstrap/launch/install.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "bootstrap/launch/rcall.h"

#include "lib/buf.h"
#include "lib/log.h"
#include "lib/self.h"
#include "lib/sha256.h"
#include "lib/util.h"
#include "lib/banned.h"

/* The first round trip also runs `node up`, which waits up to 15 s for the supervisor. */
#define PROBE_TIMEOUT_MS 120000
/* A few MB over a slow link. */
#define COPY_TIMEOUT_MS 600000
#define SELF_MAX ((size_t)256 << 20)
/* zstd level of the packed image: 47% of the binary in 0.1 s (19 gives 43% in 1.1 s). */
#define PACK_LEVEL 9

#define NEED_COPY "SKIFF-NEED-COPY"
#define COPY_FAILED "SKIFF-COPY-FAILED: "

/* --- this executable ------------------------------------------------------------------- */

static struct {
	struct buf bytes;
	char sha[SHA256_HEX_LEN + 1];
	int rc;
} self_img;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;

static void self_load(void)
{
	const char *path = "/proc/self/exe";
	int rc;

	buf_init(&self_img.bytes, SELF_MAX);
	/* /proc/self/exe is the running image even if the file was replaced since. */
	rc = buf_read_file(&self_img.bytes, path);
	if (rc) {
		path = self_path(NULL);
		rc = path ? buf_read_file(&self_img.bytes, path) : -ENOENT;
	}
	if (rc) {
		errno = -rc;
		self_img.rc = error_errno("cannot read skiff's own executable ('%s')",
		                          path ? path : "not found");
		return;
	}
	/* Hashing 2 MB costs ~10 ms per launch: the cached (stat-keyed) hash is as good. */
	if (self_sha256_cached())
		memcpy(self_img.sha, self_sha256_cached(), SHA256_HEX_LEN + 1);
	else
		sha256_hex(self_img.bytes.p, self_img.bytes.len, self_img.sha);
}

int boot_self_image(const char **data, size_t *len, const char **sha)
{
	pthread_once(&self_once, self_load);
	if (self_img.rc)
		return self_img.rc;
	*data = self_img.bytes.p;
	*len = self_img.bytes.len;
	*sha = self_img.sha;
	return 0;
}

/* --- this executable, compressed -------------------------------------------------------- */

static struct {
	struct buf z;
	int rc;
} packed;
static pthread_once_t pack_once = PTHREAD_ONCE_INIT;

/* 1 if z decompresses to exactly the image whose sha256 is sha (len bytes). */
static int pack_ok(const struct buf *z, const char *sha, size_t len)
{
	char *out = xmalloc(len + 1), hex[SHA256_HEX_LEN + 1];
	size_t n = ZSTD_decompress(out, len + 1, z->p, z->len);
	int good = !ZSTD_isError(n) && n == len;

	if (good) {
		sha256_hex(out, n, hex);
		good = !strcmp(hex, sha);
	}
	free(out);
	return good;
}

static void pack_load(void)
{
	const char *data, *sha, *home = skiff_home();
	char *dir = NULL, *path = NULL, *tmp = NULL;
	size_t len, cap, n;
	int fd;

	buf_init(&packed.z, SELF_MAX);
	packed.rc = boot_self_image(&data, &len, &sha);
	if (packed.rc)
		return;
	/* Compressed once per binary and kept: a launch to a new node reads it back. */
	if (home) {
		dir = xasprintf("%s/cache", home);
		path = xasprintf("%s/self-%s.zst", dir, sha);
		if (!buf_read_file(&packed.z, path) && pack_ok(&packed.z, sha, len))
			goto out;
		buf_reset(&packed.z);
	}
	cap = ZSTD_compressBound(len);
	if (buf_grow(&packed.z, cap)) {
		packed.rc = error("out of memory");
		goto out;
	}
	n = ZSTD_compress(packed.z.p, cap, data, len, PACK_LEVEL);
	if (ZSTD_isError(n)) {
		packed.rc =
		        error("cannot compress skiff's own executable: %s", ZSTD_getErrorName(n));
		goto out;
	}
	buf_setlen(&packed.z, n);
	if (!path || mkdir_p(dir, 0700))
		goto out;
	/* A cache: a temp file and a rename, no fsync (a torn one fails pack_ok()). */
	tmp = xasprintf("%s.%ld.tmp", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0 && !write_all(fd, packed.z.p, packed.z.len) && !close(fd))
		fd = rename(tmp, path) < 0 ? -1 : 0;
	else if (fd >= 0)
		close(fd), fd = -1;
	if (fd < 0)
		unlink(tmp);
out:
	free(dir);
	free(path);
	free(tmp);
}

int boot_self_packed(const char **data, size_t *len)
{
	pthread_once(&pack_once, pack_load);
	if (packed.rc)
		return packed.rc;
	*data = packed.z.p;
	*len = packed.z.len;
	return 0;
}

/* --- the scripts ----------------------------------------------------------------------- */

static int valid_sha(const char *sha)
{
	size_t i;

	if (!sha || strlen(sha) != SHA256_HEX_LEN)
		return 0;
	for (i = 0; i < SHA256_HEX_LEN; i++)
		if (!((sha[i] >= '0' && sha[i] <= '9') || (sha[i] >= 'a' && sha[i] <= 'f')))
			return 0;
	return 1;
}

/*
 * First round trip: the content-addressed binary is either there (only a verified copy
 * ever gets that name) and starts the supervisor, or we are told to send it.
 */
static const char probe_fmt[] = "exe=\"$HOME/.skiff/bin/skiff-%s\"\n"
                                "if [ -x \"$exe\" ]; then\n"
                                "\texec \"$exe\" node up\n"
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
        "exec \"$exe\" node up\n";

/*
 * The session (BOOT_SCRIPT_SESSION): the probe; then, when the binary is missing, the
 * splitter written with printf from this very text, SKIFF-NEED-COPY, and the splitter run
 * on stdin: it takes the unzstd stub (its size and sha256 given), which decompresses the
 * rest into the temp file and checks our size and sha256 (bootstrap/launch/stub/). The
 * stubs' own message, if any, goes into the failure line.
 */
static const char session_head_fmt[] =
        "exe=\"$HOME/.skiff/bin/skiff-%1$s\"\n"
        "if [ -x \"$exe\" ]; then\n"
        "\texec \"$exe\" node up\n"
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
        "exec \"$exe\" node up\n";

/* Bytes of the splitter per printf line. */
#define PRINTF_CHUNK 1024

/* p[0..n) as a printf format that writes exactly those bytes: octal escapes where needed. */
static int printf_bytes(struct buf *out, const unsigned char *p, size_t n)
{
	size_t i;
	int r = 0;

	for (i = 0; i < n && !r; i++) {
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\' && p[i] != '%' && p[i] != '\'')
			r = buf_addch(out, (char)p[i]);
		else
			r = buf_addf(out, "\\%03o", p[i]); /* always 3 digits: a digit may follow */
	}
	return r;
}

static int session_script(struct buf *out, const char *sha, size_t size)
{
	struct boot_stub split, unz;
	char usha[SHA256_HEX_LEN + 1];
	size_t off, take;
	int r;

	boot_stubs(&split, &unz);
	sha256_hex(unz.data, unz.len, usha);
	r = buf_addf(out, session_head_fmt, sha);
	for (off = 0; !r && off < split.len; off += take) {
		take = split.len - off < PRINTF_CHUNK ? split.len - off : PRINTF_CHUNK;
		r = buf_adds(out, "printf '");
		if (!r)
			r = printf_bytes(out, split.data + off, take);
		if (!r)
			r = buf_adds(out, "' >>\"$split\" || fail \"cannot write $split\"\n");
	}
	return r ? r : buf_addf(out, session_tail_fmt, sha, unz.len, usha, size);
}

int boot_install_script(struct buf *out, int kind, const char *sha, size_t size, unsigned flags)
{
	if (!valid_sha(sha))
		return -EINVAL;
	if (kind == BOOT_SCRIPT_PROBE)
		return buf_addf(out, probe_fmt, sha);
	if (kind == BOOT_SCRIPT_SESSION)
		return session_script(out, sha, size);
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

/* The last non-empty line of b (trimmed in place), or "no message". */
static const char *last_line(struct buf *b)
{
	char *p;

	buf_rtrim(b);
	if (!b->len)
		return "no message";
	p = strrchr(b->p, '\n');
	return p ? p + 1 : b->p;
}

/* What `node up` said: "supervisor started (pid N)" or "supervisor already running (pid N)". */
static int parse_up(struct runner *r, struct install_result *res, struct buf *out, struct buf *err,
                    int status)
{
	static const char *const says[] = {"supervisor started (pid ",
	                                   "supervisor already running (pid "};
	const char *l = NULL;
	int i;

	for (i = 0; i < 2 && !l; i++) {
		l = find_line(out->p, says[i]);
		if (l) {
			res->sup_started = i == 0;
			l += strlen(says[i]);
		}
	}
	if (status || !l || sscanf(l, "%ld", &res->sup_pid) != 1 || res->sup_pid <= 0) {
		return error("node %s (%s): 'skiff node up' failed (exit %d): %s", r->name, r->ip,
		             status, last_line(err->len ? err : out));
	}
	l = find_line(out->p, "active ");
	if (!l || sscanf(l + strlen("active "), "%ld", &res->active) != 1)
		res->active = -1;
	res->address[0] = '\0';
	l = find_line(out->p, "address ");
	if (l)
		sscanf(l + strlen("address "), "%63[0-9a-fA-F.:]", res->address);
	return 0;
}

void boot_exe_word(const char *sha, char *out, size_t size)
{
	xsnprintf(out, size, "\"$HOME/.skiff/bin/skiff-%s\"", sha);
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
	rc = boot_install_script(&script, 1, sha, size, flags);
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
		           status, last_line(err.len ? &err : &out));
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

/*
 * The session's talk, from our side: read what the node says; once it asks for the copy,
 * send the stub and the packed image (reading on meanwhile, so that neither side can wait
 * on a full pipe); close its stdin; read to the end. out gets all it said.
 */
static int session_talk(int to, int from, struct buf *out, size_t *sent)
{
	struct boot_stub split, unz;
	const unsigned char *src[2];
	size_t len[2], k = 0, done = 0;
	const char *img;
	size_t img_len;
	char blk[16384];
	int asked = 0, rc = 0, open_to = 1;
	ssize_t n;

	boot_stubs(&split, &unz);
	*sent = 0;
	set_nonblock(to);
	while (from >= 0) {
		struct pollfd p[2] = {{from, POLLIN, 0}, {to, POLLOUT, 0}};
		int np = asked && open_to ? 2 : 1;

		if (poll(p, (nfds_t)np, -1) < 0) {
			if (errno == EINTR)
				continue;
			rc = error_errno("poll");
			break;
		}
		if (p[0].revents) {
			n = read(from, blk, sizeof(blk));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			buf_add(out, blk, (size_t)n);
			if (!asked && find_line(out->p, NEED_COPY)) {
				asked = 1;
				rc = boot_self_packed(&img, &img_len);
				if (rc)
					break;
				src[0] = unz.data, len[0] = unz.len;
				src[1] = (const unsigned char *)img, len[1] = img_len;
			}
		}
		if (np == 2 && (p[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
			n = k < 2 ? write(to, src[k] + done, len[k] - done) : 0;
			if (n > 0) {
				done += (size_t)n;
				*sent += (size_t)n;
				if (done == len[k])
					k++, done = 0;
			}
			/* All of it sent, or the node stopped reading: its answer says why. */
			if (k == 2 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
				close(to);
				open_to = 0;
			}
		}
	}
	if (open_to)
		close(to);
	return rc;
}

int boot_install_and_up(struct runner *r, struct install_result *res)
{
	struct buf script = BUF_INIT(0), out = BUF_INIT(1 << 20), err = BUF_INIT(0);
	const char *data, *sha, *why;
	int64_t t0 = now_ms();
	struct rcall call;
	int rc, status = 0, to, from;
	size_t len, sent = 0;

	memset(res, 0, sizeof(*res));
	rc = boot_self_image(&data, &len, &sha);
	if (rc)
		goto out;
	set_remote_exe(res, sha);
	rc = boot_install_script(&script, BOOT_SCRIPT_SESSION, sha, len, 0);
	if (rc)
		goto out;
	rc = rcall_start(&call, r, script.p, COPY_TIMEOUT_MS, RCALL_MERGE_ERR, &to, &from);
	if (rc)
		goto out;
	rc = session_talk(to, from, &out, &sent);
	close(from);
	status = 0;
	{
		int rc2 = rcall_wait(&call, &status);

		if (!rc)
			rc = rc2;
	}
	if (rc)
		goto out;
	debug("node %s: install session took %lld ms, %zu bytes sent", r->name,
	      (long long)(now_ms() - t0), sent);
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
			           r->ip, status, last_line(&out));
			goto out;
		}
		res->copied = 1;
		res->packed = 1;
		res->sent = sent;
	}
	rc = parse_up(r, res, &out, &err, status);
out:
	buf_release(&script);
	buf_release(&out);
	buf_release(&err);
	return rc;
}
