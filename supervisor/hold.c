/*
 * Who holds this node (supervisor/hold.h): the record, its decision and its lock.
 */
#include "supervisor/hold.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/lock.h"
#include "lib/log.h"
#include "lib/util.h"
#include "supervisor/node.h"
#include "lib/banned.h"

/* The same launcher's same cluster: the hold is want's own. */
static int hold_same(const struct hold *h, const struct hold *want)
{
	return !strcmp(h->launcher, want->launcher) && !strcmp(h->cluster, want->cluster);
}

/* Drops the holds that gone() says of want (want NULL: every one); how many. */
static size_t holds_remove(struct holds *h, int (*gone)(const struct hold *, const struct hold *),
                           const struct hold *want)
{
	size_t i, k = 0;

	for (i = 0; i < h->n; i++) {
		if (want && !gone(&h->v[i], want)) {
			h->v[k++] = h->v[i];
			continue;
		}
		debug("the hold of cluster '%s' goes", h->v[i].cluster);
		free(h->v[i].line);
	}
	i = h->n - k;
	h->n = k;
	return i;
}

/* Capacities are measured (GiB as a fraction): a hair's breadth is a fit. */
#define FIT_EPS 1e-9

int hold_stale(const struct hold *h, const struct hold *want)
{
	/* A launcher's home copied to another machine keeps its id: not the same launcher. */
	return !strcmp(h->launcher, want->launcher) && strcmp(h->cluster, want->cluster) &&
	       !strcmp(h->from, want->from) && (!h->share || !want->share);
}

/* The others: neither want's own nor stale. */
static int hold_other(const struct hold *h, const struct hold *want)
{
	return !hold_same(h, want) && !hold_stale(h, want);
}

int hold_free(const struct holds *held, const struct hold *want, const struct hold_cap *cap,
              struct hold_cap *left)
{
	uint64_t used = 0;
	size_t i;
	int g;

	left->cpus = cap->cpus;
	left->memory = cap->memory;
	left->gpus = 0;
	for (i = 0; i < held->n; i++) {
		const struct hold *h = &held->v[i];

		if (!hold_other(h, want))
			continue;
		if (!h->share) {
			left->cpus = left->memory = 0;
			return 1;
		}
		left->cpus -= h->cpus;
		left->memory -= h->memory;
		used |= h->gpu_mask;
	}
	for (g = 0; g < cap->gpus && g < HOLD_GPUS_MAX; g++)
		left->gpus += !(used >> g & 1);
	return 0;
}

/* The lowest n of cap's GPUs that no other share has (n of them, or fewer). */
static uint64_t free_gpus(const struct holds *held, const struct hold *want, int cap, int n)
{
	uint64_t used = 0, got = 0;
	size_t i;
	int g;

	for (i = 0; i < held->n; i++)
		if (hold_other(&held->v[i], want))
			used |= held->v[i].gpu_mask;
	for (g = 0; g < cap && g < HOLD_GPUS_MAX && n > 0; g++)
		if (!(used >> g & 1))
			got |= 1ULL << g, n--;
	return got;
}

enum hold_verdict hold_decide(const struct holds *held, const struct hold *want,
                              const struct hold_cap *cap, size_t *holder, uint64_t *gpus)
{
	struct hold_cap left;
	size_t i, others = 0, first = 0;

	*gpus = 0;
	for (i = 0; i < held->n; i++)
		if (hold_same(&held->v[i], want)) {
			*gpus = held->v[i].gpu_mask;
			return HOLD_OURS;
		}
	for (i = 0; i < held->n; i++) {
		if (!hold_other(&held->v[i], want))
			continue;
		if (!others++)
			first = i;
		/* Whole against anything: refused, naming the one that holds it whole if any. */
		if (!held->v[i].share || !want->share) {
			*holder = i;
			return HOLD_REFUSED;
		}
	}
	if (!want->share)
		return HOLD_TAKE;
	if (others) {
		hold_free(held, want, cap, &left);
		if (want->cpus > left.cpus + FIT_EPS || want->memory > left.memory + FIT_EPS ||
		    want->gpus > left.gpus) {
			*holder = first;
			return HOLD_FULL;
		}
	}
	*gpus = free_gpus(held, want, cap->gpus, want->gpus);
	return HOLD_TAKE;
}

/* A value of the record: 1..max bytes of printable ASCII, no space and no '='. */
static int word_ok(const char *s, size_t len, size_t max)
{
	size_t i;

	if (!len || len > max)
		return 0;
	for (i = 0; i < len; i++)
		if (s[i] <= ' ' || s[i] > '~' || s[i] == '=')
			return 0;
	return 1;
}

