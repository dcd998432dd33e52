/*
 * The launcher's side of a sync: the diff of the local tree against what the node holds
 * (the plan), and the records that bring the node up to date. sync_pack() is the one-way
 * form (a stream for `__sync-recv`); bootstrap/sync/sync_session.c drives the two-way one.
 * See bootstrap/sync/sync.h and docs/sync.md.
 */
#include "bootstrap/sync/sync_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "bootstrap/sync/sync_delta.h"
#include "bootstrap/sync/sync_wire.h"
#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

#define CHUNK (256u << 10)
/* A file is read at most this many times when it changes while it is read. */
#define READ_TRIES 3
/* Compressibility: a sample of this much, compressed at level 1, must shrink below 9/10. */
#define SAMPLE (32u << 10)
#define SAMPLE_EVERY 16 /* chunks of a large file between two samples */
/* The adaptive level looks at the link every this many compressed bytes. */
#define ADAPT_BYTES ((uint64_t)1 << 20)
#define LEVEL_MIN 1
#define LEVEL_MAX 9

static int64_t mtime_of(const struct stat *st)
{
	return sync_ts_ns(&st->st_mtim);
}

/* --- the plan ------------------------------------------------------------------------- */

static const char *local_path(const char *src, unsigned flags, const char *rel, struct buf *b)
{
	buf_reset(b);
	if (flags & SYNC_FILE)
		buf_adds(b, src);
	else
		buf_addf(b, "%s/%s", src, rel);
	return b->p;
}

static struct sync_item *plan_add(struct sync_plan *p, const struct sync_entry *l,
                                  const struct sync_entry *c, int op)
{
	struct sync_item *it;

	p->v = xgrow(p->v, p->n, &p->alloc, sizeof(*p->v));
	it = &p->v[p->n++];
	memset(it, 0, sizeof(*it));
	it->l = l;
	it->c = c;
	it->op = op;
	return it;
}

void sync_plan_release(struct sync_plan *p)
{
	if (!p)
		return;
	free(p->v);
	free(p->del);
	memset(p, 0, sizeof(*p));
}

int sync_plan_make(const char *src, unsigned flags, const struct sync_manifest *local,
                   const struct sync_manifest *remote, int session, struct sync_plan *p)
{
	struct buf path = BUF_INIT(0);
	const struct sync_entry *l, *c;
	struct sync_item *it;
	char hex[SYNC_HASH_HEX + 1];
	size_t i;

	memset(p, 0, sizeof(*p));
	/* Deletions, children first: what the node has that the tree does not, or not as
	 * that type (the new one then takes its place). */
	for (i = remote && !(flags & SYNC_FILE) ? remote->n : 0; i-- > 0;) {
		c = &remote->v[i];
		l = sync_manifest_find(local, c->path);
		if (l && l->type == c->type)
			continue;
		p->del = xgrow(p->del, p->ndel, &p->delalloc, sizeof(*p->del));
		p->del[p->ndel++] = c;
	}
	for (i = 0; i < local->n; i++) {
		l = &local->v[i];
		c = remote ? sync_manifest_find(remote, l->path) : NULL;
		if (c && c->type != l->type)
			c = NULL;
		switch (l->type) {
		case SYNC_T_DIR:
			if (c && c->mode == l->mode)
				p->unchanged++;
			else
				plan_add(p, l, c, SYNC_OP_DIR);
			continue;
		case SYNC_T_LINK:
			if (c && c->target && l->target && !strcmp(c->target, l->target))
				p->unchanged++;
			else
				plan_add(p, l, c, SYNC_OP_LINK);
			continue;
		case SYNC_T_FILE: break;
		default: continue;
		}
		if (c && c->size == l->size && c->mtime_ns == l->mtime_ns) {
			if (c->mode == l->mode) {
				p->unchanged++;
			} else if (session && c->hash[0]) {
				it = plan_add(p, l, c, SYNC_OP_TOUCH);
				memcpy(it->hash, c->hash, sizeof(it->hash));
				p->ntouch++;
			} else {
				plan_add(p, l, c, SYNC_OP_FILE);
			}
			continue;
		}
		/*
		 * Same size, another mtime: the content decides, if the node knows a hash. A
		 * large file is not read twice for that: its delta finds every block the same.
		 */
		if (c && c->size == l->size && c->hash[0] &&
		    (!session || l->size < SYNC_DELTA_MIN) &&
		    !sync_hash_file(local_path(src, flags, l->path, &path), hex) &&
		    !strcmp(hex, c->hash)) {
			if (!session) {
				p->unchanged++; /* one-way: its mtime on the node stays old */
				continue;
			}
			it = plan_add(p, l, c, SYNC_OP_TOUCH);
			memcpy(it->hash, hex, sizeof(it->hash));
			p->ntouch++;
			continue;
		}
		if (session && c && l->size >= SYNC_DELTA_MIN && c->size >= SYNC_DELTA_MIN) {
			plan_add(p, l, c, SYNC_OP_DELTA);
			p->ndelta++;
		} else {
			plan_add(p, l, c, SYNC_OP_FILE);
		}
	}
	buf_release(&path);
	return 0;
}

