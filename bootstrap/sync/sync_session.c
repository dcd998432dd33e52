/*
 * The launcher's side of a sync session, to one node or several at once (sync_push() in
 * bootstrap/sync/sync.h; the protocol is in docs/sync.md):
 *
 *   1. every node gets a HELLO with the digest of what the launcher believes it holds
 *      (its cache); the local tree is walked meanwhile, once;
 *   2. each node answers that the digest matches, or with its manifest;
 *   3. nodes that hold the same thing form a group, and a group gets one encoding of the
 *      changes, written to all of its nodes at once (the tree is read once per group);
 *      block signatures for deltas are asked of one node of the group;
 *   4. nodes that could not apply a delta get that file whole, each on its own;
 *   5. each node says how it went, with the digest of what it now holds: when that is
 *      what the launcher computed, the launcher's cache holds it for the next sync.
 *
 * One reader thread per node takes its answers; the groups run in threads of their own.
 */
#include "bootstrap/sync/sync_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/sync/sync_delta.h"
#include "bootstrap/sync/sync_wire.h"
#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

/* The level the changes start at (sync_level()); the sender raises it on a slow link. */
#define START_LEVEL sync_level(NULL)

struct peer {
	struct sync_peer *p;
	struct push *push;
	char *what; /* "node tn1's answer" */
	pthread_t reader;
	int started;
	/* from the node, set by its reader under push->mu */
	int have_state, match, mdone, acks, final, dead;
	int failed; /* its answers were refused (and it was said why) */
	unsigned char digest[32];
	struct buf mtext;
	struct sync_sigs *sigs; /* by request id (the leader of a group only) */
	int *sig_state;         /* 0 asked, 1 ok, -1 none */
	size_t nsigs;
	char **want;
	size_t nwant, awant;
	int fstatus, fhas;
	unsigned char fdigest[32];
	/* the launcher's */
	int chas;
	unsigned char cdigest[32], cshape[32];
	struct buf ctext;
	int group;
	int to_open;
	int quiet; /* a 'Q' went out: the tree has the shape of our cache */
};

struct push {
	const char *src;
	unsigned flags;
	struct peer *v;
	size_t n;
	struct sync_manifest local;
	unsigned char shape[32]; /* of local */
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

struct group {
	struct push *push;
	size_t *m; /* members: indices into push->v */
	size_t n;
	int rc;
	pthread_t th;
	int joinable;
};

/* --- a node's answers ------------------------------------------------------------------- */

static void wake(struct push *ps)
{
	pthread_cond_broadcast(&ps->cv);
}

static int reader_record(struct peer *pe, struct sync_wire_in *in, int type, uint32_t len,
                         struct buf *b)
{
	struct push *ps = pe->push;
	struct sync_sigs s;
	struct sync_cur c;
	uint32_t id;
	int r, ok;
	size_t max = type == REC_MANIFEST ? SYNC_REC_DATA_MAX
	             : type == REC_SIGS   ? SYNC_REC_SIG_MAX
	                                  : SYNC_REC_META_MAX;

