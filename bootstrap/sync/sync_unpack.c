/*
 * The node's side of a sync: read the records and apply them to DST (through
 * bootstrap/sync/sync_apply.c), refusing anything that could touch what lies outside DST.
 * sync_unpack() reads a one-way stream; sync_serve() also answers on a channel of its
 * own: the node's manifest when the launcher's idea of it is stale, block signatures,
 * the files a delta could not rebuild, and the outcome. See sync.h and docs/sync.md.
 */
#include "bootstrap/sync/sync_apply.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/sync/sync_delta.h"
#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

/*
 * Block signatures are made in a thread of their own, in the order asked, while the
 * records go on being applied: the launcher asks for them all at the start, and the
 * first delta needs only the first. Every answer after the state goes out under wmu.
 */
struct sig_job {
	uint32_t id;
	char *path;
};

struct sig_worker {
	pthread_t th;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct sig_job *v;
	size_t n, next, alloc, asked;
	int quit; /* set at the end: what is left is dropped */
	int err;  /* the first answer that could not be written */
};

struct unpack {
	struct sync_apply a;
	struct sig_worker sw;
	pthread_mutex_t wmu; /* the answers' */
	struct sync_wire_in in;
	struct sync_wire_out *reply; /* a session's answers; NULL for a one-way stream */
	struct buf body;
	struct buf path;          /* a record's path, NUL-terminated */
	struct buf target;        /* a link's target */
	uint64_t entries;         /* entry records read */
	unsigned char digest[32]; /* of what DST held when the session began */
	int dirty;                /* the sync wrote or deleted something */
	int matched;              /* the hello's digest was DST's */
};

static const char stream[] = "sync stream";
static int corrupt(const char *what)
{
	error("corrupt sync stream: %s", what);
	return -EPROTO;
}

/* The path that ends a body (the rest of it after c's position): no NUL, not empty. */
static int take_path(struct sync_cur *c, struct buf *out)
{
	buf_reset(out);
	if (c->bad || !c->n || memchr(c->p, '\0', c->n))
		return corrupt("a record with a bad path");
	buf_add(out, c->p, c->n);
	c->n = 0;
	return 0;
}

static int hello(struct unpack *u, int session, unsigned char digest[32], int *has)
{
	const size_t magic = strlen(SYNC_HELLO_MAGIC);
	struct sync_cur c;
	unsigned version, mode, flags;
	uint32_t len;
	int type, r;

	r = sync_rec_head(&u->in, &type, &len);
	if (r == -ENODATA)
		return error("empty sync stream (did the sender fail?)");
	if (r)
		return r;
	if (type != REC_HELLO || len != magic + 4 + 32)
		return error("not a sync stream (skiff versions differ?)");
	r = sync_rec_body(&u->in, type, len, len, &u->body);
	if (r)
		return r;
	if (memcmp(u->body.p, SYNC_HELLO_MAGIC, magic))
		return error("not a sync stream");
	sync_cur_init(&c, u->body.p + magic, len - magic);
	version = sync_get_u8(&c);
	mode = sync_get_u8(&c);
	flags = sync_get_u8(&c);
	*has = (int)sync_get_u8(&c);
	memcpy(digest, sync_get_bytes(&c, 32), 32);
	if (version != SYNC_WIRE_VERSION)
		return corrupt("unsupported protocol version (skiff versions differ?)");
	if (mode != (u->a.flags & SYNC_FILE ? 'f' : 'd'))
		return corrupt(u->a.flags & SYNC_FILE ? "a directory sync sent to a file"
		                                      : "a file sync sent to a directory");
	if (!!(flags & HELLO_SESSION) != session || *has > 1)
		return corrupt(session ? "a one-way stream sent to a session"
		                       : "a session's stream sent one way");
	return 0;
}