/* --- records ---------------------------------------------------------------------------- */

/* The machine's idle and total CPU time so far (/proc/stat), or -1 when unknown. */
static int cpu_times(uint64_t *idle, uint64_t *total)
{
	unsigned long long v[8] = {0};
	char line[256];
	FILE *f = fopen("/proc/stat", "re");
	int n, i;

	if (!f)
		return -1;
	n = fgets(line, sizeof(line), f)
	            ? sscanf(line, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
	                     &v[2], &v[3], &v[4], &v[5], &v[6], &v[7])
	            : 0;
	fclose(f);
	if (n < 4)
		return -1;
	*idle = v[3] + v[4];
	for (*total = 0, i = 0; i < 8; i++)
		*total += v[i];
	return 0;
}

void sync_sender_init(struct sync_sender *s, const char *src, unsigned flags,
                      struct sync_wire_out *w, struct sync_manifest *after)
{
	memset(s, 0, sizeof(*s));
	s->src = src;
	s->flags = flags;
	s->w = w;
	s->after = after;
	buf_init(&s->path, strlen(src) + SYNC_PATH_MAX + 2);
	buf_init(&s->body, SYNC_REC_META_MAX);
	s->blk = xmalloc(CHUNK);
	if (w->z)
		s->sample = ZSTD_createCCtx();
	s->mark_us = sync_now_us();
	if (cpu_times(&s->mark_cpu_idle, &s->mark_cpu_total))
		s->mark_cpu_total = 0;
}

void sync_sender_release(struct sync_sender *s)
{
	if (!s)
		return;
	buf_release(&s->path);
	buf_release(&s->body);
	free(s->blk);
	ZSTD_freeCCtx(s->sample);
	memset(s, 0, sizeof(*s));
}

static int rec(struct sync_sender *s, int type)
{
	return sync_wire_rec(s->w, type, s->body.p, s->body.len, 1);
}

static void body_path(struct buf *b, const char *path)
{
	buf_adds(b, path);
}

int sync_send_hello(struct sync_wire_out *w, unsigned flags, int session,
                    const unsigned char *digest)
{
	struct buf b = BUF_INIT(128);
	unsigned char zero[32] = {0};
	int r;

	buf_adds(&b, SYNC_HELLO_MAGIC);
	sync_put_u8(&b, SYNC_WIRE_VERSION);
	sync_put_u8(&b, flags & SYNC_FILE ? 'f' : 'd');
	sync_put_u8(&b, session ? HELLO_SESSION : 0);
	sync_put_u8(&b, digest ? 1 : 0);
	buf_add(&b, digest ? digest : zero, 32);
	r = sync_wire_rec(w, REC_HELLO, b.p, b.len, 0);
	buf_release(&b);
	return r;
}

static struct sync_entry *after_add(struct sync_sender *s, const char *path, char type)
{
	return s->after ? sync_manifest_add(s->after, path, type) : NULL;
}

