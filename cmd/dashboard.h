#ifndef SKIFF_DASHBOARD_H
#define SKIFF_DASHBOARD_H

/*
 * `skiff dashboard`'s decisions (cmd/dashboard_policy.c), apart from its I/O
 * (cmd/dashboard.c): whether a request is let in, and what it asks for. Pure functions,
 * tested in tests/unit/test-dashboard.c. docs/dashboard.md is the user's side.
 */

#include <stddef.h>
#include <sys/types.h>

#include "lib/http.h"

#define DASH_TOKEN_HEX 32 /* the random token of one start (128 bits) */
#define DASH_COOKIE "skiff_dashboard"
#define DASH_ARGS_MAX 12

struct dash_conf {
	const char *token;
	const char *hosts[4]; /* the Host values the server answers to ("127.0.0.1:8080") */
	size_t nhosts;
	int tls; /* the scheme the browser uses: https when set */
};

enum dash_verdict {
	DASH_PASS,       /* authorised: route it */
	DASH_SET_COOKIE, /* the token in the URL: set the cookie, send it on without it */
	DASH_BAD_HOST,   /* 421: a Host that is not ours (DNS rebinding) */
	DASH_NO_AUTH,    /* 401: no token, or a wrong one */
	DASH_BAD_ORIGIN, /* 403: a mutation without our Origin (CSRF) */
};

/*
 * Whether r is let in: the Host first, then the token (?token= on a page's GET, which is
 * always swapped for the cookie, even beside a valid one; the cookie; an "Authorization:
 * Bearer" header), then for a POST the Origin. The token is compared in constant time.
 */
enum dash_verdict dash_admit(const struct dash_conf *c, const struct http_req *r);

enum dash_kind {
	DASH_NONE,   /* 404 */
	DASH_METHOD, /* 405: a known path, another method */
	DASH_PAGE,   /* the app's page (every page is the one document) */
	DASH_ASSET,  /* a static file: asset names it */
	DASH_JSON,   /* a command whose stdout is the JSON answer */
	DASH_STREAM, /* a command whose stdout streams as text (logs) */
	DASH_ACTION, /* a POST running a command; its output and exit code answer */
	DASH_EVENTS, /* the server-sent events of changes */
};

struct dash_route {
	enum dash_kind kind;
	const char *asset;
	/* The skiff command it runs: argv[0..argc) (argv points into buf). */
	char *argv[DASH_ARGS_MAX];
	int argc;
	char buf[512];
};

/*
 * What the request asks for (method and decoded path, query), with the command line its
 * answer runs. Names and ids from the URL are checked here (a cluster's name as `launch`
 * takes it, ids as numbers): they never reach a command as an option.
 */
void dash_route(const struct http_req *r, struct dash_route *out);

/* A cluster's name as `launch` takes it: [a-zA-Z]([-_.a-zA-Z0-9]*[a-zA-Z0-9])?, <= 63. */
int dash_cluster_name_ok(const char *s, size_t len);

/* The HTTP status for a command's exit code (lib/exit.h). */
int dash_http_status(int exit_code);

/*
 * TLS (cmd/dashboard_tls.c). dash_tls_setup(): the server's certificate and key from
 * cert and key (PEM files), or, both NULL, the self-signed ones of host in
 * $SKIFF_HOME/dashboard/ (made on first use: ECDSA P-256, 0600; *made then names the new
 * certificate, the caller frees it). 0, or -1 (printed).
 * A connection's session over its non-blocking socket: read and write give bytes, 0 at
 * the peer's end (read), -EAGAIN to wait for the socket, -EIO when the session failed.
 */
struct dash_tls;
struct dash_tls_conn;
int dash_tls_setup(struct dash_tls **t, const char *cert, const char *key, const char *host,
                   char **made);
void dash_tls_free(struct dash_tls *t);
struct dash_tls_conn *dash_tls_accept(struct dash_tls *t, int fd);
ssize_t dash_tls_read(struct dash_tls_conn *c, void *p, size_t n);
ssize_t dash_tls_write(struct dash_tls_conn *c, const void *p, size_t n);
/* Bytes already decrypted and not read (poll() does not see them). */
size_t dash_tls_pending(struct dash_tls_conn *c);
void dash_tls_close(struct dash_tls_conn *c);

#endif
