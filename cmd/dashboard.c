/*
 * `skiff dashboard`: the clusters, their jobs and logs, and the managed jobs in a browser,
 * served by this binary (docs/dashboard.md).
 *
 * One process and one poll loop: the listening socket, each browser's connection, and
 * the workers answering API requests. Every answer with data is the CLI's own: a worker
 * is this binary run with the command the route names (`status --json`, `queue --json C`,
 * `logs C J`, `cancel -y C J`...), its stdout the answer (JSON, or a log streamed as it
 * comes), its exit code the HTTP status (dash_http_status()), its stderr the error. The
 * page is embedded (cmd/dashboard/: index.html, app.js, app.css; nothing fetched from
 * elsewhere), and draws what the API gives with textContent only.
 *
 * Safety (a browser is a hostile client): loopback only unless told otherwise; a random
 * token per start, in the printed URL, swapped for an HttpOnly SameSite=Strict cookie;
 * the Host must be ours (DNS rebinding) and a mutation a POST from our Origin (CSRF):
 * dash_admit(). Bounded: connections, a request's head and body, workers at once, a JSON
 * answer's size, and what a stream holds for a slow browser (its worker then waits; the
 * loop never does). Changes are pushed as server-sent events when the launcher's
 * database changes (one stat per DASH_EVENT_POLL_MS, no node is asked).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "bootstrap/launch/engine.h"
#include "cmd/dashboard.h"
#include "lib/buf.h"
#include "lib/daemon.h"
#include "lib/http.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/self.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "lib/banned.h"

#define DASH_DEFAULT_PORT 46590
#define DASH_MAX_CONNS 128                 /* browsers' connections at once */
#define DASH_MAX_WORKERS 16                /* API requests being answered at once */
#define DASH_MAX_STREAMS 32                /* of the connections, logs and events streams */
#define DASH_BODY_MAX ((size_t)4096)       /* a POST's body (actions take none) */
#define DASH_JSON_MAX ((size_t)256 << 20)  /* a JSON answer */
#define DASH_ERR_MAX ((size_t)64 << 10)    /* a worker's stderr kept for the error */
#define DASH_STREAM_HOLD ((size_t)1 << 20) /* unsent bytes before a stream's worker waits */
#define DASH_HEAD_MS 10000                 /* to send a whole request */
#define DASH_EVENT_POLL_MS 250             /* the launcher db looked at for changes */
#define DASH_PING_MS 15000                 /* an events stream's keep-alive comment */
#define DASH_REAP_MS 100                   /* a worker whose pipes closed, until it is reaped */
#define DASH_EVENT_CLUSTERS 16   /* clusters one events stream follows (a browser's tabs) */
#define DASH_MAX_WATCHERS 32     /* clusters watched at once (the pages' clusters) */
#define DASH_WATCH_RETRY_MS 5000 /* a cluster's watcher that failed, started again */
#define DASH_WATCH_MS "600000"   /* a watcher's own limit (it is started again) */

__asm__(".section .rodata.skiff_dashboard,\"a\"\n"
        "dash_index_html:\n"
        ".incbin \"cmd/dashboard/index.html\"\n"
        "dash_index_html_end:\n"
        "dash_app_js:\n"
        ".incbin \"cmd/dashboard/app.js\"\n"
        "dash_app_js_end:\n"
        "dash_app_css:\n"
        ".incbin \"cmd/dashboard/app.css\"\n"
        "dash_app_css_end:\n"
        "dash_events_js:\n"
        ".incbin \"cmd/dashboard/events.js\"\n"
        "dash_events_js_end:\n"
        ".previous\n");
extern const char dash_index_html[], dash_index_html_end[];
extern const char dash_app_js[], dash_app_js_end[];
extern const char dash_app_css[], dash_app_css_end[];
extern const char dash_events_js[], dash_events_js_end[];

const char cmd_dashboard_usage[] =
        "usage: skiff dashboard [--host ADDR] [--port N] [--no-open]\n"
        "                       [--tls | --cert FILE --key FILE | --insecure-http]\n"
        "\n"
        "Serves skiff's web dashboard from this binary: the clusters (refreshed from their\n"
        "nodes on demand), each cluster's nodes, jobs and live logs, the managed jobs, and\n"
        "the infras; cancel, stop, start and down with a confirmation. Prints the URL to\n"
        "open, with a token that is new at every start (the page swaps it for a cookie).\n"
        "Runs until interrupted.\n"
        "\n"
        "  --host ADDR       the IPv4 address to listen on (default 127.0.0.1); another\n"
        "                    than loopback is served over TLS\n"
        "  --port N          the port (default 46590; 0: any free one)\n"
        "  --no-open         do not open a browser (the default where there is no display)\n"
        "  --tls             serve HTTPS on loopback too\n"
        "  --cert FILE --key FILE\n"
        "                    HTTPS with this certificate and key (PEM); without them\n"
        "                    HTTPS uses a self-signed certificate made on first use in\n"
        "                    $SKIFF_HOME/dashboard/\n"
        "  --insecure-http   a non-loopback --host over plain HTTP (the token and the\n"
        "                    cookie then cross the network in the clear)\n"
        "\n"
        "The JSON API under /api/v1/ (docs/dashboard.md) gives what the CLI's --json gives.\n";

