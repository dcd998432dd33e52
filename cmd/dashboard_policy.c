/* `skiff dashboard`'s decisions: who is let in, and what a request asks for (dashboard.h). */
#include "cmd/dashboard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/exit.h"
#include "lib/util.h"
#include "lib/banned.h"

/* Equal strings, in a time that does not depend on where they differ. */
static int same_secret(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i;
	unsigned char d = (unsigned char)(la != lb);

	for (i = 0; i < la; i++)
		d |= (unsigned char)(a[i] ^ (i < lb ? b[i] : 0));
	return !d && la > 0;
}

static int host_ok(const struct dash_conf *c, const char *host)
{
	size_t i;

	for (i = 0; host && i < c->nhosts; i++)
		if (!strcmp(host, c->hosts[i]))
			return 1;
	return 0;
}

enum dash_verdict dash_admit(const struct dash_conf *c, const struct http_req *r)
{
	const char *host = http_header(r, "host"), *auth = http_header(r, "authorization");
	const char *cookie = http_header(r, "cookie"), *origin;
	char v[DASH_TOKEN_HEX * 2 + 1];
	int in = 0;

	if (!host_ok(c, host))
		return DASH_BAD_HOST;
	/*
	 * The token in a page's URL is swapped for the cookie, also when the browser has the
	 * cookie already (the printed URL opened again): it leaves the address bar and the
	 * history either way.
	 */
	if (!strcmp(r->method, "GET") && strncmp(r->path, "/api/", 5) &&
	    !http_query_get(r->query, "token", v, sizeof(v)) && same_secret(v, c->token))
		return DASH_SET_COOKIE;
	if (cookie && !http_cookie_get(cookie, DASH_COOKIE, v, sizeof(v)))
		in = same_secret(v, c->token);
	if (!in && auth && !strncmp(auth, "Bearer ", 7))
		in = same_secret(auth + 7, c->token);
	if (!in)
		return DASH_NO_AUTH;
	if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD")) {
		/* A mutation: from our own page, whose Origin is our scheme and Host. */
		char want[300];

		origin = http_header(r, "origin");
		xsnprintf(want, sizeof(want), "%s://%.280s", c->tls ? "https" : "http", host);
		if (!origin || strcmp(origin, want))
			return DASH_BAD_ORIGIN;
	}
	return DASH_PASS;
}