int sync_send_deletes(struct sync_sender *s, const struct sync_plan *p)
{
	size_t i;
	int r = 0;

	for (i = 0; i < p->ndel && !r; i++) {
		buf_reset(&s->body);
		body_path(&s->body, p->del[i]->path);
		r = rec(s, REC_DELETE);
		s->entries++;
		s->st.deleted++;
		after_add(s, p->del[i]->path, SYNC_T_NONE);
	}
	return r;
}

int sync_level(int *adaptive)
{
	const char *v = getenv("SKIFF_SYNC_LEVEL");
	long n;

	if (adaptive)
		*adaptive = 1;
	if (!v || !*v || parse_long(v, 0, 19, &n))
		return LEVEL_MIN;
	if (adaptive)
		*adaptive = 0;
	return (int)n;
}

/*
 * Changes the zstd level by what holds the sync back. While the sinks make us wait and
 * the CPUs sit idle, the link is what is slow: compress harder, with CPU nobody wants. When
 * the CPUs are busy (ssh, the receiver, anything else on the machine) a harder level only
 * takes from them, and when we do not wait it only costs us: back down to level 1.
 */
static int adapt(struct sync_sender *s)
{
	struct sync_wire_out *w = s->w;
	uint64_t idle, total, di, dtot;
	int64_t now, dt, db;
	int level, adaptive, known;

	if (!w->z || w->zin_bytes - s->mark_in < ADAPT_BYTES)
		return 0;
	sync_level(&adaptive);
	if (!adaptive)
		return 0;
	now = sync_now_us();
	dt = now - s->mark_us;
	db = w->blocked_us - s->mark_blocked;
	known = !cpu_times(&idle, &total) && s->mark_cpu_total;
	di = known ? idle - s->mark_cpu_idle : 0;
	dtot = known ? total - s->mark_cpu_total : 0;
	level = w->level;
	if (dt > 0 && db * 2 > dt && known && dtot && di * 10 > dtot * 4)
		level = level + 2 > LEVEL_MAX ? LEVEL_MAX : level + 2;
	else if (level > LEVEL_MIN)
		level--;
	s->mark_us = now;
	s->mark_blocked = w->blocked_us;
	s->mark_in = w->zin_bytes;
	if (!cpu_times(&idle, &total)) {
		s->mark_cpu_idle = idle;
		s->mark_cpu_total = total;
	}
	if (level == w->level)
		return 0;
	debug("sync: zstd level %d -> %d (%lld of %lld ms waiting on the link, CPUs %d%% idle)",
	      w->level, level, (long long)db / 1000, (long long)dt / 1000,
	      dtot ? (int)(di * 100 / dtot) : -1);
	return sync_wire_level(w, level);
}

/* 1 if p[0..n) is worth compressing: a sample shrinks below 9/10 at level 1. */
static int compressible(struct sync_sender *s, const unsigned char *p, size_t n)
{
	unsigned char out[SAMPLE + 1024];
	size_t take = n < SAMPLE ? n : SAMPLE, z;

	if (!s->w->z || !s->sample)
		return 0;
	/* Small pieces are not worth a sample: zstd stores what it cannot shrink. */
	if (n < 2 * SAMPLE)
		return 1;
	z = ZSTD_compressCCtx(s->sample, out, sizeof(out), p, take, 1);
	return !ZSTD_isError(z) && z * 10 < take * 9;
}

static int data_rec(struct sync_sender *s, const unsigned char *p, size_t n, int comp)
{
	int r;

	if (comp)
		r = sync_wire_rec(s->w, REC_DATA, p, n, 1);
	else
		r = sync_wire_rec_raw(s->w, REC_DATA, NULL, 0, p, n);
	return r ? r : adapt(s);
}