enum conn_state {
	C_READ,   /* the request is coming */
	C_WAIT,   /* a worker computes the answer */
	C_STREAM, /* the answer streams (logs, events) */
	C_DONE,   /* the answer is in out: send it, then close */
};

struct worker {
	pid_t pid; /* its own process group */
	int out, err;
	struct buf errb;
	int code; /* its exit code, once reaped; -1 before */
};

struct conn {
	int fd;
	struct dash_tls_conn *tls; /* its TLS session, when served over TLS */
	enum conn_state st;
	struct buf in;
	struct buf out; /* unsent bytes */
	size_t out_off;
	struct worker w;  /* w.pid > 0: its worker */
	int stream;       /* the worker's stdout goes out as it comes */
	int events;       /* a server-sent events stream */
	int action;       /* the worker's answer is an action's */
	int64_t deadline; /* C_READ: the whole request by then */
	int64_t ping;     /* events: the next keep-alive */
	int64_t sent_version;
	/* events: the clusters whose jobs' ends it is told too */
	char clusters[DASH_EVENT_CLUSTERS][64];
	int nclusters;
};

/*
 * A cluster's watcher, while a page of the cluster is open: `skiff __dash-watch C`, which
 * ends when one of its running jobs ends (the nodes' own watch, eng_watch_end()).
 */
enum watch_state {
	W_RUNNING,
	W_IDLE,  /* nothing runs there: started again at the next change of the db */
	W_RETRY, /* it failed: started again at retry_at */
};

struct watcher {
	char cluster[64];
	enum watch_state st;
	pid_t pid;
	int out;
	int64_t version; /* W_IDLE: the db's version then */
	int64_t retry_at;
};

struct dash {
	int lfd;
	struct dash_conf conf;
	char token[DASH_TOKEN_HEX + 1];
	char hosts[3][80];
	struct conn *conns[DASH_MAX_CONNS];
	int nconns, nworkers, nstreams;
	int64_t version; /* bumped at each change of the launcher db */
	char *db_path, *wal_path;
	struct stat db_st, wal_st;
	int64_t next_poll;
	const char *self;
	struct watcher watchers[DASH_MAX_WATCHERS];
	int nwatchers;
	struct dash_tls *tls; /* NULL: plain HTTP */
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* ---- responses ---------------------------------------------------------------------- */

static void head(struct buf *b, int code, const char *ctype, long long len, const char *extra)
{
	buf_addf(
	        b,
	        "HTTP/1.1 %s\r\n"
	        "Content-Type: %s\r\n"
	        "Cache-Control: no-store\r\n"
	        "X-Content-Type-Options: nosniff\r\n"
	        "X-Frame-Options: DENY\r\n"
	        "Referrer-Policy: no-referrer\r\n"
	        "Content-Security-Policy: default-src 'self'; img-src 'self' data:; "
	        "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'\r\n"
	        "Connection: close\r\n",
	        http_status_text(code), ctype);
	if (len >= 0)
		buf_addf(b, "Content-Length: %lld\r\n", len);
	if (extra)
		buf_adds(b, extra);
	buf_adds(b, "\r\n");
}

static void respond(struct conn *c, int code, const char *ctype, const char *body, size_t len,
                    const char *extra)
{
	head(&c->out, code, ctype, (long long)len, extra);
	buf_add(&c->out, body, len);
	c->st = C_DONE;
}

/* An error as JSON: {"error": why, "exit_code": code or null}. */
static void respond_error(struct conn *c, int status, const char *why, size_t len, int code)
{
	struct buf b = BUF_INIT(0);
	struct json js;

	json_init(&js, &b, 0);
	json_obj_begin(&js);
	json_key(&js, "error");
	json_strn(&js, why, len);
	json_key(&js, "exit_code");
	if (code >= 0)
		json_int(&js, code);
	else
		json_null(&js);
	json_obj_end(&js);
	json_finish(&js);
	buf_addch(&b, '\n');
	respond(c, status, "application/json", b.p, b.len, NULL);
	buf_release(&b);
}

static void respond_msg(struct conn *c, int status, const char *why)
{
	respond_error(c, status, why, strlen(why), -1);
}

/* ---- workers ------------------------------------------------------------------------ */

static int start_worker(struct dash *d, struct conn *c, const struct dash_route *rt)
{
	struct spawn_opts o = SPAWN_OPTS_INIT;
	int out[2] = {-1, -1}, err[2] = {-1, -1}, r;
	char *argv[DASH_ARGS_MAX + 2];
	int i;

	argv[0] = (char *)d->self;
	for (i = 0; i < rt->argc; i++)
		argv[i + 1] = rt->argv[i];
	argv[rt->argc + 1] = NULL;
	if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
		r = -errno;
		goto fail;
	}
	o.argv = argv;
	o.fd_out = out[1];
	o.fd_err = err[1];
	o.pgrp = SPAWN_PGRP_NEW;
	o.death_sig = SIGTERM;
	r = spawn(&o, &c->w.pid);
	if (r)
		goto fail;
	close(out[1]);
	close(err[1]);
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	fcntl(err[0], F_SETFL, O_NONBLOCK);
	c->w.out = out[0];
	c->w.err = err[0];
	c->w.code = -1;
	buf_init(&c->w.errb, DASH_ERR_MAX);
	d->nworkers++;
	debug("dashboard: worker %d: %s %s", (int)c->w.pid, rt->argv[0],
	      rt->argc > 1 ? rt->argv[1] : "");
	return 0;
fail:
	for (i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
	}
	c->w.pid = 0;
	return r;
}

