/*
 * Frames and records of the sync protocol: see bootstrap/sync/sync_wire.h and
 * docs/sync.md.
 */
#include "bootstrap/sync/sync_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

#define FRAME_HEAD 4
/* Whole frames are written out once this much has gathered. */
#define OUT_CAP (SYNC_FRAME_OUT + FRAME_HEAD)
#define IN_CAP (256u << 10)
/* Raw pieces at least this large are written from the caller's buffer. */
#define DIRECT_MIN (32u << 10)

int64_t sync_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* --- writing ------------------------------------------------------------------------ */

static int zset(struct sync_wire_out *w, int level)
{
	ZSTD_CCtx *z = w->z;
	int wlog = level >= 9 ? 22 : 21;

	if (ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, level)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_windowLog, wlog)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_checksumFlag, 0)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_contentSizeFlag, 0)))
		return error("cannot set up zstd (level %d)", level);
	w->level = level;
	return 0;
}

int sync_wire_out_init(struct sync_wire_out *w, const char *what, const int *fds, size_t n,
                       int level)
{
	size_t i;

	memset(w, 0, sizeof(*w));
	w->what = what;
	w->fds = xcalloc(n ? n : 1, sizeof(*w->fds));
	w->errs = xcalloc(n ? n : 1, sizeof(*w->errs));
	for (i = 0; i < n; i++) {
		w->fds[i] = fds[i];
		/* One sink is written blocking: it may be an fd we share (our stdout). */
		if (n > 1)
			set_nonblock(fds[i]);
	}
	w->nfds = w->live = n;
	w->pend = xmalloc(SYNC_FRAME_OUT);
	w->out = xmalloc(OUT_CAP);
	if (level > 0) {
		w->z = ZSTD_createCCtx();
		if (!w->z || zset(w, level)) {
			sync_wire_out_release(w);
			return w->z ? -EINVAL : error("out of memory");
		}
	}
	return 0;
}

void sync_wire_out_release(struct sync_wire_out *w)
{
	if (!w)
		return;
	ZSTD_freeCCtx(w->z);
	free(w->fds);
	free(w->errs);
	free(w->pend);
	free(w->out);
	memset(w, 0, sizeof(*w));
}

int sync_wire_sink_ok(const struct sync_wire_out *w, size_t i)
{
	return i < w->nfds && w->fds[i] >= 0;
}

static void sink_failed(struct sync_wire_out *w, size_t i, int err)
{
	w->errs[i] = err;
	w->fds[i] = -1;
	w->live--;
}

/* write_sinks() for one (blocking) sink: the time it takes counts as time blocked. */
static int write_one(struct sync_wire_out *w, const struct iovec *iov, int niov, size_t total)
{
	struct iovec v[4];
	size_t done = 0, skip;
	int64_t t0 = sync_now_us();
	ssize_t n;
	int j, m;

	w->wire_bytes += total;
	while (w->fds[0] >= 0 && done < total) {
		for (j = 0, m = 0, skip = done; j < niov && m < 4; j++) {
			if (skip >= iov[j].iov_len) {
				skip -= iov[j].iov_len;
				continue;
			}
			v[m].iov_base = (char *)iov[j].iov_base + skip;
			v[m++].iov_len = iov[j].iov_len - skip;
			skip = 0;
		}
		n = writev(w->fds[0], v, m);
		if (n >= 0) {
			done += (size_t)n;
		} else if (errno == EAGAIN) {
			/* Non-blocking after all (a writer to several sinks had it). */
			struct pollfd p = {w->fds[0], POLLOUT, 0};

			poll(&p, 1, -1);
		} else if (errno != EINTR) {
			sink_failed(w, 0, -errno);
		}
	}
	w->blocked_us += sync_now_us() - t0;
	return w->live ? 0 : -EPIPE;
}

/*
 * Writes iov to every live sink, in parallel: each sink gets all of it or is dropped.
 * -EPIPE when no sink is left.
 */