static int zeros_rec(struct sync_sender *s, uint64_t n, struct sync_hash *hash)
{
	static const unsigned char zero[65536];
	uint64_t left;

	buf_reset(&s->body);
	sync_put_u64(&s->body, n);
	for (left = n; left; left -= left < sizeof(zero) ? left : sizeof(zero))
		sync_hash_update(hash, zero, left < sizeof(zero) ? (size_t)left : sizeof(zero));
	return rec(s, REC_ZEROS);
}

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/*
 * File times come from a coarse clock: a write in the same tick as the last one leaves
 * mtime and ctime as they were. A file changed less than a tick ago could change again
 * unseen while we read it, so we wait until that tick is over (and look again) before
 * reading; any write after that shows in the times. At most RACY_WAITS waits: -EAGAIN,
 * the file keeps changing.
 */
#define RACY_WAITS 10

static int settle(int fd, struct stat *st)
{
	/* The groups' threads may race here: each stores the same value, whole. */
	static int64_t coarse = -1;
	struct timespec now, res;
	int64_t last, left, t, tick = __atomic_load_n(&coarse, __ATOMIC_RELAXED);
	int i;

	if (tick < 0) {
		tick = clock_getres(CLOCK_REALTIME_COARSE, &res) ? 10000000 : sync_ts_ns(&res);
		tick = tick > 0 && tick < 1000000000 ? tick : 10000000;
		__atomic_store_n(&coarse, tick, __ATOMIC_RELAXED);
	}
	for (i = 0; i < RACY_WAITS; i++) {
		clock_gettime(CLOCK_REALTIME, &now);
		t = sync_ts_ns(&now);
		last = sync_ts_ns(&st->st_mtim) > sync_ts_ns(&st->st_ctim)
		               ? sync_ts_ns(&st->st_mtim)
		               : sync_ts_ns(&st->st_ctim);
		/*
		 * Older than a tick: settled. From the future (another machine's clock, a touch
		 * -d): a write now would give it another time, so it is settled too.
		 */
		if (last <= t - tick - 1000000 || last > t + tick)
			return 0;
		left = last + tick + 1000000 - t;
		poll_ms((int)((left + 999999) / 1000000));
		if (fstat(fd, st) < 0)
			return -errno;
	}
	return -EAGAIN;
}

/* Opens a file to send: 1 when it vanished (skip it), 0 with *fd and *st, or < 0. */
static int open_local(struct sync_sender *s, const char *rel, int *fd, struct stat *st)
{
	const char *path = local_path(s->src, s->flags, rel, &s->path);

	/* The source of a single-file sync may be a symlink; a member of a tree never. */
	*fd = open(path,
	           O_RDONLY | O_CLOEXEC | O_NONBLOCK | (s->flags & SYNC_FILE ? 0 : O_NOFOLLOW));
	if (*fd < 0 && errno == ENOENT && !(s->flags & SYNC_FILE)) {
		warning("'%s' vanished before it could be synced", path);
		return 1;
	}
	if (*fd < 0)
		return error_errno("cannot open '%s'", path);
	if (fstat(*fd, st) < 0) {
		close(*fd);
		return error_errno("cannot stat '%s'", path);
	}
	if (!S_ISREG(st->st_mode)) {
		close(*fd);
		return error("'%s' changed while it was being synced: not a file any more", path);
	}
	return 0;
}

/* Opens a file and waits for it to be quiet (settle()): 2 when it is not. */
static int open_quiet(struct sync_sender *s, const char *rel, int *fd, struct stat *st)
{
	int r = open_local(s, rel, fd, st);

	if (r)
		return r;
	r = settle(*fd, st);
	if (!r)
		return 0;
	close(*fd);
	if (r == -EAGAIN)
		return 2;
	errno = -r;
	return error_errno("cannot stat '%s'", s->path.p);
}

