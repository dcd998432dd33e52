/*
 * The node's side of a sync: read the stream and apply it to DST, refusing anything
 * that could touch what lies outside DST. See sync.h and docs/sync.md.
 *
 * Nothing is extracted by libarchive itself: every write goes through an fd of a
 * directory that was opened component by component with O_NOFOLLOW (sync_open_parent),
 * files and symlinks are made under a temp name there and renamed into place.
 */
#include "bootstrap/sync/sync_internal.h"

#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/sha256.h"
#include "lib/util.h"
#include "lib/banned.h"

#define UNPACK_BLOCK 65536
#define END_TEXT_MAX 64

struct unpack {
	const char *dst;
	unsigned flags;
	uint64_t max_bytes;
	int dfd;               /* DST; in file mode the directory that holds it */
	const char *file_name; /* file mode: DST's last component */
	struct archive *a;
	struct sync_manifest stored; /* DST's manifest, sorted; deletions mark entries */
	struct sync_manifest added;  /* what this sync wrote */
	int dirty;
	struct sync_stats *st;
	uint64_t members;
	unsigned long tmp_seq;
	struct buf name;   /* the current member's path */
	struct buf target; /* its link target */
	struct buf shown;  /* scratch: a name made printable for a message */
	char **deletes;
	size_t n_deletes;
	struct sync_dir_cache dirs; /* the parent directory last opened */
	char *blk;
	int in_fd;
	uint64_t in_bytes; /* read from in_fd so far */
	char *in_blk;
};

static la_ssize_t read_cb(struct archive *a, void *data, const void **blk)
{
	struct unpack *u = data;
	ssize_t n;

	do
		n = read(u->in_fd, u->in_blk, UNPACK_BLOCK);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		archive_set_error(a, errno, "cannot read the sync stream: %s", strerror(errno));
		return -1;
	}
	u->in_bytes += (uint64_t)n;
	*blk = u->in_blk;
	return n;
}

/* A name made printable for a message (keeps errno, for error_errno()). */
static const char *shown(struct unpack *u, const char *s)
{
	int e = errno;

	buf_reset(&u->shown);
	if (!*s || sync_escape(&u->shown, s))
		buf_adds(&u->shown, *s ? "(a long name)" : "(an empty name)");
	errno = e;
	return u->shown.p;
}

/* Where path is on the node, for a message: DST/path, or DST itself in file mode. */
static const char *where(struct unpack *u, const char *path)
{
	int e = errno;

	buf_reset(&u->shown);
	if (u->flags & SYNC_FILE)
		buf_adds(&u->shown, u->dst);
	else if (buf_addf(&u->shown, "%s/", u->dst) || sync_escape(&u->shown, path))
		buf_adds(&u->shown, "(a long name)");
	errno = e;
	return u->shown.p;
}

static int refuse(struct unpack *u, const char *path, const char *why)
{
	error("refusing '%s' in the sync stream: %s", shown(u, path), why);
	return -EPERM;
}

static void tmp_name(struct unpack *u, char *out, size_t size)
{
	xsnprintf(out, size, SYNC_TMP_PREFIX "%ld.%lu", (long)getpid(), ++u->tmp_seq);
}

/* The fd of path's parent directory (cached, not to be closed) and its last component. */
static int parent(struct unpack *u, const char *path, const char **base)
{
	size_t bad = 0;
	int fd = sync_dir_cache_open(&u->dirs, u->dfd, path, 1, base, &bad);

	if (fd == -ENOTDIR || fd == -ELOOP || fd == -EEXIST) {
		struct buf b = BUF_INIT(0);
		char *p = xstrndup(path, bad);

		sync_escape(&b, p);
		error("refusing '%s' in the sync stream: '%s' is not a directory on the node "
		      "(a symlink?)",
		      shown(u, path), b.p);
		buf_release(&b);
		free(p);
		return -EPERM;
	}
	if (fd < 0) {
		errno = -fd;
		return error_errno("cannot open the directory of '%s'", where(u, path));
	}
	return fd;
}

static struct sync_entry *record(struct unpack *u, const char *path, char type,
                                 const struct stat *st)
{
	struct sync_entry *e;

	if (u->flags & SYNC_FILE)
		return NULL;
	e = sync_manifest_add(&u->added, path, type);
	e->mode = st->st_mode & 0777;
	e->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	if (type == SYNC_T_FILE)
		e->size = (uint64_t)st->st_size;
	u->dirty = 1;
	return e;
}