int dash_cluster_name_ok(const char *s, size_t len)
{
	size_t i;

	if (!len || len > 63 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
		return 0;
	for (i = 0; i < len; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.'))
			return 0;
	}
	return s[len - 1] != '-' && s[len - 1] != '_' && s[len - 1] != '.';
}

/* A job id: 1 to 18 digits, no leading zero. */
static int id_ok(const char *s, size_t len)
{
	size_t i;

	if (!len || len > 18 || s[0] == '0')
		return 0;
	for (i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

/* Appends one argument to out (its text copied into out->buf). */
static void arg(struct dash_route *out, const char *s, size_t len)
{
	size_t used = 0;
	int i;

	for (i = 0; i < out->argc; i++)
		used += strlen(out->argv[i]) + 1;
	if (out->argc + 1 >= DASH_ARGS_MAX || used + len + 1 > sizeof(out->buf)) {
		out->kind = DASH_NONE; /* cannot happen with the checked parts: refused anyway */
		return;
	}
	memcpy(out->buf + used, s, len);
	out->buf[used + len] = '\0';
	out->argv[out->argc++] = out->buf + used;
	out->argv[out->argc] = NULL;
}

static void args(struct dash_route *out, const char *const *v)
{
	for (; *v; v++)
		arg(out, *v, strlen(*v));
}

/* The path's segments after prefix: up to n of them, as pointers and lengths. */
static int segments(const char *path, const char **seg, size_t *len, int n)
{
	int k = 0;

	while (*path == '/' && k < n + 1) {
		const char *e;

		path++;
		e = strchr(path, '/');
		if (!e)
			e = path + strlen(path);
		if (e == path)
			return -1; /* an empty segment ("//", a trailing '/') */
		if (k < n) {
			seg[k] = path;
			len[k] = (size_t)(e - path);
		}
		k++;
		path = e;
	}
	return *path || k > n ? -1 : k;
}

static int seg_is(const char *seg, size_t len, const char *word)
{
	return len == strlen(word) && !memcmp(seg, word, len);
}

/* The query's flag: 1 for "1"/"true", 0 for "0"/"false", def when absent or other. */
static int flag(const char *query, const char *key, int def)
{
	char v[8];

	if (http_query_get(query, key, v, sizeof(v)))
		return def;
	if (!strcmp(v, "1") || !strcmp(v, "true"))
		return 1;
	if (!strcmp(v, "0") || !strcmp(v, "false"))
		return 0;
	return def;
}

static void api_route(const struct http_req *r, const char **s, size_t *l, int n,
                      struct dash_route *out)
{
	int get = !strcmp(r->method, "GET"), post = !strcmp(r->method, "POST");
	enum dash_kind want = DASH_NONE;
	char tail[24];

	/* s[0..1] are "api", "v1". */
	if (n == 3 && seg_is(s[2], l[2], "events")) {
		want = DASH_EVENTS;
	} else if (n == 3 && seg_is(s[2], l[2], "clusters")) {
		want = DASH_JSON;
		args(out, (const char *const[]){"status", "--json", NULL});
		if (flag(r->query, "refresh", 0))
			arg(out, "-r", 2);
	} else if (n == 3 && seg_is(s[2], l[2], "jobs")) {
		want = DASH_JSON;
		args(out, (const char *const[]){"jobs", "queue", "--json", NULL});
	} else if (n == 3 && seg_is(s[2], l[2], "infra")) {
		want = DASH_JSON;
		args(out, (const char *const[]){"check", "--json", NULL});
	} else if (n == 3 && seg_is(s[2], l[2], "config")) {
		want = DASH_JSON;
		args(out, (const char *const[]){"config", "--json", NULL});
	} else if (n >= 4 && seg_is(s[2], l[2], "clusters") && dash_cluster_name_ok(s[3], l[3])) {
		if (n == 4) {
			want = DASH_JSON;
			args(out, (const char *const[]){"status", "--json", NULL});
			if (flag(r->query, "refresh", 0))
				arg(out, "-r", 2);
			arg(out, s[3], l[3]);
		} else if (n == 5 && seg_is(s[4], l[4], "jobs")) {
			want = DASH_JSON;
			args(out, (const char *const[]){"queue", "--json", NULL});
			arg(out, s[3], l[3]);
		} else if (n == 5 && (seg_is(s[4], l[4], "down") || seg_is(s[4], l[4], "stop") ||
		                      seg_is(s[4], l[4], "start"))) {
			want = DASH_ACTION;
			arg(out, s[4], l[4]);
			arg(out, "-y", 2);
			arg(out, s[3], l[3]);
		} else if (n == 7 && seg_is(s[4], l[4], "jobs") && id_ok(s[5], l[5]) &&
		           seg_is(s[6], l[6], "logs")) {
			want = DASH_STREAM;
			arg(out, "logs", 4);
			arg(out, s[3], l[3]);
			arg(out, s[5], l[5]);
			if (!flag(r->query, "follow", 1))
				arg(out, "--no-follow", 11);
			if (!http_query_get(r->query, "tail", tail, sizeof(tail)) &&
			    id_ok(tail, strlen(tail))) {
				arg(out, "--tail", 6);
				arg(out, tail, strlen(tail));
			}
		} else if (n == 7 && seg_is(s[4], l[4], "jobs") && id_ok(s[5], l[5]) &&
		           seg_is(s[6], l[6], "cancel")) {
			want = DASH_ACTION;
			args(out, (const char *const[]){"cancel", "-y", NULL});
			arg(out, s[3], l[3]);
			arg(out, s[5], l[5]);
		}
	} else if (n >= 4 && seg_is(s[2], l[2], "jobs") && id_ok(s[3], l[3])) {
		if (n == 5 && seg_is(s[4], l[4], "logs")) {
			want = DASH_STREAM;
			args(out, (const char *const[]){"jobs", "logs", NULL});
			arg(out, s[3], l[3]);
			/* The controller's side: the job's transitions, its launches and
			 * recoveries. */
			if (flag(r->query, "controller", 0))
				arg(out, "--controller", 12);
			else if (!flag(r->query, "follow", 1))
				arg(out, "--no-follow", 11);
		} else if (n == 5 && seg_is(s[4], l[4], "cancel")) {
			want = DASH_ACTION;
			args(out, (const char *const[]){"jobs", "cancel", "-y", NULL});
			arg(out, s[3], l[3]);
		}
	}
	if (want == DASH_NONE || out->kind == DASH_NONE) {
		out->kind = DASH_NONE;
		out->argc = 0;
		return;
	}
	/* Reads are GETs; an action is a POST and nothing else. */
	out->kind = (want == DASH_ACTION ? post : get) ? want : DASH_METHOD;
	if (out->kind == DASH_METHOD)
		out->argc = 0;
}

void dash_route(const struct http_req *r, struct dash_route *out)
{
	const char *s[8];
	size_t l[8];
	int n;

	memset(out, 0, sizeof(*out));
	out->kind = DASH_PAGE; /* until arg() refuses */
	if (!strcmp(r->path, "/static/app.js") || !strcmp(r->path, "/static/app.css") ||
	    !strcmp(r->path, "/static/events.js")) {
		out->kind = strcmp(r->method, "GET") ? DASH_METHOD : DASH_ASSET;
		out->asset = r->path + 8;
		return;
	}
	n = strcmp(r->path, "/") ? segments(r->path, s, l, 7) : 0;
	if (n < 0) {
		out->kind = DASH_NONE;
		return;
	}
	if (n >= 3 && seg_is(s[0], l[0], "api") && seg_is(s[1], l[1], "v1")) {
		api_route(r, s, l, n, out);
		return;
	}
	/* The app's pages: each URL a person can share. */
	if (n == 0 ||
	    (n == 1 && (seg_is(s[0], l[0], "clusters") || seg_is(s[0], l[0], "jobs") ||
	                seg_is(s[0], l[0], "infra") || seg_is(s[0], l[0], "config"))) ||
	    (n == 2 && seg_is(s[0], l[0], "clusters") && dash_cluster_name_ok(s[1], l[1])) ||
	    (n == 2 && seg_is(s[0], l[0], "jobs") && id_ok(s[1], l[1])))
		out->kind = strcmp(r->method, "GET") ? DASH_METHOD : DASH_PAGE;
	else
		out->kind = DASH_NONE;
}

int dash_http_status(int exit_code)
{
	switch (exit_code) {
	case EXIT_OK: return 200;
	case EXIT_USAGE: return 400;
	case EXIT_JOB_NOT_FOUND: return 404;
	case EXIT_UNAVAILABLE: return 503;
	default: return exit_code == EXIT_INVALID ? 400 : 500;
	}
}
