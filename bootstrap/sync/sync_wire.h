#ifndef SKIFF_SYNC_WIRE_H
#define SKIFF_SYNC_WIRE_H

/*
 * The sync protocol's two layers, for the bootstrap/sync/ files only (docs/sync.md has
 * the protocol itself).
 *
 * Frames carry bytes: `kind:u8 len:u24le payload`. An 'R' frame's payload is record
 * bytes as they are; a 'Z' frame's is a piece of one zstd stream whose output is record
 * bytes. The record stream is the frames' bytes in order, so compression can be switched
 * on and off at any byte (incompressible file data goes out as it is, in 'R' frames).
 * A writer may send to several fds at once (one encoding for several nodes).
 *
 * Records: `type:u8 len:u32le body[len]`, integers little-endian.
 *
 * Nothing here closes an fd. Reads and writes block (a writer with several sinks writes
 * to them in parallel, with poll). Errors are printed once, naming `what`. SIGPIPE must be
 * ignored (cmd/main.c does): a sink that went away is an error, not a signal.
 */

#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"

#define SYNC_WIRE_VERSION 2
#define SYNC_HELLO_MAGIC "skiff-sync"

#define SYNC_FRAME_RAW 'R'
#define SYNC_FRAME_ZSTD 'Z'
#define SYNC_FRAME_MAX (1u << 20)   /* payload a reader accepts */
#define SYNC_FRAME_OUT (256u << 10) /* payload a writer puts in one frame */
#define SYNC_ZSTD_WLOG_MAX 23       /* window a reader allows: 8 MiB of decoder memory */

#define SYNC_REC_HEAD 5
#define SYNC_REC_META_MAX (64u << 10) /* any record but data, signatures, manifest text */
#define SYNC_REC_DATA_MAX (1u << 20)  /* 'c' and 'M' bodies */
#define SYNC_SIG_COUNT_MAX (1u << 17) /* blocks in one signature set */
#define SYNC_REC_SIG_MAX ((size_t)SYNC_SIG_COUNT_MAX * 12 + 64)

/* Record types, launcher to node. */
enum {
	REC_HELLO = 'H',  /* magic, version:u8, mode:u8 ('d'|'f'), flags:u8, has:u8, digest[32] */
	REC_SIGREQ = 'G', /* id:u32, path: send the signatures of the node's file */
	REC_DELETE = 'D', /* path */
	REC_DIR = 'd',    /* mode:u32, path */
	REC_LINK = 'l',   /* mtime:i64, tlen:u32, target, path */
	REC_FILE = 'f',   /* mode:u32, mtime:i64, size:u64, path; then data, then 'h' or 'a' */
	REC_DELTA = 'x',  /* mode:u32, mtime:i64, size:u64, bsize:u64 (the old file's), path;
	                     then data and copies, then 'h' or 'a' */
	REC_DATA = 'c',   /* bytes of the current file */
	REC_COPY = 'k',   /* off:u64, len:u64: bytes of the node's old file (a delta only) */
	REC_ZEROS = 'z',  /* len:u64: zero bytes (a hole) */
	REC_HASH = 'h',  /* hash[16]: the whole file's (sync_hash.h); in place only if it matches */
	REC_ABORT = 'a', /* the file changed while it was read: drop what came of it */
	REC_TOUCH = 't', /* mode:u32, mtime:i64, size:u64, hash[16], path: same content */
	REC_BARRIER = 'B', /* answer 'B' once everything before is applied */
	REC_QUIET = 'Q',   /* (first, if at all) the tree has the shape of what the launcher
	                      believes the node holds: if the node matched, this is the end */
	REC_END = 'E',     /* entries:u64 (records D d l f x t before it); nothing may follow */
};

/* Record types, node to launcher. */
enum {
	REC_STATE = 'S',        /* match:u8, digest[32] of the node's manifest */
	REC_MANIFEST = 'M',     /* manifest text (sync_manifest_format); any number of them */
	REC_MANIFEST_END = 'm', /* total:u64 */
	REC_SIGS = 'K',         /* id:u32, ok:u8, block:u32, size:u64, n:u32, then n x
	                           (weak:u32, strong:u64) */
	REC_WANT = 'W',         /* path: the delta or touch of it failed; send it whole */
	REC_ACK = 'b',          /* the barrier is reached */
	REC_FINAL = 'F',        /* status:u8 (0 ok), 7 x u64 stats, has:u8, digest[32], message */
};

enum sync_hello_flags {
	HELLO_SESSION = 1 << 0, /* the node answers on a channel of its own (sync_serve) */
};

/* Microseconds on CLOCK_MONOTONIC. */
int64_t sync_now_us(void);