static int write_file(struct unpack *u, struct archive_entry *ae, const char *path)
{
	la_int64_t size = archive_entry_size(ae);
	struct timespec ts[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};
	char tmp[64], hex[SHA256_HEX_LEN + 1];
	struct sync_entry *e;
	struct sha256_ctx sha;
	const char *base;
	uint64_t got = 0;
	struct stat st;
	la_ssize_t n;
	int pfd, fd, r = 0;

	if (!archive_entry_size_is_set(ae) || size < 0)
		return refuse(u, path, "a file without a size");
	if ((uint64_t)size > u->max_bytes - u->st->bytes) {
		error("the sync is larger than the limit of %" PRIu64 " bytes (at '%s')",
		      u->max_bytes, shown(u, path));
		return -EFBIG;
	}
	if (u->flags & SYNC_FILE) {
		pfd = u->dfd;
		base = u->file_name;
	} else {
		pfd = parent(u, path, &base);
		if (pfd < 0)
			return pfd;
	}
	tmp_name(u, tmp, sizeof(tmp));
	fd = openat(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return error_errno("cannot create a file in the directory of '%s'", where(u, path));
	sha256_init(&sha);
	for (;;) {
		n = archive_read_data(u->a, u->blk, UNPACK_BLOCK);
		if (n < 0) {
			r = sync_archive_error(u->a, "corrupt or truncated sync stream");
			break;
		}
		if (n == 0)
			break;
		got += (uint64_t)n;
		if (got > (uint64_t)size) {
			r = refuse(u, path, "more data than its size");
			break;
		}
		sha256_update(&sha, u->blk, (size_t)n);
		r = write_all(fd, u->blk, (size_t)n);
		if (r) {
			errno = -r;
			r = error_errno("cannot write '%s'", where(u, path));
			break;
		}
	}
	sha256_final_hex(&sha, hex);
	if (!r && got != (uint64_t)size)
		r = error("truncated sync stream: '%s' is incomplete", shown(u, path));
	if (archive_entry_mtime_is_set(ae)) {
		ts[1].tv_sec = archive_entry_mtime(ae);
		ts[1].tv_nsec = archive_entry_mtime_nsec(ae);
	}
	/* Only the permission bits: never setuid, setgid or sticky from a stream. */
	if (!r && (fchmod(fd, archive_entry_perm(ae) & 0777) < 0 || futimens(fd, ts) < 0 ||
	           fstat(fd, &st) < 0))
		r = error_errno("cannot set the mode or mtime of '%s'", where(u, path));
	if (close(fd) < 0 && !r)
		r = error_errno("cannot write '%s'", where(u, path));
	if (!r && renameat(pfd, tmp, pfd, base) < 0)
		r = error_errno("cannot put '%s' in place", where(u, path));
	if (r) {
		unlinkat(pfd, tmp, 0);
		return r;
	}
	e = record(u, path, SYNC_T_FILE, &st);
	if (e)
		memcpy(e->sha256, hex, sizeof(hex));
	u->st->files++;
	u->st->bytes += got;
	return 0;
}

static int write_link(struct unpack *u, struct archive_entry *ae, const char *path)
{
	const char *raw = archive_entry_symlink(ae), *base, *why;
	struct sync_entry *e;
	struct stat st;
	char tmp[64];
	int pfd;

	buf_reset(&u->target);
	if (!raw || sync_unescape(&u->target, raw, strlen(raw)))
		return refuse(u, path, "a symlink with a missing or badly escaped target");
	if (sync_link_check(path, u->target.p, &why))
		return refuse(u, path, why);
	pfd = parent(u, path, &base);
	if (pfd < 0)
		return pfd;
	tmp_name(u, tmp, sizeof(tmp));
	if (symlinkat(u->target.p, pfd, tmp) < 0)
		return error_errno("cannot create symlink '%s'", where(u, path));
	if (renameat(pfd, tmp, pfd, base) < 0 || fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		int r = error_errno("cannot put symlink '%s' in place", where(u, path));

		unlinkat(pfd, tmp, 0);
		return r;
	}
	e = record(u, path, SYNC_T_LINK, &st);
	if (e) {
		e->target = xstrdup(u->target.p);
		e->mode = 0777;
	}
	u->st->links++;
	return 0;
}

static int write_dir(struct unpack *u, struct archive_entry *ae, const char *path)
{
	const char *base;
	struct stat st;
	int pfd, fd, r = 0;

	pfd = parent(u, path, &base);
	if (pfd < 0)
		return pfd;
	if (mkdirat(pfd, base, 0700) < 0 && errno != EEXIST)
		return error_errno("cannot create directory '%s'", where(u, path));
	fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOTDIR || errno == ELOOP)
			return refuse(u, path, "it exists on the node and is not a directory");
		return error_errno("cannot open directory '%s'", where(u, path));
	}
	/* The node keeps rwx for itself, or the next sync could not write here. */
	if (fchmod(fd, (archive_entry_perm(ae) & 0777) | 0700) < 0 || fstat(fd, &st) < 0)
		r = error_errno("cannot set the mode of '%s'", where(u, path));
	close(fd);
	if (!r) {
		record(u, path, SYNC_T_DIR, &st);
		u->st->dirs++;
	}
	return r;
}