static int write_sinks(struct sync_wire_out *w, const struct iovec *iov, int niov)
{
	size_t total = 0, i, k, done[16], *donev = done;
	struct pollfd pfd[16], *pv = pfd;
	int64_t t0;
	int j, np, r = 0;

	for (j = 0; j < niov; j++)
		total += iov[j].iov_len;
	if (!total)
		return w->live ? 0 : -EPIPE;
	if (w->nfds == 1)
		return write_one(w, iov, niov, total);
	if (w->nfds > 16) {
		donev = xcalloc(w->nfds, sizeof(*donev));
		pv = xcalloc(w->nfds, sizeof(*pv));
	} else {
		memset(done, 0, sizeof(done));
	}
	w->wire_bytes += total;
	for (;;) {
		np = 0;
		for (i = 0; i < w->nfds; i++) {
			struct iovec v[4];
			size_t skip = donev[i];
			ssize_t n;
			int m = 0;

			if (w->fds[i] < 0 || donev[i] == total)
				continue;
			for (j = 0; j < niov && m < 4; j++) {
				if (skip >= iov[j].iov_len) {
					skip -= iov[j].iov_len;
					continue;
				}
				v[m].iov_base = (char *)iov[j].iov_base + skip;
				v[m++].iov_len = iov[j].iov_len - skip;
				skip = 0;
			}
			n = writev(w->fds[i], v, m);
			if (n > 0) {
				donev[i] += (size_t)n;
				if (donev[i] == total)
					continue;
			} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
				sink_failed(w, i, -errno);
				continue;
			}
			pv[np].fd = w->fds[i];
			pv[np].events = POLLOUT;
			np++;
		}
		if (!np)
			break;
		t0 = sync_now_us();
		if (poll(pv, (nfds_t)np, -1) < 0 && errno != EINTR) {
			r = error_errno("cannot send the %s", w->what);
			break;
		}
		w->blocked_us += sync_now_us() - t0;
		for (k = 0; k < (size_t)np; k++) {
			if (!(pv[k].revents & (POLLERR | POLLHUP)))
				continue;
			for (i = 0; i < w->nfds; i++)
				if (w->fds[i] == pv[k].fd && donev[i] < total)
					sink_failed(w, i, -EPIPE);
		}
	}
	if (donev != done) {
		free(donev);
		free(pv);
	}
	if (!r && !w->live)
		r = -EPIPE;
	return r;
}

static int write_out(struct sync_wire_out *w)
{
	struct iovec v = {w->out, w->olen};
	int r;

	if (!w->olen)
		return w->live ? 0 : -EPIPE;
	r = write_sinks(w, &v, 1);
	w->olen = 0;
	return r;
}

static void frame_head(unsigned char *h, char kind, size_t len)
{
	h[0] = (unsigned char)kind;
	h[1] = (unsigned char)len;
	h[2] = (unsigned char)(len >> 8);
	h[3] = (unsigned char)(len >> 16);
}

/* The frame being built goes to the out buffer. */
static int end_frame(struct sync_wire_out *w)
{
	int r = 0;

	if (!w->plen)
		goto out;
	if (w->olen + FRAME_HEAD + w->plen > OUT_CAP)
		r = write_out(w);
	frame_head(w->out + w->olen, w->kind, w->plen);
	memcpy(w->out + w->olen + FRAME_HEAD, w->pend, w->plen);
	w->olen += FRAME_HEAD + w->plen;
	w->plen = 0;
out:
	w->kind = 0;
	return r;
}

/* Runs the compressor with op (continue, flush or end) until it took all of in. */
static int zrun(struct sync_wire_out *w, ZSTD_inBuffer *in, ZSTD_EndDirective op)
{
	size_t left;
	int r = 0;

	if (w->kind != SYNC_FRAME_ZSTD) {
		r = end_frame(w);
		w->kind = SYNC_FRAME_ZSTD;
	}
	do {
		ZSTD_outBuffer ob = {w->pend, SYNC_FRAME_OUT, w->plen};

		left = ZSTD_compressStream2(w->z, &ob, in, op);
		if (ZSTD_isError(left))
			return error("cannot compress the %s: %s", w->what,
			             ZSTD_getErrorName(left));
		w->plen = ob.pos;
		if (w->plen == SYNC_FRAME_OUT) {
			r = end_frame(w);
			w->kind = SYNC_FRAME_ZSTD;
		}
	} while (!r && (in->pos < in->size || (op != ZSTD_e_continue && left)));
	return r;
}

