#ifndef SKIFF_SUP_PROTO_H
#define SKIFF_SUP_PROTO_H

/*
 * skiff's frames: how its processes talk, never by text a parser reads back. They carry
 * the control-socket protocol between the CLI and the supervisor (supervisor/client.c,
 * supervisor/requests.c); the launcher's protocol with a node over the runner's channel
 * (`node call`, cmd/node_call.c; `node up --frame`'s answer, install.c; the gang watcher's
 * watch) and with a jobs controller's host (`__jobs-remote`, supervisor/jobs/serve.c),
 * both through one client (bootstrap/infra/fcall.h); and data stored as fields
 * (task_overrides_encode(), renv specs, a job's row: st_row_encode()).
 *
 * A message is a 4-byte big-endian length followed by that many bytes of fields, each
 * field being KEY NUL VALUE NUL. Keys are non-empty lowercase words ([a-z0-9_]); values
 * are arbitrary bytes without NUL (env values, scripts). A key may repeat (env, id).
 * A request has an "op" field; a reply has "ok" = "1", or "error" with a message.
 *
 * Limits: PROTO_MAX_MSG bytes per message and PROTO_MAX_FIELDS fields; anything else is
 * refused with a clear error and the connection is closed.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"

#define PROTO_MAX_MSG ((size_t)16 << 20)
#define PROTO_MAX_FIELDS 200000
#define PROTO_HDR 4
/* A submit's idempotency key ("submit_key"): one job per key on a node, ever. */
#define SUBMIT_KEY_MAX 128

struct msg {
	struct buf raw; /* the encoded fields (without the length header) */
	size_t n;
	size_t cap;
	const char **keys; /* point into raw; valid until the next msg_add or msg_release */
	const char **vals;
};

void msg_init(struct msg *m);
void msg_release(struct msg *m);
/* Empties m and keeps its room, for the next message built in it. */
void msg_reset(struct msg *m);
/* Appends a field; -EINVAL for a bad key or a value with NUL, -ENOBUFS past the limit. */
int msg_add(struct msg *m, const char *key, const char *val);
int msg_addf(struct msg *m, const char *key, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
int msg_vaddf(struct msg *m, const char *key, const char *fmt, va_list ap)
        __attribute__((format(printf, 3, 0)));
int msg_add_int(struct msg *m, const char *key, int64_t v);
/*
 * Parses `len` bytes of fields (no header) into m, copying them. Returns 0 or -EPROTO
 * with *why set to a static description of what was wrong.
 */
int msg_decode(struct msg *m, const char *data, size_t len, const char **why);
/* First value for key, or NULL. */
const char *msg_get(const struct msg *m, const char *key);
int msg_get_int(const struct msg *m, const char *key, int64_t *out);
int msg_get_double(const struct msg *m, const char *key, double *out);

/* Encodes the length header for m into hdr. */
void proto_header(const struct msg *m, unsigned char hdr[PROTO_HDR]);
/*
 * Appends m to b as a frame (its header, then its body): 0, or buf_add()'s error with b as
 * it was (never half a frame).
 */
int proto_put(struct buf *b, const struct msg *m);
/* Reads the length header; -EPROTO if it exceeds PROTO_MAX_MSG. */
int proto_parse_header(const unsigned char hdr[PROTO_HDR], size_t *len);

/* Blocking client side: send one message, receive one (timeout_ms < 0: wait forever). */
int proto_send(int fd, const struct msg *m);
int proto_recv(int fd, struct msg *m, int timeout_ms);
/*
 * Takes the first frame of the bytes in b (as read from a stream) into m (released
 * first, so m must be initialised) and removes it from b: 1, 0 when b holds no whole
 * frame yet, or -EPROTO with *why set (a frame over the limit, or malformed fields).
 */
int proto_take(struct buf *b, struct msg *m, const char **why);

#endif