	r = sync_rec_body(in, type, len, max, b);
	if (r)
		return r;
	pthread_mutex_lock(&ps->mu);
	switch (type) {
	case REC_STATE:
		if (pe->have_state || b->len != 33)
			goto bad;
		pe->match = b->p[0] == 1;
		memcpy(pe->digest, b->p + 1, 32);
		pe->have_state = 1;
		break;
	case REC_MANIFEST:
		if (!pe->have_state || pe->match || pe->mdone || buf_add(&pe->mtext, b->p, b->len))
			goto bad;
		break;
	case REC_MANIFEST_END:
		sync_cur_init(&c, b->p, b->len);
		if (!pe->have_state || pe->match || pe->mdone ||
		    sync_get_u64(&c) != pe->mtext.len || c.bad || c.n)
			goto bad;
		pe->mdone = 1;
		break;
	case REC_SIGS:
		pthread_mutex_unlock(&ps->mu);
		r = sync_sigs_decode(b->p, b->len, &id, &ok, &s);
		pthread_mutex_lock(&ps->mu);
		if (r || id >= pe->nsigs || pe->sig_state[id]) {
			if (!r && ok)
				sync_sigs_release(&s);
			goto bad;
		}
		if (ok)
			pe->sigs[id] = s;
		pe->sig_state[id] = ok ? 1 : -1;
		break;
	case REC_WANT:
		if (!b->len || memchr(b->p, '\0', b->len) || pe->nwant >= SYNC_MAX_ENTRIES)
			goto bad;
		pe->want = xgrow(pe->want, pe->nwant, &pe->awant, sizeof(*pe->want));
		pe->want[pe->nwant++] = xstrndup(b->p, b->len);
		break;
	case REC_ACK: pe->acks++; break;
	case REC_FINAL:
		if (b->len < 1 + 7 * 8 + 1 + 32)
			goto bad;
		sync_cur_init(&c, b->p, b->len);
		pe->fstatus = (int)sync_get_u8(&c);
		pe->p->st.files = sync_get_u64(&c);
		pe->p->st.dirs = sync_get_u64(&c);
		pe->p->st.links = sync_get_u64(&c);
		pe->p->st.bytes = sync_get_u64(&c);
		pe->p->st.deleted = sync_get_u64(&c);
		pe->p->st.unchanged = sync_get_u64(&c);
		pe->p->st.skipped = sync_get_u64(&c);
		pe->fhas = sync_get_u8(&c) == 1;
		memcpy(pe->fdigest, sync_get_bytes(&c, 32), 32);
		pe->final = 1;
		break;
	default: goto bad;
	}
	wake(ps);
	pthread_mutex_unlock(&ps->mu);
	return 0;
bad:
	pthread_mutex_unlock(&ps->mu);
	return error("corrupt answer from %s: an unexpected '%c' record", pe->p->name,
	             type > ' ' && type < 127 ? type : '?'),
	       -EPROTO;
}

static void *reader_main(void *arg)
{
	struct peer *pe = arg;
	struct push *ps = pe->push;
	struct buf b = BUF_INIT(SYNC_REC_SIG_MAX);
	struct sync_wire_in in;
	uint32_t len;
	int type, r;

	/* Never decompress what a node sends: its answers travel as they are. */
	r = sync_wire_in_init(&in, pe->what, pe->p->from_fd, 0);
	while (!r) {
		r = sync_rec_head(&in, &type, &len);
		if (!r)
			r = reader_record(pe, &in, type, len, &b);
	}
	if (r == -ENODATA && !pe->final)
		debug("%s ended before its final record", pe->what);
	sync_wire_in_release(&in);
	buf_release(&b);
	pthread_mutex_lock(&ps->mu);
	pe->dead = 1;
	pe->failed = r != -ENODATA;
	wake(ps);
	pthread_mutex_unlock(&ps->mu);
	return NULL;
}

/* Waits (under mu) until cond(pe) holds or the node's answers ended. */
static int wait_for(struct peer *pe, int (*cond)(struct peer *, size_t), size_t arg)
{
	struct push *ps = pe->push;
	int ok;

	pthread_mutex_lock(&ps->mu);
	while (!(ok = cond(pe, arg)) && !pe->dead)
		pthread_cond_wait(&ps->cv, &ps->mu);
	pthread_mutex_unlock(&ps->mu);
	return ok;
}

static int has_state(struct peer *pe, size_t arg)
{
	(void)arg;
	return pe->have_state && (pe->match || pe->mdone);
}

static int has_sigs(struct peer *pe, size_t id)
{
	return pe->sig_state[id] != 0;
}

static int has_ack(struct peer *pe, size_t arg)
{
	(void)arg;
	return pe->acks > 0;
}

static int has_final(struct peer *pe, size_t arg)
{
	(void)arg;
	return pe->final;
}

/* --- a group ------------------------------------------------------------------------------ */

static void close_to(struct peer *pe)
{
	if (pe->to_open) {
		close(pe->p->to_fd);
		pe->to_open = 0;
	}
}

static struct sync_item *find_item(struct sync_plan *p, const char *path)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (!strcmp(p->v[i].l->path, path))
			return &p->v[i];
	return NULL;
}

