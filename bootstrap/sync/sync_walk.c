/*
 * The two manifests a sync compares: the launcher's tree as it is now
 * (sync_local_manifest) and the node's stored manifest checked against its disk
 * (sync_remote_manifest). See sync.h.
 */
#include "bootstrap/sync/sync_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

/* A walk deeper than this is a loop through bind mounts or a mistake. */
#define WALK_MAX_DEPTH 512

static int64_t mtime_ns(const struct stat *st)
{
	return sync_ts_ns(&st->st_mtim);
}

struct walk {
	const char *src;
	struct buf full; /* src + "/" + the relative path being looked at */
	size_t src_len;
	struct sync_ignore ig;
	int gitignore; /* load each directory's .gitignore */
	struct sync_manifest *m;
	uint64_t skipped;
};

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in the directory open as dfd (w->full), sorted; *n of them. */
static int read_names(struct walk *w, int dfd, char ***names, size_t *n)
{
	size_t alloc = 0;
	struct dirent *d;
	DIR *dir;
	int fd;

	*names = NULL;
	*n = 0;
	fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	dir = fd < 0 ? NULL : fdopendir(fd);
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return error_errno("cannot open directory '%s'", w->full.p);
	}
	for (;;) {
		errno = 0;
		d = readdir(dir);
		if (!d)
			break;
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		if (*n == alloc) {
			alloc = alloc ? 2 * alloc : 32;
			*names = xrealloc(*names, alloc * sizeof(**names));
		}
		(*names)[(*n)++] = xstrdup(d->d_name);
	}
	if (errno) {
		int r = error_errno("cannot read directory '%s'", w->full.p);

		closedir(dir);
		return r;
	}
	closedir(dir);
	if (*n > 1)
		qsort(*names, *n, sizeof(**names), name_cmp);
	return 0;
}

/* buf_read_file() of name in the directory dfd. */
static int read_at(int dfd, const char *name, struct buf *b)
{
	struct stat st;
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK), r;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (S_ISDIR(st.st_mode))
		r = -EISDIR;
	else if (!S_ISREG(st.st_mode))
		r = -EINVAL;
	else if ((uint64_t)st.st_size > b->max)
		r = -EFBIG;
	else
		r = buf_read_fd(b, fd);
	close(fd);
	return r;
}

/* Adds the rules of rel's .gitignore (or the root's .skyignore); *found if it exists. */
static int load_ignore(struct walk *w, int dfd, const char *rel, const char *file, int *found)
{
	struct buf text = BUF_INIT(SYNC_IGNORE_FILE_MAX);
	size_t len0 = w->full.len;
	int r;

	if (buf_addf(&w->full, "/%s", file))
		return error("path too long: '%s'", w->full.p);
	r = read_at(dfd, file, &text);
	/* A directory of that name is no ignore file (git skips it too). */
	*found = r != -ENOENT && r != -ENOTDIR && r != -EISDIR;
	if (!*found) {
		r = 0;
	} else if (r) {
		r = error("cannot read '%s': %s", w->full.p, buf_read_strerror(r));
	} else {
		r = sync_ignore_add(&w->ig, rel, text.p, text.len);
	}
	buf_setlen(&w->full, len0);
	buf_release(&text);
	return r;
}

/*
 * The link text in the form the node accepts: "." and empty components dropped
 * (they change nothing); NULL if what is left may leave the tree.
 */
static char *link_target(const char *rel, const char *text)
{
	struct buf b = BUF_INIT(0);
	const char *p = text, *e, *why;
	size_t n;

	while (*p) {
		e = strchr(p, '/');
		n = e ? (size_t)(e - p) : strlen(p);
		if (n && !(n == 1 && *p == '.')) {
			if (b.len)
				buf_addch(&b, '/');
			buf_add(&b, p, n);
		}
		if (!e)
			break;
		p = e + 1;
	}
	if (*text == '/' || sync_link_check(rel, b.p, &why)) {
		warning("not sending symlink '%s' -> '%s': it may point outside the synced "
		        "directory",
		        rel, text);
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, NULL);
}

static int walk_dir(struct walk *w, struct buf *rel, int depth, int dfd);