/* The data of fd (size bytes): holes as zeros records, the rest in chunks. -EAGAIN: it shrank. */
static int send_data(struct sync_sender *s, int fd, const struct stat *st, struct sync_hash *hash)
{
	uint64_t size = (uint64_t)st->st_size, off = 0, end;
	int sparse = (uint64_t)st->st_blocks * 512 < size, comp = 1, r = 0;
	unsigned chunks = 0;
	off_t d;
	ssize_t n;

	while (!r && off < size) {
		end = size;
		if (sparse) {
			d = lseek(fd, (off_t)off, SEEK_DATA);
			if (d < 0 && errno == ENXIO)
				d = (off_t)size;
			if (d < 0) {
				sparse = 0; /* no SEEK_DATA here: read it all */
			} else if ((uint64_t)d > off) {
				if ((uint64_t)d > size)
					d = (off_t)size;
				r = zeros_rec(s, (uint64_t)d - off, hash);
				off = (uint64_t)d;
				continue;
			} else {
				off_t h = lseek(fd, (off_t)off, SEEK_HOLE);

				if (h > (off_t)off && (uint64_t)h < size)
					end = (uint64_t)h;
				lseek(fd, (off_t)off, SEEK_SET);
			}
		}
		while (!r && off < end) {
			n = read(fd, s->blk, end - off < CHUNK ? (size_t)(end - off) : CHUNK);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return error_errno("cannot read '%s'", s->path.p);
			if (n == 0)
				return -EAGAIN;
			sync_hash_update(hash, s->blk, (size_t)n);
			/* Large files are sampled now and then: a tar of images is not text. */
			if (chunks++ % SAMPLE_EVERY == 0)
				comp = compressible(s, s->blk, (size_t)n);
			r = data_rec(s, s->blk, (size_t)n, comp);
			off += (uint64_t)n;
		}
	}
	return r;
}

static int file_head(struct sync_sender *s, int type, const struct stat *st, const char *rel,
                     const struct sync_sigs *sigs)
{
	buf_reset(&s->body);
	sync_put_u32(&s->body, st->st_mode & 0777);
	sync_put_u64(&s->body, (uint64_t)mtime_of(st));
	sync_put_u64(&s->body, (uint64_t)st->st_size);
	if (sigs)
		sync_put_u64(&s->body, sigs->size);
	body_path(&s->body, rel);
	s->entries++;
	return rec(s, type);
}

/* The end of a file: its hash if it did not change while it was read, else an abort. */
static int file_tail(struct sync_sender *s, int fd, const struct stat *st1, struct sync_hash *hash,
                     unsigned char digest[SYNC_HASH_LEN], int *changed)
{
	struct stat st2;

	sync_hash_final(hash, digest);
	*changed = fstat(fd, &st2) < 0 || !same_file(st1, &st2);
	if (*changed)
		return sync_wire_rec(s->w, REC_ABORT, NULL, 0, 1);
	return sync_wire_rec(s->w, REC_HASH, digest, SYNC_HASH_LEN, 1);
}

static void after_file(struct sync_sender *s, const char *rel, const struct stat *st,
                       const unsigned char digest[SYNC_HASH_LEN])
{
	struct sync_entry *e = after_add(s, rel, SYNC_T_FILE);

	if (!e)
		return;
	e->mode = st->st_mode & 0777;
	e->size = (uint64_t)st->st_size;
	e->mtime_ns = mtime_of(st);
	if (s->flags & SYNC_FILE)
		return; /* the node keeps no hash of a single file */
	sync_hash_hex(digest, e->hash);
}

static int send_file(struct sync_sender *s, const char *rel)
{
	unsigned char digest[SYNC_HASH_LEN];
	struct sync_hash hash;
	struct stat st;
	int fd, r, changed = 0, tries;

	for (tries = 0; tries < READ_TRIES; tries++) {
		r = open_quiet(s, rel, &fd, &st);
		if (r == 2) {
			changed = 1;
			r = 0;
			continue;
		}
		if (r)
			return r > 0 ? 0 : r;
		r = file_head(s, REC_FILE, &st, rel, NULL);
		sync_hash_init(&hash);
		if (!r)
			r = send_data(s, fd, &st, &hash);
		if (r == -EAGAIN) {
			changed = 1;
			r = sync_wire_rec(s->w, REC_ABORT, NULL, 0, 1);
		} else if (!r) {
			r = file_tail(s, fd, &st, &hash, digest, &changed);
		}
		close(fd);
		if (r || !changed)
			break;
	}
	if (r)
		return r;
	if (changed) {
		warning("'%s' kept changing while it was read; it is not synced (the node keeps "
		        "what it had)",
		        local_path(s->src, s->flags, rel, &s->path));
		s->st.skipped++;
		return 0;
	}
	after_file(s, rel, &st, digest);
	s->st.files++;
	s->st.bytes += (uint64_t)st.st_size;
	return 0;
}

