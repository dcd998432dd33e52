#ifndef SKIFF_SYNC_INTERNAL_H
#define SKIFF_SYNC_INTERNAL_H

/* Shared by the bootstrap/sync/sync_*.c files only. */

#include <time.h>

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
 * A file time in nanoseconds since the epoch, as manifests keep it: times that do not fit
 * in 64 bits (before 1678 or after 2262) are -INT64_MAX or INT64_MAX, never an overflow.
 * A time set from such a value reads back as the same value.
 */
int64_t sync_ts_ns(const struct timespec *t);

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

/* --- state kept between syncs (bootstrap/sync/sync_cache.c) ------------------------- */

/* Where the node keeps the manifest of the DST whose real path is dst_real (malloc'd). */
char *sync_stored_path(const char *dst_real);
/* The name the manifest had inside DST before it moved out (read once, then removed). */
#define SYNC_OLD_MANIFEST_NAME ".skiff-sync-manifest"
/*
 * sha256 of the manifest as a sync compares it (paths, types, modes, file sizes, mtimes
 * and hashes, link targets; not the mtimes of directories and links): equal digests mean
 * a launcher knows exactly what the node holds. m must be sorted. 0 or -ENOBUFS.
 */
int sync_manifest_digest(const struct sync_manifest *m, unsigned char out[32]);
/* The same without content hashes: equal shapes of the local tree and of what a node
 * holds mean that a sync has nothing to send (sizes, mtimes, modes, targets all equal). */
void sync_manifest_shape(const struct sync_manifest *m, unsigned char out[32]);
void sync_digest_hex(const unsigned char d[32], char hex[65]);
int sync_digest_parse(const char *hex, unsigned char d[32]);
/*
 * The launcher's cache of what a node holds, by key (the caller's name for that node and
 * DST): the digest, the shape and the manifest text. -ENOENT when there is none (or it is
 * unreadable).
 */
int sync_cache_read(const char *key, unsigned char digest[32], unsigned char shape[32],
                    struct buf *text);
int sync_cache_write(const char *key, const unsigned char digest[32],
                     const struct sync_manifest *m);
void sync_cache_drop(const char *key);

/*
 * The node's manifest of the DST open as dfd, checked against the disk (see
 * sync_remote_manifest()): read from sync_stored_path() (given in *stored, malloc'd, when
 * stored is not NULL), or from the old place inside DST (*old set then, so that the caller
 * removes it once it wrote the new one).
 */
int sync_checked_manifest(int dfd, const char *dst, struct sync_manifest *out, int *old,
                          char **stored);
/* The one entry of a single-file DST, from lstat (no hash); none if it is not a file. */
int sync_file_entry(const char *dst, struct sync_manifest *out);

/* --- the sender (bootstrap/sync/sync_pack.c) ----------------------------------------- */

enum sync_op {
	SYNC_OP_DIR = 1,
	SYNC_OP_LINK,
	SYNC_OP_FILE,  /* sent whole */
	SYNC_OP_DELTA, /* a delta against the node's copy (a session only) */
	SYNC_OP_TOUCH, /* same content: new mode or mtime only (a session only) */
};

struct sync_item {
	const struct sync_entry *l; /* the local entry */
	const struct sync_entry *c; /* what the node has at that path, or NULL */
	int op;
	char hash[SYNC_HASH_HEX + 1]; /* SYNC_OP_TOUCH: the content's (the node's and ours) */
};

/* What a sync sends: the diff of the local tree against what the node holds. */
struct sync_plan {
	struct sync_item *v;
	size_t n, alloc;
	const struct sync_entry **del; /* paths to delete, children first */
	size_t ndel, delalloc;
	size_t ndelta, ntouch;
	uint64_t unchanged;
};

/*
 * The diff (docs/sync.md, "The diff"). session: deltas and touches may be used (the node
 * can ask for a file whole when one fails). Pointers into local and remote, which must
 * outlive the plan. Hashes local files whose size matches but mtime does not.
 */
int sync_plan_make(const char *src, unsigned flags, const struct sync_manifest *local,
                   const struct sync_manifest *remote, int session, struct sync_plan *p);
void sync_plan_release(struct sync_plan *p);

struct sync_sigs;
struct sync_wire_out;

struct sync_sender {
	const char *src;
	unsigned flags;
	struct sync_wire_out *w;
	struct sync_manifest *after; /* what the node will hold (the entries sent go in); or NULL */
	struct sync_stats st;        /* what was sent */
	uint64_t entries;            /* entry records sent (the end record's count) */
	uint64_t literal_bytes;      /* of deltas: the bytes that were not copied */
	struct buf path, body;
	unsigned char *blk;
	void *sample;         /* a ZSTD_CCtx that tells compressible data from the rest */
	int64_t mark_us;      /* the adaptive level's last look: time, */
	int64_t mark_blocked; /* time blocked, */
	uint64_t mark_in;     /* bytes compressed so far, */
	uint64_t mark_cpu_idle, mark_cpu_total; /* and the machine's CPU time (/proc/stat) */
};

void sync_sender_init(struct sync_sender *s, const char *src, unsigned flags,
                      struct sync_wire_out *w, struct sync_manifest *after);
void sync_sender_release(struct sync_sender *s);
int sync_send_deletes(struct sync_sender *s, const struct sync_plan *p);
/* One item; sigs: the node's signatures for a SYNC_OP_DELTA (NULL: send it whole). */
int sync_send_item(struct sync_sender *s, const struct sync_item *it, const struct sync_sigs *sigs);
int sync_send_end(struct sync_sender *s);
/*
 * The zstd level a sync starts at, 0 for none: SKIFF_SYNC_LEVEL when set (0..19, then
 * fixed: *adaptive 0), else 1 and adaptive (raised while a slow link makes the sender wait).
 * adaptive may be NULL.
 */
int sync_level(int *adaptive);
/* The HELLO record (digest NULL: the launcher knows nothing of the node). */
int sync_send_hello(struct sync_wire_out *w, unsigned flags, int session,
                    const unsigned char *digest);

#endif