static const char *type_name(unsigned type)
{
	switch (type) {
	case AE_IFCHR: return "a character device";
	case AE_IFBLK: return "a block device";
	case AE_IFIFO: return "a fifo";
	case AE_IFSOCK: return "a socket";
	default: return "an unknown file type";
	}
}

static int extract(struct unpack *u, struct archive_entry *ae)
{
	const char *raw = archive_entry_pathname(ae), *path, *why;
	unsigned type = archive_entry_filetype(ae);

	buf_reset(&u->name);
	if (!raw || sync_unescape(&u->name, raw, strlen(raw)))
		return refuse(u, raw ? raw : "", "a badly escaped name");
	/* A directory's name may come with one trailing '/'. */
	if (type == AE_IFDIR && u->name.len > 1 && u->name.p[u->name.len - 1] == '/')
		buf_setlen(&u->name, u->name.len - 1);
	path = u->name.p;
	if (++u->members > SYNC_MAX_ENTRIES)
		return refuse(u, path, "too many entries");
	if (archive_entry_hardlink(ae))
		return refuse(u, path, "hardlinks are not synced");
	if (u->flags & SYNC_FILE) {
		if (strcmp(path, SYNC_FILE_ENTRY) || type != AE_IFREG || u->st->files)
			return refuse(u, path, "a single-file sync holds one file");
		return write_file(u, ae, path);
	}
	if (sync_path_check(path, &why))
		return refuse(u, path, why);
	if (sync_reserved_path(path))
		return refuse(u, path, "a name the sync uses for itself");
	switch (type) {
	case AE_IFREG: return write_file(u, ae, path);
	case AE_IFDIR: return write_dir(u, ae, path);
	case AE_IFLNK: return write_link(u, ae, path);
	}
	return refuse(u, path, type_name(type));
}

/* Reads the current member's data (at most max bytes) into out. */
static int read_text(struct unpack *u, struct archive_entry *ae, size_t max, struct buf *out)
{
	la_int64_t size = archive_entry_size(ae);
	la_ssize_t n;

	if (archive_entry_filetype(ae) != AE_IFREG || size < 0 || (uint64_t)size > max)
		return error("corrupt sync stream: bad '%s' entry", archive_entry_pathname(ae));
	buf_init(out, (size_t)size);
	if (buf_grow(out, (size_t)size))
		return error("out of memory");
	while (out->len < (size_t)size) {
		n = archive_read_data(u->a, out->p + out->len, (size_t)size - out->len);
		if (n < 0)
			return sync_archive_error(u->a, "corrupt or truncated sync stream");
		if (n == 0)
			break;
		buf_setlen(out, out->len + (size_t)n);
	}
	if ((la_int64_t)out->len != size)
		return error("truncated sync stream");
	return 0;
}

static int del_cmp(const void *a, const void *b)
{
	return -strcmp(*(char *const *)a, *(char *const *)b);
}

static int parse_control(struct unpack *u, const struct buf *text)
{
	const char *p = text->p, *end = text->p + text->len, *nl, *why = NULL;
	const char *mode = u->flags & SYNC_FILE ? "mode file" : "mode dir";
	struct buf path = BUF_INIT(SYNC_PATH_MAX + 1);
	size_t lineno = 0, alloc = 0;
	int done = 0;

	if (memchr(p, '\0', text->len))
		return error("corrupt sync stream: NUL in the control entry");
	for (; p < end && !why; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl || done) {
			why = "malformed";
			break;
		}
		lineno++;
		if (lineno == 1) {
			if (nl - p < 11 || memcmp(p, "skiff-sync ", 11))
				why = "not a skiff sync stream";
			else if ((size_t)(nl - p) != 12 || p[11] != '0' + SYNC_PROTO_VERSION)
				why = "unsupported protocol version (skiff versions differ?)";
		} else if (lineno == 2) {
			if ((size_t)(nl - p) != strlen(mode) || memcmp(p, mode, strlen(mode)))
				why = u->flags & SYNC_FILE ? "a directory sync sent to a file"
				                           : "a file sync sent to a directory";
		} else if (nl - p == 3 && !memcmp(p, "end", 3)) {
			done = 1;
		} else if (nl - p > 7 && !memcmp(p, "delete ", 7) && !(u->flags & SYNC_FILE)) {
			buf_reset(&path);
			if (u->n_deletes >= SYNC_MAX_ENTRIES ||
			    sync_unescape(&path, p + 7, (size_t)(nl - p - 7))) {
				why = "bad delete line";
				break;
			}
			if (u->n_deletes == alloc) {
				alloc = alloc ? 2 * alloc : 16;
				u->deletes = xrealloc(u->deletes, alloc * sizeof(*u->deletes));
			}
			u->deletes[u->n_deletes++] = buf_detach(&path, NULL);
		} else {
			why = "malformed";
		}
	}
	buf_release(&path);
	if (!why && !done)
		why = "cut off";
	if (why)
		return error("corrupt sync stream: control entry line %zu: %s", lineno, why);
	/* Children before their parents, whatever order the sender used. */
	if (u->n_deletes > 1)
		qsort(u->deletes, u->n_deletes, sizeof(*u->deletes), del_cmp);
	return 0;
}

