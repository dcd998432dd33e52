#include "lib/proto.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/util.h"
#include "lib/banned.h"

void msg_init(struct msg *m)
{
	memset(m, 0, sizeof(*m));
	buf_init(&m->raw, PROTO_MAX_MSG);
}

void msg_release(struct msg *m)
{
	if (!m)
		return;
	buf_release(&m->raw);
	free(m->keys);
	free(m->vals);
	msg_init(m);
}

static int key_ok(const char *k, size_t n)
{
	size_t i;

	if (!n || n > 64)
		return 0;
	for (i = 0; i < n; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '_'))
			return 0;
	return 1;
}

/* Rebuilds the key/value index after raw changed (its memory may have moved). */
static int reindex(struct msg *m)
{
	size_t off = 0, n = 0;

	while (off < m->raw.len) {
		const char *k = m->raw.p + off;
		size_t kl = strlen(k);
		const char *v = k + kl + 1;

		if (n == m->cap) {
			m->cap = m->cap ? m->cap * 2 : 16;
			m->keys = xrealloc(m->keys, m->cap * sizeof(*m->keys));
			m->vals = xrealloc(m->vals, m->cap * sizeof(*m->vals));
		}
		m->keys[n] = k;
		m->vals[n] = v;
		n++;
		off += kl + 1 + strlen(v) + 1;
	}
	m->n = n;
	return 0;
}

int msg_add(struct msg *m, const char *key, const char *val)
{
	size_t kl = strlen(key), vl = strlen(val);
	const char *old = m->raw.p;
	size_t off = m->raw.len;
	int r;

	if (!key_ok(key, kl))
		return -EINVAL;
	if (m->n >= PROTO_MAX_FIELDS)
		return -ENOBUFS;
	r = buf_grow(&m->raw, kl + vl + 2);
	if (r)
		return r;
	buf_add(&m->raw, key, kl + 1);
	buf_add(&m->raw, val, vl + 1);
	if (m->raw.p != old)
		return reindex(m);
	/* The buffer did not move: index just the new field. */
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 16;
		m->keys = xrealloc(m->keys, m->cap * sizeof(*m->keys));
		m->vals = xrealloc(m->vals, m->cap * sizeof(*m->vals));
	}
	m->keys[m->n] = m->raw.p + off;
	m->vals[m->n] = m->raw.p + off + kl + 1;
	m->n++;
	return 0;
}

int msg_vaddf(struct msg *m, const char *key, const char *fmt, va_list ap)
{
	struct buf b = BUF_INIT(PROTO_MAX_MSG);
	char small[128];
	va_list cp;
	int r, n;

	/* Most values are short (numbers): no allocation for those. */
	va_copy(cp, ap);
	n = vsnprintf(small, sizeof(small), fmt, cp);
	va_end(cp);
	if (n >= 0 && (size_t)n < sizeof(small))
		return msg_add(m, key, small);
	r = buf_vaddf(&b, fmt, ap);
	if (!r)
		r = msg_add(m, key, b.p);
	buf_release(&b);
	return r;
}

int msg_addf(struct msg *m, const char *key, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = msg_vaddf(m, key, fmt, ap);
	va_end(ap);
	return r;
}

int msg_add_int(struct msg *m, const char *key, int64_t v)
{
	char s[24];
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	size_t i = sizeof(s) - 1;

	s[i] = '\0';
	do
		s[--i] = (char)('0' + u % 10);
	while ((u /= 10));
	if (v < 0)
		s[--i] = '-';
	return msg_add(m, key, s + i);
}

void msg_reset(struct msg *m)
{
	buf_reset(&m->raw);
	m->n = 0;
}

int msg_decode(struct msg *m, const char *data, size_t len, const char **why)
{
	size_t off = 0, fields = 0;

	msg_reset(m); /* its room kept: a stream of frames decodes without allocating */
	if (len > PROTO_MAX_MSG) {
		*why = "message too large";
		return -EPROTO;
	}
	/* Validate the whole shape before copying anything. */
	while (off < len) {
		const char *k = data + off;
		const char *kend = memchr(k, '\0', len - off);
		const char *vend;

		if (!kend) {
			*why = "truncated field name";
			return -EPROTO;
		}
		if (!key_ok(k, (size_t)(kend - k))) {
			*why = "bad field name";
			return -EPROTO;
		}
		off = (size_t)(kend - data) + 1;
		if (off >= len) {
			*why = "field without a value";
			return -EPROTO;
		}
		vend = memchr(data + off, '\0', len - off);
		if (!vend) {
			*why = "truncated field value";
			return -EPROTO;
		}
		off = (size_t)(vend - data) + 1;
		if (++fields > PROTO_MAX_FIELDS) {
			*why = "too many fields";
			return -EPROTO;
		}
	}
	if (buf_add(&m->raw, data, len)) {
		*why = "out of memory";
		return -EPROTO;
	}
	return reindex(m);
}