/*
 * Out with what zstd holds (e_flush: the reader can decode all of it; e_end: and the
 * frame is over), so that the next bytes may go as they are.
 */
static int zflush(struct sync_wire_out *w, ZSTD_EndDirective op)
{
	ZSTD_inBuffer in = {NULL, 0, 0};
	int r;

	if (!w->z || (op == ZSTD_e_flush ? !w->zdirty : !w->zopen))
		return 0;
	r = zrun(w, &in, op);
	w->zdirty = 0;
	if (op == ZSTD_e_end)
		w->zopen = 0;
	return r ? r : end_frame(w);
}

int sync_wire_put(struct sync_wire_out *w, const void *data, size_t len, int compressible)
{
	const unsigned char *p = data;
	size_t take;
	int r = 0;

	if (!len)
		return 0;
	if (compressible && w->z) {
		ZSTD_inBuffer in = {data, len, 0};

		w->zopen = w->zdirty = 1;
		w->zin_bytes += len;
		return zrun(w, &in, ZSTD_e_continue);
	}
	r = zflush(w, ZSTD_e_flush);
	if (!r && w->kind != SYNC_FRAME_RAW)
		r = end_frame(w);
	w->kind = SYNC_FRAME_RAW;
	w->raw_bytes += len;
	while (!r && len) {
		take = SYNC_FRAME_OUT - w->plen < len ? SYNC_FRAME_OUT - w->plen : len;
		memcpy(w->pend + w->plen, p, take);
		w->plen += take;
		p += take;
		len -= take;
		if (w->plen == SYNC_FRAME_OUT) {
			r = end_frame(w);
			w->kind = SYNC_FRAME_RAW;
		}
	}
	return r;
}

static void rec_head(unsigned char *h, int type, size_t len)
{
	h[0] = (unsigned char)type;
	h[1] = (unsigned char)len;
	h[2] = (unsigned char)(len >> 8);
	h[3] = (unsigned char)(len >> 16);
	h[4] = (unsigned char)(len >> 24);
}

int sync_wire_rec(struct sync_wire_out *w, int type, const void *body, size_t len, int compressible)
{
	unsigned char h[SYNC_REC_HEAD];
	int r;

	rec_head(h, type, len);
	r = sync_wire_put(w, h, sizeof(h), compressible);
	return r ? r : sync_wire_put(w, body, len, compressible);
}

int sync_wire_rec_raw(struct sync_wire_out *w, int type, const void *head, size_t hlen,
                      const void *data, size_t len)
{
	unsigned char h[FRAME_HEAD + SYNC_REC_HEAD];
	struct iovec v[4];
	int r;

	if (len < DIRECT_MIN || FRAME_HEAD + SYNC_REC_HEAD + hlen + len > SYNC_FRAME_MAX) {
		rec_head(h, type, hlen + len);
		r = sync_wire_put(w, h, SYNC_REC_HEAD, 0);
		if (!r)
			r = sync_wire_put(w, head, hlen, 0);
		return r ? r : sync_wire_put(w, data, len, 0);
	}
	/* One frame of its own, written from the caller's buffer. */
	r = zflush(w, ZSTD_e_flush);
	if (!r)
		r = end_frame(w);
	if (r)
		return r;
	frame_head(h, SYNC_FRAME_RAW, SYNC_REC_HEAD + hlen + len);
	rec_head(h + FRAME_HEAD, type, hlen + len);
	v[0].iov_base = w->out;
	v[0].iov_len = w->olen;
	v[1].iov_base = h;
	v[1].iov_len = sizeof(h);
	v[2].iov_base = (void *)head;
	v[2].iov_len = hlen;
	v[3].iov_base = (void *)data;
	v[3].iov_len = len;
	w->raw_bytes += SYNC_REC_HEAD + hlen + len;
	r = write_sinks(w, v, 4);
	w->olen = 0;
	return r;
}

int sync_wire_flush(struct sync_wire_out *w)
{
	int r = zflush(w, ZSTD_e_flush);

	if (!r)
		r = end_frame(w);
	return r ? r : write_out(w);
}