static void worker_kill(struct dash *d, struct conn *c)
{
	if (c->w.pid <= 0)
		return;
	kill(-c->w.pid, SIGKILL);
	spawn_wait(c->w.pid, NULL);
	c->w.pid = 0;
	d->nworkers--;
	if (c->w.out >= 0)
		close(c->w.out);
	if (c->w.err >= 0)
		close(c->w.err);
	c->w.out = c->w.err = -1;
	buf_release(&c->w.errb);
}

/* Reads what the worker wrote; a whole JSON answer is kept in c->in (reused). */
static void worker_read(struct conn *c, int which)
{
	int *fd = which ? &c->w.err : &c->w.out;
	char blk[65536];

	for (;;) {
		ssize_t n;

		if (!which && c->stream && c->out.len - c->out_off > DASH_STREAM_HOLD)
			return; /* a slow browser: the worker waits, not us */
		n = read(*fd, blk, sizeof(blk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			close(*fd);
			*fd = -1;
			return;
		}
		if (which) {
			if (c->w.errb.len < DASH_ERR_MAX - 1)
				buf_add(&c->w.errb, blk,
				        (size_t)n < DASH_ERR_MAX - 1 - c->w.errb.len
				                ? (size_t)n
				                : DASH_ERR_MAX - 1 - c->w.errb.len);
		} else if (c->stream) {
			buf_add(&c->out, blk, (size_t)n);
		} else if (buf_add(&c->in, blk, (size_t)n)) {
			kill(-c->w.pid, SIGKILL); /* over DASH_JSON_MAX: refused below */
			c->w.code = -2;
		}
	}
}

/* The worker's stderr as the error's text: its lines, "skiff: error: " taken off. */
static void error_text(struct buf *e, struct buf *out)
{
	const char *p = e->len ? e->p : "";

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (len >= 14 && !strncmp(p, "skiff: error: ", 14)) {
			p += 14;
			len -= 14;
		}
		if (len) {
			if (out->len)
				buf_addch(out, '\n');
			buf_add(out, p, len);
		}
		p += len + (nl ? 1 : 0);
	}
}

/* The worker ended: its answer. */
static void worker_done(struct dash *d, struct conn *c, int raw)
{
	int code = c->w.code == -2 ? -2 : status_to_code(raw);
	struct buf why = BUF_INIT(0);

	c->w.pid = 0;
	d->nworkers--;
	error_text(&c->w.errb, &why);
	if (c->stream) {
		/* Its output went out as it came; the stream ends here. */
		c->st = C_DONE;
	} else if (code == -2) {
		respond_msg(c, 500, "the answer is over the dashboard's limit");
	} else if (code == 0 && c->action) {
		struct buf b = BUF_INIT(0);
		struct json js;

		json_init(&js, &b, 0);
		json_obj_begin(&js);
		json_key(&js, "ok");
		json_bool(&js, 1);
		json_key(&js, "output");
		json_strn(&js, c->in.len ? c->in.p : "", c->in.len);
		json_key(&js, "messages");
		json_strn(&js, why.len ? why.p : "", why.len);
		json_obj_end(&js);
		json_finish(&js);
		buf_addch(&b, '\n');
		respond(c, 200, "application/json", b.p, b.len, NULL);
		buf_release(&b);
	} else if (code == 0) {
		respond(c, 200, "application/json", c->in.len ? c->in.p : "", c->in.len, NULL);
	} else {
		if (!why.len)
			buf_addf(&why, "the command failed (exit code %d)", code);
		respond_error(c, dash_http_status(code), why.p, why.len, code);
	}
	buf_release(&why);
	buf_release(&c->w.errb);
}

/* ---- events ------------------------------------------------------------------------- */

static int stat_changed(const char *path, struct stat *old)
{
	struct stat st;
	int changed;

	if (stat(path, &st))
		memset(&st, 0, sizeof(st));
	changed = st.st_size != old->st_size || st.st_mtim.tv_sec != old->st_mtim.tv_sec ||
	          st.st_mtim.tv_nsec != old->st_mtim.tv_nsec || st.st_ino != old->st_ino;
	*old = st;
	return changed;
}

