/*
 * The download manager (bootstrap/fetch/fetch.h, docs/fetch.md): the cache, the locks, the
 * retries, and the HTTP/1.1 exchange over fetch_tls.c with fetch_http.c's parsers.
 *
 * Locks: the URL's lock first, then a slot; a slot holder never waits for a URL lock, so
 * the two cannot deadlock. Both are flock()s on files, released by the kernel when a
 * process dies, so a crashed download never blocks the next one.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap/fetch/fetch.h"
#include "bootstrap/fetch/fetch_internal.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "lib/self.h"
#include "lib/sha256.h"
#include "lib/util.h"
#include "lib/banned.h"

#define BACKOFF_BASE_MS 250
#define BACKOFF_MAX_MS 8000
#define IO_BUF (64 << 10)

struct fetch {
	const char *url;
	char want[SHA256_HEX_LEN + 1]; /* "" when not pinned */
	uint64_t max_bytes;
	int retries, timeout_ms, max_parallel;
	const char *ca_file;
	struct tls_client *tls;
	struct buf *err;
	/* the body being written */
	int fd;
	uint64_t got;
	struct sha256_ctx sha;
};

static int set_err(struct buf *err, int code, const char *fmt, ...) SKIFF_PRINTF(3, 4);
static int set_err(struct buf *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		buf_reset(err);
		va_start(ap, fmt);
		buf_vaddf(err, fmt, ap);
		va_end(ap);
	}
	return code;
}

static uint32_t random_u32(void)
{
	uint32_t r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r = (uint32_t)getpid() * 2654435761u ^ (uint32_t)now_ms();
	return r;
}

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * A complete file for this URL: the pinned digest's, or (unpinned) the newest one.
 * 1 and *path on a hit, 0 on a miss.
 */
static int cache_lookup(const char *dir, const char *want, char **path)
{
	struct stat st;
	struct dirent *de;
	char best[SHA256_HEX_LEN + 1] = "";
	struct timespec best_t = {0, 0};
	char *p;
	DIR *d;

	if (*want) {
		p = xasprintf("%s/%s", dir, want);
		if (!stat(p, &st) && S_ISREG(st.st_mode)) {
			*path = p;
			return 1;
		}
		free(p);
		return 0;
	}
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (!sha256_hex_valid(de->d_name) || fstatat(dirfd(d), de->d_name, &st, 0) ||
		    !S_ISREG(st.st_mode))
			continue;
		if (!*best || st.st_mtim.tv_sec > best_t.tv_sec ||
		    (st.st_mtim.tv_sec == best_t.tv_sec && st.st_mtim.tv_nsec > best_t.tv_nsec)) {
			memcpy(best, de->d_name, sizeof(best));
			best_t = st.st_mtim;
		}
	}
	closedir(d);
	if (!*best)
		return 0;
	*path = xasprintf("%s/%s", dir, best);
	return 1;
}

/* Temp files left by a download that died: only the lock holder writes one. */
static void remove_stale_temps(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d)))
		if (starts_with(de->d_name, ".tmp-"))
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
}

static int lock_file(const char *path, int nonblock, int *fd_out)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);

	if (fd < 0)
		return -errno;
	while (flock(fd, LOCK_EX | (nonblock ? LOCK_NB : 0))) {
		int e = errno;

		if (e == EINTR)
			continue;
		close(fd);
		return -e;
	}
	*fd_out = fd;
	return 0;
}

/*
 * Takes one of n slot locks under slots_dir (blocking). flock() cannot wait for "any of n",
 * so a waiter keeps the n files open, tries each without blocking, and sleeps in poll() on
 * an inotify watch of the directory until a holder closes its slot (a process that dies
 * closes it too). Keeping the files open means a failed try closes nothing, so waiters do
 * not wake each other. The poll has a 1 s limit, for file systems where inotify does not
 * see other machines' processes.
 */
