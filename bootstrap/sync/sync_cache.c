/*
 * What each end keeps between syncs, outside the synced tree (docs/sync.md, "State"):
 * the node's stored manifest of a DST, and the launcher's copy of what it believes a node
 * holds (that manifest and its digest), so that a sync of an unchanged tree needs neither
 * side to send a manifest.
 */
#include "bootstrap/sync/sync_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/sha256.h"
#include "lib/util.h"
#include "lib/banned.h"

#define CACHE_MAGIC "skiff-sync-cache 2 "
/* Cache files not used for this long are removed when another one is written. */
#define CACHE_MAX_AGE_S (30 * 24 * 3600)

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

void sync_digest_hex(const unsigned char d[32], char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	int i;

	for (i = 0; i < 32; i++) {
		hex[2 * i] = digits[d[i] >> 4];
		hex[2 * i + 1] = digits[d[i] & 15];
	}
	hex[64] = '\0';
}

int sync_digest_parse(const char *hex, unsigned char d[32])
{
	int i, hi, lo;

	for (i = 0; i < 32; i++) {
		hi = hexval(hex[2 * i]);
		lo = hi < 0 ? -1 : hexval(hex[2 * i + 1]);
		if (lo < 0)
			return -EINVAL;
		d[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

/* SKIFF_HOME/sync, created (0700); NULL (printed) when there is no home. */
static char *sync_dir(const char *sub)
{
	const char *home = skiff_home();
	char *d, *s;
	int r;

	if (!home)
		return NULL;
	d = xasprintf("%s/sync", home);
	r = mkdir_p(home, 0700);
	if (!r)
		r = ensure_private_dir(d);
	s = sub ? xasprintf("%s/%s", d, sub) : NULL;
	if (!r && s)
		r = ensure_private_dir(s);
	if (r) {
		errno = -r;
		error_errno("cannot create '%s'", s ? s : d);
		free(d);
		free(s);
		return NULL;
	}
	if (s) {
		free(d);
		return s;
	}
	return d;
}

char *sync_stored_path(const char *dst_real)
{
	char hex[SHA256_HEX_LEN + 1], *d, *p;

	d = sync_dir(NULL);
	if (!d)
		return NULL;
	sha256_hex(dst_real, strlen(dst_real), hex);
	p = xasprintf("%s/%s.manifest", d, hex);
	free(d);
	return p;
}

/* --- the launcher's cache ----------------------------------------------------------- */

static char *cache_path(const char *key)
{
	char hex[SHA256_HEX_LEN + 1], *d, *p;

	d = sync_dir("nodes");
	if (!d)
		return NULL;
	sha256_hex(key, strlen(key), hex);
	p = xasprintf("%s/%s", d, hex);
	free(d);
	return p;
}

int sync_cache_read(const char *key, unsigned char digest[32], unsigned char shape[32],
                    struct buf *text)
{
	char *path = cache_path(key);
	size_t n = strlen(CACHE_MAGIC);
	const char *nl;
	int r;

	buf_reset(text);
	if (!path)
		return -ENOENT;
	r = buf_read_file(text, path);
	free(path);
	if (r)
		return -ENOENT;
	nl = memchr(text->p, '\n', text->len);
	if (!nl || (size_t)(nl - text->p) != n + 129 || memcmp(text->p, CACHE_MAGIC, n) ||
	    sync_digest_parse(text->p + n, digest) || text->p[n + 64] != ' ' ||
	    sync_digest_parse(text->p + n + 65, shape)) {
		buf_reset(text);
		return -ENOENT;
	}
	/* Keep the manifest text only. */
	memmove(text->p, nl + 1, text->len - (size_t)(nl + 1 - text->p));
	buf_setlen(text, text->len - (size_t)(nl + 1 - text->p));
	return 0;
}

/* Removes cache files that were not used for a month (a node long gone). */
static void cache_prune(const char *dir)
{
	time_t now = time(NULL);
	struct dirent *e;
	struct stat st;
	DIR *d;
	int dfd;

	d = opendir(dir);
	if (!d)
		return;
	dfd = dirfd(d);
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISREG(st.st_mode) && now - st.st_mtime > CACHE_MAX_AGE_S)
			unlinkat(dfd, e->d_name, 0);
	}
	closedir(d);
}

int sync_cache_write(const char *key, const unsigned char digest[32], const struct sync_manifest *m)
{
	struct buf text = BUF_INIT(SYNC_MANIFEST_MAX + 256);
	char hex[65], shex[65], *path = cache_path(key), *slash;
	unsigned char shape[32];
	int r;

	if (!path)
		return -ENOENT;
	sync_digest_hex(digest, hex);
	sync_manifest_shape(m, shape);
	sync_digest_hex(shape, shex);
	r = buf_addf(&text, "%s%s %s\n", CACHE_MAGIC, hex, shex);
	if (!r)
		r = sync_manifest_format(m, &text);
	if (r)
		goto out;
	/* A cache: no fsync (a torn file reads as no cache). */
	r = write_file_quick(path, text.p, text.len, 0600);
	if (r) {
		debug("cannot write the sync cache '%s': %s", path, strerror(-r));
	}
	slash = strrchr(path, '/');
	if (slash) {
		*slash = '\0';
		cache_prune(path);
	}
out:
	free(path);
	buf_release(&text);
	return r;
}

void sync_cache_drop(const char *key)
{
	char *path = cache_path(key);

	if (path)
		unlink(path);
	free(path);
}

/* --- digests ------------------------------------------------------------------------- */

static void put64(unsigned char *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void digest_of(const struct sync_manifest *m, int hashes, unsigned char out[32]);

int sync_manifest_digest(const struct sync_manifest *m, unsigned char out[32])
{
	digest_of(m, 1, out);
	return 0;
}

void sync_manifest_shape(const struct sync_manifest *m, unsigned char out[32])
{
	digest_of(m, 0, out);
}

static void digest_of(const struct sync_manifest *m, int hashes, unsigned char out[32])
{
	unsigned char b[1 + 8 * 3 + 64 + 16];
	struct sha256_ctx c;
	const struct sync_entry *e;
	size_t i, pl, tl;

	sha256_init(&c);
	for (i = 0; i < m->n; i++) {
		e = &m->v[i];
		if (e->type == SYNC_T_NONE)
			continue;
		pl = strlen(e->path);
		tl = e->target ? strlen(e->target) : 0;
		/* What a sync decides by: a directory's or link's mtime changes by itself. */
		memset(b, 0, sizeof(b));
		b[0] = (unsigned char)e->type;
		put64(b + 1, e->mode);
		put64(b + 9, e->type == SYNC_T_FILE ? e->size : 0);
		put64(b + 17, e->type == SYNC_T_FILE ? (uint64_t)e->mtime_ns : 0);
		if (hashes && e->type == SYNC_T_FILE && e->hash[0])
			memcpy(b + 25, e->hash, SYNC_HASH_HEX);
		put64(b + 89, pl);
		put64(b + 97, tl);
		sha256_update(&c, b, sizeof(b));
		sha256_update(&c, e->path, pl);
		if (tl)
			sha256_update(&c, e->target, tl);
	}
	sha256_final(&c, out);
}
