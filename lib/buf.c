#include "lib/buf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/util.h"
#include "lib/banned.h"

char buf_empty[1];

static size_t limit(const struct buf *b)
{
	return b->max ? b->max : BUF_DEFAULT_MAX;
}

void buf_init(struct buf *b, size_t max)
{
	b->p = buf_empty;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

void buf_release(struct buf *b)
{
	if (!b)
		return;
	if (b->cap)
		free(b->p);
	buf_init(b, b->max);
}

char *buf_detach(struct buf *b, size_t *len)
{
	char *s = b->cap ? b->p : strdup("");

	if (!s)
		abort();
	if (len)
		*len = b->len;
	buf_init(b, b->max);
	return s;
}

void buf_reset(struct buf *b)
{
	buf_setlen(b, 0);
}

void buf_setlen(struct buf *b, size_t len)
{
	if (!b->cap)
		return;
	b->len = len < b->cap ? len : b->cap - 1;
	b->p[b->len] = '\0';
}

int buf_grow(struct buf *b, size_t extra)
{
	size_t need, cap;
	char *p;

	if (extra > limit(b) || b->len > limit(b) - extra)
		return -ENOBUFS;
	need = b->len + extra + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap < ((size_t)1 << 62) ? cap * 2 : need;
	if (cap > limit(b) + 1)
		cap = limit(b) + 1;
	p = realloc(b->cap ? b->p : NULL, cap);
	if (!p)
		return -ENOMEM;
	if (!b->cap)
		p[0] = '\0';
	b->p = p;
	b->cap = cap;
	return 0;
}

int buf_add(struct buf *b, const void *data, size_t len)
{
	int r = buf_grow(b, len);

	if (r)
		return r;
	if (len)
		memcpy(b->p + b->len, data, len);
	b->len += len;
	b->p[b->len] = '\0';
	return 0;
}

int buf_adds(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

/* A table cell's control bytes as '?' (buf.h: buf_add_col()). */
static void cell_bytes(char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			p[i] = '?';
}

int buf_add_col(struct buf *b, const char *s, size_t width, size_t max)
{
	size_t len = strnlen(s, max), pad = len < width ? width - len : 0;
	int r = buf_grow(b, len + pad);

	if (r)
		return r;
	memcpy(b->p + b->len, s, len);
	cell_bytes(b->p + b->len, len);
	memset(b->p + b->len + len, ' ', pad);
	b->len += len + pad;
	b->p[b->len] = '\0';
	return 0;
}

const char *buf_cell(char *out, size_t size, const char *s)
{
	size_t len;

	if (!size)
		return out;
	len = strnlen(s, size - 1);
	memcpy(out, s, len);
	out[len] = '\0';
	cell_bytes(out, len);
	return out;
}

int buf_add_int_col(struct buf *b, long long v, size_t width)
{
	char d[DEC_DIGITS_MAX + 1];

	d[DEC_DIGITS_MAX] = '\0';
	return buf_add_col(b, dec_digits(d + DEC_DIGITS_MAX, v), width, SIZE_MAX);
}

int buf_addch(struct buf *b, char c)
{
	return buf_add(b, &c, 1);
}

int buf_vaddf(struct buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n, r;

	/* Formatted once where it fits already (a buffer grown ahead: a table's rows). */
	if (b->cap > b->len + 1) {
		size_t room = b->cap - b->len; /* the NUL's byte included; within the limit */

		va_copy(cp, ap);
		n = vsnprintf(b->p + b->len, room, fmt, cp);
		va_end(cp);
		if (n < 0) {
			b->p[b->len] = '\0';
			return -EINVAL;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return 0;
		}
		b->p[b->len] = '\0'; /* cut short: measured now, written again below */
	} else {
		va_copy(cp, ap);
		n = vsnprintf(NULL, 0, fmt, cp);
		va_end(cp);
	}
	if (n < 0)
		return -EINVAL;
	r = buf_grow(b, (size_t)n);
	if (r)
		return r;
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int buf_addf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = buf_vaddf(b, fmt, ap);
	va_end(ap);
	return r;
}

int buf_read_fd(struct buf *b, int fd)
{
	for (;;) {
		size_t room;
		ssize_t n;
		int r = buf_grow(b, 8192);

		if (r == -ENOBUFS && b->len < limit(b))
			r = buf_grow(b, limit(b) - b->len);
		if (r == -ENOBUFS) {
			/* Full: only EOF is acceptable now. */
			char c;

			n = read(fd, &c, 1);
			if (n < 0 && errno == EINTR)
				continue;
			return n == 0 ? 0 : -ENOBUFS;
		}
		if (r)
			return r;
		room = b->cap - b->len - 1;
		n = read(fd, b->p + b->len, room);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return 0;
		b->len += (size_t)n;
		b->p[b->len] = '\0';
	}
}

int buf_read_file(struct buf *b, const char *path)
{
	struct stat st;
	int fd, r;

	/* O_NONBLOCK: opening a FIFO must not wait for a writer; we refuse it right after. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		r = -EISDIR;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		goto out;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		r = -errno;
		goto out;
	}
	if (S_ISREG(st.st_mode) && (size_t)st.st_size > limit(b) - b->len) {
		r = -EFBIG;
		goto out;
	}
	r = buf_read_fd(b, fd);
	if (r == -ENOBUFS)
		r = -EFBIG;
out:
	close(fd);
	return r;
}

void buf_rtrim(struct buf *b)
{
	while (b->len && (b->p[b->len - 1] == '\n' || b->p[b->len - 1] == ' ' ||
	                  b->p[b->len - 1] == '\t' || b->p[b->len - 1] == '\r'))
		b->len--;
	if (b->cap)
		b->p[b->len] = '\0';
}

const char *buf_read_strerror(int r)
{
	switch (r) {
	case -EINVAL: return "not a regular file (a FIFO, a socket or a device)";
	case -EISDIR: return "is a directory";
	case -EFBIG: return "too large";
	default: return strerror(r < 0 ? -r : r);
	}
}

const char *buf_last_line(struct buf *b)
{
	char *p;

	buf_rtrim(b);
	if (!b->len)
		return "no message";
	p = strrchr(b->p, '\n');
	return p ? p + 1 : b->p;
}
