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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int boot_install_script(struct buf *out, int copy, const char *sha, size_t size, unsigned flags)
{
	if (!valid_sha(sha))
		return -EINVAL;
	if (!copy)
		return buf_addf(out, probe_fmt, sha);
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

static void set_remote_exe(struct install_result *res, const char *sha)
{
	xsnprintf(res->remote_exe, sizeof(res->remote_exe), "\"$HOME/.skiff/bin/skiff-%s\"", sha);
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

int boot_install_and_up(struct runner *r, struct install_result *res)
{
	struct buf script = BUF_INIT(0), out = BUF_INIT(1 << 20), err = BUF_INIT(1 << 20);
	const char *data, *sha;
	int64_t t0 = now_ms();
	int rc, status = 0;
	size_t len;

	memset(res, 0, sizeof(*res));
	rc = boot_self_image(&data, &len, &sha);
	if (rc)
		goto out;
	set_remote_exe(res, sha);
	rc = boot_install_script(&script, 0, sha, len, 0);
	if (rc)
		goto out;
	rc = runner_capture(r, script.p, NULL, 0, &out, &err, PROBE_TIMEOUT_MS, &status);
	if (rc)
		goto out;
	debug("node %s: probe took %lld ms", r->name, (long long)(now_ms() - t0));
	if (!status && find_line(out.p, NEED_COPY))
		rc = boot_install_send(r, data, len, sha, len, 0, res);
	else
		rc = parse_up(r, res, &out, &err, status);
out:
	buf_release(&script);
	buf_release(&out);
	buf_release(&err);
	return rc;
}
