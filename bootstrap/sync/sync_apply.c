/*
 * The node's side of a sync on the file system: see bootstrap/sync/sync_apply.h and
 * docs/sync.md ("Applying it", "What the receiver refuses").
 */
#include "bootstrap/sync/sync_apply.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap/sync/sync_delta.h"
#include "lib/log.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "lib/banned.h"

#define BLK (256u << 10)

static int64_t mtime_of(const struct stat *st)
{
	return sync_ts_ns(&st->st_mtim);
}

static struct timespec ns_to_ts(int64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};

	if (ts.tv_nsec < 0) {
		ts.tv_sec--;
		ts.tv_nsec += 1000000000;
	}
	return ts;
}

/* A name made printable for a message (keeps errno, for error_errno()). */
static const char *shown(struct sync_apply *a, const char *s)
{
	int e = errno;

	buf_reset(&a->shown);
	if (!*s || sync_escape(&a->shown, s))
		buf_adds(&a->shown, *s ? "(a long name)" : "(an empty name)");
	errno = e;
	return a->shown.p;
}

/* Where path is on the node, for a message: DST/path, or DST itself in file mode. */
static const char *where(struct sync_apply *a, const char *path)
{
	int e = errno;

	buf_reset(&a->shown);
	if (a->flags & SYNC_FILE)
		buf_adds(&a->shown, a->dst);
	else if (buf_addf(&a->shown, "%s/", a->dst) || sync_escape(&a->shown, path))
		buf_adds(&a->shown, "(a long name)");
	errno = e;
	return a->shown.p;
}

int sync_apply_refuse(struct sync_apply *a, const char *path, const char *why)
{
	error("refusing '%s' in the sync stream: %s", shown(a, path), why);
	return -EPERM;
}

int sync_apply_check(struct sync_apply *a, const char *path, int type)
{
	const char *why;

	if (a->flags & SYNC_FILE) {
		if (strcmp(path, SYNC_FILE_ENTRY) || (type != REC_FILE && type != REC_DELTA &&
		                                      type != REC_TOUCH && type != REC_SIGREQ))
			return sync_apply_refuse(a, path, "a single-file sync holds one file");
		return 0;
	}
	if (sync_path_check(path, &why))
		return sync_apply_refuse(a, path, why);
	if (sync_reserved_path(path))
		return sync_apply_refuse(a, path, "a name the sync uses for itself");
	return 0;
}

static void tmp_name(struct sync_apply *a, char *out, size_t size)
{
	xsnprintf(out, size, SYNC_TMP_PREFIX "%ld.%lu", (long)getpid(), ++a->tmp_seq);
}

/* --- old files ------------------------------------------------------------------------ */

/*
 * The last close of a large file that was replaced or deleted frees its pages and blocks:
 * about 20 ms for 25 MB on ext4, time the answer need not wait for. With SYNC_LATE_FREE
 * such files are held open across the rename or unlink, and sync_free_late() closes them
 * in a process of its own once the session is over. At most LATE_MAX files and LATE_BYTES
 * bytes are held; past that they are closed at once.
 */
#define LATE_MIN (1u << 20)
#define LATE_MAX 256
#define LATE_BYTES ((uint64_t)16 << 30)

static int late_fds[LATE_MAX];
static size_t late_n;
static uint64_t late_bytes;

/* Closes fd, an old file that is no longer in DST, or holds it for sync_free_late(). */
static void reap(struct sync_apply *a, int fd)
{
	struct stat st;

	if (fd < 0)
		return;
	if ((a->flags & SYNC_LATE_FREE) && late_n < LATE_MAX && !fstat(fd, &st) &&
	    (uint64_t)st.st_size <= LATE_BYTES - late_bytes) {
		late_fds[late_n++] = fd;
		late_bytes += (uint64_t)st.st_size;
		return;
	}
	close(fd);
}

void sync_free_late(void)
{
	size_t i;

	if (!late_n)
		return;
	/* Ours are not the last references then (without a child they are, and it waits). */
	spawn_close_later(late_fds, late_n);
	for (i = 0; i < late_n; i++)
		close(late_fds[i]);
	late_n = 0;
	late_bytes = 0;
}