const char *msg_get(const struct msg *m, const char *key)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (!strcmp(m->keys[i], key))
			return m->vals[i];
	return NULL;
}

int msg_get_int(const struct msg *m, const char *key, int64_t *out)
{
	const char *v = msg_get(m, key);
	long x;
	int r;

	if (!v)
		return -ENOENT;
	r = parse_long(v, INT64_MIN, INT64_MAX, &x);
	if (!r)
		*out = x;
	return r;
}

int msg_get_double(const struct msg *m, const char *key, double *out)
{
	const char *v = msg_get(m, key);

	if (!v)
		return -ENOENT;
	return parse_double(v, out);
}

void proto_header(const struct msg *m, unsigned char hdr[PROTO_HDR])
{
	uint32_t n = (uint32_t)m->raw.len;

	hdr[0] = (unsigned char)(n >> 24);
	hdr[1] = (unsigned char)(n >> 16);
	hdr[2] = (unsigned char)(n >> 8);
	hdr[3] = (unsigned char)n;
}

int proto_put(struct buf *b, const struct msg *m)
{
	unsigned char hdr[PROTO_HDR];
	size_t len = b->len;
	int r;

	proto_header(m, hdr);
	r = buf_add(b, hdr, sizeof(hdr));
	if (!r)
		r = buf_add(b, m->raw.p, m->raw.len);
	if (r)
		buf_setlen(b, len);
	return r;
}

int proto_parse_header(const unsigned char hdr[PROTO_HDR], size_t *len)
{
	uint32_t n = ((uint32_t)hdr[0] << 24) | ((uint32_t)hdr[1] << 16) | ((uint32_t)hdr[2] << 8) |
	             hdr[3];

	if (n > PROTO_MAX_MSG)
		return -EPROTO;
	*len = n;
	return 0;
}

int proto_send(int fd, const struct msg *m)
{
	unsigned char hdr[PROTO_HDR];
	int r;

	proto_header(m, hdr);
	r = write_all(fd, hdr, sizeof(hdr));
	if (!r)
		r = write_all(fd, m->raw.p, m->raw.len);
	return r;
}

static int read_full(int fd, void *p, size_t n, int timeout_ms)
{
	char *c = p;
	int64_t deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : -1;

	while (n) {
		struct pollfd pfd = {fd, POLLIN, 0};
		int wait = -1;
		ssize_t got;

		if (deadline >= 0) {
			int64_t left = deadline - now_ms();

			if (left <= 0)
				return -ETIMEDOUT;
			wait = (int)left;
		}
		if (poll(&pfd, 1, wait) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!pfd.revents)
			continue;
		got = read(fd, c, n);
		if (got < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		if (got == 0)
			return -ECONNRESET;
		c += got;
		n -= (size_t)got;
	}
	return 0;
}

int proto_recv(int fd, struct msg *m, int timeout_ms)
{
	unsigned char hdr[PROTO_HDR];
	struct buf b = BUF_INIT(PROTO_MAX_MSG);
	const char *why;
	size_t len;
	int r;

	r = read_full(fd, hdr, sizeof(hdr), timeout_ms);
	if (r)
		return r;
	r = proto_parse_header(hdr, &len);
	if (r)
		return r;
	r = buf_grow(&b, len);
	if (!r)
		r = read_full(fd, b.p, len, timeout_ms);
	if (!r)
		r = msg_decode(m, b.p, len, &why);
	buf_release(&b);
	return r;
}

int proto_take(struct buf *b, struct msg *m, const char **why)
{
	size_t body, skip;

	*why = NULL;
	if (b->len < PROTO_HDR)
		return 0;
	if (proto_parse_header((const unsigned char *)b->p, &body)) {
		*why = "a frame over the size limit";
		return -EPROTO;
	}
	if (b->len - PROTO_HDR < body)
		return 0;
	if (msg_decode(m, b->p + PROTO_HDR, body, why))
		return -EPROTO;
	skip = PROTO_HDR + body;
	memmove(b->p, b->p + skip, b->len - skip);
	buf_setlen(b, b->len - skip);
	return 1;
}