/* The session's first answer: does the launcher know what DST holds? Else, what it holds. */
static int state(struct unpack *u, const unsigned char want[32], int has)
{
	struct buf text = BUF_INIT(SYNC_MANIFEST_MAX);
	unsigned char d[33];
	size_t off, take;
	int r;

	r = sync_manifest_digest(&u->a.base, d + 1);
	memcpy(u->digest, d + 1, 32);
	d[0] = has && !r && !memcmp(want, d + 1, 32);
	u->matched = d[0];
	if (!r)
		r = sync_wire_rec(u->reply, REC_STATE, d, sizeof(d), 0);
	if (!r && !d[0]) {
		if (sync_manifest_format(&u->a.base, &text))
			r = error("the manifest of '%s' is too large", u->a.dst);
		for (off = 0; !r && off < text.len; off += take) {
			take = text.len - off < SYNC_REC_DATA_MAX ? text.len - off
			                                          : SYNC_REC_DATA_MAX;
			r = sync_wire_rec(u->reply, REC_MANIFEST, text.p + off, take, 0);
		}
		buf_reset(&u->body);
		sync_put_u64(&u->body, text.len);
		if (!r)
			r = sync_wire_rec(u->reply, REC_MANIFEST_END, u->body.p, u->body.len, 0);
	}
	if (!r)
		r = sync_wire_flush(u->reply);
	buf_release(&text);
	return r;
}

static int answer(struct unpack *u, int type, const void *body, size_t len, int flush)
{
	int r;

	pthread_mutex_lock(&u->wmu);
	r = sync_wire_rec(u->reply, type, body, len, 0);
	if (!r && flush)
		r = sync_wire_flush(u->reply);
	pthread_mutex_unlock(&u->wmu);
	return r;
}

static int want_whole(struct unpack *u, const char *path)
{
	return answer(u, REC_WANT, path, strlen(path), 0);
}

/* The signatures of one file, answered ('g'). */
static int sig_answer(struct unpack *u, uint32_t id, const char *path, struct buf *body)
{
	struct sync_sigs s;
	int ok = 0, r;

	r = sync_apply_sigs(&u->a, path, &s, &ok);
	if (r)
		return r;
	sync_sigs_encode(&s, id, ok, body);
	if (ok)
		sync_sigs_release(&s);
	return answer(u, REC_SIGS, body->p, body->len, 1);
}

static void *sig_main(void *arg)
{
	struct unpack *u = arg;
	struct sig_worker *sw = &u->sw;
	struct buf body = BUF_INIT(SYNC_REC_SIG_MAX);
	struct sig_job j;
	int r;

	pthread_mutex_lock(&sw->mu);
	for (;;) {
		while (sw->next == sw->n && !sw->quit)
			pthread_cond_wait(&sw->cv, &sw->mu);
		if (sw->quit)
			break;
		j = sw->v[sw->next];
		sw->v[sw->next++].path = NULL;
		r = sw->err;
		pthread_mutex_unlock(&sw->mu);
		r = r ? 0 : sig_answer(u, j.id, j.path, &body);
		free(j.path);
		pthread_mutex_lock(&sw->mu);
		if (r && !sw->err)
			sw->err = r;
	}
	pthread_mutex_unlock(&sw->mu);
	buf_release(&body);
	return NULL;
}

/* Ends the signature thread; what it was still asked is dropped. Its error, or 0. */
static int sig_stop(struct unpack *u)
{
	struct sig_worker *sw = &u->sw;
	size_t i;

	if (sw->started) {
		pthread_mutex_lock(&sw->mu);
		sw->quit = 1;
		pthread_cond_signal(&sw->cv);
		pthread_mutex_unlock(&sw->mu);
		pthread_join(sw->th, NULL);
		pthread_mutex_destroy(&sw->mu);
		pthread_cond_destroy(&sw->cv);
		sw->started = 0;
	}
	for (i = 0; i < sw->n; i++)
		free(sw->v[i].path);
	free(sw->v);
	sw->v = NULL;
	sw->n = sw->next = 0;
	return sw->err;
}

static int sigreq(struct unpack *u)
{
	struct sig_worker *sw = &u->sw;
	struct sync_cur c;
	uint32_t id;
	int r;

	sync_cur_init(&c, u->body.p, u->body.len);
	id = sync_get_u32(&c);
	r = take_path(&c, &u->path);
	if (!r)
		r = sync_apply_check(&u->a, u->path.p, REC_SIGREQ);
	if (r)
		return r;
	if (++sw->asked > SYNC_MAX_ENTRIES)
		return corrupt("too many signature requests");
	if (!sw->started) {
		pthread_mutex_init(&sw->mu, NULL);
		pthread_cond_init(&sw->cv, NULL);
		sw->started = !pthread_create(&sw->th, NULL, sig_main, u);
		if (!sw->started) {
			pthread_mutex_destroy(&sw->mu);
			pthread_cond_destroy(&sw->cv);
			return sig_answer(u, id, u->path.p, &u->body); /* no thread: here */
		}
	}
	pthread_mutex_lock(&sw->mu);
	r = sw->err;
	if (!r) {
		sw->v = xgrow(sw->v, sw->n, &sw->alloc, sizeof(*sw->v));
		sw->v[sw->n].id = id;
		sw->v[sw->n++].path = xstrdup(u->path.p);
		pthread_cond_signal(&sw->cv);
	}
	pthread_mutex_unlock(&sw->mu);
	return r;
}