static int delete_one(struct unpack *u, const char *path)
{
	struct sync_entry *e = sync_manifest_find(&u->stored, path);
	const char *base, *why;
	struct stat st;
	int pfd, r = 0;

	if (sync_path_check(path, &why))
		return refuse(u, path, why);
	if (sync_reserved_path(path))
		return refuse(u, path, "a name the sync uses for itself");
	if (!e || e->type == SYNC_T_NONE) {
		warning("not deleting '%s': no sync put it there", where(u, path));
		u->st->skipped++;
		return 0;
	}
	pfd = sync_open_parent(u->dfd, path, 0, &base, NULL);
	if (pfd < 0 || fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		/* Gone, or a parent is no directory any more: nothing of ours is there. */
		if (pfd >= 0 && errno != ENOENT)
			r = error_errno("cannot delete '%s'", where(u, path));
	} else if (!unlinkat(pfd, base, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0)) {
		u->st->deleted++;
	} else if (S_ISDIR(st.st_mode) && (errno == ENOTEMPTY || errno == EEXIST)) {
		warning("keeping directory '%s': it holds files no sync put there", where(u, path));
		u->st->skipped++;
	} else if (errno != ENOENT) {
		r = error_errno("cannot delete '%s'", where(u, path));
	}
	if (pfd >= 0)
		close(pfd);
	/* Not ours any more, unless it could not be deleted (the next sync tries again). */
	if (!r) {
		e->type = SYNC_T_NONE;
		u->dirty = 1;
	}
	return r;
}

static int read_stream(struct unpack *u)
{
	struct archive_entry *ae;
	struct buf text = BUF_INIT(0);
	char want[END_TEXT_MAX];
	size_t i;
	int r;

	r = archive_read_next_header(u->a, &ae);
	if (r == ARCHIVE_EOF)
		return error("empty sync stream: no entries");
	if (r != ARCHIVE_OK)
		return sync_archive_error(u->a, "not a sync stream");
	if (strcmp(archive_entry_pathname(ae) ? archive_entry_pathname(ae) : "", SYNC_CONTROL_NAME))
		return error("not a sync stream: it does not start with '%s'", SYNC_CONTROL_NAME);
	r = read_text(u, ae, SYNC_CONTROL_MAX, &text);
	if (!r)
		r = parse_control(u, &text);
	buf_release(&text);
	for (i = 0; i < u->n_deletes && !r; i++)
		r = delete_one(u, u->deletes[i]);
	while (!r) {
		r = archive_read_next_header(u->a, &ae);
		if (r == ARCHIVE_EOF)
			return error("truncated sync stream: it ends before '%s'", SYNC_END_NAME);
		if (r != ARCHIVE_OK)
			return sync_archive_error(u->a, "corrupt or truncated sync stream");
		if (archive_entry_pathname(ae) &&
		    !strcmp(archive_entry_pathname(ae), SYNC_END_NAME))
			break;
		r = extract(u, ae);
	}
	if (r)
		return r;
	r = read_text(u, ae, END_TEXT_MAX, &text);
	xsnprintf(want, sizeof(want), "entries %" PRIu64 "\n", u->members);
	if (!r && strcmp(text.p, want))
		r = error("corrupt sync stream: %" PRIu64 " entries, not what its end says",
		          u->members);
	buf_release(&text);
	if (r)
		return r;
	r = archive_read_next_header(u->a, &ae);
	if (r == ARCHIVE_OK)
		return error("corrupt sync stream: data after '%s'", SYNC_END_NAME);
	if (r != ARCHIVE_EOF)
		return sync_archive_error(u->a, "corrupt sync stream");
	return 0;
}