static int take_slot(const char *slots_dir, int n, int *fd_out)
{
	char evbuf[4096];
	uint32_t start = random_u32();
	int *fds, i, k, rc, ino, chosen = -1;
	struct pollfd pfd;

	rc = mkdir_p(slots_dir, 0755);
	if (rc)
		return rc;
	fds = xcalloc((size_t)n, sizeof(*fds));
	for (i = 0; i < n; i++)
		fds[i] = -1;
	ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (ino >= 0 && inotify_add_watch(ino, slots_dir, IN_CLOSE_WRITE | IN_CLOSE_NOWRITE) < 0) {
		close(ino);
		ino = -1;
	}
	for (i = 0; i < n; i++) {
		/* Under the user's cache dir: a path of any length (open says if too long). */
		char *path = xasprintf("%s/slot-%d", slots_dir, i);

		fds[i] = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
		rc = fds[i] < 0 ? -errno : 0;
		free(path);
		if (rc)
			goto out;
	}
	for (;;) {
		for (k = 0; k < n && chosen < 0; k++) {
			i = (int)((start + (uint32_t)k) % (uint32_t)n);
			if (!flock(fds[i], LOCK_EX | LOCK_NB))
				chosen = i;
			else if (errno != EWOULDBLOCK && errno != EINTR) {
				rc = -errno;
				goto out;
			}
		}
		if (chosen >= 0)
			break;
		pfd.fd = ino;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 1000) > 0)
			while (read(ino, evbuf, sizeof(evbuf)) > 0)
				;
	}
	*fd_out = fds[chosen];
	fds[chosen] = -1;
	rc = 0;
out:
	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	if (ino >= 0)
		close(ino);
	return rc;
}

/*
 * A failure is written to the URL's dir, so that the processes that waited on it get the
 * same answer instead of asking the server again one after another. Only failures that
 * come from the server are shared (not those that depend on the caller's options).
 */
static int shareable(int rc)
{
	return rc == -ENOENT || rc == -EPERM || rc == -EIO || rc == -ETIMEDOUT ||
	       rc == -ECONNREFUSED || rc == -ECONNRESET || rc == -EHOSTUNREACH || rc == -ELOOP ||
	       rc == -EPROTO;
}

static void record_failure(const char *dir, int rc, const char *msg)
{
	char *path = xasprintf("%s/failed", dir);
	char *s = xasprintf("%" PRId64 " %d\n%s\n", wall_ms(), rc, msg);

	write_file_atomic(path, s, strlen(s), 0644);
	free(path);
	free(s);
}

/* The failure recorded after `since` (wall ms), if any: its code and message. */
static int recorded_failure(const char *dir, int64_t since, struct buf *err)
{
	struct buf b = BUF_INIT(8192);
	char *path = xasprintf("%s/failed", dir), *nl, *end;
	long long when;
	long code;
	int rc = 0;

	if (buf_read_file(&b, path))
		goto out;
	errno = 0;
	when = strtoll(b.p, &end, 10);
	if (errno || *end != ' ' || when < since)
		goto out;
	code = strtol(end + 1, &end, 10);
	nl = strchr(end, '\n');
	if (*end != '\n' || code >= 0 || code < -4095 || !nl)
		goto out;
	buf_rtrim(&b);
	set_err(err, (int)code, "%s (the download another process just tried)", nl + 1);
	rc = (int)code;
out:
	free(path);
	buf_release(&b);
	return rc;
}

/* --- one HTTP exchange ------------------------------------------------------------------ */

static int sink(struct fetch *f, const char *p, size_t n)
{
	int rc;

	if (!n)
		return 0;
	if (f->got + n > f->max_bytes)
		return set_err(f->err, -EFBIG, "body is larger than the limit of %" PRIu64 " bytes",
		               f->max_bytes);
	f->got += n;
	sha256_update(&f->sha, p, n);
	rc = write_all(f->fd, p, n);
	if (rc)
		return set_err(f->err, rc, "cannot write the download: %s", strerror(-rc));
	return 0;
}

static int status_error(struct fetch *f, const struct http_resp *r, const char *url, int *retryable)
{
	int s = r->status, code;

	if (s == 404 || s == 410)
		code = -ENOENT;
	else if (s == 401 || s == 403)
		code = -EPERM;
	else if (s == 408 || s == 429 || s >= 500)
		code = -EIO, *retryable = 1;
	else
		code = -EPROTO;
	return set_err(f->err, code, "HTTP %d%s%s from %s", s, r->reason[0] ? " " : "", r->reason,
	               url);
}