/* The node's end: files it could not rebuild from a delta, whole, then the end record. */
static int tail(struct group *g, struct peer *pe, struct sync_plan *plan, uint64_t entries,
                struct sync_manifest *after)
{
	struct push *ps = g->push;
	struct sync_wire_out w;
	struct sync_sender s;
	struct sync_item one;
	size_t i;
	int r;

	r = sync_wire_out_init(&w, "sync stream", &pe->p->to_fd, 1, START_LEVEL);
	if (r)
		return r;
	sync_sender_init(&s, ps->src, ps->flags, &w, after);
	s.entries = entries;
	for (i = 0; i < pe->nwant && !r; i++) {
		struct sync_item *it = find_item(plan, pe->want[i]);

		if (!it || (it->op != SYNC_OP_DELTA && it->op != SYNC_OP_TOUCH)) {
			r = error("corrupt answer from %s: it asks for '%s', which it was not sent "
			          "as a delta",
			          pe->p->name, pe->want[i]);
			break;
		}
		debug("%s: '%s' again, whole", pe->p->name, pe->want[i]);
		one = *it;
		one.op = SYNC_OP_FILE;
		r = sync_send_item(&s, &one, NULL);
	}
	if (!r)
		r = sync_send_end(&s);
	if (!r)
		r = sync_wire_flush(&w);
	pe->p->wire_bytes += w.wire_bytes;
	sync_sender_release(&s);
	sync_wire_out_release(&w);
	return r;
}

/* A group that holds the tree already: an end record, and each node's word on it. */
static int quiet_group(struct group *g)
{
	struct push *ps = g->push;
	struct buf body = BUF_INIT(16);
	struct sync_wire_out w;
	size_t k;
	int r;

	for (k = 0; k < g->n; k++) {
		struct peer *pe = &ps->v[g->m[k]];

		/* A node that matched took the 'Q' as the end; any other gets one. */
		r = 0;
		if (!pe->quiet || !pe->match) {
			r = sync_wire_out_init(&w, "sync stream", &pe->p->to_fd, 1, 0);
			buf_reset(&body);
			sync_put_u64(&body, 0);
			if (!r)
				r = sync_wire_rec(&w, REC_END, body.p, body.len, 0);
			if (!r)
				r = sync_wire_flush(&w);
			pe->p->wire_bytes += w.wire_bytes;
			sync_wire_out_release(&w);
		}
		close_to(pe);
		if (r && !pe->p->rc)
			pe->p->rc = r;
	}
	for (k = 0; k < g->n; k++) {
		struct peer *pe = &ps->v[g->m[k]];

		wait_for(pe, has_final, 0);
		if (!pe->p->rc)
			pe->p->rc = !pe->final    ? error("%s: the sync ended without an answer",
			                                  pe->p->name)
			            : pe->fstatus ? -EIO
			                          : 0;
		/* It said what it holds: not what the cache says, then the cache is wrong. */
		if (pe->p->cache_key &&
		    (pe->p->rc || !pe->fhas || memcmp(pe->fdigest, pe->cdigest, 32)))
			sync_cache_drop(pe->p->cache_key);
	}
	buf_release(&body);
	debug("sync to %zu node(s): nothing to send", g->n);
	return 0;
}

