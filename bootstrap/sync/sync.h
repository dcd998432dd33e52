#ifndef SKIFF_SYNC_H
#define SKIFF_SYNC_H

/*
 * File sync over a byte stream: a task's workdir or a file_mounts source, from the
 * launcher to a node, over whatever channel the runner gives (ssh, `podman exec -i`,
 * srun). Both ends are skiff; the node needs nothing else. docs/sync.md has the protocol.
 *
 *   launcher                                         node
 *   --------                                         ----
 *   sync_push(src, peers)  -- HELLO (digest) ---->   skiff __sync-serve DST  (sync_serve)
 *                          <-- match, or manifest
 *                          -- changes, deltas --->   applied as they come
 *                          <-- signatures, wants
 *                          <-- outcome, digest ---
 *
 * One session per node, both ways at once; a launcher syncs several nodes with one read
 * of the tree (sync_push() with several peers). The one-way form, sync_pack() into a
 * stream and sync_unpack() out of it, serves tests and runtime-env packages.
 *
 * The stream is framed records, zstd-compressed where that pays (docs/sync.md): what
 * the node deletes, then the new and changed entries, files as their data or as a
 * delta against the node's copy, each file checked against its content hash before it is
 * renamed into place, and an end record that makes a truncated stream detectable.
 *
 * The node is a security boundary: sync_unpack() and sync_serve() never create, change
 * or remove anything outside DST whatever the stream holds (see docs/sync.md for what
 * they refuse). The launcher side trusts its own tree and treats what a node sends
 * (manifest, signatures, answers) as untrusted, and never decompresses it.
 *
 * Fds passed in are never closed, except as sync_push() says. Every function here blocks
 * on its fds and the disk. SIGPIPE must be ignored (cmd/main.c does).
 */

#include <stddef.h>
#include <stdint.h>

#include "bootstrap/sync/sync_hash.h"
#include "lib/buf.h"

/* Where older skiffs kept the node's manifest, inside DST (now $SKIFF_HOME/sync/). */
#define SYNC_MANIFEST_NAME ".skiff-sync-manifest"
/* Temp files in the destination dirs start with this. */
#define SYNC_TMP_PREFIX ".skiff-sync-tmp."
/* The one entry's path in single-file mode. */
#define SYNC_FILE_ENTRY "."

#define SYNC_DEFAULT_MAX_BYTES ((uint64_t)4 << 30)
#define SYNC_MAX_ENTRIES 1000000
#define SYNC_PATH_MAX 4095                    /* bytes in a relative path */
#define SYNC_NAME_MAX 255                     /* bytes in one component */
#define SYNC_MANIFEST_MAX ((size_t)512 << 20) /* bytes of manifest text */
#define SYNC_CONTROL_MAX ((size_t)64 << 20)   /* bytes in the control entry */

enum sync_flags {
	SYNC_FILE = 1 << 0,      /* the source and destination are one file, not a dir */
	SYNC_COMPRESS = 1 << 1,  /* sync_pack: zstd where it pays (sync_push always does);
	                            sync_unpack: compressed data is accepted */
	SYNC_NO_IGNORE = 1 << 2, /* send everything but .git (no .skyignore / .gitignore) */
	SYNC_NO_STATE = 1 << 3,  /* sync_unpack: keep no manifest of DST (a fresh dir, once) */
	SYNC_LATE_FREE = 1 << 4, /* sync_unpack/serve: large files replaced or deleted are
	                            freed by sync_free_late() (a command's, not a daemon's) */
};

enum sync_type {
	SYNC_T_NONE = 0, /* a removed entry (internal) */
	SYNC_T_FILE = 'f',
	SYNC_T_DIR = 'd',
	SYNC_T_LINK = 'l',
};

struct sync_entry {
	char *path;    /* relative to the root, '/'-separated; SYNC_FILE_ENTRY in file mode */
	char *target;  /* symlinks: the link text; NULL otherwise */
	uint64_t size; /* files */
	int64_t mtime_ns;
	unsigned mode;                /* permission bits only (& 0777) */
	char type;                    /* enum sync_type */
	char hash[SYNC_HASH_HEX + 1]; /* files: the content hash (sync_hash.h), or "" */
	size_t seq;                   /* internal: insertion order, so that a later entry wins */
};