/* Reads the body that follows a head; buf holds `have` bytes already read after it. */
static int read_body(struct fetch *f, struct tls_conn *t, const struct http_resp *r, char *buf,
                     size_t have, int *retryable)
{
	struct http_chunked ch;
	size_t out, used;
	ssize_t n;
	int rc, clean;

	http_chunked_init(&ch);
	for (;;) {
		if (r->chunked) {
			if (http_chunked_decode(&ch, buf, have, &out, &used))
				return set_err(f->err, -EBADMSG, "malformed chunked encoding");
			rc = sink(f, buf, out);
			if (rc)
				return rc;
			if (ch.done)
				return 0;
		} else {
			if (r->has_length && (uint64_t)have > r->length - f->got)
				have = (size_t)(r->length - f->got);
			rc = sink(f, buf, have);
			if (rc)
				return rc;
			if (r->has_length && f->got == r->length)
				return 0;
		}
		n = tls_read(t, buf, IO_BUF, &clean, f->err);
		if (n < 0) {
			*retryable = 1;
			return (int)n;
		}
		if (n == 0) {
			/* Without a length, only the peer's close_notify proves the body whole. */
			if (!r->chunked && !r->has_length && clean)
				return 0;
			*retryable = 1;
			if (r->has_length)
				return set_err(f->err, -EPROTO,
				               "connection closed after %" PRIu64 " of %" PRIu64
				               " bytes",
				               f->got, r->length);
			return set_err(f->err, -EPROTO,
			               "connection closed after %" PRIu64 " bytes without the end "
			               "of the body",
			               f->got);
		}
		have = (size_t)n;
	}
}

/* Sends the request and reads the head into buf; *have: bytes of buf after the head. */
static int exchange(struct fetch *f, struct tls_conn *t, const struct http_url *u, char *buf,
                    struct http_resp *r, size_t *have, int *retryable)
{
	struct buf req = BUF_INIT(HTTP_URL_MAX * 2);
	size_t len = 0, head;
	ssize_t n;
	int rc, clean;

	buf_addf(&req,
	         "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: skiff/%s\r\nAccept: */*\r\n"
	         "Accept-Encoding: identity\r\nConnection: close\r\n\r\n",
	         u->target, u->hostport, skiff_version);
	rc = tls_write_all(t, req.p, req.len, f->err);
	buf_release(&req);
	if (rc) {
		*retryable = 1;
		return rc;
	}
	for (;;) {
		rc = http_parse_head(buf, len, r, &head, f->err);
		if (!rc && r->status >= 100 && r->status < 200) {
			/* An interim response (100 Continue, 103 Early Hints): skip it. */
			memmove(buf, buf + head, len - head);
			len -= head;
			continue;
		}
		if (!rc)
			break;
		if (rc != -EAGAIN)
			return rc == -E2BIG
			               ? set_err(f->err, -EBADMSG, "response head is too large")
			               : rc;
		n = tls_read(t, buf + len, HTTP_HEAD_MAX - len, &clean, f->err);
		if (n <= 0) {
			*retryable = 1;
			return n < 0 ? (int)n
			             : set_err(f->err, -ECONNRESET,
			                       "connection closed before the response head");
		}
		len += (size_t)n;
	}
	memmove(buf, buf + head, len - head);
	*have = len - head;
	return 0;
}

/* One attempt: follows redirects, writes the body to f->fd. */
static int attempt(struct fetch *f, char *buf, int *retryable)
{
	char cur[HTTP_URL_MAX], next[HTTP_URL_MAX];
	struct http_url u;
	struct http_resp r;
	struct tls_conn *t = NULL;
	size_t have = 0;
	int rc, redirects = 0;

	*retryable = 0;
	/* fetch_url() took it through http_url_parse(): shorter than HTTP_URL_MAX. */
	xsnprintf(cur, sizeof(cur), "%s", f->url);
	for (;;) {
		rc = http_url_parse(cur, &u, f->err);
		if (rc)
			return rc;
		if (strcmp(u.scheme, "https"))
			return set_err(f->err, -EINVAL, "redirect to a non-https URL refused: %s",
			               cur);
		rc = tls_connect(f->tls, u.host, u.port, f->timeout_ms, &t, f->err);
		if (rc) {
			*retryable = rc != -EACCES;
			return rc;
		}
		rc = exchange(f, t, &u, buf, &r, &have, retryable);
		if (rc)
			goto out;
		if (r.status >= 300 && r.status < 400 && r.status != 304 && r.location[0]) {
			tls_close(t);
			t = NULL;
			if (++redirects > FETCH_MAX_REDIRECTS)
				return set_err(f->err, -ELOOP, "more than %d redirects",
				               FETCH_MAX_REDIRECTS);
			if (http_url_resolve(&u, r.location, next, sizeof(next)))
				return set_err(f->err, -EBADMSG, "bad redirect location from %s",
				               cur);
			memcpy(cur, next, sizeof(cur));
			continue;
		}
		if (r.status != 200) {
			rc = status_error(f, &r, cur, retryable);
			goto out;
		}
		if (r.has_length && r.length > f->max_bytes) {
			rc = set_err(f->err, -EFBIG,
			             "body is %" PRIu64 " bytes, over the limit of %" PRIu64
			             " bytes",
			             r.length, f->max_bytes);
			goto out;
		}
		rc = read_body(f, t, &r, buf, have, retryable);
		goto out;
	}
out:
	tls_close(t);
	return rc;
}