/* --- writing ------------------------------------------------------------------------ */

struct sync_wire_out {
	const char *what;    /* for messages: "the sync stream" */
	int *fds;            /* the sinks; -1 once one failed */
	int *errs;           /* per sink: 0, or the -errno it failed with */
	size_t nfds, live;   /* sinks, and how many still work */
	void *z;             /* ZSTD_CCtx, or NULL: never compress */
	int level;           /* zstd level now (sync_wire_level() changes it) */
	int zopen;           /* a zstd frame is open (it needs an end) */
	int zdirty;          /* bytes went into zstd since its last flush */
	char kind;           /* kind of the frame being built, 0 if none */
	unsigned char *pend; /* its payload */
	size_t plen;
	unsigned char *out; /* whole frames not yet written */
	size_t olen;
	uint64_t raw_bytes, zin_bytes, zout_bytes, wire_bytes;
	int64_t blocked_us; /* time spent waiting for a sink to take more */
};

/*
 * fds: n sinks (copied; set non-blocking when there are several). level > 0: compress
 * what is marked compressible at that zstd level; 0: never.
 */
int sync_wire_out_init(struct sync_wire_out *w, const char *what, const int *fds, size_t n,
                       int level);
void sync_wire_out_release(struct sync_wire_out *w);
/* Record bytes: compressed (if w compresses) or as they are. 0, or -EPIPE: no sink left. */
int sync_wire_put(struct sync_wire_out *w, const void *data, size_t len, int compressible);
/* A whole record. */
int sync_wire_rec(struct sync_wire_out *w, int type, const void *body, size_t len,
                  int compressible);
/* A record whose body is head (hlen bytes) then data (len bytes), never compressed, written
 * without copying data when it is large. */
int sync_wire_rec_raw(struct sync_wire_out *w, int type, const void *head, size_t hlen,
                      const void *data, size_t len);
/* Everything so far, out to the sinks (a zstd flush: the reader can decode all of it). */
int sync_wire_flush(struct sync_wire_out *w);
/*
 * Flushes and ends the zstd frame: what follows starts a new one, at level (if w
 * compresses). Another writer may then go on on the same fds.
 */
int sync_wire_level(struct sync_wire_out *w, int level);
/* 1 if sink i still works. */
int sync_wire_sink_ok(const struct sync_wire_out *w, size_t i);

/* --- reading ------------------------------------------------------------------------ */

struct sync_wire_in {
	const char *what; /* for messages: "the sync stream", "node tn1's answer" */
	int fd;
	void *z; /* ZSTD_DCtx, or NULL: a 'Z' frame is refused */
	unsigned char *ib;
	size_t ipos, ilen;
	char kind;         /* the current frame's kind, 0 between frames */
	size_t left;       /* its payload bytes not yet taken from ib */
	int zfull;         /* the decoder may still hold output for the current frame */
	unsigned char *db; /* decoded bytes of 'Z' frames */
	size_t dpos, dlen;
	uint64_t in_bytes; /* read from fd so far */
	int eof;
};

/* decompress: accept 'Z' frames (the node reading the launcher; never the other way). */
int sync_wire_in_init(struct sync_wire_in *r, const char *what, int fd, int decompress);
void sync_wire_in_release(struct sync_wire_in *r);
/*
 * Exactly n record bytes into dst. 0; -ENODATA (not printed) at a clean end of input
 * before the first byte, when `at_boundary`; any other short input, a bad frame or bad
 * zstd data is an error (printed): -EPROTO, or -EIO for a read error.
 */
int sync_wire_read(struct sync_wire_in *r, void *dst, size_t n, int at_boundary);
/* A record's head. -ENODATA (not printed) at a clean end of input. */
int sync_rec_head(struct sync_wire_in *r, int *type, uint32_t *len);
/* Its body into b (reset first), refusing a body over max. */
int sync_rec_body(struct sync_wire_in *r, int type, uint32_t len, size_t max, struct buf *b);

/* --- record bodies ------------------------------------------------------------------ */

void sync_put_u8(struct buf *b, unsigned v);
void sync_put_u32(struct buf *b, uint32_t v);
void sync_put_u64(struct buf *b, uint64_t v);

/* A cursor over a body; a read past its end sets bad and gives 0. */
struct sync_cur {
	const unsigned char *p;
	size_t n;
	int bad;
};
void sync_cur_init(struct sync_cur *c, const void *p, size_t n);
unsigned sync_get_u8(struct sync_cur *c);
uint32_t sync_get_u32(struct sync_cur *c);
uint64_t sync_get_u64(struct sync_cur *c);
const unsigned char *sync_get_bytes(struct sync_cur *c, size_t n);

#endif