/* A list of entries, sorted by path (bytewise) once sync_manifest_sort() has run. */
struct sync_manifest {
	struct sync_entry *v;
	size_t n, alloc;
	size_t next_seq;
};

struct sync_stats {
	uint64_t files;     /* regular files sent / written */
	uint64_t dirs;      /* directories sent / created or updated */
	uint64_t links;     /* symlinks sent / written */
	uint64_t bytes;     /* file data bytes sent / written */
	uint64_t deleted;   /* paths listed for deletion / deleted */
	uint64_t unchanged; /* sync_pack: entries the node already has */
	uint64_t skipped;   /* pack: symlinks leaving the tree; unpack: deletions not done */
};

/* --- ignore rules (bootstrap/sync/sync_ignore.c) ---------------------------------------- */

/*
 * gitignore(5) rules: '#' comments, blank lines, '!' negation, a trailing '/' for
 * directories only, a '/' at the start or in the middle anchors the pattern to the
 * directory of its file (else it matches a name at any depth below it), '*', '?',
 * '[...]' (with '!' or '^', ranges and [:class:]), '\' escapes, and '**' as a whole
 * component: leading "**" + "/", "/" + "**" + "/" (zero or more dirs) and a trailing "/" + "**".
 *
 * Rules are kept in the order their files were added, and files must be added parents
 * first (as a walk meets them): the last rule that matches a path decides, so a deeper
 * file overrides its parents. A rule only applies below the directory of its file.
 */
struct sync_ignore_rule;

struct sync_ignore {
	struct sync_ignore_rule *v;
	size_t n, alloc;
};

void sync_ignore_init(struct sync_ignore *ig);
void sync_ignore_release(struct sync_ignore *ig);
/*
 * Adds the rules in text (the contents of one ignore file) for the directory `base`
 * relative to the root ("" for the root itself). Lines are bounded only by len.
 */
int sync_ignore_add(struct sync_ignore *ig, const char *base, const char *text, size_t len);
/* Drops the rules added after the first n (a walk leaving a directory). */
void sync_ignore_truncate(struct sync_ignore *ig, size_t n);
/*
 * 1 if the entry at path (relative to the root) is ignored by a rule, looking at the
 * entry itself only: a walk that does not descend into ignored directories needs no more.
 */
int sync_ignore_match(const struct sync_ignore *ig, const char *path, int is_dir);
/* Like sync_ignore_match(), but also 1 when a parent directory of path is ignored. */
int sync_ignore_path(const struct sync_ignore *ig, const char *path, int is_dir);
/* 1 if str matches the glob pattern with gitignore's rules for '/', '*' and '**'. */
int sync_wildmatch(const char *pat, const char *str);

/* --- manifests (bootstrap/sync/sync_manifest.c) --------------------------------------- */

void sync_manifest_init(struct sync_manifest *m);
/* Frees every entry; m is left empty and reusable. NULL is fine. */
void sync_manifest_release(struct sync_manifest *m);
/* Appends an entry for a copy of path; the caller fills in the rest. Never NULL. */
struct sync_entry *sync_manifest_add(struct sync_manifest *m, const char *path, char type);
/* Sorts by path; of entries with the same path the last added wins; drops SYNC_T_NONE. */
void sync_manifest_sort(struct sync_manifest *m);
/* Binary search in a sorted manifest; NULL if path is not there. */
struct sync_entry *sync_manifest_find(const struct sync_manifest *m, const char *path);

/*
 * Text form, one entry a line, fields separated by one space, paths and link targets
 * escaped with sync_escape():
 *
 *   skiff-sync-manifest 2
 *   d MODE MTIME_NS PATH
 *   f MODE SIZE MTIME_NS HASH|- PATH
 *   l MTIME_NS TARGET PATH
 *   end COUNT
 *
 * MODE is octal, the rest decimal, HASH the content hash in hex (sync_hash.h). The "end"
 * line makes a cut-off manifest an error. Version 1 (SHA-256 hashes) is read too, its
 * hashes as unknown.
 * format appends to out (which the caller sorts first if it wants a stable order).
 */