static int backoff_ms(int attempt_no)
{
	int d = BACKOFF_BASE_MS;

	while (attempt_no-- > 0 && d < BACKOFF_MAX_MS)
		d *= 2;
	if (d > BACKOFF_MAX_MS)
		d = BACKOFF_MAX_MS;
	/* Jitter: somewhere in [d/2, d], so that many clients do not retry in step. */
	return d / 2 + (int)(random_u32() % (uint32_t)(d / 2 + 1));
}

/* Downloads into f->fd with retries; the file holds the complete body on success. */
static int download(struct fetch *f)
{
	char *buf = xmalloc(HTTP_HEAD_MAX > IO_BUF ? HTTP_HEAD_MAX : IO_BUF);
	int rc, retryable, n, delay;
	struct buf msg = BUF_INIT(4096);

	for (n = 0;; n++) {
		if (ftruncate(f->fd, 0) || lseek(f->fd, 0, SEEK_SET)) {
			rc = set_err(f->err, -errno, "cannot reset the download: %s",
			             strerror(errno));
			break;
		}
		f->got = 0;
		sha256_init(&f->sha);
		rc = attempt(f, buf, &retryable);
		if (!rc)
			break;
		if (!retryable || n >= f->retries) {
			if (n > 0 && f->err)
				buf_addf(f->err, " (after %d attempts)", n + 1);
			break;
		}
		delay = backoff_ms(n);
		buf_reset(&msg);
		buf_adds(&msg, f->err ? f->err->p : "error");
		warning("fetching %s: %s; retrying in %d ms (attempt %d of %d)", f->url, msg.p,
		        delay, n + 2, f->retries + 1);
		poll_ms(delay);
	}
	buf_release(&msg);
	free(buf);
	return rc;
}