static void events_poll(struct dash *d)
{
	int64_t now = now_ms();
	int i;

	if (now < d->next_poll)
		return;
	d->next_poll = now + DASH_EVENT_POLL_MS;
	/* Both: the WAL takes every commit, the main file each checkpoint. */
	if (stat_changed(d->db_path, &d->db_st) | stat_changed(d->wal_path, &d->wal_st))
		d->version++;
	for (i = 0; i < d->nconns; i++) {
		struct conn *c = d->conns[i];

		if (!c->events)
			continue;
		if (c->sent_version != d->version) {
			buf_addf(&c->out, "event: change\ndata: %lld\n\n", (long long)d->version);
			c->sent_version = d->version;
			c->ping = now + DASH_PING_MS;
		} else if (now >= c->ping) {
			buf_adds(&c->out, ": ping\n\n");
			c->ping = now + DASH_PING_MS;
		}
	}
}

/* Whether the events stream c follows cluster. */
static int follows(const struct conn *c, const char *cluster)
{
	int i;

	for (i = 0; i < c->nclusters; i++)
		if (!strcmp(c->clusters[i], cluster))
			return 1;
	return 0;
}

/* Tells the pages of cluster (every page when NULL) that something changed. */
static void notify(struct dash *d, const char *cluster)
{
	int i;

	for (i = 0; i < d->nconns; i++) {
		struct conn *c = d->conns[i];

		if (c->events && (!cluster || follows(c, cluster))) {
			buf_addf(&c->out, "event: change\ndata: %lld\n\n", (long long)d->version);
			c->ping = now_ms() + DASH_PING_MS;
		}
	}
}

static void watcher_start(struct dash *d, struct watcher *w)
{
	struct spawn_opts o = SPAWN_OPTS_INIT;
	char *argv[] = {(char *)d->self, "__dash-watch", w->cluster, DASH_WATCH_MS, NULL};
	int out[2];

	w->pid = 0;
	w->out = -1;
	if (pipe2(out, O_CLOEXEC)) {
		w->st = W_RETRY;
		w->retry_at = now_ms() + DASH_WATCH_RETRY_MS;
		return;
	}
	o.argv = argv;
	o.fd_out = out[1];
	o.pgrp = SPAWN_PGRP_NEW;
	o.death_sig = SIGTERM;
	if (spawn(&o, &w->pid)) {
		close(out[0]);
		w->pid = 0;
		w->st = W_RETRY;
		w->retry_at = now_ms() + DASH_WATCH_RETRY_MS;
	} else {
		w->out = out[0];
		w->st = W_RUNNING;
	}
	close(out[1]);
}

static void watcher_stop(struct watcher *w)
{
	if (w->pid > 0) {
		kill(-w->pid, SIGKILL);
		spawn_wait(w->pid, NULL);
	}
	if (w->out >= 0)
		close(w->out);
	w->pid = 0;
	w->out = -1;
}

/* Its output ended: what it says, and what it does next. */
static void watcher_ended(struct dash *d, struct watcher *w)
{
	int raw = 0, code;

	close(w->out);
	w->out = -1;
	spawn_wait(w->pid, &raw);
	w->pid = 0;
	code = status_to_code(raw);
	if (code == EXIT_OK) {
		notify(d, w->cluster); /* a job ended: watch the others */
		watcher_start(d, w);
	} else if (code == EXIT_JOB_NOT_FOUND) {
		w->st = W_IDLE; /* none runs: a new one comes with a change of the db */
		w->version = d->version;
	} else if (code == EXIT_JOB_NOT_FINISHED) {
		watcher_start(d, w); /* its own limit */
	} else {
		w->st = W_RETRY;
		w->retry_at = now_ms() + DASH_WATCH_RETRY_MS;
	}
}

/* A watcher for each cluster a page shows, none for the others. */
static void watchers_tend(struct dash *d)
{
	int64_t now = now_ms();
	int i, k;

	for (k = 0; k < d->nwatchers; k++) {
		int wanted = 0;

		for (i = 0; i < d->nconns && !wanted; i++)
			wanted =
			        d->conns[i]->events && follows(d->conns[i], d->watchers[k].cluster);
		if (!wanted) {
			watcher_stop(&d->watchers[k]);
			d->watchers[k--] = d->watchers[--d->nwatchers];
		}
	}
	for (i = 0; i < d->nconns; i++) {
		struct conn *c = d->conns[i];
		int j;

		for (j = 0; c->events && j < c->nclusters; j++) {
			struct watcher *w = NULL;

			for (k = 0; k < d->nwatchers && !w; k++)
				if (!strcmp(d->watchers[k].cluster, c->clusters[j]))
					w = &d->watchers[k];
			if (w || d->nwatchers >= DASH_MAX_WATCHERS)
				continue;
			w = &d->watchers[d->nwatchers++];
			memset(w, 0, sizeof(*w));
			w->out = -1;
			xsnprintf(w->cluster, sizeof(w->cluster), "%s", c->clusters[j]);
			watcher_start(d, w);
		}
	}
	for (k = 0; k < d->nwatchers; k++) {
		struct watcher *w = &d->watchers[k];

		if ((w->st == W_IDLE && w->version != d->version) ||
		    (w->st == W_RETRY && now >= w->retry_at))
			watcher_start(d, w);
	}
}