struct delta_arg {
	struct sync_sender *s;
	int comp;
	unsigned chunks;
	int err; /* what an op failed with (printed, or -EPIPE) */
};

static int delta_literal(void *arg, const unsigned char *p, size_t n)
{
	struct delta_arg *a = arg;
	size_t take;
	int r = 0;

	for (; !r && n; p += take, n -= take) {
		take = n < CHUNK ? n : CHUNK;
		if (a->chunks++ % SAMPLE_EVERY == 0)
			a->comp = compressible(a->s, p, take);
		r = data_rec(a->s, p, take, a->comp);
		a->s->literal_bytes += take;
	}
	if (r)
		a->err = r;
	return r;
}

static int delta_copy(void *arg, uint64_t off, uint64_t len)
{
	struct delta_arg *a = arg;

	int r;

	buf_reset(&a->s->body);
	sync_put_u64(&a->s->body, off);
	sync_put_u64(&a->s->body, len);
	r = rec(a->s, REC_COPY);
	/* A long run of copies is work for the node: let it start while we scan on. */
	if (!r && len >= ((uint64_t)1 << 20))
		r = sync_wire_flush(a->s->w);
	if (r)
		a->err = r;
	return r;
}

/* 0 sent, 1: it changed while it was read (an abort went out; send it whole), or < 0. */
static int send_delta(struct sync_sender *s, const char *rel, const struct sync_sigs *sigs)
{
	static const struct sync_delta_ops ops = {delta_literal, delta_copy};
	struct delta_arg a = {s, 1, 0, 0};
	unsigned char digest[SYNC_HASH_LEN];
	struct sync_hash hash;
	struct stat st;
	int fd, r, changed = 0;
	uint64_t lit0 = s->literal_bytes;

	r = open_quiet(s, rel, &fd, &st);
	if (r == 2)
		return 1; /* hot: it goes whole, which waits and reads again */
	if (r)
		return r > 0 ? 0 : r;
	r = file_head(s, REC_DELTA, &st, rel, sigs);
	sync_hash_init(&hash);
	if (!r)
		r = sync_delta_scan(sigs, fd, (uint64_t)st.st_size, &ops, &a, &hash);
	if (r == -EAGAIN) {
		r = sync_wire_rec(s->w, REC_ABORT, NULL, 0, 1);
		changed = 1;
	} else if (r) {
		if (!a.err) {
			errno = -r;
			r = error_errno("cannot read '%s'", s->path.p);
		}
	} else {
		r = file_tail(s, fd, &st, &hash, digest, &changed);
	}
	close(fd);
	if (r)
		return r;
	if (changed)
		return 1;
	after_file(s, rel, &st, digest);
	s->st.files++;
	s->st.bytes += s->literal_bytes - lit0;
	return 0;
}

/* A content hash in hex, back to its bytes. */
static int hash_parse(const char *hex, unsigned char d[SYNC_HASH_LEN])
{
	static const char digits[] = "0123456789abcdef";
	const char *hi, *lo;
	int i;

	if (strlen(hex) != SYNC_HASH_HEX)
		return -EINVAL;
	for (i = 0; i < SYNC_HASH_LEN; i++) {
		hi = strchr(digits, hex[2 * i]);
		lo = strchr(digits, hex[2 * i + 1]);
		if (!hi || !lo || !*hi || !*lo)
			return -EINVAL;
		d[i] = (unsigned char)((hi - digits) << 4 | (lo - digits));
	}
	return 0;
}