static int hex_ok(const char *s)
{
	size_t i, n = strlen(s);

	if (!n || n > HOLD_LAUNCHER_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

int hold_check(const struct hold *h, struct buf *why)
{
	if (!hex_ok(h->launcher))
		return buf_addf(why, "bad launcher id '%.80s': expected 1 to %d hex digits",
		                h->launcher, HOLD_LAUNCHER_MAX),
		       -EINVAL;
	if (!word_ok(h->cluster, strlen(h->cluster), sizeof(h->cluster) - 1))
		return buf_addf(why,
		                "bad cluster name '%.80s': expected 1 to %zu printable bytes "
		                "with no space or '='",
		                h->cluster, sizeof(h->cluster) - 1),
		       -EINVAL;
	if (*h->from && !word_ok(h->from, strlen(h->from), HOLD_FROM_MAX))
		return buf_addf(why,
		                "bad holder '%.80s': expected up to %d printable bytes with "
		                "no space or '='",
		                h->from, HOLD_FROM_MAX),
		       -EINVAL;
	return 0;
}

char *hold_share_home(const char *host, const struct hold *h)
{
	char *key = xasprintf("%s-%.12s", h->cluster, h->launcher), *home;
	size_t i;

	for (i = 0; key[i]; i++)
		if (key[i] >= 'A' && key[i] <= 'Z')
			key[i] = (char)(key[i] - 'A' + 'a');
		else if (!strchr(CLUSTER_HOME_KEY_CHARS, key[i]))
			key[i] = '-';
	home = xasprintf("%s/" CLUSTER_HOME_DIR "/%s", host, key);
	free(key);
	return home;
}

int hold_gpus_parse(const char *s, uint64_t *mask)
{
	long g;

	*mask = 0;
	while (*s) {
		const char *e = strchr(s, ',');
		char num[8];
		size_t n = e ? (size_t)(e - s) : strlen(s);

		if (!n || n >= sizeof(num))
			return -EINVAL;
		memcpy(num, s, n);
		num[n] = '\0';
		if (parse_long(num, 0, HOLD_GPUS_MAX - 1, &g) || (*mask >> g & 1))
			return -EINVAL;
		*mask |= 1ULL << g;
		s += n + (e ? 1 : 0);
		if (e && !*s)
			return -EINVAL;
	}
	return 0;
}

void hold_gpus_format(uint64_t mask, char *out, size_t size)
{
	struct buf b = BUF_INIT(0);
	int g;

	for (g = 0; g < HOLD_GPUS_MAX; g++)
		if (mask >> g & 1)
			buf_addf(&b, "%s%d", b.len ? "," : "", g);
	xsnprintf(out, size, "%s", b.len ? b.p : "");
	buf_release(&b);
}

/* Copies the value [v, v + len) into out[size] if it fits as a word. */
static int take_word(char *out, size_t size, const char *v, size_t len)
{
	if (!word_ok(v, len, size - 1))
		return -1;
	memcpy(out, v, len);
	out[len] = '\0';
	return 0;
}

static int parse_line(const char *p, size_t len, struct hold *h, struct buf *why)
{
	const char *end = p + len, *f = p;
	int bad = 0;

	memset(h, 0, sizeof(*h));
	while (f < end && !bad) {
		const char *sp = memchr(f, ' ', (size_t)(end - f)), *fe = sp ? sp : end;
		const char *eq = memchr(f, '=', (size_t)(fe - f));

		if (fe == f) {
			f++;
			continue;
		}
		if (!eq) {
			bad = 1;
			break;
		}
		if (eq - f == 8 && !memcmp(f, "launcher", 8))
			bad = take_word(h->launcher, sizeof(h->launcher), eq + 1,
			                (size_t)(fe - eq - 1));
		else if (eq - f == 7 && !memcmp(f, "cluster", 7))
			bad = take_word(h->cluster, sizeof(h->cluster), eq + 1,
			                (size_t)(fe - eq - 1));
		else if (eq - f == 4 && !memcmp(f, "from", 4))
			bad = take_word(h->from, sizeof(h->from), eq + 1, (size_t)(fe - eq - 1));
		else if (eq - f == 5 && !memcmp(f, "since", 5)) {
			char num[32];

			bad = take_word(num, sizeof(num), eq + 1, (size_t)(fe - eq - 1)) ||
			      parse_double(num, &h->since) || h->since < 0;
		} else if ((eq - f == 4 && !memcmp(f, "cpus", 4)) ||
		           (eq - f == 6 && !memcmp(f, "memory", 6))) {
			char num[32];
			double *v = *f == 'c' ? &h->cpus : &h->memory;

			bad = take_word(num, sizeof(num), eq + 1, (size_t)(fe - eq - 1)) ||
			      parse_double(num, v) || *v < 0;
			h->share = 1;
		} else if (eq - f == 4 && !memcmp(f, "gpus", 4)) {
			char ids[4 * HOLD_GPUS_MAX];

			bad = take_word(ids, sizeof(ids), eq + 1, (size_t)(fe - eq - 1)) ||
			      hold_gpus_parse(ids, &h->gpu_mask);
			h->gpus = __builtin_popcountll(h->gpu_mask);
		}
		f = fe;
	}
	if (bad || !hex_ok(h->launcher) || !*h->cluster)
		return buf_addf(why,
		                "'%.*s': expected launcher=ID cluster=NAME [from=WHO] "
		                "[since=EPOCH] [cpus=N memory=GIB [gpus=I,J]]",
		                (int)(len > 200 ? 200 : len), p),
		       -EINVAL;
	h->line = xstrndup(p, len);
	return 0;
}

int holds_parse(const char *text, size_t len, struct holds *out, struct buf *why)
{
	const char *p = text, *end = text + len;
	int lineno = 0;

	memset(out, 0, sizeof(*out));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *le = nl ? nl : end;
		size_t n = (size_t)(le - p);
		struct hold h;

		lineno++;
		if (n && (n > HOLD_LINE_MAX || out->n >= HOLDS_MAX || parse_line(p, n, &h, why))) {
			if (n > HOLD_LINE_MAX || out->n >= HOLDS_MAX)
				buf_addf(why, "%s",
				         n > HOLD_LINE_MAX ? "a line is too long"
				                           : "too many lines");
			buf_addf(why, " (line %d)", lineno);
			holds_release(out);
			return -EINVAL;
		}
		if (n) {
			out->v = xgrow(out->v, out->n, &out->alloc, sizeof(*out->v));
			out->v[out->n++] = h;
		}
		p = le + (nl ? 1 : 0);
	}
	return 0;
}

void holds_format(const struct holds *h, struct buf *out)
{
	size_t i;

	for (i = 0; i < h->n; i++) {
		const struct hold *o = &h->v[i];

		char ids[4 * HOLD_GPUS_MAX];

		if (o->line) {
			buf_addf(out, "%s\n", o->line);
			continue;
		}
		buf_addf(out, "launcher=%s cluster=%s%s%s since=%.0f", o->launcher, o->cluster,
		         *o->from ? " from=" : "", o->from, o->since);
		if (o->share)
			buf_addf(out, " cpus=%g memory=%g", o->cpus, o->memory);
		if (o->share && o->gpu_mask) {
			hold_gpus_format(o->gpu_mask, ids, sizeof(ids));
			buf_addf(out, " gpus=%s", ids);
		}
		buf_addch(out, '\n');
	}
}

void holds_release(struct holds *h)
{
	size_t i;

	for (i = 0; i < h->n; i++)
		free(h->v[i].line);
	free(h->v);
	memset(h, 0, sizeof(*h));
}

/* ---- the record on disk --------------------------------------------------------------- */

/* In the node's home: a cluster home's (lib/util.h) is the node's record too. */
static char *record_path(const char *name)
{
	const struct node_paths *p = node_paths();

	return p ? xasprintf("%s/%s", p->host, name) : NULL;
}

/* Reads the record (none: no hold). */
static int load(const char *path, struct holds *out, struct buf *why)
{
	struct buf b = BUF_INIT((size_t)HOLDS_MAX * (HOLD_LINE_MAX + 1));
	int r = buf_read_file(&b, path);

	memset(out, 0, sizeof(*out));
	if (r == -ENOENT) {
		r = 0;
	} else if (r) {
		buf_addf(why, "cannot read %s: %s", path, strerror(-r));
	} else if ((r = holds_parse(b.p, b.len, out, why))) {
		buf_addf(why, " in %s; it is not a record skiff wrote: move it away", path);
	}
	buf_release(&b);
	return r;
}

static int store(const char *path, const struct holds *h, struct buf *why)
{
	struct buf b = BUF_INIT(0);
	int r;

	holds_format(h, &b);
	r = write_file_atomic(path, b.len ? b.p : "", b.len, 0600);
	if (r)
		buf_addf(why, "cannot write %s: %s", path, strerror(-r));
	buf_release(&b);
	return r;
}

/* The record's lock, and the record's path in *path. */
static int lock(char **path, struct buf *why)
{
	char *lpath = record_path("holds.lock");
	int fd;

	*path = record_path("holds");
	if (!lpath || !*path) {
		free(lpath);
		free(*path);
		*path = NULL;
		buf_adds(why, "no state directory");
		return -ENOENT;
	}
	fd = lock_take(lpath, "this node's holds", "skiff node up", LOCK_TAKE_WAIT);
	if (fd < 0)
		buf_addf(why, "cannot lock %s", lpath);
	free(lpath);
	return fd;
}

static void say_holder(struct buf *why, const struct hold *h, const struct hold *want)
{
	char when[32] = "";
	time_t t = (time_t)h->since;
	struct tm tm;
	const struct node_paths *p = node_paths();
	char *home = h->share ? hold_share_home(p ? p->host : "~/.skiff", h)
	                      : xstrdup(p ? p->host : "~/.skiff");

	if (h->since > 0 && gmtime_r(&t, &tm))
		strftime(when, sizeof(when), " since %Y-%m-%d %H:%M UTC", &tm);
	buf_addf(why,
	         "cluster '%s' of %s (launcher %.12s) holds %s%s: %s. If that cluster is "
	         "gone for good: 'skiff down %s' where it was launched, or on this node "
	         "'%s/bin/skiff node down --all && %s/bin/skiff node release --hold %s "
	         "--launcher %s' (its jobs are cancelled)",
	         h->cluster, *h->from ? h->from : "another launcher", h->launcher,
	         h->share ? "a share of this node" : "this node whole", when,
	         h->share      ? "a cluster that asks for no resources needs the node to itself"
	         : want->share ? "no share of it is free"
	                       : "clusters share a node only where each asks for "
	                         "resources (--cpus, --memory, --gpus)",
	         h->cluster, home, home, h->cluster, h->launcher);
	free(home);
}

static void say_full(struct buf *why, const struct holds *held, const struct hold *want,
                     const struct hold_cap *cap)
{
	struct hold_cap left;
	size_t i, n = 0;

	hold_free(held, want, cap, &left);
	buf_addf(why, "this node has %g CPUs, %.3g GiB and %d GPUs; ", cap->cpus, cap->memory,
	         cap->gpus);
	for (i = 0; i < held->n; i++) {
		const struct hold *h = &held->v[i];

		if (!hold_other(h, want))
			continue;
		if (n++ < 8)
			buf_addf(why, "%scluster '%s' of %s holds %g CPUs, %.3g GiB and %d GPUs",
			         n > 1 ? ", " : "", h->cluster, *h->from ? h->from : "a launcher",
			         h->cpus, h->memory, h->gpus);
	}
	if (n > 8)
		buf_addf(why, " and %zu more clusters hold shares", n - 8);
	buf_addf(why,
	         ", which leaves %g CPUs, %.3g GiB and %d GPUs; cluster '%s' asks for %g CPUs, "
	         "%.3g GiB and %d GPUs",
	         left.cpus > 0 ? left.cpus : 0, left.memory > 0 ? left.memory : 0, left.gpus,
	         want->cluster, want->cpus, want->memory, want->gpus);
}

int hold_take(const struct hold *want, const struct hold_cap *cap, uint64_t *gpus, struct buf *why)
{
	struct holds held;
	struct hold *h;
	char *path = NULL;
	size_t who = 0;
	int fd, r;

	*gpus = 0;
	if ((r = hold_check(want, why)))
		return r;
	fd = lock(&path, why);
	if (fd < 0) {
		free(path);
		return fd;
	}
	r = load(path, &held, why);
	if (!r) {
		switch (hold_decide(&held, want, cap, &who, gpus)) {
		case HOLD_OURS: break;
		case HOLD_REFUSED:
			say_holder(why, &held.v[who], want);
			r = -EBUSY;
			break;
		case HOLD_FULL:
			say_full(why, &held, want, cap);
			r = -ENOSPC;
			break;
		case HOLD_TAKE:
			holds_remove(&held, hold_stale, want); /* this launcher's, gone */
			held.v = xgrow(held.v, held.n, &held.alloc, sizeof(*held.v));
			h = &held.v[held.n++];
			*h = *want;
			h->line = NULL;
			h->gpu_mask = *gpus;
			h->gpus = __builtin_popcountll(*gpus);
			if (h->since <= 0)
				h->since = now_wall();
			r = store(path, &held, why);
			break;
		}
	}
	holds_release(&held);
	lock_release(fd);
	free(path);
	return r;
}

int hold_drop(const struct hold *want, struct buf *why)
{
	struct holds held;
	char *path = NULL;
	int fd, r;

	fd = lock(&path, why);
	if (fd < 0) {
		free(path);
		return fd;
	}
	r = load(path, &held, why);
	if (!r) {
		if (holds_remove(&held, hold_same, want))
			r = store(path, &held, why);
	} else if (!want) {
		/* By hand: a record that does not parse goes too. */
		r = rm_rf(path);
		if (r)
			buf_addf(why, ": cannot remove it: %s", strerror(-r));
	}
	holds_release(&held);
	lock_release(fd);
	free(path);
	return r;
}

int hold_list(struct holds *out, struct buf *why)
{
	char *path = record_path("holds");
	int r;

	memset(out, 0, sizeof(*out));
	if (!path) {
		buf_adds(why, "no state directory");
		return -ENOENT;
	}
	r = load(path, out, why);
	free(path);
	return r;
}