int sync_manifest_format(const struct sync_manifest *m, struct buf *out);
/*
 * Parses text into m (appended, then sorted). Strict: any malformed line, a path that
 * sync_path_check() refuses, a duplicate path, more than SYNC_MAX_ENTRIES or a missing
 * "end" line is an error naming `what` and the line. On error m holds no new entries.
 */
int sync_manifest_parse(struct sync_manifest *m, const char *text, size_t len, const char *what);

/*
 * Reads all of fd (at most SYNC_MANIFEST_MAX bytes: the node's side of a pipe, say) and
 * parses it into m; errors name `what`. fd is not closed.
 */
int sync_manifest_read_fd(struct sync_manifest *m, int fd, const char *what);

/*
 * Escaping for paths and link targets: every byte outside '!'..'~', and '\\', becomes
 * \xHH (lowercase hex). The result is non-empty printable ASCII with no spaces.
 * unescape is strict: it refuses any byte that escape would have escaped, a bad \x,
 * an empty string and a NUL; it appends to out. Both return 0, -EINVAL or a buf error.
 */
int sync_escape(struct buf *out, const char *s);
int sync_unescape(struct buf *out, const char *s, size_t len);

/*
 * 0 if path is an acceptable relative path: not empty, no leading or trailing '/', no
 * empty, "." or ".." components, at most SYNC_PATH_MAX bytes and SYNC_NAME_MAX per
 * component. Else -EINVAL, with *why (if not NULL) set to a static reason.
 */
int sync_path_check(const char *path, const char **why);
/*
 * 0 if a symlink at `path` (relative to the root) with text `target` stays inside the
 * root however it is resolved: relative, and of the form "../" * k followed by plain
 * names, with k no more than the link's depth. Else -EINVAL and *why.
 */
int sync_link_check(const char *path, const char *target, const char **why);

/*
 * The launcher's side: walks src (a directory, or in SYNC_FILE mode a regular file)
 * without following symlinks below it, honouring the ignore rules (bootstrap/
 * sync_ignore.c) unless SYNC_NO_IGNORE, never .git, and fills out, sorted. Nothing is
 * hashed here. Symlinks that would leave the tree are skipped with a warning and counted
 * in *skipped (may be NULL). Other file types (fifos, sockets, devices) are skipped.
 */
int sync_local_manifest(const char *src, unsigned flags, struct sync_manifest *out,
                        uint64_t *skipped);

/*
 * The node's side (`skiff __sync-manifest`): the stored manifest of dst (kept in
 * $SKIFF_HOME/sync/, outside DST, by the real path of DST), checked against the disk. An entry
 * whose file is gone or became another type is dropped or re-typed; a file whose size, mtime or
 * mode changed is re-hashed. Nothing outside the stored manifest is listed (files a job created
 * there are never deleted by a sync). A dst that does not exist gives an empty manifest. In
 * SYNC_FILE mode dst is the file and its one entry has no hash (size, mtime and mode decide).
 */
int sync_remote_manifest(const char *dst, unsigned flags, struct sync_manifest *out);

/* --- sessions (bootstrap/sync/sync_session.c, bootstrap/sync/sync_unpack.c) ----------- */

/* One node of a sync_push(). */
struct sync_peer {
	const char *name;      /* for messages: "node tn1" */
	int to_fd;             /* the node's stdin: sync_push() closes it when it is done */
	int from_fd;           /* the node's stdout, where `__sync-serve` answers; not closed */
	const char *cache_key; /* names this node and DST in the launcher's cache; NULL: none */
	int rc;                /* out: 0, or -errno (printed, or -EIO: the node printed why) */
	struct sync_stats st;  /* out: what the node applied, as it says */
	uint64_t wire_bytes;   /* out: bytes written to it */
};