/* ---- requests ----------------------------------------------------------------------- */

static void serve_asset(struct conn *c, const char *name)
{
	if (!strcmp(name, "app.js"))
		respond(c, 200, "text/javascript; charset=utf-8", dash_app_js,
		        (size_t)(dash_app_js_end - dash_app_js), NULL);
	else if (!strcmp(name, "events.js"))
		respond(c, 200, "text/javascript; charset=utf-8", dash_events_js,
		        (size_t)(dash_events_js_end - dash_events_js), NULL);
	else
		respond(c, 200, "text/css; charset=utf-8", dash_app_css,
		        (size_t)(dash_app_css_end - dash_app_css), NULL);
}

/* The URL without its token= parameter (the rest of the query kept). */
static void without_token(const struct http_req *r, struct buf *out)
{
	const char *q = r->query;
	int first = 1;

	buf_adds(out, r->path);
	while (*q) {
		const char *e = strchr(q, '&');
		size_t len = e ? (size_t)(e - q) : strlen(q);

		if (len && strncmp(q, "token=", 6)) {
			buf_addch(out, first ? '?' : '&');
			buf_add(out, q, len);
			first = 0;
		}
		q += len + (e ? 1 : 0);
	}
}

static void handle(struct dash *d, struct conn *c, const struct http_req *r)
{
	struct dash_route rt;
	struct buf extra = BUF_INIT(0);
	int rc;

	switch (dash_admit(&d->conf, r)) {
	case DASH_BAD_HOST:
		respond_msg(c, 421, "this dashboard does not answer to that Host");
		return;
	case DASH_NO_AUTH:
		respond_msg(c, 401, "open the URL that `skiff dashboard` printed (its token)");
		return;
	case DASH_BAD_ORIGIN:
		respond_msg(c, 403, "a change must come from the dashboard's own page");
		return;
	case DASH_SET_COOKIE:
		buf_addf(&extra,
		         "Set-Cookie: " DASH_COOKIE "=%s; HttpOnly; SameSite=Strict; Path=/%s\r\n"
		         "Location: ",
		         d->token, d->conf.tls ? "; Secure" : "");
		without_token(r, &extra);
		buf_adds(&extra, "\r\n");
		respond(c, 302, "text/plain; charset=utf-8", "", 0, extra.p);
		buf_release(&extra);
		return;
	case DASH_PASS: break;
	}
	dash_route(r, &rt);
	switch (rt.kind) {
	case DASH_NONE: respond_msg(c, 404, "no such page"); return;
	case DASH_METHOD: respond_msg(c, 405, "not with that method"); return;
	case DASH_PAGE:
		respond(c, 200, "text/html; charset=utf-8", dash_index_html,
		        (size_t)(dash_index_html_end - dash_index_html), NULL);
		return;
	case DASH_ASSET: serve_asset(c, rt.asset); return;
	case DASH_EVENTS:
		if (d->nstreams >= DASH_MAX_STREAMS) {
			respond_msg(c, 503, "too many open streams");
			return;
		}
		{
			/* clusters=A,B,...: the clusters the browser's pages show. */
			char list[DASH_EVENT_CLUSTERS * 64];
			const char *p = list;

			if (http_query_get(r->query, "clusters", list, sizeof(list)))
				list[0] = '\0';
			while (*p && c->nclusters < DASH_EVENT_CLUSTERS) {
				size_t len = strcspn(p, ",");

				if (dash_cluster_name_ok(p, len) && len < 64) {
					memcpy(c->clusters[c->nclusters], p, len);
					c->clusters[c->nclusters++][len] = '\0';
				}
				p += len + (p[len] == ',');
			}
		}
		head(&c->out, 200, "text/event-stream", -1, NULL);
		buf_adds(&c->out, "retry: 1000\n\n");
		c->events = 1;
		c->sent_version = -1; /* the first look sends the current version */
		c->st = C_STREAM;
		d->nstreams++;
		d->next_poll = 0;
		return;
	case DASH_JSON:
	case DASH_STREAM:
	case DASH_ACTION: break;
	}
	if (d->nworkers >= DASH_MAX_WORKERS ||
	    (rt.kind == DASH_STREAM && d->nstreams >= DASH_MAX_STREAMS)) {
		respond_msg(c, 503, "the dashboard is busy: try again");
		return;
	}
	rc = start_worker(d, c, &rt);
	if (rc) {
		respond_msg(c, 500, "cannot start the command");
		return;
	}
	buf_release(&c->in);
	buf_init(&c->in, DASH_JSON_MAX);
	c->action = rt.kind == DASH_ACTION;
	if (rt.kind == DASH_STREAM) {
		c->stream = 1;
		d->nstreams++;
		head(&c->out, 200, "text/plain; charset=utf-8", -1, NULL);
		c->st = C_STREAM;
	} else {
		c->st = C_WAIT;
	}
}