int sync_wire_level(struct sync_wire_out *w, int level)
{
	int r = zflush(w, ZSTD_e_end);

	if (!r)
		r = end_frame(w);
	if (!r)
		r = write_out(w);
	if (!r && w->z && level > 0 && level != w->level)
		r = zset(w, level);
	return r;
}

/* --- reading ------------------------------------------------------------------------ */

int sync_wire_in_init(struct sync_wire_in *r, const char *what, int fd, int decompress)
{
	memset(r, 0, sizeof(*r));
	r->what = what;
	r->fd = fd;
	r->ib = xmalloc(IN_CAP);
	if (decompress) {
		r->z = ZSTD_createDCtx();
		r->db = xmalloc(ZSTD_DStreamOutSize());
		if (!r->z || ZSTD_isError(ZSTD_DCtx_setParameter(r->z, ZSTD_d_windowLogMax,
		                                                 SYNC_ZSTD_WLOG_MAX))) {
			sync_wire_in_release(r);
			return error("out of memory");
		}
	}
	return 0;
}

void sync_wire_in_release(struct sync_wire_in *r)
{
	if (!r)
		return;
	ZSTD_freeDCtx(r->z);
	free(r->ib);
	free(r->db);
	memset(r, 0, sizeof(*r));
}

/* More bytes from fd into ib: 1 read, 0 at EOF, or -EIO (printed). */
static int fill(struct sync_wire_in *r)
{
	ssize_t n;

	if (r->ipos == r->ilen)
		r->ipos = r->ilen = 0;
	if (r->ilen == IN_CAP) {
		memmove(r->ib, r->ib + r->ipos, r->ilen - r->ipos);
		r->ilen -= r->ipos;
		r->ipos = 0;
	}
	do
		n = read(r->fd, r->ib + r->ilen, IN_CAP - r->ilen);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		error_errno("cannot read the %s", r->what);
		return -EIO;
	}
	if (n == 0) {
		r->eof = 1;
		return 0;
	}
	r->ilen += (size_t)n;
	r->in_bytes += (uint64_t)n;
	return 1;
}

static int truncated(struct sync_wire_in *r)
{
	error("truncated %s: it ends in the middle of a record", r->what);
	return -EPROTO;
}

/* The next frame's head. -ENODATA at a clean EOF. */
static int next_frame(struct sync_wire_in *r)
{
	unsigned char h[FRAME_HEAD];
	size_t len;
	int f;

	while (r->ilen - r->ipos < FRAME_HEAD) {
		f = fill(r);
		if (f < 0)
			return f;
		if (!f)
			return r->ilen == r->ipos ? -ENODATA : truncated(r);
	}
	memcpy(h, r->ib + r->ipos, FRAME_HEAD);
	r->ipos += FRAME_HEAD;
	len = (size_t)h[1] | (size_t)h[2] << 8 | (size_t)h[3] << 16;
	if ((h[0] != SYNC_FRAME_RAW && h[0] != SYNC_FRAME_ZSTD) || !len || len > SYNC_FRAME_MAX)
		return error("corrupt %s: a bad frame (kind %u, %zu bytes)", r->what, h[0], len),
		       -EPROTO;
	if (h[0] == SYNC_FRAME_ZSTD && !r->z)
		return error("corrupt %s: compressed data where none may be", r->what), -EPROTO;
	r->kind = (char)h[0];
	r->left = len;
	return 0;
}

/* Decodes more of the current 'Z' frame into db. 0 (maybe with nothing new), or < 0. */
static int zmore(struct sync_wire_in *r)
{
	ZSTD_outBuffer ob = {r->db, ZSTD_DStreamOutSize(), 0};
	ZSTD_inBuffer in;
	size_t ret, avail;
	int f;

	if (r->left && r->ipos == r->ilen) {
		f = fill(r);
		if (f < 0)
			return f;
		if (!f)
			return truncated(r);
	}
	avail = r->ilen - r->ipos < r->left ? r->ilen - r->ipos : r->left;
	in.src = r->ib + r->ipos;
	in.size = avail;
	in.pos = 0;
	ret = ZSTD_decompressStream(r->z, &ob, &in);
	if (ZSTD_isError(ret))
		return error("corrupt %s: %s", r->what, ZSTD_getErrorName(ret)), -EPROTO;
	r->ipos += in.pos;
	r->left -= in.pos;
	r->dpos = 0;
	r->dlen = ob.pos;
	/* A full output buffer may leave more output inside the decoder. */
	r->zfull = ob.pos == ob.size;
	return 0;
}

