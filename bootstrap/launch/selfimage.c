/*
 * This executable as the launcher sends it: its bytes and sha256 (read once), the seed
 * file that nodes which are directories here link, and the zstd-packed image with its
 * cache (bootstrap/launch/selfimage.h). The install session that uses them is install.c.
 */
#include "bootstrap/launch/selfimage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "bootstrap/launch/stub/pack.h"

#include "lib/buf.h"
#include "lib/log.h"
#include "lib/self.h"
#include "lib/sha256.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "lib/banned.h"

#define SELF_MAX ((size_t)256 << 20)
/*
 * zstd levels of the packed image (after the branch filter): quick, made when a launch
 * first needs it (45% of the binary in 0.1 s); best, made then in the background for the
 * launches after it (41%, 1.4 s of CPU here).
 */
#define PACK_LEVEL_QUICK 9
#define PACK_LEVEL_BEST 19

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

/* --- the seed: the image as a file here ------------------------------------------------ */

/*
 * Nodes that are directories of this machine (runner_ops.home_here: the local runner) get
 * the image as hard links of one file, $SKIFF_HOME/cache/self-SHA: one copy on the disk
 * however many nodes, and nothing to decompress. That file is checked (its bytes against
 * our image) before this process first links it, and written anew when it is missing or wrong; when
 * it is written, the images of other binaries that no node links any more (a link count
 * of 1) and their packed caches go.
 *
 * A link shares the file: it is read-only (SEED_MODE) so that no write through one node's
 * name changes the others', and private as the rest of $SKIFF_HOME.
 */
#define SEED_MODE 0500
static struct {
	pthread_mutex_t mu;
	int state; /* 0: not looked at yet; 1: ready at path; -1: cannot be had */
	char *path;
} seed = {PTHREAD_MUTEX_INITIALIZER, 0, NULL};

/* Removes from dir the images and packed caches of binaries other than sha, unlinked. */
static void seed_gc(const char *dir, const char *sha)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;

	while (d && (e = readdir(d))) {
		const char *name = e->d_name, *rest = name + 5 + SHA256_HEX_LEN;
		char other[SHA256_HEX_LEN + 1];

		if (strncmp(name, "self-", 5) || strlen(name) < 5 + SHA256_HEX_LEN)
			continue;
		memcpy(other, name + 5, SHA256_HEX_LEN);
		other[SHA256_HEX_LEN] = '\0';
		if (!sha256_hex_valid(other) || !strcmp(other, sha))
			continue;
		if (*rest && !ends_with(rest, ".zst"))
			continue; /* a lock, a temp file: another process's */
		if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
		    (!*rest && st.st_nlink > 1))
			continue; /* an image some node still links */
		if (!unlinkat(dirfd(d), name, 0))
			debug("removed '%s/%s', of another skiff binary", dir, name);
	}
	if (d)
		closedir(d);
}

const char *boot_self_seed(const char *data, size_t len, const char *sha)
{
	const char *home = skiff_home(), *path = NULL;
	struct buf have = BUF_INIT(SELF_MAX);
	struct stat st;
	char *dir;

	pthread_mutex_lock(&seed.mu);
	if (seed.state || !home)
		goto out;
	seed.state = -1;
	dir = xasprintf("%s/cache", home);
	seed.path = xasprintf("%s/self-%s", dir, sha);
	/* Our image is in memory already: the file is right when it holds exactly that. */
	if (!lstat(seed.path, &st) && S_ISREG(st.st_mode) && (size_t)st.st_size == len &&
	    !buf_read_file(&have, seed.path) && have.len == len && !memcmp(have.p, data, len)) {
		seed.state = 1;
	} else if (!mkdir_p(dir, 0700) && !write_file_atomic(seed.path, data, len, SEED_MODE)) {
		seed.state = 1;
		seed_gc(dir, sha);
	}
	free(dir);
out:
	if (seed.state == 1)
		path = seed.path;
	pthread_mutex_unlock(&seed.mu);
	buf_release(&have);
	return path;
}

/* --- this executable, compressed -------------------------------------------------------- */

static struct {
	struct buf z;
	int rc;
} packed;
static pthread_once_t pack_once = PTHREAD_ONCE_INIT;

/* 1 if z decompresses and un-filters to exactly the image whose sha256 is sha (len bytes). */
static int pack_ok(const struct buf *z, const char *sha, size_t len)
{
	char *out = xmalloc(len + 1), hex[SHA256_HEX_LEN + 1];
	size_t n = ZSTD_decompress(out, len + 1, z->p, z->len);
	int good = !ZSTD_isError(n) && n == len;

	if (good) {
		bcj_filter((unsigned char *)out, n, 0, n, 0);
		sha256_hex(out, n, hex);
		good = !strcmp(hex, sha);
	}
	free(out);
	return good;
}