static int walk_entry(struct walk *w, int dfd, struct buf *rel, const char *name, int depth)
{
	size_t rel0 = rel->len, full0 = w->full.len;
	struct sync_entry *e;
	char target[SYNC_PATH_MAX + 2];
	struct stat st;
	ssize_t n;
	char *t;
	int r = 0, is_dir;

	if (!strcmp(name, ".git"))
		return 0;
	if ((rel->len && buf_addch(rel, '/')) || buf_adds(rel, name) ||
	    buf_addf(&w->full, "/%s", name)) {
		r = error("path too long: '%s/%s'", w->full.p, name);
		goto out;
	}
	if (rel->len > SYNC_PATH_MAX || strlen(name) > SYNC_NAME_MAX) {
		r = error("path too long to sync: '%s'", w->full.p);
		goto out;
	}
	if (sync_reserved_path(rel->p))
		goto out;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		r = errno == ENOENT ? 0 : error_errno("cannot stat '%s'", w->full.p);
		goto out;
	}
	is_dir = S_ISDIR(st.st_mode);
	if (!is_dir && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
		debug("not syncing '%s': not a file, directory or symlink", w->full.p);
		goto out;
	}
	if (sync_ignore_match(&w->ig, rel->p, is_dir))
		goto out;
	if (w->m->n >= SYNC_MAX_ENTRIES) {
		r = error("'%s' has more than %d entries to sync", w->src, SYNC_MAX_ENTRIES);
		goto out;
	}
	if (S_ISLNK(st.st_mode)) {
		n = readlinkat(dfd, name, target, sizeof(target));
		if (n < 0 || (size_t)n >= sizeof(target)) {
			r = n < 0 ? error_errno("cannot read symlink '%s'", w->full.p)
			          : error("symlink target too long: '%s'", w->full.p);
			goto out;
		}
		target[n] = '\0';
		t = link_target(rel->p, target);
		if (!t) {
			w->skipped++;
			goto out;
		}
		e = sync_manifest_add(w->m, rel->p, SYNC_T_LINK);
		e->target = t;
		e->mode = 0777;
		e->mtime_ns = mtime_ns(&st);
		goto out;
	}
	e = sync_manifest_add(w->m, rel->p, is_dir ? SYNC_T_DIR : SYNC_T_FILE);
	e->mode = st.st_mode & 0777;
	e->mtime_ns = mtime_ns(&st);
	if (is_dir) {
		/* The node always gives itself rwx on a directory it writes into. */
		int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		e->mode |= 0700;
		if (sub < 0) {
			r = error_errno("cannot open directory '%s'", w->full.p);
			goto out;
		}
		r = walk_dir(w, rel, depth + 1, sub);
		close(sub);
	} else {
		e->size = (uint64_t)st.st_size;
	}
out:
	buf_setlen(rel, rel0);
	buf_setlen(&w->full, full0);
	return r;
}

/* The directory open as dfd (rel, w->full): its entries, in name order. */
static int walk_dir(struct walk *w, struct buf *rel, int depth, int dfd)
{
	size_t nrules = w->ig.n, n = 0, i;
	char **names = NULL;
	int r, found;

	if (depth > WALK_MAX_DEPTH)
		return error("'%s' is nested too deeply to sync", w->full.p);
	r = w->gitignore ? load_ignore(w, dfd, rel->p, ".gitignore", &found) : 0;
	if (!r)
		r = read_names(w, dfd, &names, &n);
	for (i = 0; i < n; i++) {
		if (!r)
			r = walk_entry(w, dfd, rel, names[i], depth);
		free(names[i]);
	}
	free(names);
	sync_ignore_truncate(&w->ig, nrules);
	return r;
}

int sync_local_manifest(const char *src, unsigned flags, struct sync_manifest *out,
                        uint64_t *skipped)
{
	struct buf rel = BUF_INIT(SYNC_PATH_MAX + SYNC_NAME_MAX + 2);
	struct walk w = {.src = src, .m = out};
	struct sync_entry *e;
	struct stat st;
	size_t n0 = out->n;
	int r = 0, sky = 0, dfd = -1;

	if (skipped)
		*skipped = 0;
	if (stat(src, &st) < 0)
		return error_errno("cannot sync '%s'", src);
	if (flags & SYNC_FILE) {
		if (!S_ISREG(st.st_mode))
			return error("cannot sync '%s': not a regular file", src);
		e = sync_manifest_add(out, SYNC_FILE_ENTRY, SYNC_T_FILE);
		e->mode = st.st_mode & 0777;
		e->size = (uint64_t)st.st_size;
		e->mtime_ns = mtime_ns(&st);
		return 0;
	}
	if (!S_ISDIR(st.st_mode))
		return error("cannot sync '%s': not a directory", src);
	buf_init(&w.full, strlen(src) + 2 * (SYNC_PATH_MAX + SYNC_NAME_MAX) + 16);
	sync_ignore_init(&w.ig);
	if (buf_adds(&w.full, src)) {
		r = error("path too long: '%s'", src);
		goto out;
	}
	while (w.full.len > 1 && w.full.p[w.full.len - 1] == '/')
		buf_setlen(&w.full, w.full.len - 1);
	/* src itself may be a symlink; below it, everything is opened relative, O_NOFOLLOW. */
	dfd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		r = error_errno("cannot open directory '%s'", src);
		goto out;
	}
	if (!(flags & SYNC_NO_IGNORE)) {
		r = load_ignore(&w, dfd, "", ".skyignore", &sky);
		/* A .skyignore replaces every .gitignore, as in SkyPilot. */
		w.gitignore = !sky;
	}
	if (!r)
		r = walk_dir(&w, &rel, 0, dfd);
	if (!r)
		sync_manifest_sort(out);
out:
	if (dfd >= 0)
		close(dfd);
	if (r)
		sync_manifest_truncate(out, n0);
	if (skipped)
		*skipped = w.skipped;
	sync_ignore_release(&w.ig);
	buf_release(&w.full);
	buf_release(&rel);
	return r;
}