static int run_group(struct group *g)
{
	struct push *ps = g->push;
	struct peer *lead = &ps->v[g->m[0]];
	struct sync_manifest belief, after;
	struct sync_wire_out w;
	struct sync_sender s;
	struct sync_plan plan;
	struct buf body = BUF_INIT(SYNC_REC_META_MAX);
	const struct buf *text;
	unsigned char want[32];
	size_t i, k, id, ndelta;
	int *fds = xcalloc(g->n, sizeof(*fds)), r, wopen = 0, session_end;

	sync_manifest_init(&belief);
	sync_manifest_init(&after);
	memset(&plan, 0, sizeof(plan));
	/*
	 * What the group holds: the launcher's cache if it matched, else the manifest sent.
	 * When the cache matched and the tree has its shape, there is nothing to send: the
	 * cached text is not even read.
	 */
	if (lead->match && !memcmp(lead->cshape, ps->shape, 32)) {
		r = quiet_group(g);
		goto out;
	}
	text = lead->match ? &lead->ctext : &lead->mtext;
	r = sync_manifest_parse(&belief, text->p, text->len, lead->what);
	if (!r)
		r = sync_plan_make(ps->src, ps->flags, &ps->local, &belief, 1, &plan);
	if (r)
		goto out;
	debug("sync to %zu node(s): %zu to send, %zu deltas, %zu touches, %zu deletions, "
	      "%llu unchanged",
	      g->n, plan.n, plan.ndelta, plan.ntouch, plan.ndel,
	      (unsigned long long)plan.unchanged);
	/* Block signatures for the deltas, from one node: the group's copies are the same. */
	ndelta = plan.ndelta;
	if (ndelta) {
		struct sync_wire_out lw;

		pthread_mutex_lock(&ps->mu);
		lead->sigs = xcalloc(ndelta, sizeof(*lead->sigs));
		lead->sig_state = xcalloc(ndelta, sizeof(*lead->sig_state));
		lead->nsigs = ndelta;
		pthread_mutex_unlock(&ps->mu);
		r = sync_wire_out_init(&lw, "sync stream", &lead->p->to_fd, 1, 0);
		for (i = 0, id = 0; !r && i < plan.n; i++) {
			if (plan.v[i].op != SYNC_OP_DELTA)
				continue;
			buf_reset(&body);
			sync_put_u32(&body, (uint32_t)id++);
			buf_adds(&body, plan.v[i].l->path);
			r = sync_wire_rec(&lw, REC_SIGREQ, body.p, body.len, 0);
		}
		if (!r)
			r = sync_wire_flush(&lw);
		lead->p->wire_bytes += lw.wire_bytes;
		sync_wire_out_release(&lw);
		if (r)
			goto out;
	}
	for (k = 0; k < g->n; k++)
		fds[k] = ps->v[g->m[k]].p->to_fd;
	r = sync_wire_out_init(&w, "sync stream", fds, g->n, START_LEVEL);
	if (r)
		goto out;
	wopen = 1;
	sync_sender_init(&s, ps->src, ps->flags, &w, &after);
	r = sync_send_deletes(&s, &plan);
	for (i = 0; i < plan.n && !r; i++)
		if (plan.v[i].op != SYNC_OP_DELTA)
			r = sync_send_item(&s, &plan.v[i], NULL);
	/* The deltas last: their signatures came in meanwhile. */
	for (i = 0, id = 0; i < plan.n && !r; i++) {
		const struct sync_sigs *sig = NULL;

		if (plan.v[i].op != SYNC_OP_DELTA)
			continue;
		r = sync_wire_flush(&w);
		if (!r && wait_for(lead, has_sigs, id) && lead->sig_state[id] == 1)
			sig = &lead->sigs[id];
		id++;
		if (!r)
			r = sync_send_item(&s, &plan.v[i], sig);
	}
	/* A delta or touch may fail on a node: it says so before it answers the barrier. */
	session_end = !plan.ndelta && !plan.ntouch;
	if (!r && !session_end) {
		r = sync_wire_rec(&w, REC_BARRIER, NULL, 0, 1);
		if (!r)
			r = sync_wire_level(&w, START_LEVEL);
	}
	if (!r && session_end) {
		r = sync_send_end(&s);
		if (!r)
			r = sync_wire_flush(&w);
	}
	debug("sync: %llu bytes to each node (%llu as they are, %llu compressed to %llu), level "
	      "%d, %lld ms waiting on the link",
	      (unsigned long long)w.wire_bytes, (unsigned long long)w.raw_bytes,
	      (unsigned long long)w.zin_bytes,
	      (unsigned long long)(w.wire_bytes > w.raw_bytes ? w.wire_bytes - w.raw_bytes : 0),
	      w.level, (long long)w.blocked_us / 1000);
	for (k = 0; k < g->n; k++) {
		struct peer *pe = &ps->v[g->m[k]];

		pe->p->wire_bytes += w.wire_bytes;
		if (!sync_wire_sink_ok(&w, k) && !pe->p->rc)
			pe->p->rc = -EPIPE;
	}
	if (r == -EPIPE)
		r = 0; /* each node's own outcome says more */
	for (k = 0; k < g->n && !r && !session_end; k++) {
		struct peer *pe = &ps->v[g->m[k]];

		if (pe->p->rc || !wait_for(pe, has_ack, 0))
			continue;
		if (tail(g, pe, &plan, s.entries, &after) && !pe->p->rc)
			pe->p->rc = -EPIPE;
	}
	for (k = 0; k < g->n; k++)
		close_to(&ps->v[g->m[k]]);
	/* What each node now holds, against what the launcher thinks: the cache. */
	sync_manifest_merge(&belief, &after);
	if (sync_manifest_digest(&belief, want))
		memset(want, 0, sizeof(want));
	for (k = 0; k < g->n; k++) {
		struct peer *pe = &ps->v[g->m[k]];

		wait_for(pe, has_final, 0);
		if (!pe->final && !pe->p->rc)
			pe->p->rc = error("%s: the sync ended without an answer", pe->p->name);
		else if (pe->final && pe->fstatus && !pe->p->rc)
			pe->p->rc = -EIO;
		else if (pe->final && !pe->fstatus)
			pe->p->rc = 0;
		if (!pe->p->cache_key)
			continue;
		if (!pe->p->rc && pe->fhas && !memcmp(pe->fdigest, want, 32)) {
			if (!pe->chas || memcmp(pe->cdigest, want, 32))
				sync_cache_write(pe->p->cache_key, want, &belief);
		} else {
			sync_cache_drop(pe->p->cache_key);
		}
	}
	if (wopen) {
		sync_sender_release(&s);
		sync_wire_out_release(&w);
	}
out:
	for (k = 0; k < g->n; k++) {
		close_to(&ps->v[g->m[k]]);
		if (r && !ps->v[g->m[k]].p->rc)
			ps->v[g->m[k]].p->rc = r;
	}
	sync_plan_release(&plan);
	sync_manifest_release(&belief);
	sync_manifest_release(&after);
	buf_release(&body);
	free(fds);
	return r;
}