int sync_wire_read(struct sync_wire_in *r, void *dst, size_t n, int at_boundary)
{
	unsigned char *d = dst;
	size_t take;
	int first = 1, f;

	while (n) {
		if (r->dpos < r->dlen) {
			take = r->dlen - r->dpos < n ? r->dlen - r->dpos : n;
			memcpy(d, r->db + r->dpos, take);
			r->dpos += take;
			d += take;
			n -= take;
			first = 0;
			continue;
		}
		if (r->kind == SYNC_FRAME_ZSTD && (r->left || r->zfull)) {
			f = zmore(r);
			if (f)
				return f;
			continue;
		}
		if (r->kind == SYNC_FRAME_RAW && r->left) {
			if (r->ipos == r->ilen) {
				f = fill(r);
				if (f < 0)
					return f;
				if (!f)
					return truncated(r);
			}
			take = r->ilen - r->ipos;
			take = take < r->left ? take : r->left;
			take = take < n ? take : n;
			memcpy(d, r->ib + r->ipos, take);
			r->ipos += take;
			r->left -= take;
			d += take;
			n -= take;
			first = 0;
			continue;
		}
		r->kind = 0;
		f = next_frame(r);
		if (f == -ENODATA && !(first && at_boundary))
			return truncated(r);
		if (f)
			return f;
	}
	return 0;
}

int sync_rec_head(struct sync_wire_in *r, int *type, uint32_t *len)
{
	unsigned char h[SYNC_REC_HEAD];
	int f = sync_wire_read(r, h, sizeof(h), 1);

	if (f)
		return f;
	*type = h[0];
	*len = (uint32_t)h[1] | (uint32_t)h[2] << 8 | (uint32_t)h[3] << 16 | (uint32_t)h[4] << 24;
	return 0;
}

int sync_rec_body(struct sync_wire_in *r, int type, uint32_t len, size_t max, struct buf *b)
{
	int f;

	buf_reset(b);
	if (len > max)
		return error("corrupt %s: a '%c' record of %u bytes (at most %zu)", r->what,
		             type > ' ' && type < 127 ? type : '?', len, max),
		       -EPROTO;
	if (buf_grow(b, len))
		return error("out of memory");
	f = sync_wire_read(r, b->p, len, 0);
	if (!f)
		buf_setlen(b, len);
	return f;
}

/* --- record bodies ------------------------------------------------------------------ */

void sync_put_u8(struct buf *b, unsigned v)
{
	buf_addch(b, (char)(unsigned char)v);
}

void sync_put_u32(struct buf *b, uint32_t v)
{
	unsigned char x[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
	                      (unsigned char)(v >> 24)};

	buf_add(b, x, 4);
}

void sync_put_u64(struct buf *b, uint64_t v)
{
	sync_put_u32(b, (uint32_t)v);
	sync_put_u32(b, (uint32_t)(v >> 32));
}

void sync_cur_init(struct sync_cur *c, const void *p, size_t n)
{
	c->p = p;
	c->n = n;
	c->bad = 0;
}

const unsigned char *sync_get_bytes(struct sync_cur *c, size_t n)
{
	const unsigned char *p = c->p;

	if (c->bad || c->n < n) {
		c->bad = 1;
		return NULL;
	}
	c->p += n;
	c->n -= n;
	return p;
}

unsigned sync_get_u8(struct sync_cur *c)
{
	const unsigned char *p = sync_get_bytes(c, 1);

	return p ? p[0] : 0;
}

uint32_t sync_get_u32(struct sync_cur *c)
{
	const unsigned char *p = sync_get_bytes(c, 4);

	return p ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	                       (uint32_t)p[3] << 24
	         : 0;
}

uint64_t sync_get_u64(struct sync_cur *c)
{
	uint64_t lo = sync_get_u32(c);

	return lo | (uint64_t)sync_get_u32(c) << 32;
}
