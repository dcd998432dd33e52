/*
 * Manifests and the checks both ends share: escaping, path and symlink rules, the
 * manifest's text form, the safe openat() walk. See sync.h and docs/sync.md.
 */
#include "bootstrap/sync/sync_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

#define MANIFEST_MAGIC "skiff-sync-manifest"
/*
 * The manifest's text form; the stream has a version of its own (sync_wire.h). Version 1
 * held SHA-256 hashes: such a manifest is still read (a node's, from an older skiff), its
 * hashes as unknown, so that a node keeps owning what it has.
 */
#define MANIFEST_VERSION 2
#define SHA256_HEX 64

/* --- escaping and path rules --------------------------------------------------------- */

static int needs_escape(unsigned char c)
{
	return c <= ' ' || c > '~' || c == '\\';
}

int sync_escape(struct buf *out, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t len0 = out->len, run;
	const unsigned char *p;
	char x[4] = {'\\', 'x', 0, 0};
	int r = 0;

	if (!*s)
		return -EINVAL;
	for (p = (const unsigned char *)s; *p && !r;) {
		/* The bytes kept as they are go in one piece: most paths have nothing else. */
		for (run = 0; p[run] && !needs_escape(p[run]); run++)
			;
		if (run) {
			r = buf_add(out, p, run);
			p += run;
			continue;
		}
		x[2] = hex[*p >> 4];
		x[3] = hex[*p & 15];
		r = buf_add(out, x, sizeof(x));
		p++;
	}
	if (r)
		buf_setlen(out, len0);
	return r;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int sync_unescape(struct buf *out, const char *s, size_t len)
{
	size_t i, len0 = out->len;
	int r = 0, hi, lo;

	if (!len)
		return -EINVAL;
	for (i = 0; i < len && !r; i++) {
		if (s[i] != '\\') {
			if (needs_escape((unsigned char)s[i]))
				r = -EINVAL;
			else
				r = buf_addch(out, s[i]);
			continue;
		}
		if (len - i < 4 || s[i + 1] != 'x') {
			r = -EINVAL;
			break;
		}
		hi = hexval(s[i + 2]);
		lo = hexval(s[i + 3]);
		if (hi < 0 || lo < 0 || !(hi | lo)) {
			r = -EINVAL; /* a bad digit, or \x00 */
			break;
		}
		r = buf_addch(out, (char)(hi << 4 | lo));
		i += 3;
	}
	if (r)
		buf_setlen(out, len0);
	return r;
}

int sync_path_check(const char *path, const char **why)
{
	const char *p = path, *e;
	const char *reason = NULL;
	size_t n;

	if (!*path)
		reason = "empty path";
	else if (*path == '/')
		reason = "absolute path";
	else if (strlen(path) > SYNC_PATH_MAX)
		reason = "path too long";
	while (!reason) {
		e = strchr(p, '/');
		n = e ? (size_t)(e - p) : strlen(p);
		if (!n)
			reason = "empty path component";
		else if (n > SYNC_NAME_MAX)
			reason = "path component too long";
		else if ((n == 1 && *p == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			reason = "'.' or '..' in path";
		if (!e)
			break;
		p = e + 1;
	}
	if (why)
		*why = reason;
	return reason ? -EINVAL : 0;
}

int sync_link_check(const char *path, const char *target, const char **why)
{
	const char *p = target, *e, *s;
	const char *reason = NULL;
	int depth = 0, up = 0, names = 0;
	size_t n;

	for (s = path; *s; s++)
		depth += *s == '/';
	if (!*target)
		reason = "empty symlink target";
	else if (*target == '/')
		reason = "absolute symlink target";
	else if (strlen(target) > SYNC_PATH_MAX)
		reason = "symlink target too long";
	while (!reason) {
		e = strchr(p, '/');
		n = e ? (size_t)(e - p) : strlen(p);
		if (!n)
			reason = "empty component in symlink target";
		else if (n > SYNC_NAME_MAX)
			reason = "symlink target component too long";
		else if (n == 1 && *p == '.')
			reason = "'.' in symlink target";
		else if (n == 2 && p[0] == '.' && p[1] == '.') {
			/* Only a leading run of "..": after a name it would climb out of
			 * whatever that name resolves to, which may be another symlink. */
			if (names)
				reason = "'..' after a name in symlink target";
			else if (++up > depth)
				reason = "symlink target points outside the tree";
		} else
			names++;
		if (!e)
			break;
		p = e + 1;
	}
	if (why)
		*why = reason;
	return reason ? -EINVAL : 0;
}

int sync_reserved_path(const char *path)
{
	/* SYNC_TMP_PREFIX starts with SYNC_RESERVED_PREFIX: the top level is covered. */
	return starts_with(path, SYNC_RESERVED_PREFIX) || strstr(path, "/" SYNC_TMP_PREFIX);
}

int sync_open_parent(int root_fd, const char *path, int create, const char **base, size_t *bad)
{
	const int oflags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	char name[SYNC_NAME_MAX + 1];
	const char *p = path, *slash;
	size_t len;
	int fd, nfd, r;

	fd = openat(root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while ((slash = strchr(p, '/'))) {
		len = (size_t)(slash - p);
		if (len > SYNC_NAME_MAX) {
			r = -ENAMETOOLONG;
			goto out;
		}
		memcpy(name, p, len);
		name[len] = '\0';
		nfd = openat(fd, name, oflags);
		if (nfd < 0 && errno == ENOENT && create) {
			if (mkdirat(fd, name, 0755) < 0 && errno != EEXIST) {
				r = -errno;
				goto out;
			}
			nfd = openat(fd, name, oflags);
		}
		if (nfd < 0) {
			r = -errno;
			goto out;
		}
		close(fd);
		fd = nfd;
		p = slash + 1;
	}
	*base = p;
	return fd;
out:
	if (bad)
		*bad = (size_t)(slash - path);
	close(fd);
	return r;
}

int sync_dir_cache_open(struct sync_dir_cache *c, int root_fd, const char *path, int create,
                        const char **base, size_t *bad)
{
	const char *slash = strrchr(path, '/');
	size_t len = slash ? (size_t)(slash - path) : 0;
	int fd;

	if (c->dir && strlen(c->dir) == len && !memcmp(c->dir, path, len)) {
		*base = slash ? slash + 1 : path;
		return c->fd;
	}
	fd = sync_open_parent(root_fd, path, create, base, bad);
	if (fd < 0)
		return fd;
	sync_dir_cache_release(c);
	c->dir = xstrndup(path, len);
	c->fd = fd;
	return fd;
}

void sync_dir_cache_release(struct sync_dir_cache *c)
{
	if (c->dir)
		close(c->fd);
	free(c->dir);
	c->dir = NULL;
	c->fd = -1;
}

/* --- the manifest ------------------------------------------------------------------- */

void sync_manifest_init(struct sync_manifest *m)
{
	memset(m, 0, sizeof(*m));
}

static void entry_free(struct sync_entry *e)
{
	free(e->path);
	free(e->target);
}

int64_t sync_ts_ns(const struct timespec *t)
{
	const int64_t per_s = 1000000000;
	int64_t s = (int64_t)t->tv_sec;
	int64_t ns = t->tv_nsec >= 0 && t->tv_nsec < per_s ? (int64_t)t->tv_nsec : 0;

	if (s > (INT64_MAX - ns) / per_s)
		return INT64_MAX;
	if (s < INT64_MIN / per_s)
		return -INT64_MAX; /* not INT64_MIN: a manifest's number is a sign and a magnitude
		                    */
	return s * per_s + ns;
}

void sync_manifest_truncate(struct sync_manifest *m, size_t n)
{
	while (m->n > n)
		entry_free(&m->v[--m->n]);
}

void sync_manifest_release(struct sync_manifest *m)
{
	if (!m)
		return;
	sync_manifest_truncate(m, 0);
	free(m->v);
	sync_manifest_init(m);
}

struct sync_entry *sync_manifest_add(struct sync_manifest *m, const char *path, char type)
{
	struct sync_entry *e;

	if (m->n == m->alloc) {
		m->alloc = m->alloc ? 2 * m->alloc : 64;
		m->v = xrealloc(m->v, m->alloc * sizeof(*m->v));
	}
	e = &m->v[m->n++];
	memset(e, 0, sizeof(*e));
	e->path = xstrdup(path);
	e->type = type;
	e->seq = m->next_seq++;
	return e;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct sync_entry *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	if (c)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int ptr_cmp(const void *a, const void *b)
{
	return entry_cmp(*(const struct sync_entry *const *)a,
	                 *(const struct sync_entry *const *)b);
}

/* Sorts by (path, seq): through an array of pointers, the entries being large. */
static void sort_entries(struct sync_manifest *m)
{
	struct sync_entry **p, *v;
	size_t i;

	for (i = 1; i < m->n && entry_cmp(&m->v[i - 1], &m->v[i]) < 0; i++)
		;
	if (i >= m->n)
		return; /* already in order: a manifest read back, most often */
	p = xmalloc(m->n * sizeof(*p));
	for (i = 0; i < m->n; i++)
		p[i] = &m->v[i];
	qsort(p, m->n, sizeof(*p), ptr_cmp);
	v = xmalloc(m->alloc * sizeof(*v));
	for (i = 0; i < m->n; i++)
		v[i] = *p[i];
	free(m->v);
	m->v = v;
	free(p);
}

void sync_manifest_sort(struct sync_manifest *m)
{
	size_t i, k = 0;

	if (m->n > 1)
		sort_entries(m);
	/* Of a run with the same path keep the last (newest); drop removed entries. */
	for (i = 0; i < m->n; i++) {
		if ((i + 1 < m->n && !strcmp(m->v[i].path, m->v[i + 1].path)) ||
		    m->v[i].type == SYNC_T_NONE) {
			entry_free(&m->v[i]);
			continue;
		}
		m->v[k++] = m->v[i];
	}
	m->n = k;
}

struct sync_entry *sync_manifest_find(const struct sync_manifest *m, const char *path)
{
	size_t lo = 0, hi = m->n, mid;
	int c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = strcmp(path, m->v[mid].path);
		if (!c)
			return &m->v[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

/*
 * v in base 8 or 10 (a '-' first if neg) and then c, at *o; returns the end. Manifests
 * are formatted by hand: printf for each field of a 5,000-entry tree took 10 ms.
 */
static char *put_num(char *o, uint64_t v, unsigned base, int neg, char c)
{
	char t[24];
	size_t n = 0;

	if (neg)
		*o++ = '-';
	do
		t[n++] = (char)('0' + v % base);
	while ((v /= base));
	while (n)
		*o++ = t[--n];
	*o++ = c;
	return o;
}

static char *put_i64(char *o, int64_t v, char c)
{
	/* The magnitude of INT64_MIN does not fit in an int64_t: take it unsigned. */
	return put_num(o, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, 10, v < 0, c);
}

int sync_manifest_format(const struct sync_manifest *m, struct buf *out)
{
	const struct sync_entry *e;
	size_t i, len0 = out->len, count = 0;
	char line[2 + 4 + 21 + 21 + SYNC_HASH_HEX + 8], *o;
	int r;

	r = buf_addf(out, MANIFEST_MAGIC " %d\n", MANIFEST_VERSION);
	for (i = 0; i < m->n && !r; i++) {
		e = &m->v[i];
		o = line;
		switch (e->type) {
		case SYNC_T_DIR:
			*o++ = 'd', *o++ = ' ';
			o = put_num(o, e->mode & 0777, 8, 0, ' ');
			o = put_i64(o, e->mtime_ns, ' ');
			break;
		case SYNC_T_FILE:
			*o++ = 'f', *o++ = ' ';
			o = put_num(o, e->mode & 0777, 8, 0, ' ');
			o = put_num(o, e->size, 10, 0, ' ');
			o = put_i64(o, e->mtime_ns, ' ');
			if (e->hash[0]) {
				memcpy(o, e->hash, SYNC_HASH_HEX);
				o += SYNC_HASH_HEX;
			} else {
				*o++ = '-';
			}
			*o++ = ' ';
			break;
		case SYNC_T_LINK:
			*o++ = 'l', *o++ = ' ';
			o = put_i64(o, e->mtime_ns, ' ');
			break;
		default: continue;
		}
		r = buf_add(out, line, (size_t)(o - line));
		if (!r && e->type == SYNC_T_LINK) {
			r = e->target ? sync_escape(out, e->target) : -EINVAL;
			if (!r)
				r = buf_addch(out, ' ');
		}
		if (!r)
			r = sync_escape(out, e->path);
		if (!r)
			r = buf_addch(out, '\n');
		count++;
	}
	if (!r)
		r = buf_addf(out, "end %zu\n", count);
	if (r)
		buf_setlen(out, len0);
	return r;
}

/* Whole-field decimal (or octal) number with an optional '-' when neg is allowed. */
static int parse_num(const char *s, size_t len, unsigned base, int neg, uint64_t max, uint64_t *out,
                     int *negative)
{
	uint64_t v = 0;
	size_t i = 0;

	*negative = 0;
	if (neg && len > 1 && s[0] == '-') {
		*negative = 1;
		i = 1;
	}
	if (i >= len || len - i > 22)
		return -EINVAL;
	for (; i < len; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (d >= base || v > (max - d) / base)
			return -EINVAL;
		v = v * base + d;
	}
	*out = v;
	return 0;
}

static int is_hash(const char *s, size_t len, int version)
{
	size_t i;

	if (len != (version == 1 ? SHA256_HEX : SYNC_HASH_HEX))
		return 0;
	for (i = 0; i < len; i++)
		if (hexval(s[i]) < 0)
			return 0;
	return 1;
}

#define MAX_FIELDS 6

static int split(const char *line, size_t len, const char **f, size_t *fl)
{
	const char *end = line + len, *sp;
	int n = 0;

	while (line <= end) {
		if (n == MAX_FIELDS)
			return -1;
		sp = memchr(line, ' ', (size_t)(end - line));
		if (!sp)
			sp = end;
		f[n] = line;
		fl[n++] = (size_t)(sp - line);
		line = sp + 1;
	}
	return n;
}

/* One entry line into m; a static reason on error. */
static const char *parse_entry(struct sync_manifest *m, const char *line, size_t len,
                               struct buf *tmp, int version)
{
	const char *f[MAX_FIELDS], *why;
	size_t fl[MAX_FIELDS];
	uint64_t mode = 0, size = 0, mt;
	struct sync_entry *e;
	char *target = NULL;
	int n, neg, pf;

	n = split(line, len, f, fl);
	if (n < 1 || fl[0] != 1)
		return "malformed line";
	switch (f[0][0]) {
	case 'd':
		if (n != 4 || parse_num(f[1], fl[1], 8, 0, 0777, &mode, &neg) ||
		    parse_num(f[2], fl[2], 10, 1, INT64_MAX, &mt, &neg))
			return "malformed directory line";
		pf = 3;
		break;
	case 'f':
		if (n != 6 || parse_num(f[1], fl[1], 8, 0, 0777, &mode, &neg) ||
		    parse_num(f[2], fl[2], 10, 0, INT64_MAX, &size, &neg) ||
		    parse_num(f[3], fl[3], 10, 1, INT64_MAX, &mt, &neg) ||
		    !(is_hash(f[4], fl[4], version) || (fl[4] == 1 && f[4][0] == '-')))
			return "malformed file line";
		pf = 5;
		break;
	case 'l':
		if (n != 4 || parse_num(f[1], fl[1], 10, 1, INT64_MAX, &mt, &neg))
			return "malformed symlink line";
		buf_reset(tmp);
		if (sync_unescape(tmp, f[2], fl[2]))
			return "badly escaped symlink target";
		target = buf_detach(tmp, NULL);
		pf = 3;
		break;
	default: return "unknown entry type";
	}
	buf_reset(tmp);
	if (sync_unescape(tmp, f[pf], fl[pf])) {
		free(target);
		return "badly escaped path";
	}
	if (strcmp(tmp->p, SYNC_FILE_ENTRY) && sync_path_check(tmp->p, &why)) {
		free(target);
		return why;
	}
	if (target && sync_link_check(tmp->p, target, &why)) {
		free(target);
		return why;
	}
	e = sync_manifest_add(m, tmp->p, f[0][0]);
	e->mode = (unsigned)mode;
	e->size = size;
	e->mtime_ns = neg ? -(int64_t)mt : (int64_t)mt;
	e->target = target;
	if (e->type == SYNC_T_FILE && f[4][0] != '-' && version > 1) {
		memcpy(e->hash, f[4], SYNC_HASH_HEX);
		e->hash[SYNC_HASH_HEX] = '\0';
	}
	return NULL;
}

int sync_manifest_parse(struct sync_manifest *m, const char *text, size_t len, const char *what)
{
	const char *p = text, *end = text + len, *nl, *why = NULL;
	struct buf tmp = BUF_INIT(2 * SYNC_PATH_MAX + 16);
	struct sync_manifest t;
	size_t lineno = 0;
	uint64_t count = 0;
	int done = 0, neg, version = 0;

	sync_manifest_init(&t);
	while (p < end && !why) {
		lineno++;
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl) {
			why = "missing newline at the end";
			break;
		}
		if (done) {
			why = "text after the end line";
		} else if (lineno == 1) {
			if ((size_t)(nl - p) != strlen(MANIFEST_MAGIC " 1") ||
			    memcmp(p, MANIFEST_MAGIC " ", strlen(MANIFEST_MAGIC " ")))
				why = "not a skiff sync manifest";
			else if (p[strlen(MANIFEST_MAGIC " ")] != '1' &&
			         p[strlen(MANIFEST_MAGIC " ")] != '0' + MANIFEST_VERSION)
				why = "unsupported manifest version";
			else
				version = p[strlen(MANIFEST_MAGIC " ")] - '0';
		} else if (nl - p > 4 && !memcmp(p, "end ", 4)) {
			if (parse_num(p + 4, (size_t)(nl - p - 4), 10, 0, SIZE_MAX, &count, &neg) ||
			    count != t.n)
				why = "entry count does not match the end line";
			done = 1;
		} else if (t.n >= SYNC_MAX_ENTRIES) {
			why = "too many entries";
		} else {
			why = parse_entry(&t, p, (size_t)(nl - p), &tmp, version);
		}
		p = nl + 1;
	}
	if (!why && !done) {
		why = lineno ? "cut off (no end line)" : "empty";
		lineno++;
	}
	if (!why) {
		/* Sorting keeps one entry per path: fewer than counted means duplicates. */
		sync_manifest_sort(&t);
		if (t.n != count) {
			why = "duplicate path";
			lineno = 0;
		}
	}
	buf_release(&tmp);
	if (why) {
		sync_manifest_release(&t);
		if (lineno)
			error("%s:%zu: %s", what, lineno, why);
		else
			error("%s: %s", what, why);
		return -EINVAL;
	}
	sync_manifest_merge(m, &t);
	return 0;
}

int sync_manifest_read_fd(struct sync_manifest *m, int fd, const char *what)
{
	struct buf text = BUF_INIT(SYNC_MANIFEST_MAX);
	int r = buf_read_fd(&text, fd);

	if (r) {
		errno = -r;
		r = error_errno("cannot read %s", what);
	} else {
		r = sync_manifest_parse(m, text.p, text.len, what);
	}
	buf_release(&text);
	return r;
}

void sync_manifest_merge(struct sync_manifest *m, struct sync_manifest *from)
{
	struct sync_entry *e;
	size_t i, seq;

	for (i = 0; i < from->n; i++) {
		e = sync_manifest_add(m, "", from->v[i].type);
		seq = e->seq;
		free(e->path);
		*e = from->v[i];
		e->seq = seq;
	}
	from->n = 0;
	sync_manifest_release(from);
	sync_manifest_sort(m);
}

/* --- odds and ends ------------------------------------------------------------------ */

int sync_stats_format(const struct sync_stats *st, struct buf *out)
{
	return buf_addf(out,
	                "files=%" PRIu64 " dirs=%" PRIu64 " links=%" PRIu64 " bytes=%" PRIu64
	                " deleted=%" PRIu64 " skipped=%" PRIu64 " unchanged=%" PRIu64,
	                st->files, st->dirs, st->links, st->bytes, st->deleted, st->skipped,
	                st->unchanged);
}

char *sync_expand_dst(const char *dst)
{
	const char *home = NULL, *rest = dst;
	size_t len;
	char *out;

	if (!*dst) {
		error("empty sync destination");
		return NULL;
	}
	if (dst[0] == '~') {
		if (dst[1] && dst[1] != '/') {
			error("cannot sync to '%s': only '~/' paths are supported, not '~user'",
			      dst);
			return NULL;
		}
		rest = dst + 1;
		while (*rest == '/')
			rest++;
	}
	if (*dst != '/') {
		home = user_home();
		if (!home) {
			error("cannot expand '%s': $HOME is not set on this node", dst);
			return NULL;
		}
	}
	/* A cluster home keeps its own ~/sky_workdir (lib/util.h). */
	if (!home)
		out = xstrdup(dst);
	else if (!(out = node_tilde_path(rest)))
		out = *rest ? xasprintf("%s/%s", home, rest) : xstrdup(home);
	len = strlen(out);
	while (len > 1 && out[len - 1] == '/')
		out[--len] = '\0';
	return out;
}
