#ifndef SKIFF_SYNC_INTERNAL_H
#define SKIFF_SYNC_INTERNAL_H

/* Shared by the bootstrap/sync_*.c files only. */

#include <archive.h>

#include "bootstrap/sync/sync.h"

/* Bytes read from an ignore file, a stored manifest or the control entry, at most. */
#define SYNC_IGNORE_FILE_MAX ((size_t)1 << 20)

/*
 * 1 if path (relative, checked) is a name the protocol uses for itself: any top-level
 * name starting with SYNC_RESERVED_PREFIX (the manifest, its temp file, the control and
 * end names), or a temp file name anywhere. The launcher skips them, the node refuses them.
 */
#define SYNC_RESERVED_PREFIX ".skiff-sync-"
int sync_reserved_path(const char *path);

/*
 * Opens the directory that holds the last component of path (checked with
 * sync_path_check()), starting at root_fd and opening every component with
 * O_NOFOLLOW | O_DIRECTORY, so that no symlink is ever followed. With create, missing
 * components are made (mode 0755). Returns the new fd (the caller closes it) and sets
 * *base to the last component inside path; or -errno (-ENOTDIR or -ELOOP for a
 * component that is not a directory). *bad (may be NULL) gets the length of the prefix
 * of path that failed.
 */
int sync_open_parent(int root_fd, const char *path, int create, const char **base, size_t *bad);

/*
 * Moves every entry of from into m as if added after m's own (so from's win when
 * sync_manifest_sort() meets the same path twice), empties from and sorts m.
 */
void sync_manifest_merge(struct sync_manifest *m, struct sync_manifest *from);
/* Drops the entries after the first n (freeing them). */
void sync_manifest_truncate(struct sync_manifest *m, size_t n);
/*
 * Reads dst's stored manifest (dfd is dst) into m. A missing file is an empty manifest;
 * an unreadable or corrupt one is a warning and an empty manifest (the node then owns
 * nothing: it deletes nothing and the launcher sends everything again).
 */
int sync_read_stored(int dfd, const char *dst, struct sync_manifest *m);

/*
 * sync_open_parent() for a run of paths that mostly share their directory (a sorted
 * manifest, a stream in path order): the last directory's fd is kept and reused.
 * The fd returned belongs to the cache; sync_dir_cache_release() closes it.
 */
struct sync_dir_cache {
	char *dir; /* path of the cached directory relative to the root; NULL: none */
	int fd;
};

int sync_dir_cache_open(struct sync_dir_cache *c, int root_fd, const char *path, int create,
                        const char **base, size_t *bad);
void sync_dir_cache_release(struct sync_dir_cache *c);

/* Error from a libarchive call: "MSG: libarchive's message"; returns -EIO. */
int sync_archive_error(struct archive *a, const char *msg);

#endif
