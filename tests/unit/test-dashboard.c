/*
 * The dashboard's decisions (cmd/dashboard_policy.c) and the HTTP requests it reads
 * (lib/http.c): hostile heads, who is let in (every combination of Host, token, method
 * and Origin), and what each URL runs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/dashboard.h"
#include "lib/buf.h"
#include "lib/exit.h"
#include "lib/http.h"
#include "tests/unit/harness.h"

#define TOKEN "0123456789abcdef0123456789abcdef"

static int parse(const char *head, struct http_req *r, const char **why)
{
	size_t used;

	return http_req_parse(head, strlen(head), 4096, r, &used, why);
}

static void test_parse(void)
{
	struct http_req r;
	const char *why;
	size_t used = 0;
	const char *ok = "GET /clusters/a%20b?x=1&token=T HTTP/1.1\r\nHost: 127.0.0.1:9\r\n"
	                 "X-Pad:   spaced value \t\r\nCookie: a=1; skiff_dashboard=zz\r\n\r\nBODY";

	is_int(http_req_parse(ok, strlen(ok), 4096, &r, &used, &why), 1, "a whole head");
	is_int((int)used, (int)(strlen(ok) - 4), "  its length, the body after it");
	is_str(r.method, "GET", "  method");
	is_str(r.path, "/clusters/a b", "  the path, decoded");
	is_str(r.query, "x=1&token=T", "  the query, as sent");
	is_str(http_header(&r, "host"), "127.0.0.1:9", "  a header by its lower-case name");
	is_str(http_header(&r, "x-pad"), "spaced value", "  its value trimmed");
	ok(http_header(&r, "nope") == NULL, "  a header that is not there");
	http_req_release(&r);
	for (size_t cut = 0; cut < strlen(ok) - 4; cut += 7)
		if (http_req_parse(ok, cut, 4096, &r, &used, &why) != 0)
			return (void)ok(0, "a head cut at %zu is not whole yet", cut);
	ok(1, "a head cut anywhere before its end: not whole yet (0)");
	{
		static const char *const bad[] = {
		        "GET /a%zz HTTP/1.1\r\nHost: h\r\n\r\n",
		        "GET /a%00b HTTP/1.1\r\nHost: h\r\n\r\n",
		        "GET /a%4 HTTP/1.1\r\nHost: h\r\n\r\n",
		        "GET http://evil/ HTTP/1.1\r\nHost: h\r\n\r\n",
		        "GET  / HTTP/1.1\r\nHost: h\r\n\r\n",
		        "GET / HTTP/2.0\r\nHost: h\r\n\r\n",
		        "GET / HTTP/1.1 x\r\nHost: h\r\n\r\n",
		        "G(T / HTTP/1.1\r\nHost: h\r\n\r\n",
		        "VERYLONGMETHOD / HTTP/1.1\r\nHost: h\r\n\r\n",
		        "GET /\x01 HTTP/1.1\r\nHost: h\r\n\r\n",
		        "GET / HTTP/1.1\r\n\r\n",
		        "GET / HTTP/1.1\r\nHost h\r\n\r\n",
		        "GET / HTTP/1.1\r\nHo st: h\r\n\r\n",
		        "GET / HTTP/1.1\r\n: h\r\n\r\n",
		        "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n",
		        "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1x\r\n\r\n",
		        "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n",
		        "GET / HTTP/1.1\nHost: h\r\n\r\n",
		};
		size_t i;

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			why = NULL;
			is_int(parse(bad[i], &r, &why), -EINVAL, "refused: %.*s",
			       (int)strcspn(bad[i], "\r\n"), bad[i]);
			ok(why != NULL, "  with a reason");
		}
	}
	is_int(parse("GET / HTTP/1.0\r\n\r\n", &r, &why), 1, "HTTP/1.0 without Host is fine");
	http_req_release(&r);
	is_int(parse("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 4097\r\n\r\n", &r, &why),
	       -E2BIG, "a body over the limit");
	{
		struct buf b = BUF_INIT(0);
		int i;

		buf_adds(&b, "GET / HTTP/1.1\r\nHost: h\r\n");
		for (i = 0; i < HTTP_MAX_HEADERS; i++)
			buf_addf(&b, "X-%d: v\r\n", i);
		buf_adds(&b, "\r\n");
		is_int(http_req_parse(b.p, b.len, 0, &r, &used, &why), -E2BIG, "too many headers");
		buf_reset(&b);
		buf_adds(&b, "GET / HTTP/1.1\r\nX: ");
		while (b.len <= HTTP_HEAD_MAX)
			buf_adds(&b, "aaaaaaaaaaaaaaaa");
		is_int(http_req_parse(b.p, b.len, 0, &r, &used, &why), -E2BIG,
		       "a head past the limit, not whole yet: refused already");
		buf_release(&b);
	}
}

static void test_query_cookie(void)
{
	char v[16];

	ok(!http_query_get("a=1&token=ab%41+c&z", "token", v, sizeof(v)) && !strcmp(v, "abA c"),
	   "a query value, decoded");
	is_int(http_query_get("a=1&xtoken=2", "token", v, sizeof(v)), -ENOENT,
	       "a key's suffix is not it");
	is_int(http_query_get("token=%zz", "token", v, sizeof(v)), -EINVAL, "a bad escape");
	is_int(http_query_get("token=0123456789abcdefg", "token", v, sizeof(v)), -E2BIG,
	       "too long");
	ok(!http_cookie_get("a=1; skiff_dashboard=tok; b=2", "skiff_dashboard", v, sizeof(v)) &&
	           !strcmp(v, "tok"),
	   "a cookie among others");
	is_int(http_cookie_get("xskiff_dashboard=tok", "skiff_dashboard", v, sizeof(v)), -ENOENT,
	       "a cookie's suffix is not it");
}

/*
 * Parses a request built from its parts (a header NULL: not sent) into r: 1, or 0 when
 * it does not parse (then r needs no release).
 */