/* The cache file of our image packed at level (in $SKIFF_HOME/cache), or NULL: no home. */
static char *pack_path(const char *sha, int level, const char *suffix)
{
	const char *home = skiff_home();

	return home ? xasprintf("%s/cache/self-%s.%d.zst%s", home, sha, level, suffix) : NULL;
}

/* 0 and z the packed image (pack.h: filtered, then zstd at level), or an error (printed). */
static int pack_make(const char *data, size_t len, int level, struct buf *z)
{
	unsigned char *filtered = xmalloc(len ? len : 1);
	size_t cap = ZSTD_compressBound(len), n;
	int rc = 0;

	buf_reset(z);
	memcpy(filtered, data, len);
	bcj_filter(filtered, len, 0, len, 1);
	if (buf_grow(z, cap)) {
		rc = error("out of memory");
	} else {
		n = ZSTD_compress(z->p, cap, filtered, len, level);
		if (ZSTD_isError(n))
			rc = error("cannot compress skiff's own executable: %s",
			           ZSTD_getErrorName(n));
		else
			buf_setlen(z, n);
	}
	free(filtered);
	return rc;
}

/*
 * Keeps z at path, a cache: no fsync (a torn one fails pack_ok()). The cache dir is made
 * only with make_dir: the background packer never makes again a home that was removed
 * meanwhile.
 */
static void pack_keep(const char *path, const struct buf *z, int make_dir)
{
	char *dir = xstrdup(path);

	*strrchr(dir, '/') = '\0';
	if (!make_dir || !mkdir_p(dir, 0700))
		write_file_quick(path, z->p, z->len, 0600);
	free(dir);
}

/* `skiff __pack-self SHA` in the background, at the lowest priority, not waited for. */
static void pack_best_later(const char *sha)
{
	char *argv[] = {(char *)self_path(NULL), "__pack-self", (char *)sha, NULL};
	struct spawn_opts o = SPAWN_OPTS_INIT;
	pid_t pid;

	o.argv = argv;
	o.pgrp = SPAWN_SESSION_NEW;
	if (argv[0] && !spawn(&o, &pid))
		debug("packing skiff's image at zstd level %d in the background (pid %ld)",
		      PACK_LEVEL_BEST, (long)pid);
	/* Not reaped: it outlives us by design (re-parented to init). */
}

/*
 * The image as sent: the best pack kept, else the quick one kept, else a quick one made
 * now (and kept). Without a best one, __pack-self makes it in the background for the
 * launches after this one.
 */
static void pack_load(void)
{
	const char *data, *sha;
	char *best = NULL, *quick = NULL;
	size_t len;

	buf_init(&packed.z, SELF_MAX);
	packed.rc = boot_self_image(&data, &len, &sha);
	if (packed.rc)
		return;
	best = pack_path(sha, PACK_LEVEL_BEST, "");
	quick = pack_path(sha, PACK_LEVEL_QUICK, "");
	if (best && !buf_read_file(&packed.z, best) && pack_ok(&packed.z, sha, len))
		goto out;
	if (best)
		pack_best_later(sha);
	buf_reset(&packed.z);
	if (quick && !buf_read_file(&packed.z, quick) && pack_ok(&packed.z, sha, len))
		goto out;
	packed.rc = pack_make(data, len, PACK_LEVEL_QUICK, &packed.z);
	if (!packed.rc && quick) {
		/* This binary's first pack here: the caches of others go (seed_gc()). */
		char *dir = xstrdup(quick);

		pack_keep(quick, &packed.z, 1);
		*strrchr(dir, '/') = '\0';
		seed_gc(dir, sha);
		free(dir);
	}
out:
	free(best);
	free(quick);
}

int boot_self_pack_best(const char *sha)
{
	struct buf z = BUF_INIT(SELF_MAX);
	const char *data, *own;
	char *path = pack_path(sha, PACK_LEVEL_BEST, ""), *lock = NULL;
	size_t len;
	int fd = -1, locked = 0, rc;

	rc = boot_self_image(&data, &len, &own);
	if (!rc && strcmp(own, sha))
		rc = error("this executable's sha256 is %s, not %.64s", own, sha);
	if (!rc && !path)
		rc = -ENOENT;
	if (rc)
		goto out;
	/* One packer per binary and home; the lock goes with the process. */
	lock = pack_path(sha, PACK_LEVEL_BEST, ".lock");
	fd = open(lock, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
		goto out; /* another packs it (or the home is gone) */
	locked = 1;
	if (!buf_read_file(&z, path) && pack_ok(&z, sha, len))
		goto out; /* packed already */
	rc = pack_make(data, len, PACK_LEVEL_BEST, &z);
	if (!rc)
		pack_keep(path, &z, 0);
out:
	if (locked)
		unlink(lock); /* ours: another's stays */
	if (fd >= 0)
		close(fd);
	free(lock);
	free(path);
	buf_release(&z);
	return rc;
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