/* Opens DST (or its directory in file mode) and takes the lock. */
static int open_dst(struct unpack *u)
{
	char *dir = NULL;
	const char *slash;
	int r = 0;

	if (u->flags & SYNC_FILE) {
		slash = strrchr(u->dst, '/');
		u->file_name = slash ? slash + 1 : u->dst;
		if (!*u->file_name || !strcmp(u->file_name, ".") || !strcmp(u->file_name, ".."))
			return error("cannot sync a file to '%s': not a file name", u->dst);
		dir = slash ? xstrndup(u->dst, (size_t)(slash - u->dst)) : xstrdup(".");
		if (!*dir) {
			free(dir);
			dir = xstrdup("/");
		}
	} else {
		dir = xstrdup(u->dst);
	}
	r = mkdir_p(dir, 0755);
	if (r) {
		errno = -r;
		r = error_errno("cannot create directory '%s'", dir);
		goto out;
	}
	u->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (u->dfd < 0) {
		r = error_errno("cannot open directory '%s'", dir);
		goto out;
	}
	while (flock(u->dfd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			r = error_errno("cannot lock '%s'", dir);
			goto out;
		}
	}
	if (!(u->flags & SYNC_FILE))
		r = sync_read_stored(u->dfd, u->dst, &u->stored);
out:
	free(dir);
	return r;
}

static int save_manifest(struct unpack *u)
{
	struct buf text = BUF_INIT(SYNC_MANIFEST_MAX);
	char *path;
	int r;

	sync_manifest_merge(&u->stored, &u->added);
	r = sync_manifest_format(&u->stored, &text);
	if (r) {
		buf_release(&text);
		return error("the manifest of '%s' is too large", u->dst);
	}
	path = xasprintf("%s/%s", u->dst, SYNC_MANIFEST_NAME);
	r = write_file_atomic(path, text.p, text.len, 0644);
	if (r) {
		errno = -r;
		r = error_errno("cannot write '%s'", path);
	}
	free(path);
	buf_release(&text);
	return r;
}

int sync_unpack(int in_fd, const char *dst, unsigned flags, uint64_t max_bytes,
                struct sync_stats *st)
{
	struct sync_stats dummy;
	struct unpack u = {.dst = dst, .flags = flags, .dfd = -1, .dirs = {NULL, -1}};
	size_t i;
	int r, r2;

	u.st = st ? st : &dummy;
	memset(u.st, 0, sizeof(*u.st));
	u.max_bytes = max_bytes ? max_bytes : SYNC_DEFAULT_MAX_BYTES;
	sync_manifest_init(&u.stored);
	sync_manifest_init(&u.added);
	buf_init(&u.name, 4 * SYNC_PATH_MAX + 4);
	buf_init(&u.target, 4 * SYNC_PATH_MAX + 4);
	buf_init(&u.shown, 4 * SYNC_PATH_MAX + 4);
	u.blk = xmalloc(UNPACK_BLOCK);
	u.in_blk = xmalloc(UNPACK_BLOCK);

	r = open_dst(&u);
	if (r)
		goto out;
	u.a = archive_read_new();
	if (!u.a) {
		r = error("out of memory");
		goto out;
	}
	/* Only tar and gzip: a filter that is not built in would run an external program. */
	if (archive_read_support_filter_gzip(u.a) != ARCHIVE_OK ||
	    archive_read_support_format_tar(u.a) != ARCHIVE_OK) {
		r = sync_archive_error(u.a, "cannot set up the sync stream reader");
		goto out;
	}
	u.in_fd = in_fd;
	if (archive_read_open(u.a, &u, NULL, read_cb, NULL) != ARCHIVE_OK) {
		r = u.in_bytes ? sync_archive_error(u.a, "cannot read the sync stream")
		               : error("empty sync stream (did the sender fail?)");
		goto out;
	}
	r = read_stream(&u);
out:
	/* What was fully written is recorded even when the sync failed part way. */
	if (u.dirty) {
		r2 = save_manifest(&u);
		if (!r)
			r = r2;
	}
	if (u.a)
		archive_read_free(u.a);
	sync_dir_cache_release(&u.dirs);
	if (u.dfd >= 0)
		close(u.dfd);
	for (i = 0; i < u.n_deletes; i++)
		free(u.deletes[i]);
	free(u.deletes);
	free(u.blk);
	free(u.in_blk);
	sync_manifest_release(&u.stored);
	sync_manifest_release(&u.added);
	buf_release(&u.name);
	buf_release(&u.target);
	buf_release(&u.shown);
	return r;
}
