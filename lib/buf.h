#ifndef SKIFF_BUF_H
#define SKIFF_BUF_H

/*
 * A growable, NUL-terminated byte buffer with a hard size limit.
 *
 * Anything read from a child, a socket or a file goes through a buf whose `max` bounds
 * how much memory the input can make us use. Adding past `max` fails with -ENOBUFS and
 * leaves the buffer as it was. `p` is never NULL after buf_init(): an empty buf points at
 * a shared "" until it first grows.
 *
 *   struct buf b = BUF_INIT(1 << 20);
 *   buf_addf(&b, "%d", n);
 *   ... use b.p, b.len ...
 *   buf_release(&b);
 */

#include <stdarg.h>
#include <stddef.h>

#include "lib/log.h"

struct buf {
	char *p;
	size_t len;
	size_t cap; /* 0 while p points at the shared empty string */
	size_t max; /* hard limit on len; 0 means BUF_DEFAULT_MAX */
};

#define BUF_DEFAULT_MAX ((size_t)64 << 20)
extern char buf_empty[1];
#define BUF_INIT(m)                                                                                \
	{                                                                                          \
		buf_empty, 0, 0, (m)                                                               \
	}

void buf_init(struct buf *b, size_t max);
/* Frees the memory and leaves b empty and reusable. */
void buf_release(struct buf *b);
/* Takes the string away from b (the caller frees it); b is left empty. Never NULL. */
char *buf_detach(struct buf *b, size_t *len);
void buf_reset(struct buf *b);
/* Makes room for `extra` more bytes; -ENOBUFS past max, -ENOMEM if malloc fails. */
int buf_grow(struct buf *b, size_t extra);
int buf_add(struct buf *b, const void *data, size_t len);
int buf_adds(struct buf *b, const char *s);
int buf_addch(struct buf *b, char c);
/*
 * A table's column without printf: s, at most max bytes of it, then spaces up to width
 * bytes (printf's "%-W.Ms"; max SIZE_MAX: "%-Ws"). For the long listings (`jobs queue`
 * with 10,000 rows), where printf's format parsing was most of the time. A control byte
 * of s (a name may hold any) is shown as '?': a row stays one line, and a terminal is
 * given no escape sequence to act on.
 */
int buf_add_col(struct buf *b, const char *s, size_t width, size_t max);
/* s into out (size bytes, always terminated, cut to fit) as a table shows it: see above. */
const char *buf_cell(char *out, size_t size, const char *s);
/* v in decimal, then spaces up to width bytes ("%-Wlld"; width 0: "%lld"). */
int buf_add_int_col(struct buf *b, long long v, size_t width);
int buf_addf(struct buf *b, const char *fmt, ...) SKIFF_PRINTF(2, 3);
int buf_vaddf(struct buf *b, const char *fmt, va_list ap);
void buf_setlen(struct buf *b, size_t len);
/* Reads all of fd until EOF. -ENOBUFS if it holds more than max; errno codes otherwise. */
int buf_read_fd(struct buf *b, int fd);
/*
 * Reads a whole regular file; refuses files larger than b->max without reading them
 * (-EFBIG), a directory (-EISDIR) and anything else that is not a regular file (-EINVAL: a
 * FIFO would block, a device never end), without waiting on it.
 */
int buf_read_file(struct buf *b, const char *path);
/* What a buf_read_file() error means, in words. */
const char *buf_read_strerror(int r);
void buf_rtrim(struct buf *b);
/* The last non-empty line of b, for a message: b is trimmed; "no message" when empty. */
const char *buf_last_line(struct buf *b);

#endif