/* The browser's bytes, over TLS or not: > 0, 0 at its end, -EAGAIN, or -EIO. */
static ssize_t conn_recv(struct conn *c, void *p, size_t n)
{
	ssize_t r;

	if (c->tls)
		return dash_tls_read(c->tls, p, n);
	r = read(c->fd, p, n);
	if (r < 0)
		return errno == EAGAIN || errno == EINTR ? -EAGAIN : -EIO;
	return r;
}

static ssize_t conn_send(struct conn *c, const void *p, size_t n)
{
	ssize_t r;

	if (c->tls)
		return dash_tls_write(c->tls, p, n);
	r = send(c->fd, p, n, MSG_NOSIGNAL);
	if (r < 0)
		return errno == EAGAIN || errno == EINTR ? -EAGAIN : -EIO;
	return r;
}

/* Parses what came so far; handles the request once it is whole. */
static void conn_read(struct dash *d, struct conn *c)
{
	char blk[8192];
	struct http_req r;
	const char *why;
	size_t used;
	int got;

	for (;;) {
		ssize_t n = conn_recv(c, blk, sizeof(blk));

		if (n == -EAGAIN)
			break;
		if (n <= 0) {
			c->st = C_DONE; /* gone before asking: nothing to send */
			buf_reset(&c->out);
			return;
		}
		if (buf_add(&c->in, blk, (size_t)n)) {
			respond_msg(c, 431, "the request is too big");
			return;
		}
	}
	got = http_req_parse(c->in.p, c->in.len, DASH_BODY_MAX, &r, &used, &why);
	if (got == 0)
		return;
	if (got < 0) {
		respond_msg(c, got == -E2BIG ? 431 : 400, why);
		return;
	}
	if (c->in.len - used < r.content_length) {
		http_req_release(&r); /* the body is still coming */
		return;
	}
	handle(d, c, &r);
	http_req_release(&r);
}

static void conn_free(struct dash *d, int i)
{
	struct conn *c = d->conns[i];

	worker_kill(d, c);
	if (c->stream || c->events)
		d->nstreams--;
	dash_tls_close(c->tls);
	close(c->fd);
	buf_release(&c->in);
	buf_release(&c->out);
	free(c);
	d->conns[i] = d->conns[--d->nconns];
}

/* Sends what is pending: 0, or -1 when the browser is gone. */
static int conn_write(struct conn *c)
{
	while (c->out_off < c->out.len) {
		ssize_t n = conn_send(c, c->out.p + c->out_off, c->out.len - c->out_off);

		if (n == -EAGAIN)
			return 0;
		if (n <= 0)
			return -1;
		c->out_off += (size_t)n;
	}
	buf_reset(&c->out);
	c->out_off = 0;
	return 0;
}