/* Reads the stored manifest at path (what: for messages) into m: -ENOENT if there is none. */
static int read_stored(int dirfd, const char *path, const char *what, struct sync_manifest *m)
{
	struct buf text = BUF_INIT(SYNC_MANIFEST_MAX);
	int fd, r = 0;

	fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		if (errno != ENOENT)
			warning("cannot open '%s' (%s); treating it as empty", what,
			        strerror(errno));
		goto out;
	}
	r = buf_read_fd(&text, fd);
	close(fd);
	if (r) {
		warning("cannot read '%s' (%s); treating it as empty", what, strerror(-r));
		r = 0;
		goto out;
	}
	if (sync_manifest_parse(m, text.p, text.len, what))
		warning("ignoring the unreadable manifest '%s'", what);
out:
	buf_release(&text);
	return r;
}

/* Adds what is now on disk at old->path to out, if it is something a sync could have made. */
static void check_entry(int dfd, struct sync_dir_cache *dirs, const struct sync_entry *old,
                        struct sync_manifest *out)
{
	char target[SYNC_PATH_MAX + 2];
	const char *base, *why;
	struct sync_entry *e;
	struct stat st;
	ssize_t n;
	int pfd, fd;

	pfd = sync_dir_cache_open(dirs, dfd, old->path, 0, &base, NULL);
	if (pfd < 0 || fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	if (S_ISDIR(st.st_mode)) {
		e = sync_manifest_add(out, old->path, SYNC_T_DIR);
		e->mode = st.st_mode & 0777;
		e->mtime_ns = mtime_ns(&st);
	} else if (S_ISLNK(st.st_mode)) {
		n = readlinkat(pfd, base, target, sizeof(target));
		if (n < 0 || (size_t)n >= sizeof(target))
			return;
		target[n] = '\0';
		/* One a job put there that leaves the tree: the launcher would refuse it. */
		if (sync_link_check(old->path, target, &why))
			return;
		e = sync_manifest_add(out, old->path, SYNC_T_LINK);
		e->target = xstrdup(target);
		e->mode = 0777;
		e->mtime_ns = mtime_ns(&st);
	} else if (S_ISREG(st.st_mode)) {
		e = sync_manifest_add(out, old->path, SYNC_T_FILE);
		e->mode = st.st_mode & 0777;
		e->size = (uint64_t)st.st_size;
		e->mtime_ns = mtime_ns(&st);
		if (old->type == SYNC_T_FILE && old->hash[0] && old->size == e->size &&
		    old->mtime_ns == e->mtime_ns && old->mode == e->mode) {
			memcpy(e->hash, old->hash, sizeof(e->hash));
			return;
		}
		/* Changed since the sync wrote it (or never hashed): hash it now. */
		fd = openat(pfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (fd >= 0 && sync_hash_fd(fd, e->hash))
			e->hash[0] = '\0';
		if (fd >= 0)
			close(fd);
	}
}

int sync_file_entry(const char *dst, struct sync_manifest *out)
{
	struct sync_entry *e;
	struct stat st;

	if (lstat(dst, &st) < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0
		                                           : error_errno("cannot stat '%s'", dst);
	if (S_ISREG(st.st_mode)) {
		e = sync_manifest_add(out, SYNC_FILE_ENTRY, SYNC_T_FILE);
		e->mode = st.st_mode & 0777;
		e->size = (uint64_t)st.st_size;
		e->mtime_ns = mtime_ns(&st);
	}
	return 0;
}

int sync_checked_manifest(int dfd, const char *dst, struct sync_manifest *out, int *old,
                          char **stored_path)
{
	struct sync_dir_cache dirs = {NULL, -1};
	struct sync_manifest stored;
	char real[PATH_MAX], *path = NULL, *what;
	size_t i;
	int r;

	*old = 0;
	if (stored_path)
		*stored_path = NULL;
	sync_manifest_init(&stored);
	/* Keyed by the real path: "~/x" and "/home/u/x" are one DST. */
	if (!realpath(dst, real))
		return error_errno("cannot resolve '%s'", dst);
	path = sync_stored_path(real);
	if (!path)
		return -ENOENT;
	r = read_stored(AT_FDCWD, path, path, &stored);
	if (r == -ENOENT) {
		what = xasprintf("%s/%s", dst, SYNC_OLD_MANIFEST_NAME);
		r = read_stored(dfd, SYNC_OLD_MANIFEST_NAME, what, &stored);
		*old = !r;
		free(what);
	}
	if (r == -ENOENT)
		r = 0;
	for (i = 0; i < stored.n && !r; i++)
		check_entry(dfd, &dirs, &stored.v[i], out);
	sync_dir_cache_release(&dirs);
	sync_manifest_sort(out);
	sync_manifest_release(&stored);
	if (stored_path && !r)
		*stored_path = path;
	else
		free(path);
	return r;
}

int sync_remote_manifest(const char *dst, unsigned flags, struct sync_manifest *out)
{
	int dfd, r, old;

	if (flags & SYNC_FILE)
		return sync_file_entry(dst, out);
	dfd = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? 0 : error_errno("cannot open directory '%s'", dst);
	r = sync_checked_manifest(dfd, dst, out, &old, NULL);
	close(dfd);
	return r;
}