static int build(struct http_req *r, const char *method, const char *target, const char *host,
                 const char *cookie, const char *auth, const char *origin)
{
	struct buf b = BUF_INIT(0);
	const char *why;
	size_t used;
	int ok;

	buf_addf(&b, "%s %s HTTP/1.1\r\n", method, target);
	if (host)
		buf_addf(&b, "Host: %s\r\n", host);
	if (cookie)
		buf_addf(&b, "Cookie: %s\r\n", cookie);
	if (auth)
		buf_addf(&b, "Authorization: %s\r\n", auth);
	if (origin)
		buf_addf(&b, "Origin: %s\r\n", origin);
	buf_adds(&b, "\r\n");
	ok = http_req_parse(b.p, b.len, 0, r, &used, &why) == 1;
	buf_release(&b);
	return ok;
}

/* dash_admit() of a request built from its parts. */
static enum dash_verdict admit(const char *method, const char *target, const char *host,
                               const char *cookie, const char *auth, const char *origin)
{
	static const struct dash_conf c = {TOKEN, {"127.0.0.1:46590", "localhost:46590"}, 2, 0};
	struct http_req r;
	enum dash_verdict v;

	if (!build(&r, method, target, host, cookie, auth, origin))
		return (enum dash_verdict) - 1;
	v = dash_admit(&c, &r);
	http_req_release(&r);
	return v;
}

