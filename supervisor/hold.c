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

int hold_stale(const struct hold *h, const struct hold *want)
{
	/* A launcher's home copied to another machine keeps its id: not the same launcher. */
	return !strcmp(h->launcher, want->launcher) && strcmp(h->cluster, want->cluster) &&
	       !strcmp(h->from, want->from);
}

enum hold_verdict hold_decide(const struct holds *held, const struct hold *want, size_t *holder)
{
	size_t i;

	for (i = 0; i < held->n; i++)
		if (hold_same(&held->v[i], want))
			return HOLD_OURS;
	for (i = 0; i < held->n; i++)
		if (!hold_stale(&held->v[i], want)) {
			*holder = i;
			return HOLD_REFUSED;
		}
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
		}
		f = fe;
	}
	if (bad || !hex_ok(h->launcher) || !*h->cluster)
		return buf_addf(why,
		                "'%.*s': expected launcher=ID cluster=NAME [from=WHO] "
		                "[since=EPOCH]",
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

		if (o->line)
			buf_addf(out, "%s\n", o->line);
		else
			buf_addf(out, "launcher=%s cluster=%s%s%s since=%.0f\n", o->launcher,
			         o->cluster, *o->from ? " from=" : "", o->from, o->since);
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

static char *record_path(const char *name)
{
	const struct node_paths *p = node_paths();

	return p ? xasprintf("%s/%s", p->home, name) : NULL;
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

static void say_holder(struct buf *why, const struct hold *h)
{
	char when[32] = "";
	time_t t = (time_t)h->since;
	struct tm tm;
	const struct node_paths *p = node_paths();
	const char *home = p ? p->home : "~/.skiff";

	if (h->since > 0 && gmtime_r(&t, &tm))
		strftime(when, sizeof(when), " since %Y-%m-%d %H:%M UTC", &tm);
	buf_addf(why,
	         "cluster '%s' of %s (launcher %.12s) holds this node%s: one cluster a node "
	         "for now. If that cluster is gone for good: 'skiff down %s' where it was "
	         "launched, or on this node '%s/bin/skiff node down --all && %s/bin/skiff "
	         "node release --all-holds' (its jobs are cancelled)",
	         h->cluster, *h->from ? h->from : "another launcher", h->launcher, when, h->cluster,
	         home, home);
}

int hold_take(const struct hold *want, struct buf *why)
{
	struct holds held;
	struct hold *h;
	char *path = NULL;
	size_t who = 0;
	int fd, r;

	if ((r = hold_check(want, why)))
		return r;
	fd = lock(&path, why);
	if (fd < 0) {
		free(path);
		return fd;
	}
	r = load(path, &held, why);
	if (!r) {
		switch (hold_decide(&held, want, &who)) {
		case HOLD_OURS: break;
		case HOLD_REFUSED:
			say_holder(why, &held.v[who]);
			r = -EBUSY;
			break;
		case HOLD_TAKE:
			holds_remove(&held, hold_stale, want); /* this launcher's, gone */
			held.v = xgrow(held.v, held.n, &held.alloc, sizeof(*held.v));
			h = &held.v[held.n++];
			*h = *want;
			h->line = NULL;
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