static void accept_all(struct dash *d)
{
	for (;;) {
		int fd = accept4(d->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct conn *c;

		if (fd < 0)
			return;
		if (d->nconns >= DASH_MAX_CONNS) {
			close(fd);
			continue;
		}
		c = xcalloc(1, sizeof(*c));
		c->fd = fd;
		if (d->tls && !(c->tls = dash_tls_accept(d->tls, fd))) {
			close(fd);
			free(c);
			continue;
		}
		c->st = C_READ;
		c->w.out = c->w.err = -1;
		buf_init(&c->in, HTTP_HEAD_MAX + DASH_BODY_MAX);
		buf_init(&c->out, 0);
		c->deadline = now_ms() + DASH_HEAD_MS;
		d->conns[d->nconns++] = c;
	}
}

/* ---- the loop ----------------------------------------------------------------------- */

/* What one pollfd of the loop is for: the listener, a connection, its worker's stdout or
 * stderr, or a cluster's watcher; i indexes d->conns or d->watchers. */
enum slot_what { SLOT_LISTEN, SLOT_CONN, SLOT_WORKER_OUT, SLOT_WORKER_ERR, SLOT_WATCHER };

struct slot {
	enum slot_what what;
	int i;
};

static void loop(struct dash *d)
{
	struct pollfd *pf = xcalloc(1 + 3 * DASH_MAX_CONNS + DASH_MAX_WATCHERS, sizeof(*pf));
	struct slot *who = xcalloc(1 + 3 * DASH_MAX_CONNS + DASH_MAX_WATCHERS, sizeof(*who));

	while (!stop) {
		int np = 0, i, timeout = DASH_EVENT_POLL_MS;
		int64_t now = now_ms();

		pf[np] = (struct pollfd){d->lfd, POLLIN, 0};
		who[np++] = (struct slot){SLOT_LISTEN, 0};
		for (i = 0; i < d->nconns; i++) {
			struct conn *c = d->conns[i];
			short ev = 0;

			if (c->st == C_READ)
				ev |= POLLIN;
			if (c->out.len > c->out_off)
				ev |= POLLOUT;
			/* A stream's end shows as a hang-up even with nothing to read. */
			pf[np] = (struct pollfd){c->fd, ev ? ev : POLLRDHUP, 0};
			who[np++] = (struct slot){SLOT_CONN, i};
			if (c->w.out >= 0 &&
			    !(c->stream && c->out.len - c->out_off > DASH_STREAM_HOLD)) {
				pf[np] = (struct pollfd){c->w.out, POLLIN, 0};
				who[np++] = (struct slot){SLOT_WORKER_OUT, i};
			}
			if (c->w.err >= 0) {
				pf[np] = (struct pollfd){c->w.err, POLLIN, 0};
				who[np++] = (struct slot){SLOT_WORKER_ERR, i};
			}
			if (c->w.pid > 0 && c->w.out < 0 && c->w.err < 0)
				timeout = DASH_REAP_MS;
		}
		for (i = 0; i < d->nwatchers; i++)
			if (d->watchers[i].out >= 0) {
				pf[np] = (struct pollfd){d->watchers[i].out, POLLIN, 0};
				who[np++] = (struct slot){SLOT_WATCHER, i};
			}
		if (poll(pf, (nfds_t)np, timeout) < 0 && errno != EINTR)
			break;
		now = now_ms();
		if (pf[0].revents)
			accept_all(d);
		for (i = 1; i < np; i++) {
			struct conn *c;
			enum slot_what what = who[i].what;

			if (pf[i].revents && what == SLOT_WATCHER) {
				struct watcher *w = &d->watchers[who[i].i];
				char blk[256];

				if (read(w->out, blk, sizeof(blk)) <= 0)
					watcher_ended(d, w);
				continue;
			}
			if (!pf[i].revents || who[i].i >= d->nconns)
				continue;
			c = d->conns[who[i].i];
			if (what == SLOT_CONN &&
			    (pf[i].revents & (POLLERR | POLLHUP | POLLRDHUP)) && c->st != C_READ) {
				c->st = C_DONE; /* the browser went away */
				buf_reset(&c->out);
				c->out_off = 0;
				worker_kill(d, c);
			} else if (what == SLOT_CONN && (pf[i].revents & POLLIN) &&
			           c->st == C_READ) {
				conn_read(d, c);
			} else if (what == SLOT_WORKER_OUT || what == SLOT_WORKER_ERR) {
				worker_read(c, what == SLOT_WORKER_ERR);
			}
		}
		events_poll(d);
		watchers_tend(d);
		/* Reap the workers whose pipes closed; send; close what is done. */
		for (i = 0; i < d->nconns; i++) {
			struct conn *c = d->conns[i];
			int raw;

			if (c->w.pid > 0 && c->w.out < 0 && c->w.err < 0 &&
			    waitpid(c->w.pid, &raw, WNOHANG) == c->w.pid)
				worker_done(d, c, raw);
			if (c->st == C_READ && now > c->deadline)
				respond_msg(c, 408, "the request took too long");
			if (conn_write(c) < 0 ||
			    (c->st == C_DONE && c->out.len <= c->out_off && c->w.pid <= 0))
				conn_free(d, i--);
		}
	}
	while (d->nconns)
		conn_free(d, d->nconns - 1);
	while (d->nwatchers)
		watcher_stop(&d->watchers[--d->nwatchers]);
	free(pf);
	free(who);
}

/* ---- the command -------------------------------------------------------------------- */

static int listen_on(const char *host, int port, int *lfd, int *bound)
{
	struct sockaddr_in a = {0};
	socklen_t alen = sizeof(a);
	int fd, one = 1;

	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
		return error("--host '%s' is not an IPv4 address", host);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return error_errno("cannot make a socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)&a, &alen)) {
		int e = error_errno("cannot listen on %s:%d", host, port);

		close(fd);
		return e;
	}
	*lfd = fd;
	*bound = ntohs(a.sin_port);
	return 0;
}

static int loopback(const char *host)
{
	return !strncmp(host, "127.", 4);
}

/* Opens url in a browser where there is a display to show one; quiet otherwise. */
static void open_browser(const char *url)
{
	struct spawn_opts o = SPAWN_OPTS_INIT;
	char *argv[] = {"xdg-open", (char *)url, NULL};
	pid_t pid;

	if (!getenv("DISPLAY") && !getenv("WAYLAND_DISPLAY"))
		return;
	o.argv = argv;
	o.pgrp = SPAWN_SESSION_NEW;
	if (!spawn(&o, &pid))
		spawn_wait(pid, NULL);
}

int cmd_dashboard(int argc, char **argv)
{
	struct dash d = {0};
	const char *host = "127.0.0.1";
	long port = DASH_DEFAULT_PORT;
	const char *cert = NULL, *key = NULL;
	int i, no_open = 0, insecure = 0, tls = 0, bound = 0;
	struct sigaction sa = {0};
	char url[256], *made = NULL;

	if (wants_help(argc, argv)) {
		fputs(cmd_dashboard_usage, stdout);
		return EXIT_OK;
	}
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--host") && i + 1 < argc) {
			host = argv[++i];
		} else if (!strcmp(argv[i], "--port") && i + 1 < argc) {
			if (parse_long(argv[++i], 0, 65535, &port))
				return usage_error("dashboard", "--port needs 0..65535, not '%s'",
				                   argv[i]);
		} else if (!strcmp(argv[i], "--no-open")) {
			no_open = 1;
		} else if (!strcmp(argv[i], "--insecure-http")) {
			insecure = 1;
		} else if (!strcmp(argv[i], "--tls")) {
			tls = 1;
		} else if (!strcmp(argv[i], "--cert") && i + 1 < argc) {
			cert = argv[++i];
		} else if (!strcmp(argv[i], "--key") && i + 1 < argc) {
			key = argv[++i];
		} else {
			return usage_error("dashboard", "unexpected '%s'", argv[i]);
		}
	}
	if (strlen(host) > 60)
		return usage_error("dashboard", "--host '%.60s...' is too long", host);
	if (!cert != !key)
		return usage_error("dashboard", "--cert and --key go together");
	if (insecure && (tls || cert))
		return usage_error("dashboard", "--insecure-http is plain HTTP: not with --tls "
		                                "or --cert");
	/* Reachable from other machines: over TLS, unless told otherwise. */
	tls = tls || cert || (!loopback(host) && !insecure);
	d.self = self_exec_path();
	if (!d.self)
		return error("cannot find this executable to run the API's commands"), EXIT_FAIL;
	if (!skiff_home())
		return EXIT_FAIL;
	if (tls && dash_tls_setup(&d.tls, cert, key, host, &made))
		return EXIT_FAIL;
	if (listen_on(host, (int)port, &d.lfd, &bound)) {
		dash_tls_free(d.tls);
		return EXIT_FAIL;
	}
	d.conf.tls = tls;
	random_hex(d.token, DASH_TOKEN_HEX / 2);
	d.conf.token = d.token;
	xsnprintf(d.hosts[0], sizeof(d.hosts[0]), "%s:%d", host, bound);
	d.conf.hosts[d.conf.nhosts++] = d.hosts[0];
	if (loopback(host)) {
		xsnprintf(d.hosts[1], sizeof(d.hosts[1]), "localhost:%d", bound);
		d.conf.hosts[d.conf.nhosts++] = d.hosts[1];
	}
	d.db_path = xasprintf("%s/launcher.db", skiff_home());
	d.wal_path = xasprintf("%s/launcher.db-wal", skiff_home());
	stat_changed(d.db_path, &d.db_st);
	stat_changed(d.wal_path, &d.wal_st);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	xsnprintf(url, sizeof(url), "%s://%s/?token=%s", tls ? "https" : "http", d.hosts[0],
	          d.token);
	if (made)
		fprintf(stderr,
		        "(a self-signed certificate was made for %s: %s; a browser asks you to "
		        "trust it once, or give yours with --cert and --key)\n",
		        host, made);
	free(made);
	/* The token goes to the terminal only: never into a log. */
	printf("skiff dashboard: %s\n", url);
	fflush(stdout);
	fprintf(stderr, "(Ctrl-C stops it; the URL works until then, on this machine%s)\n",
	        loopback(host) ? "" : " and from others");
	if (!no_open)
		open_browser(url);
	loop(&d);
	close(d.lfd);
	dash_tls_free(d.tls);
	free(d.db_path);
	free(d.wal_path);
	return EXIT_OK;
}

const char cmd___dash_watch_usage[] =
        "usage: skiff __dash-watch CLUSTER [TIMEOUT_MS]\n"
        "\n"
        "The dashboard's watcher of a cluster: waits until one of its running jobs ends\n"
        "(the nodes' own watch) and prints 'ended JOB'. Exit 0 then, 102 when none runs,\n"
        "101 at TIMEOUT_MS, 1 on an error.\n";

int cmd___dash_watch(int argc, char **argv)
{
	struct st_db *ldb;
	long timeout = -1;
	int64_t job = 0;
	int r;

	if (argc < 2 || argc > 3 || (argc == 3 && parse_long(argv[2], 1, INT_MAX, &timeout)))
		return usage_error("__dash-watch", "expected CLUSTER [TIMEOUT_MS]");
	if (cmd_open_ldb(&ldb))
		return EXIT_FAIL;
	r = eng_watch_end(ldb, argv[1], (int)timeout, &job);
	st_close(ldb);
	if (r == -ENOENT)
		return EXIT_JOB_NOT_FOUND;
	if (r == -ETIMEDOUT)
		return EXIT_JOB_NOT_FINISHED;
	if (r)
		return EXIT_FAIL;
	printf("ended %lld\n", (long long)job);
	return EXIT_OK;
}
