#ifndef SKIFF_SYNC_APPLY_H
#define SKIFF_SYNC_APPLY_H

/*
 * The node's side of a sync, on the file system: one call per entry record, every write
 * through a directory fd opened one component at a time with O_NOFOLLOW from DST
 * (sync_open_parent), files made under a temp name and renamed into place only once their
 * content hash matched. For bootstrap/sync/sync_unpack.c, which reads the records.
 *
 * Errors are printed; a refusal is -EPERM with "refusing 'NAME' in the sync stream: WHY".
 */

#include "bootstrap/sync/sync_internal.h"
#include "bootstrap/sync/sync_wire.h"

struct sync_apply {
	const char *dst;
	unsigned flags;
	uint64_t max_bytes;
	struct sync_wire_in *in; /* where a file's data records come from */
	struct sync_stats *st;
	int dfd;                    /* DST; in file mode the directory that holds it */
	const char *file_name;      /* file mode: DST's last component */
	char *stored;               /* dir mode: where the manifest is kept (sync_stored_path()) */
	int old_manifest;           /* it was read from inside DST: remove that one once saved */
	struct sync_manifest base;  /* what the node holds, checked; deletions mark entries */
	struct sync_manifest added; /* what this sync wrote */
	int dirty;
	uint64_t written; /* file bytes written, bounded by max_bytes */
	unsigned long tmp_seq;
	struct buf shown; /* scratch: a name made printable for a message */
	struct sync_dir_cache dirs;
	unsigned char *blk;
};

/* Creates DST if missing, opens and locks it, reads and checks its manifest. */
int sync_apply_open(struct sync_apply *a, const char *dst, unsigned flags, uint64_t max_bytes,
                    struct sync_stats *st);
/* Saves the manifest when the sync wrote or deleted anything (also after a failure:
 * what was fully done is recorded) and frees a. Returns r, or the save's error. */
int sync_apply_close(struct sync_apply *a, int r);

int sync_apply_refuse(struct sync_apply *a, const char *path, const char *why);
/* The checks every path of a record passes (docs/sync.md, "What the receiver refuses"). */
int sync_apply_check(struct sync_apply *a, const char *path, int type);

int sync_apply_dir(struct sync_apply *a, const char *path, unsigned mode);
int sync_apply_link(struct sync_apply *a, const char *path, const char *target, int64_t mtime_ns);
int sync_apply_delete(struct sync_apply *a, const char *path);
/*
 * A file ('f', or 'x' with delta set and bsize the old file's size): reads its data
 * records from a->in up to its 'h' (or 'a') and puts it in place if its hash matches.
 * *want is set (and 0 returned) when a delta cannot be applied here: the old file is not
 * what the launcher cut, or the result does not match; it was discarded and the node
 * asks for the file whole.
 */
int sync_apply_file(struct sync_apply *a, const char *path, unsigned mode, int64_t mtime_ns,
                    uint64_t size, int delta, uint64_t bsize, int *want);
/* Same content, new mode and mtime ('t'): *want when the node's copy is not that content. */
int sync_apply_touch(struct sync_apply *a, const char *path, unsigned mode, int64_t mtime_ns,
                     uint64_t size, const unsigned char hash[SYNC_HASH_LEN], int *want);
/* The node's signatures of the file at path (for a 'G'); *ok 0 if it has no such file. */
int sync_apply_sigs(struct sync_apply *a, const char *path, struct sync_sigs *s, int *ok);

#endif