/* One entry record (its body in u->body). */
static int entry(struct unpack *u, int type)
{
	struct sync_cur c;
	uint64_t size = 0, bsize = 0, mtime = 0;
	unsigned mode = 0;
	uint32_t tlen;
	const unsigned char *sha = NULL, *t;
	int r, want = 0;

	if (++u->entries > 2 * (uint64_t)SYNC_MAX_ENTRIES)
		return corrupt("too many entries");
	sync_cur_init(&c, u->body.p, u->body.len);
	switch (type) {
	case REC_DELETE: break;
	case REC_DIR: mode = sync_get_u32(&c); break;
	case REC_LINK:
		mtime = sync_get_u64(&c);
		tlen = sync_get_u32(&c);
		t = sync_get_bytes(&c, tlen);
		buf_reset(&u->target);
		if (!t || !tlen || memchr(t, '\0', tlen))
			return corrupt("a symlink with a bad target");
		buf_add(&u->target, t, tlen);
		break;
	case REC_FILE:
	case REC_DELTA:
	case REC_TOUCH:
		mode = sync_get_u32(&c);
		mtime = sync_get_u64(&c);
		size = sync_get_u64(&c);
		if (type == REC_DELTA)
			bsize = sync_get_u64(&c);
		if (type == REC_TOUCH)
			sha = sync_get_bytes(&c, SYNC_HASH_LEN);
		break;
	}
	r = take_path(&c, &u->path);
	if (!r)
		r = sync_apply_check(&u->a, u->path.p, type);
	if (r)
		return r;
	if ((type == REC_DELTA || type == REC_TOUCH) && !u->reply)
		return sync_apply_refuse(&u->a, u->path.p, "a delta in a one-way stream");
	switch (type) {
	case REC_DELETE:
		if (u->a.flags & SYNC_FILE)
			return sync_apply_refuse(&u->a, u->path.p,
			                         "a single-file sync deletes nothing");
		return sync_apply_delete(&u->a, u->path.p);
	case REC_DIR: return sync_apply_dir(&u->a, u->path.p, mode);
	case REC_LINK: return sync_apply_link(&u->a, u->path.p, u->target.p, (int64_t)mtime);
	case REC_TOUCH:
		r = sync_apply_touch(&u->a, u->path.p, mode, (int64_t)mtime, size, sha, &want);
		break;
	default:
		r = sync_apply_file(&u->a, u->path.p, mode, (int64_t)mtime, size, type == REC_DELTA,
		                    bsize, &want);
	}
	if (!r && want)
		r = want_whole(u, u->path.p);
	return r;
}

static int records(struct unpack *u)
{
	int quiet = 0;
	uint64_t count;
	struct sync_cur c;
	uint32_t len;
	int type, r;
	size_t max;

	for (;;) {
		r = sync_rec_head(&u->in, &type, &len);
		if (r == -ENODATA)
			return error("truncated sync stream: it ends before its end record");
		if (r)
			return r;
		switch (type) {
		case REC_DELETE:
		case REC_DIR:
		case REC_LINK:
		case REC_FILE:
		case REC_DELTA:
		case REC_TOUCH:
		case REC_SIGREQ:
		case REC_QUIET:
		case REC_END:
		case REC_BARRIER: max = SYNC_REC_META_MAX; break;
		default:
			return corrupt(type == REC_DATA || type == REC_HASH || type == REC_ABORT ||
			                               type == REC_COPY || type == REC_ZEROS
			                       ? "file data outside a file"
			                       : "an unknown record");
		}
		r = sync_rec_body(&u->in, type, len, max, &u->body);
		if (r)
			return r;
		if ((type == REC_SIGREQ || type == REC_BARRIER || type == REC_QUIET) && !u->reply)
			return corrupt("a session's record in a one-way stream");
		if (type == REC_QUIET) {
			if (quiet++ || u->entries || u->sw.asked || u->body.len)
				return corrupt("a quiet record out of place");
			/* DST is what the launcher believes and its tree has that shape: the end,
			   and nothing follows (the launcher is not even waited for). */
			if (u->matched)
				return 0;
		} else if (type == REC_SIGREQ) {
			r = sigreq(u);
		} else if (type == REC_BARRIER) {
			r = answer(u, REC_ACK, NULL, 0, 1);
		} else if (type == REC_END) {
			sync_cur_init(&c, u->body.p, u->body.len);
			count = sync_get_u64(&c);
			if (c.bad || c.n || count != u->entries)
				return error("corrupt sync stream: %" PRIu64
				             " entries, not what its end says",
				             u->entries);
			break;
		} else {
			r = entry(u, type);
		}
		if (r)
			return r;
	}
	r = sync_rec_head(&u->in, &type, &len);
	if (r == -ENODATA)
		return 0;
	return r ? r : corrupt("data after its end record");
}