/* The file that path replaces, open, when it is one for reap() to hold; else -1. */
static int hold_old(struct sync_apply *a, int pfd, const char *base, const char *path)
{
	const struct sync_entry *e = NULL;
	struct stat st;
	int fd;

	if (!(a->flags & SYNC_LATE_FREE))
		return -1;
	if (!(a->flags & SYNC_FILE)) {
		e = sync_manifest_find(&a->base, path);
		if (!e || e->type != SYNC_T_FILE || e->size < LATE_MIN)
			return -1;
	}
	fd = openat(pfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < LATE_MIN ||
	                st.st_nlink != 1)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* The fd of path's parent directory (cached, not to be closed) and its last component. */
static int parent(struct sync_apply *a, const char *path, const char **base)
{
	size_t bad = 0;
	int fd;

	if (a->flags & SYNC_FILE) {
		*base = a->file_name;
		return a->dfd;
	}
	fd = sync_dir_cache_open(&a->dirs, a->dfd, path, 1, base, &bad);
	if (fd == -ENOTDIR || fd == -ELOOP || fd == -EEXIST) {
		struct buf b = BUF_INIT(0);
		char *p = xstrndup(path, bad);

		sync_escape(&b, p);
		error("refusing '%s' in the sync stream: '%s' is not a directory on the node "
		      "(a symlink?)",
		      shown(a, path), b.p);
		buf_release(&b);
		free(p);
		return -EPERM;
	}
	if (fd < 0) {
		errno = -fd;
		return error_errno("cannot open the directory of '%s'", where(a, path));
	}
	return fd;
}

static struct sync_entry *record(struct sync_apply *a, const char *path, char type,
                                 const struct stat *st)
{
	struct sync_entry *e;

	if (a->flags & SYNC_FILE)
		return NULL;
	e = sync_manifest_add(&a->added, path, type);
	e->mode = st->st_mode & 0777;
	e->mtime_ns = mtime_of(st);
	if (type == SYNC_T_FILE)
		e->size = (uint64_t)st->st_size;
	a->dirty = 1;
	return e;
}

/* --- files ------------------------------------------------------------------------------ */

struct fill {
	struct sync_apply *a;
	const char *path;
	int fd;         /* the temp file, -1 while discarding */
	int basis;      /* the old file, for copies; -1 if none */
	uint64_t bsize; /* its size */
	uint64_t size, got;
	struct sync_hash hash;
	int bad_copy; /* a copy the old file cannot give: the delta is discarded */
};

static int put(struct fill *f, const unsigned char *p, size_t n)
{
	int r;

	sync_hash_update(&f->hash, p, n);
	f->got += n;
	if (f->fd < 0 || f->bad_copy)
		return 0; /* it will not be kept: read on to its end */
	r = write_all(f->fd, p, n);
	if (r) {
		errno = -r;
		return error_errno("cannot write '%s'", where(f->a, f->path));
	}
	return 0;
}

static int room(struct fill *f, uint64_t n)
{
	struct sync_apply *a = f->a;

	if (n > f->size - f->got)
		return sync_apply_refuse(a, f->path, "more data than its size");
	if (n > a->max_bytes - a->written) {
		error("the sync is larger than the limit of %" PRIu64 " bytes (at '%s')",
		      a->max_bytes, shown(a, f->path));
		return -EFBIG;
	}
	a->written += n;
	return 0;
}

static int data(struct fill *f, uint32_t len)
{
	struct sync_apply *a = f->a;
	uint32_t take;
	int r;

	r = room(f, len);
	while (!r && len) {
		take = len < BLK ? len : BLK;
		r = sync_wire_read(a->in, a->blk, take, 0);
		if (!r)
			r = put(f, a->blk, take);
		len -= take;
	}
	return r;
}

static int zeros(struct fill *f, uint64_t n)
{
	struct sync_apply *a = f->a;
	uint64_t left;
	int r = room(f, n);

	if (r)
		return r;
	memset(a->blk, 0, BLK);
	for (left = n; left; left -= left < BLK ? left : BLK)
		sync_hash_update(&f->hash, a->blk, left < BLK ? (size_t)left : BLK);
	f->got += n;
	/* A hole: the file's size is set at the end. */
	if (f->fd >= 0 && lseek(f->fd, (off_t)n, SEEK_CUR) < 0)
		return error_errno("cannot write '%s'", where(a, f->path));
	return 0;
}

static int copy(struct fill *f, uint64_t off, uint64_t len)
{
	struct sync_apply *a = f->a;
	size_t take;
	ssize_t n;
	int r = room(f, len);

	if (r)
		return r;
	while (len) {
		take = len < BLK ? (size_t)len : BLK;
		n = f->basis < 0 || off > f->bsize || len > f->bsize - off
		            ? 0
		            : pread(f->basis, a->blk, take, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* Not in the old file (it changed since it was cut): the delta is lost. */
			f->bad_copy = 1;
			f->got += len;
			return 0;
		}
		r = put(f, a->blk, (size_t)n);
		if (r)
			return r;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

/* Reads the file's data records up to 'h' (1) or 'a' (0); the hash it ends with in hash. */
static int read_data(struct fill *f, int delta, unsigned char hash[SYNC_HASH_LEN])
{
	struct sync_apply *a = f->a;
	struct buf b = BUF_INIT(64);
	struct sync_cur c;
	uint32_t len;
	uint64_t x, y;
	int type, r;

	for (;;) {
		r = sync_rec_head(a->in, &type, &len);
		if (r == -ENODATA)
			r = error("truncated sync stream: '%s' is incomplete", shown(a, f->path));
		if (r)
			break;
		if (type == REC_DATA) {
			if (len > SYNC_REC_DATA_MAX) {
				r = sync_apply_refuse(a, f->path, "a data record too large");
				break;
			}
			r = data(f, len);
		} else if (type == REC_ZEROS || (type == REC_COPY && delta)) {
			r = sync_rec_body(a->in, type, len, 16, &b);
			if (r)
				break;
			sync_cur_init(&c, b.p, b.len);
			x = sync_get_u64(&c);
			y = type == REC_COPY ? sync_get_u64(&c) : 0;
			if (c.bad || c.n) {
				r = sync_apply_refuse(a, f->path, "a bad data record");
				break;
			}
			r = type == REC_ZEROS ? zeros(f, x) : copy(f, x, y);
		} else if (type == REC_HASH || type == REC_ABORT) {
			r = sync_rec_body(a->in, type, len, SYNC_HASH_LEN, &b);
			if (!r && b.len != (type == REC_HASH ? SYNC_HASH_LEN : 0u))
				r = sync_apply_refuse(a, f->path, "a bad end of file");
			if (!r && type == REC_HASH)
				memcpy(hash, b.p, SYNC_HASH_LEN);
			if (!r)
				r = type == REC_HASH;
			break;
		} else {
			r = sync_apply_refuse(a, f->path, "a record that has no place in a file");
		}
		if (r)
			break;
	}
	buf_release(&b);
	return r;
}

/* The old file of a delta: open, a regular file of bsize bytes; else -1. */
static int open_basis(int pfd, const char *base, uint64_t bsize)
{
	struct stat st;
	int fd = openat(pfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);

	if (fd >= 0 &&
	    (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != bsize)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

int sync_apply_file(struct sync_apply *a, const char *path, unsigned mode, int64_t mtime_ns,
                    uint64_t size, int delta, uint64_t bsize, int *want)
{
	struct timespec ts[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};
	struct fill f = {.a = a, .path = path, .fd = -1, .basis = -1, .bsize = bsize, .size = size};
	unsigned char sent[SYNC_HASH_LEN], got[SYNC_HASH_LEN];
	char tmp[64] = "", hex[SYNC_HASH_HEX + 1];
	struct sync_entry *e;
	const char *base;
	struct stat st;
	int pfd, r, end, old = -1;

	*want = 0;
	pfd = parent(a, path, &base);
	if (pfd < 0)
		return pfd;
	if (delta) {
		f.basis = open_basis(pfd, base, bsize);
		if (f.basis < 0)
			f.bad_copy = 1; /* read it all, then ask for it whole */
	}
	tmp_name(a, tmp, sizeof(tmp));
	f.fd = openat(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (f.fd < 0) {
		r = error_errno("cannot create a file in the directory of '%s'", where(a, path));
		goto out;
	}
	sync_hash_init(&f.hash);
	end = read_data(&f, delta, sent);
	sync_hash_final(&f.hash, got);
	if (end <= 0) {
		r = end; /* an error, or the sender's abort: drop what came */
		goto out;
	}
	r = 0;
	if (f.got != size) {
		r = error("truncated sync stream: '%s' is incomplete", shown(a, path));
		goto out;
	}
	if (memcmp(sent, got, SYNC_HASH_LEN) || f.bad_copy) {
		if (delta) {
			*want = 1;
			goto out;
		}
		r = error("corrupt sync stream: '%s' does not match its hash", shown(a, path));
		goto out;
	}
	ts[1] = ns_to_ts(mtime_ns);
	/* Only the permission bits: never setuid, setgid or sticky from a stream. */
	if (ftruncate(f.fd, (off_t)size) < 0 || fchmod(f.fd, mode & 0777) < 0 ||
	    futimens(f.fd, ts) < 0 || fstat(f.fd, &st) < 0)
		r = error_errno("cannot set the size, mode or mtime of '%s'", where(a, path));
	if (close(f.fd) < 0 && !r)
		r = error_errno("cannot write '%s'", where(a, path));
	f.fd = -1;
	if (!r && f.basis < 0)
		old = hold_old(a, pfd, base, path);
	if (!r && renameat(pfd, tmp, pfd, base) < 0)
		r = error_errno("cannot put '%s' in place", where(a, path));
	if (r && old >= 0)
		close(old);
	else
		reap(a, old);
	if (r)
		goto out;
	e = record(a, path, SYNC_T_FILE, &st);
	if (e) {
		sync_hash_hex(got, hex);
		memcpy(e->hash, hex, sizeof(hex));
	}
	a->st->files++;
	a->st->bytes += size;
	tmp[0] = '\0';
out:
	if (f.fd >= 0)
		close(f.fd);
	if (tmp[0])
		unlinkat(pfd, tmp, 0);
	if (f.basis >= 0 && !r && !tmp[0] && !*want)
		reap(a, f.basis); /* replaced */
	else if (f.basis >= 0)
		close(f.basis);
	return r;
}

int sync_apply_touch(struct sync_apply *a, const char *path, unsigned mode, int64_t mtime_ns,
                     uint64_t size, const unsigned char hash[SYNC_HASH_LEN], int *want)
{
	struct timespec ts[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};
	const struct sync_entry *b = NULL;
	char hex[SYNC_HASH_HEX + 1];
	struct sync_entry *e;
	const char *base;
	struct stat st;
	int pfd, fd, r = 0;

	*want = 1;
	sync_hash_hex(hash, hex);
	if (!(a->flags & SYNC_FILE))
		b = sync_manifest_find(&a->base, path);
	pfd = parent(a, path, &base);
	if (pfd < 0)
		return pfd;
	fd = openat(pfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0;
	/* The content must be the one the launcher knows, as checked when the sync began. */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != size)
		goto out;
	if (b && b->type == SYNC_T_FILE && b->hash[0] && b->size == size &&
	    b->mtime_ns == mtime_of(&st)) {
		if (strcmp(b->hash, hex))
			goto out;
	} else {
		char now[SYNC_HASH_HEX + 1];

		if (sync_hash_fd(fd, now) || strcmp(now, hex))
			goto out;
	}
	ts[1] = ns_to_ts(mtime_ns);
	if (fchmod(fd, mode & 0777) < 0 || futimens(fd, ts) < 0 || fstat(fd, &st) < 0) {
		r = error_errno("cannot set the mode or mtime of '%s'", where(a, path));
		goto out;
	}
	e = record(a, path, SYNC_T_FILE, &st);
	if (e)
		memcpy(e->hash, hex, sizeof(hex));
	*want = 0;
out:
	close(fd);
	return r;
}

int sync_apply_sigs(struct sync_apply *a, const char *path, struct sync_sigs *s, int *ok)
{
	const char *base;
	struct stat st;
	int pfd, fd, r;

	*ok = 0;
	if (a->flags & SYNC_FILE) {
		pfd = a->dfd;
		base = a->file_name;
	} else {
		pfd = sync_open_parent(a->dfd, path, 0, &base, NULL);
		if (pfd < 0)
			return 0;
	}
	fd = openat(pfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (pfd != a->dfd)
		close(pfd);
	if (fd < 0)
		return 0;
	r = fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)
	            ? -EINVAL
	            : sync_sigs_make(fd, (uint64_t)st.st_size, s);
	close(fd);
	/* Whatever went wrong, the launcher sends the file whole. */
	*ok = !r;
	return 0;
}

/* --- links, directories, deletions ----------------------------------------------------- */

int sync_apply_link(struct sync_apply *a, const char *path, const char *target, int64_t mtime_ns)
{
	const char *base, *why;
	struct sync_entry *e;
	struct stat st;
	char tmp[64];
	int pfd;

	(void)mtime_ns; /* a link's mtime is not kept (it changes nothing a sync compares) */
	if (!*target)
		return sync_apply_refuse(a, path, "a symlink with a missing target");
	if (sync_link_check(path, target, &why))
		return sync_apply_refuse(a, path, why);
	pfd = parent(a, path, &base);
	if (pfd < 0)
		return pfd;
	tmp_name(a, tmp, sizeof(tmp));
	if (symlinkat(target, pfd, tmp) < 0)
		return error_errno("cannot create symlink '%s'", where(a, path));
	if (renameat(pfd, tmp, pfd, base) < 0 || fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		int r = error_errno("cannot put symlink '%s' in place", where(a, path));

		unlinkat(pfd, tmp, 0);
		return r;
	}
	e = record(a, path, SYNC_T_LINK, &st);
	if (e) {
		e->target = xstrdup(target);
		e->mode = 0777;
	}
	a->st->links++;
	return 0;
}

int sync_apply_dir(struct sync_apply *a, const char *path, unsigned mode)
{
	const char *base;
	struct stat st;
	int pfd, fd, r = 0;

	pfd = parent(a, path, &base);
	if (pfd < 0)
		return pfd;
	if (mkdirat(pfd, base, 0700) < 0 && errno != EEXIST)
		return error_errno("cannot create directory '%s'", where(a, path));
	fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOTDIR || errno == ELOOP)
			return sync_apply_refuse(a, path,
			                         "it exists on the node and is not a directory");
		return error_errno("cannot open directory '%s'", where(a, path));
	}
	/* The node keeps rwx for itself, or the next sync could not write here. */
	if (fchmod(fd, (mode & 0777) | 0700) < 0 || fstat(fd, &st) < 0)
		r = error_errno("cannot set the mode of '%s'", where(a, path));
	close(fd);
	if (!r) {
		record(a, path, SYNC_T_DIR, &st);
		a->st->dirs++;
	}
	return r;
}

int sync_apply_delete(struct sync_apply *a, const char *path)
{
	struct sync_entry *e = sync_manifest_find(&a->base, path);
	const char *base;
	struct stat st;
	int pfd, r = 0, old;

	if (!e || e->type == SYNC_T_NONE) {
		warning("not deleting '%s': no sync put it there", where(a, path));
		a->st->skipped++;
		return 0;
	}
	pfd = sync_open_parent(a->dfd, path, 0, &base, NULL);
	if (pfd < 0 || fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		/* Gone, or a parent is no directory any more: nothing of ours is there. */
		if (pfd >= 0 && errno != ENOENT)
			r = error_errno("cannot delete '%s'", where(a, path));
	} else {
		old = S_ISREG(st.st_mode) ? hold_old(a, pfd, base, path) : -1;
		if (!unlinkat(pfd, base, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0)) {
			a->st->deleted++;
		} else if (S_ISDIR(st.st_mode) && (errno == ENOTEMPTY || errno == EEXIST)) {
			warning("keeping directory '%s': it holds files no sync put there",
			        where(a, path));
			a->st->skipped++;
		} else if (errno != ENOENT) {
			r = error_errno("cannot delete '%s'", where(a, path));
		}
		reap(a, old);
	}
	if (pfd >= 0)
		close(pfd);
	/* Not ours any more, unless it could not be deleted (the next sync tries again). */
	if (!r) {
		e->type = SYNC_T_NONE;
		a->dirty = 1;
	}
	return r;
}

/* --- DST and its manifest ------------------------------------------------------------- */

int sync_apply_open(struct sync_apply *a, const char *dst, unsigned flags, uint64_t max_bytes,
                    struct sync_stats *st)
{
	char *dir = NULL;
	const char *slash;
	int r = 0;

	memset(a, 0, sizeof(*a));
	a->dst = dst;
	a->flags = flags;
	a->max_bytes = max_bytes ? max_bytes : SYNC_DEFAULT_MAX_BYTES;
	a->st = st;
	a->dfd = -1;
	a->dirs.fd = -1;
	sync_manifest_init(&a->base);
	sync_manifest_init(&a->added);
	buf_init(&a->shown, 4 * SYNC_PATH_MAX + 4);
	a->blk = xmalloc(BLK);
	if (flags & SYNC_FILE) {
		slash = strrchr(dst, '/');
		a->file_name = slash ? slash + 1 : dst;
		if (!*a->file_name || !strcmp(a->file_name, ".") || !strcmp(a->file_name, ".."))
			return error("cannot sync a file to '%s': not a file name", dst);
		dir = slash ? xstrndup(dst, (size_t)(slash - dst)) : xstrdup(".");
		if (!*dir) {
			free(dir);
			dir = xstrdup("/");
		}
	} else {
		dir = xstrdup(dst);
	}
	r = mkdir_p(dir, 0755);
	if (r) {
		errno = -r;
		r = error_errno("cannot create directory '%s'", dir);
		goto out;
	}
	a->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (a->dfd < 0) {
		r = error_errno("cannot open directory '%s'", dir);
		goto out;
	}
	while (flock(a->dfd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			r = error_errno("cannot lock '%s'", dir);
			goto out;
		}
	}
	if (flags & SYNC_FILE)
		r = sync_file_entry(dst, &a->base);
	else if (!(flags & SYNC_NO_STATE))
		r = sync_checked_manifest(a->dfd, dst, &a->base, &a->old_manifest, &a->stored);
out:
	free(dir);
	return r;
}

static int save_manifest(struct sync_apply *a)
{
	struct buf text = BUF_INIT(SYNC_MANIFEST_MAX);
	int r;

	sync_manifest_merge(&a->base, &a->added);
	r = sync_manifest_format(&a->base, &text);
	if (r) {
		buf_release(&text);
		return error("the manifest of '%s' is too large", a->dst);
	}
	/*
	 * No fsync (which would wait for the journal, and with it for the files just written:
	 * 20 ms and more). After a crash a torn manifest reads as none (read_stored() in
	 * sync_walk.c): the next sync sends more and deletes less, never wrong.
	 */
	r = write_file_quick(a->stored, text.p, text.len, 0600);
	if (r) {
		errno = -r;
		r = error_errno("cannot write '%s'", a->stored);
	} else if (a->old_manifest) {
		unlinkat(a->dfd, SYNC_OLD_MANIFEST_NAME, 0);
	}
	buf_release(&text);
	return r;
}

int sync_apply_close(struct sync_apply *a, int r)
{
	int r2;

	/* What was fully written is recorded even when the sync failed part way. */
	if (a->dirty && a->stored) {
		r2 = save_manifest(a);
		if (!r)
			r = r2;
	} else if (a->dirty) {
		sync_manifest_merge(&a->base, &a->added);
	}
	sync_dir_cache_release(&a->dirs);
	if (a->dfd >= 0)
		close(a->dfd);
	a->dfd = -1;
	free(a->blk);
	free(a->stored);
	a->blk = NULL;
	a->stored = NULL;
	sync_manifest_release(&a->added);
	buf_release(&a->shown);
	return r;
}