/*
 * Brings every peer's DST up to date with src (a directory, or with SYNC_FILE a file):
 * each peer must be a running `skiff __sync-serve [--file] DST` (sync_serve()) with its
 * stdin on to_fd and its stdout on from_fd. The tree is walked once; peers that hold the
 * same thing (most often all of them) get one encoding of the changes, written to all at
 * once, so N nodes cost about what one does. A changed large file goes as a block delta
 * against the node's copy; the node checks every file's content hash before it renames it into
 * place, and asks again for a file whose delta it could not apply. A file that changes
 * while it is read is read again, or left out with a warning (never sent mixed). Each
 * peer's to_fd is closed when its stream ends; the caller then reaps the peers and may
 * keep their exit status too. Returns 0 if every peer succeeded, else an error (each
 * peer's own outcome in rc). Uses the launcher's cache under $SKIFF_HOME/sync/nodes.
 */
int sync_push(const char *src, unsigned flags, struct sync_peer *peers, size_t n);

/*
 * The node's side of a session: reads the launcher's records on in_fd and answers on
 * out_fd, applying them to dst as sync_unpack() does. 0, or an error (printed; the
 * launcher is told too).
 */
int sync_serve(int in_fd, int out_fd, const char *dst, unsigned flags, uint64_t max_bytes,
               struct sync_stats *st);

/*
 * After sync_serve() or sync_unpack() with SYNC_LATE_FREE: the old large files they held
 * open (replaced or deleted, no longer in DST) are closed by a child process of their own,
 * off the caller's stdio, so that the kernel's freeing of their pages and blocks (about
 * 1 ms per MB) does not hold up the session's end. For a short-lived command about to
 * exit: it forks.
 */
void sync_free_late(void);

/* --- the one-way stream (bootstrap/sync/sync_pack.c, bootstrap/sync/sync_unpack.c) ------ */

/*
 * Writes to out_fd the stream that brings a node whose manifest is `remote` (sorted;
 * NULL means empty) up to date with src: entries whose type or mode differ, or whose
 * size or mtime differ and (when the node knows a hash) whose content hash differs; symlinks
 * whose target differs; and every path the node has that src no longer has, to delete.
 * Files go whole (a delta needs the node's answer). SYNC_COMPRESS compresses what
 * compresses. st (may be NULL) is zeroed and filled.
 */
int sync_pack(const char *src, const struct sync_manifest *remote, int out_fd, unsigned flags,
              struct sync_stats *st);

/*
 * Reads a stream from in_fd and applies it to dst (a directory, created if missing, or
 * in SYNC_FILE mode the file path). Files are written to a temp name in their directory,
 * checked against their content hash and renamed into place, with their permission bits
 * (setuid, setgid and sticky stripped) and mtime. Deletions are only done for paths in
 * dst's stored manifest ($SKIFF_HOME/sync/, docs/sync.md; none with SYNC_NO_STATE).
 * More than max_bytes of file data (0: SYNC_DEFAULT_MAX_BYTES) is an error. Any refused
 * entry, corrupt or truncated stream stops the sync with an error; what was fully
 * written before that is recorded in the manifest, the rest of dst is as it was.
 * Concurrent syncs to one dst are serialised with a lock on the directory. Compressed
 * data is refused unless flags has SYNC_COMPRESS: give it when the stream comes from a
 * launcher, never when it comes from a node (sync-down), as the launcher does not
 * decompress what a node sends.
 */
int sync_unpack(int in_fd, const char *dst, unsigned flags, uint64_t max_bytes,
                struct sync_stats *st);

/* "files=N dirs=N links=N bytes=N deleted=N skipped=N unchanged=N", appended to out. */
int sync_stats_format(const struct sync_stats *st, struct buf *out);

/*
 * The destination as the node sees it: "~" or "~/rest" becomes $HOME/rest (the node's
 * home, never the launcher's), and so does a relative path (as ssh's cwd is the home);
 * an absolute path is kept; "~user" and "" are errors. Trailing slashes are dropped.
 * Returns a new string (the caller frees it), or NULL with an error printed.
 */
char *sync_expand_dst(const char *dst);

#endif