static void test_admit(void)
{
	static const char *const hosts[] = {"127.0.0.1:46590", "localhost:46590", "evil:46590",
	                                    "127.0.0.1:46591", "127.0.0.1"};
	static const char *const cookies[] = {NULL, "skiff_dashboard=" TOKEN,
	                                      "skiff_dashboard=" TOKEN "0",
	                                      "skiff_dashboard=", "a=1; skiff_dashboard=" TOKEN};
	static const char *const origins[] = {NULL, "http://127.0.0.1:46590", "http://evil",
	                                      "https://127.0.0.1:46590", "null"};
	static const char *const methods[] = {"GET", "POST", "DELETE"};
	size_t h, k, o, m;
	int wrong = 0, n = 0;

	/* Every combination: the verdict is the one the rules give. */
	for (h = 0; h < 5; h++)
		for (k = 0; k < 5; k++)
			for (o = 0; o < 5; o++)
				for (m = 0; m < 3; m++) {
					enum dash_verdict got =
					        admit(methods[m], "/api/v1/clusters", hosts[h],
					              cookies[k], NULL, origins[o]);
					enum dash_verdict want;
					char origin_want[64];

					snprintf(origin_want, sizeof(origin_want), "http://%s",
					         hosts[h]);
					if (h >= 2)
						want = DASH_BAD_HOST;
					else if (k != 1 && k != 4)
						want = DASH_NO_AUTH;
					else if (m > 0 &&
					         (!origins[o] || strcmp(origins[o], origin_want)))
						want = DASH_BAD_ORIGIN;
					else
						want = DASH_PASS;
					wrong += got != want;
					n++;
				}
	is_int(wrong, 0, "all %d combinations of Host, cookie, Origin and method: as the rules say",
	       n);
	is_int(admit("GET", "/?token=" TOKEN, "127.0.0.1:46590", NULL, NULL, NULL), DASH_SET_COOKIE,
	       "the token in a page's URL: the cookie is set");
	is_int(admit("GET", "/clusters/x?a=1&token=" TOKEN, "localhost:46590", NULL, NULL, NULL),
	       DASH_SET_COOKIE, "  on any page");
	is_int(admit("GET", "/?token=" TOKEN, "127.0.0.1:46590", "skiff_dashboard=" TOKEN, NULL,
	             NULL),
	       DASH_SET_COOKIE, "  also when the cookie is there (the URL opened again)");
	is_int(admit("GET", "/?token=" TOKEN "1", "127.0.0.1:46590", "skiff_dashboard=" TOKEN, NULL,
	             NULL),
	       DASH_PASS, "  a wrong token beside the cookie: the cookie lets it in");
	is_int(admit("GET", "/api/v1/clusters?token=" TOKEN, "127.0.0.1:46590", NULL, NULL, NULL),
	       DASH_NO_AUTH, "  never for the API (a URL in a log would be a key)");
	is_int(admit("GET", "/api/v1/clusters?token=" TOKEN, "127.0.0.1:46590",
	             "skiff_dashboard=" TOKEN, NULL, NULL),
	       DASH_PASS, "  an API call with the cookie is let in, the query aside");
	is_int(admit("POST", "/?token=" TOKEN, "127.0.0.1:46590", NULL, NULL, NULL), DASH_NO_AUTH,
	       "  never with a POST");
	is_int(admit("GET", "/?token=" TOKEN "1", "127.0.0.1:46590", NULL, NULL, NULL),
	       DASH_NO_AUTH, "  a wrong token is no token");
	is_int(admit("GET", "/?token=" TOKEN, "evil:46590", NULL, NULL, NULL), DASH_BAD_HOST,
	       "  the Host comes first");
	is_int(admit("GET", "/api/v1/jobs", "127.0.0.1:46590", NULL, "Bearer " TOKEN, NULL),
	       DASH_PASS, "a script's bearer token");
	is_int(admit("GET", "/api/v1/jobs", "127.0.0.1:46590", NULL, "Basic " TOKEN, NULL),
	       DASH_NO_AUTH, "  not another scheme");
	is_int(admit("POST", "/api/v1/jobs/1/cancel", "127.0.0.1:46590", NULL, "Bearer " TOKEN,
	             NULL),
	       DASH_BAD_ORIGIN, "  a mutation still needs our Origin");
}

/* The route of method and target: its kind, and its argv joined by spaces. */
static enum dash_kind route(const char *method, const char *target, char *argv_out, size_t size)
{
	struct http_req r;
	struct dash_route rt;
	int i;

	if (!build(&r, method, target, "h", NULL, NULL, NULL))
		return (enum dash_kind) - 1;
	dash_route(&r, &rt);
	argv_out[0] = '\0';
	for (i = 0; i < rt.argc; i++)
		snprintf(argv_out + strlen(argv_out), size - strlen(argv_out), "%s%s", i ? " " : "",
		         rt.argv[i]);
	http_req_release(&r);
	return rt.kind;
}