/* Downloads to a temp file in dir and renames it to its digest. */
static int download_to_cache(struct fetch *f, const char *dir, char **path)
{
	char *tmp = xasprintf("%s/.tmp-XXXXXX", dir), *final = NULL;
	char hex[SHA256_HEX_LEN + 1];
	int rc, dfd;

	f->fd = mkostemp(tmp, O_CLOEXEC);
	if (f->fd < 0) {
		rc = set_err(f->err, -errno, "cannot create a file in '%s': %s", dir,
		             strerror(errno));
		free(tmp);
		return rc;
	}
	rc = download(f);
	if (rc)
		goto out;
	sha256_final_hex(&f->sha, hex);
	if (*f->want && strcmp(hex, f->want)) {
		rc = set_err(f->err, -EBADMSG, "sha256 mismatch: expected %s, got %s", f->want,
		             hex);
		goto out;
	}
	if (fchmod(f->fd, 0644) || fsync(f->fd)) {
		rc = set_err(f->err, -errno, "cannot write the download: %s", strerror(errno));
		goto out;
	}
	final = xasprintf("%s/%s", dir, hex);
	if (rename(tmp, final)) {
		rc = set_err(f->err, -errno, "cannot rename into '%s': %s", final, strerror(errno));
		goto out;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	*path = final;
	final = NULL;
out:
	close(f->fd);
	f->fd = -1;
	if (rc)
		unlink(tmp);
	free(tmp);
	free(final);
	return rc;
}

/* A cache hit still honours the caller's size limit. */
static int check_hit(const struct fetch *f, char **path)
{
	struct stat st;
	int rc;

	if (stat(*path, &st))
		rc = set_err(f->err, -errno, "cannot stat '%s': %s", *path, strerror(errno));
	else if ((uint64_t)st.st_size > f->max_bytes)
		rc = set_err(f->err, -EFBIG,
		             "cached file is %" PRIu64 " bytes, over the limit of %" PRIu64
		             " bytes",
		             (uint64_t)st.st_size, f->max_bytes);
	else
		return 0;
	free(*path);
	*path = NULL;
	return rc;
}

static int check_sha256(const char *s, char out[SHA256_HEX_LEN + 1])
{
	size_t i;

	for (i = 0; i < SHA256_HEX_LEN; i++) {
		char c = s[i];

		if (c >= 'A' && c <= 'F')
			c = (char)(c + ('a' - 'A'));
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return -EINVAL;
		out[i] = c;
	}
	out[i] = '\0';
	return s[i] ? -EINVAL : 0;
}

int fetch_url(const char *url, const char *cache_dir, const struct fetch_opts *o, char **path,
              struct buf *err)
{
	static const struct fetch_opts defaults = FETCH_OPTS_INIT;
	struct fetch f = {.url = url, .fd = -1, .err = err};
	char url_hex[SHA256_HEX_LEN + 1], *abs = NULL, *dir = NULL, *slots = NULL, *lockp = NULL;
	struct http_url u;
	int64_t since;
	int rc, lock_fd = -1, slot_fd = -1;

	*path = NULL;
	if (!o)
		o = &defaults;
	f.max_bytes = o->max_bytes ? o->max_bytes : FETCH_DEFAULT_MAX_BYTES;
	f.retries = o->retries < 0 ? FETCH_DEFAULT_RETRIES : o->retries;
	f.timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : FETCH_DEFAULT_TIMEOUT_MS;
	f.max_parallel = o->max_parallel > 0 ? o->max_parallel : FETCH_DEFAULT_MAX_PARALLEL;
	f.ca_file = o->ca_file;

	rc = http_url_parse(url, &u, err);
	if (rc)
		return rc;
	if (strcmp(u.scheme, "https"))
		return set_err(err, -EINVAL, "unsupported URL scheme '%s' (only https)", u.scheme);
	if (o->sha256 && check_sha256(o->sha256, f.want))
		return set_err(err, -EINVAL, "bad sha256 '%s' (expected 64 hex digits)", o->sha256);

	rc = mkdir_p(cache_dir, 0755);
	if (rc)
		return set_err(err, rc, "cannot create '%s': %s", cache_dir, strerror(-rc));
	abs = realpath(cache_dir, NULL);
	if (!abs)
		return set_err(err, -errno, "cannot resolve '%s': %s", cache_dir, strerror(errno));
	sha256_hex(url, strlen(url), url_hex);
	dir = xasprintf("%s/by-url/%s", abs, url_hex);
	slots = xasprintf("%s/slots", abs);
	lockp = xasprintf("%s/lock", dir);

	if (cache_lookup(dir, f.want, path)) {
		rc = check_hit(&f, path);
		goto out;
	}
	rc = mkdir_p(dir, 0755);
	if (rc) {
		set_err(err, rc, "cannot create '%s': %s", dir, strerror(-rc));
		goto out;
	}
	since = wall_ms();
	rc = lock_file(lockp, 0, &lock_fd);
	if (rc) {
		set_err(err, rc, "cannot lock '%s': %s", lockp, strerror(-rc));
		goto out;
	}
	/* Whoever held the lock may have just finished (or failed) this very download. */
	if (cache_lookup(dir, f.want, path)) {
		rc = check_hit(&f, path);
		goto out;
	}
	rc = recorded_failure(dir, since, err);
	if (rc)
		goto out;
	remove_stale_temps(dir);

	rc = tls_client_new(&f.tls, f.ca_file, err);
	if (rc)
		goto out;
	rc = take_slot(slots, f.max_parallel, &slot_fd);
	if (rc) {
		set_err(err, rc, "cannot lock a download slot in '%s': %s", slots, strerror(-rc));
		goto out;
	}
	rc = download_to_cache(&f, dir, path);
	if (!rc) {
		char *failed = xasprintf("%s/failed", dir);

		unlink(failed);
		free(failed);
	} else if (shareable(rc)) {
		record_failure(dir, rc, err ? err->p : "");
	}
out:
	if (slot_fd >= 0)
		close(slot_fd);
	if (lock_fd >= 0)
		close(lock_fd);
	tls_client_free(f.tls);
	free(abs);
	free(dir);
	free(slots);
	free(lockp);
	return rc;
}
