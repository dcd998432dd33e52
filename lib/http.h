#ifndef SKIFF_HTTP_H
#define SKIFF_HTTP_H

/*
 * HTTP/1.1 as `skiff dashboard` serves it (cmd/dashboard.c): a request's head parsed from
 * the bytes a browser sent, with every size bounded where it enters, and the few pieces
 * of a response. Pure functions: no I/O here.
 */

#include <stddef.h>

#include "lib/buf.h"

/* A request's head (request line and headers) is at most this long. */
#define HTTP_HEAD_MAX ((size_t)16 << 10)
/* At most this many headers; more is a refused request. */
#define HTTP_MAX_HEADERS 64

struct http_header {
	char *name;  /* lower-cased */
	char *value; /* leading and trailing blanks trimmed */
};

struct http_req {
	char method[8];
	char *target; /* as sent: the path and the query */
	char *path;   /* the target's path, percent-decoded; never holds a NUL */
	char *query;  /* after '?', as sent ("" none) */
	struct http_header hdr[HTTP_MAX_HEADERS];
	size_t nhdr;
	size_t content_length;
	int http11; /* HTTP/1.1 (else 1.0) */
};

/*
 * Parses the head at the start of buf[0..len): 1 with *r filled (free with
 * http_req_release()) and *used the head's bytes (the body follows), 0 when the head is
 * not whole yet, or -EINVAL (a malformed request, *why set) / -E2BIG (over HTTP_HEAD_MAX
 * or HTTP_MAX_HEADERS). A body is refused past max_body (-E2BIG).
 */
int http_req_parse(const char *buf, size_t len, size_t max_body, struct http_req *r, size_t *used,
                   const char **why);
void http_req_release(struct http_req *r);
/* A header's value (name lower-case), or NULL. */
const char *http_header(const struct http_req *r, const char *name);
/*
 * The value of key in a query string (k=v&k2=v2, percent- and '+'-decoded) into out:
 * 0, -ENOENT, or -E2BIG (it does not fit in size).
 */
int http_query_get(const char *query, const char *key, char *out, size_t size);
/* The value of the cookie name in a Cookie header, into out: 0, -ENOENT, -E2BIG. */
int http_cookie_get(const char *cookie, const char *name, char *out, size_t size);
/* Percent-decodes s[0..len) into out; -EINVAL for a bad escape or a NUL. */
int http_unescape(const char *s, size_t len, struct buf *out, int plus_is_space);
/* "200 OK", "404 Not Found", ...: the status line's text for code. */
const char *http_status_text(int code);

#endif