static void test_route(void)
{
	static const struct {
		const char *method, *target;
		enum dash_kind kind;
		const char *argv;
	} cases[] = {
	        {"GET", "/", DASH_PAGE, ""},
	        {"GET", "/clusters", DASH_PAGE, ""},
	        {"GET", "/clusters/dev-1.a_b", DASH_PAGE, ""},
	        {"GET", "/jobs/12", DASH_PAGE, ""},
	        {"GET", "/infra", DASH_PAGE, ""},
	        {"POST", "/clusters", DASH_METHOD, ""},
	        {"GET", "/clusters/-rf", DASH_NONE, ""},
	        {"GET", "/clusters/a/", DASH_NONE, ""},
	        {"GET", "/jobs/012", DASH_NONE, ""},
	        {"GET", "//clusters", DASH_NONE, ""},
	        {"GET", "/static/app.js", DASH_ASSET, ""},
	        {"GET", "/static/events.js", DASH_ASSET, ""},
	        {"GET", "/static/../cmd", DASH_NONE, ""},
	        {"GET", "/api/v1/clusters", DASH_JSON, "status --json"},
	        {"GET", "/api/v1/clusters?refresh=1", DASH_JSON, "status --json -r"},
	        {"GET", "/api/v1/clusters/dev", DASH_JSON, "status --json dev"},
	        {"GET", "/api/v1/clusters/dev/jobs", DASH_JSON, "queue --json dev"},
	        {"GET", "/api/v1/clusters/dev/jobs/3/logs", DASH_STREAM, "logs dev 3"},
	        {"GET", "/api/v1/clusters/dev/jobs/3/logs?follow=0&tail=50", DASH_STREAM,
	         "logs dev 3 --no-follow --tail 50"},
	        {"GET", "/api/v1/clusters/dev/jobs/3/logs?tail=-5", DASH_STREAM, "logs dev 3"},
	        {"GET", "/api/v1/clusters/dev/jobs/3/logs?tail=--x", DASH_STREAM, "logs dev 3"},
	        {"POST", "/api/v1/clusters/dev/jobs/3/cancel", DASH_ACTION, "cancel -y dev 3"},
	        {"GET", "/api/v1/clusters/dev/jobs/3/cancel", DASH_METHOD, ""},
	        {"POST", "/api/v1/clusters/dev/down", DASH_ACTION, "down -y dev"},
	        {"POST", "/api/v1/clusters/dev/stop", DASH_ACTION, "stop -y dev"},
	        {"POST", "/api/v1/clusters/dev/start", DASH_ACTION, "start -y dev"},
	        {"POST", "/api/v1/clusters/dev/launch", DASH_NONE, ""},
	        {"POST", "/api/v1/clusters/-y/down", DASH_NONE, ""},
	        {"GET", "/api/v1/jobs", DASH_JSON, "jobs queue --json"},
	        {"GET", "/api/v1/jobs/7/logs", DASH_STREAM, "jobs logs 7"},
	        {"GET", "/api/v1/jobs/7/logs?follow=false", DASH_STREAM, "jobs logs 7 --no-follow"},
	        {"GET", "/api/v1/jobs/7/logs?controller=1", DASH_STREAM,
	         "jobs logs 7 --controller"},
	        {"POST", "/api/v1/jobs/7/cancel", DASH_ACTION, "jobs cancel -y 7"},
	        {"POST", "/api/v1/jobs/-a/cancel", DASH_NONE, ""},
	        {"GET", "/api/v1/infra", DASH_JSON, "check --json"},
	        {"GET", "/api/v1/config", DASH_JSON, "config --json"},
	        {"GET", "/config", DASH_PAGE, ""},
	        {"GET", "/api/v1/events", DASH_EVENTS, ""},
	        {"POST", "/api/v1/events", DASH_METHOD, ""},
	        {"GET", "/api/v2/clusters", DASH_NONE, ""},
	        {"GET", "/api/v1/clusters/dev/jobs/3/logs/x", DASH_NONE, ""},
	        {"GET", "/api/v1/clusters/a%2fb/jobs", DASH_NONE, ""},
	};
	char argv[256];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum dash_kind k = route(cases[i].method, cases[i].target, argv, sizeof(argv));

		ok(k == cases[i].kind && !strcmp(argv, cases[i].argv),
		   "%s %s -> %d '%s' (got %d '%s')", cases[i].method, cases[i].target,
		   cases[i].kind, cases[i].argv, k, argv);
	}
}

static void test_status(void)
{
	is_int(dash_http_status(EXIT_OK), 200, "exit 0: 200");
	is_int(dash_http_status(EXIT_USAGE), 400, "a usage error: 400");
	is_int(dash_http_status(EXIT_INVALID), 400, "bad input: 400");
	is_int(dash_http_status(EXIT_JOB_NOT_FOUND), 404, "no such job: 404");
	is_int(dash_http_status(EXIT_UNAVAILABLE), 503, "a node out of reach: 503");
	is_int(dash_http_status(EXIT_FAIL), 500, "a failure: 500");
}

int main(void)
{
	plan_run(test_parse);
	plan_run(test_query_cookie);
	plan_run(test_admit);
	plan_run(test_route);
	plan_run(test_status);
	return done_testing();
}