int sync_send_item(struct sync_sender *s, const struct sync_item *it, const struct sync_sigs *sigs)
{
	const struct sync_entry *l = it->l;
	unsigned char d[SYNC_HASH_LEN];
	struct sync_entry *e;
	int r;

	switch (it->op) {
	case SYNC_OP_DIR:
		buf_reset(&s->body);
		sync_put_u32(&s->body, l->mode);
		body_path(&s->body, l->path);
		s->entries++;
		r = rec(s, REC_DIR);
		e = after_add(s, l->path, SYNC_T_DIR);
		if (e)
			e->mode = l->mode;
		s->st.dirs += !r;
		return r;
	case SYNC_OP_LINK:
		buf_reset(&s->body);
		sync_put_u64(&s->body, (uint64_t)l->mtime_ns);
		sync_put_u32(&s->body, (uint32_t)strlen(l->target));
		buf_adds(&s->body, l->target);
		body_path(&s->body, l->path);
		s->entries++;
		r = rec(s, REC_LINK);
		e = after_add(s, l->path, SYNC_T_LINK);
		if (e) {
			e->mode = 0777;
			e->target = xstrdup(l->target);
		}
		s->st.links += !r;
		return r;
	case SYNC_OP_TOUCH:
		if (hash_parse(it->hash, d))
			return send_file(s, l->path);
		buf_reset(&s->body);
		sync_put_u32(&s->body, l->mode);
		sync_put_u64(&s->body, (uint64_t)l->mtime_ns);
		sync_put_u64(&s->body, l->size);
		buf_add(&s->body, d, SYNC_HASH_LEN);
		body_path(&s->body, l->path);
		s->entries++;
		r = rec(s, REC_TOUCH);
		e = after_add(s, l->path, SYNC_T_FILE);
		if (e) {
			e->mode = l->mode;
			e->size = l->size;
			e->mtime_ns = l->mtime_ns;
			if (!(s->flags & SYNC_FILE))
				memcpy(e->hash, it->hash, sizeof(e->hash));
		}
		s->st.unchanged++;
		return r;
	case SYNC_OP_DELTA:
		if (sigs) {
			r = send_delta(s, l->path, sigs);
			if (r <= 0)
				return r;
		}
		return send_file(s, l->path);
	case SYNC_OP_FILE: return send_file(s, l->path);
	}
	return 0;
}

int sync_send_end(struct sync_sender *s)
{
	buf_reset(&s->body);
	sync_put_u64(&s->body, s->entries);
	return rec(s, REC_END);
}

/* --- one way ---------------------------------------------------------------------------- */

int sync_pack(const char *src, const struct sync_manifest *remote, int out_fd, unsigned flags,
              struct sync_stats *st)
{
	struct sync_stats dummy;
	struct sync_manifest local;
	struct sync_wire_out w;
	struct sync_sender s;
	struct sync_plan p;
	uint64_t skipped = 0;
	size_t i;
	int r;

	st = st ? st : &dummy;
	memset(st, 0, sizeof(*st));
	sync_manifest_init(&local);
	memset(&p, 0, sizeof(p));
	r = sync_local_manifest(src, flags, &local, &skipped);
	if (!r)
		r = sync_plan_make(src, flags, &local, remote, 0, &p);
	if (r)
		goto out;
	r = sync_wire_out_init(&w, "sync stream", &out_fd, 1, flags & SYNC_COMPRESS ? 1 : 0);
	if (r)
		goto out;
	sync_sender_init(&s, src, flags, &w, NULL);
	r = sync_send_hello(&w, flags, 0, NULL);
	if (!r)
		r = sync_send_deletes(&s, &p);
	for (i = 0; i < p.n && !r; i++)
		r = sync_send_item(&s, &p.v[i], NULL);
	if (!r)
		r = sync_send_end(&s);
	if (!r)
		r = sync_wire_flush(&w);
	if (r == -EPIPE)
		r = error("cannot write the sync stream: the receiver went away");
	*st = s.st;
	st->unchanged += p.unchanged;
	st->skipped += skipped;
	sync_sender_release(&s);
	sync_wire_out_release(&w);
out:
	sync_plan_release(&p);
	sync_manifest_release(&local);
	return r;
}