static void *group_main(void *arg)
{
	struct group *g = arg;

	g->rc = run_group(g);
	return NULL;
}

/* --- the push ----------------------------------------------------------------------------- */

int sync_push(const char *src, unsigned flags, struct sync_peer *peers, size_t n)
{
	struct push ps = {.src = src, .flags = flags, .n = n};
	int64_t t0 = sync_now_us();
	struct group *gs = NULL;
	size_t i, k, ng = 0;
	uint64_t skipped = 0;
	int r = 0, fail = 0;

	pthread_mutex_init(&ps.mu, NULL);
	pthread_cond_init(&ps.cv, NULL);
	sync_manifest_init(&ps.local);
	ps.v = xcalloc(n ? n : 1, sizeof(*ps.v));
	for (i = 0; i < n; i++) {
		struct peer *pe = &ps.v[i];
		struct sync_wire_out w;

		pe->p = &peers[i];
		pe->push = &ps;
		pe->group = -1;
		pe->to_open = 1;
		pe->p->rc = 0;
		pe->p->wire_bytes = 0;
		memset(&pe->p->st, 0, sizeof(pe->p->st));
		pe->what = xasprintf("answer from %s", pe->p->name);
		buf_init(&pe->mtext, SYNC_MANIFEST_MAX);
		buf_init(&pe->ctext, SYNC_MANIFEST_MAX);
		pe->chas = pe->p->cache_key &&
		           !sync_cache_read(pe->p->cache_key, pe->cdigest, pe->cshape, &pe->ctext);
		/* The HELLO first, so that the node checks its side while we walk ours. */
		r = sync_wire_out_init(&w, "sync stream", &pe->p->to_fd, 1, 0);
		if (!r)
			r = sync_send_hello(&w, flags, 1, pe->chas ? pe->cdigest : NULL);
		if (!r)
			r = sync_wire_flush(&w);
		pe->p->wire_bytes += w.wire_bytes;
		sync_wire_out_release(&w);
		if (r)
			pe->p->rc = r;
		if (pthread_create(&pe->reader, NULL, reader_main, pe) == 0)
			pe->started = 1;
		else
			pe->p->rc = error("cannot start a thread: out of resources");
	}
	r = sync_local_manifest(src, flags, &ps.local, &skipped);
	if (r)
		goto out;
	sync_manifest_shape(&ps.local, ps.shape);
	debug("sync: %s walked (%zu entries) at %lld ms", src, ps.local.n,
	      (long long)(sync_now_us() - t0) / 1000);
	/*
	 * Where the tree has the shape of what we believe the node holds, say so now, without
	 * waiting for its state: a node that matched then ends at once (one round trip in
	 * all when nothing changed).
	 */
	for (i = 0; i < n; i++) {
		struct peer *pe = &ps.v[i];
		struct sync_wire_out w;

		if (pe->p->rc || !pe->chas || memcmp(pe->cshape, ps.shape, 32))
			continue;
		r = sync_wire_out_init(&w, "sync stream", &pe->p->to_fd, 1, 0);
		if (!r)
			r = sync_wire_rec(&w, REC_QUIET, NULL, 0, 0);
		if (!r)
			r = sync_wire_flush(&w);
		pe->p->wire_bytes += w.wire_bytes;
		sync_wire_out_release(&w);
		if (r)
			pe->p->rc = r;
		pe->quiet = !r;
	}
	r = 0;
	/* Nodes that hold the same thing get the same stream. */
	gs = xcalloc(n ? n : 1, sizeof(*gs));
	for (i = 0; i < n; i++) {
		struct peer *pe = &ps.v[i];

		if (pe->p->rc)
			continue;
		if (!wait_for(pe, has_state, 0)) {
			pe->p->rc = pe->failed ? -EPROTO
			                       : error("%s: no answer from 'skiff __sync-serve' on "
			                               "the node",
			                               pe->p->name);
			continue;
		}
		for (k = 0; k < ng; k++)
			if (!memcmp(ps.v[gs[k].m[0]].digest, pe->digest, 32))
				break;
		if (k == ng) {
			gs[ng].push = &ps;
			gs[ng].m = xcalloc(n, sizeof(*gs[ng].m));
			ng++;
		}
		/* The leader's text is the group's: one that matched its cache, if any. */
		if (pe->match && !ps.v[gs[k].m[0]].match && gs[k].n) {
			gs[k].m[gs[k].n++] = gs[k].m[0];
			gs[k].m[0] = i;
		} else {
			gs[k].m[gs[k].n++] = i;
		}
		pe->group = (int)k;
	}
	debug("sync of %s to %zu node(s): %zu group(s); the nodes answered at %lld ms", src, n, ng,
	      (long long)(sync_now_us() - t0) / 1000);
	if (ng == 1) {
		gs[0].rc = run_group(&gs[0]);
	} else {
		for (k = 0; k < ng; k++)
			gs[k].joinable = !pthread_create(&gs[k].th, NULL, group_main, &gs[k]);
		for (k = 0; k < ng; k++) {
			if (gs[k].joinable)
				pthread_join(gs[k].th, NULL);
			else
				gs[k].rc = run_group(&gs[k]);
		}
	}
out:
	for (i = 0; i < n; i++) {
		struct peer *pe = &ps.v[i];

		close_to(pe);
		if (r && !pe->p->rc)
			pe->p->rc = r;
		if (pe->started)
			pthread_join(pe->reader, NULL);
		pe->p->st.skipped += skipped;
		fail |= pe->p->rc != 0;
		for (k = 0; k < pe->nsigs; k++)
			if (pe->sig_state[k] == 1)
				sync_sigs_release(&pe->sigs[k]);
		free(pe->sigs);
		free(pe->sig_state);
		for (k = 0; k < pe->nwant; k++)
			free(pe->want[k]);
		free(pe->want);
		buf_release(&pe->mtext);
		buf_release(&pe->ctext);
		free(pe->what);
	}
	debug("sync of %s done at %lld ms", src, (long long)(sync_now_us() - t0) / 1000);
	for (k = 0; gs && k < ng; k++)
		free(gs[k].m);
	free(gs);
	free(ps.v);
	sync_manifest_release(&ps.local);
	pthread_cond_destroy(&ps.cv);
	pthread_mutex_destroy(&ps.mu);
	return r ? r : fail ? -EIO : 0;
}