static int run(int in_fd, struct sync_wire_out *reply, const char *dst, unsigned flags,
               uint64_t max_bytes, struct sync_stats *st)
{
	struct sync_stats dummy;
	struct unpack u;
	unsigned char want[32], d[32];
	int r, r2, has = 0;

	st = st ? st : &dummy;
	memset(st, 0, sizeof(*st));
	memset(&u, 0, sizeof(u));
	u.reply = reply;
	pthread_mutex_init(&u.wmu, NULL);
	buf_init(&u.body, SYNC_REC_META_MAX);
	buf_init(&u.path, SYNC_REC_META_MAX + 1);
	buf_init(&u.target, SYNC_REC_META_MAX + 1);
	/* Only what a launcher sent is decompressed (sync.h): never what a node sends. */
	r = sync_wire_in_init(&u.in, stream, in_fd, reply || (flags & SYNC_COMPRESS));
	if (r)
		goto out;
	r = sync_apply_open(&u.a, dst, flags, max_bytes, st);
	u.a.in = &u.in;
	if (!r)
		r = hello(&u, reply != NULL, want, &has);
	if (!r && reply)
		r = state(&u, want, has);
	if (!r)
		r = records(&u);
	r2 = sig_stop(&u);
	if (!r)
		r = r2;
	u.dirty = u.a.dirty;
	r = sync_apply_close(&u.a, r);
	if (reply) {
		/* The outcome, and the digest of what DST now holds (the launcher's cache). */
		buf_reset(&u.body);
		sync_put_u8(&u.body, r ? 1 : 0);
		sync_put_u64(&u.body, st->files);
		sync_put_u64(&u.body, st->dirs);
		sync_put_u64(&u.body, st->links);
		sync_put_u64(&u.body, st->bytes);
		sync_put_u64(&u.body, st->deleted);
		sync_put_u64(&u.body, st->unchanged);
		sync_put_u64(&u.body, st->skipped);
		if (flags & SYNC_FILE) {
			/* The one entry as it is now. */
			sync_manifest_release(&u.a.base);
			sync_file_entry(dst, &u.a.base);
		}
		if (u.dirty || (flags & SYNC_FILE)) {
			sync_manifest_sort(&u.a.base);
			sync_manifest_digest(&u.a.base, d);
		} else {
			memcpy(d, u.digest, 32); /* nothing changed since the state */
		}
		sync_put_u8(&u.body, 1);
		buf_add(&u.body, d, 32);
		buf_adds(&u.body, r ? "the sync failed on the node" : "ok");
		if (!sync_wire_rec(reply, REC_FINAL, u.body.p, u.body.len, 0))
			sync_wire_flush(reply);
	}
out:
	pthread_mutex_destroy(&u.wmu);
	sync_manifest_release(&u.a.base);
	sync_wire_in_release(&u.in);
	buf_release(&u.body);
	buf_release(&u.path);
	buf_release(&u.target);
	return r;
}

int sync_unpack(int in_fd, const char *dst, unsigned flags, uint64_t max_bytes,
                struct sync_stats *st)
{
	return run(in_fd, NULL, dst, flags, max_bytes, st);
}

int sync_serve(int in_fd, int out_fd, const char *dst, unsigned flags, uint64_t max_bytes,
               struct sync_stats *st)
{
	struct sync_wire_out w;
	int r;

	r = sync_wire_out_init(&w, "sync answer", &out_fd, 1, 0);
	if (r)
		return r;
	r = run(in_fd, &w, dst, flags, max_bytes, st);
	sync_wire_out_release(&w);
	return r;
}
