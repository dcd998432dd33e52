/* HTTP/1.1 requests as the dashboard reads them: see lib/http.h. */
#include "lib/http.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "lib/banned.h"

void http_req_release(struct http_req *r)
{
	size_t i;

	free(r->target);
	free(r->path);
	free(r->query);
	for (i = 0; i < r->nhdr; i++) {
		free(r->hdr[i].name);
		free(r->hdr[i].value);
	}
	memset(r, 0, sizeof(*r));
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int http_unescape(const char *s, size_t len, struct buf *out, int plus_is_space)
{
	size_t i;

	for (i = 0; i < len; i++) {
		int c = (unsigned char)s[i];

		if (c == '%') {
			int h, l;

			if (i + 2 >= len || (h = hexval(s[i + 1])) < 0 ||
			    (l = hexval(s[i + 2])) < 0)
				return -EINVAL;
			c = h * 16 + l;
			i += 2;
		} else if (c == '+' && plus_is_space) {
			c = ' ';
		}
		if (!c)
			return -EINVAL;
		buf_addch(out, (char)c);
	}
	return 0;
}

/* A token's character (RFC 9110): a header's name and the method are made of these. */
static int tchar(int c)
{
	return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

int http_req_parse(const char *buf, size_t len, size_t max_body, struct http_req *r, size_t *used,
                   const char **why)
{
	const char *end, *p, *eol, *sp1, *sp2, *q;
	struct buf path = BUF_INIT(HTTP_HEAD_MAX);
	size_t n;

	memset(r, 0, sizeof(*r));
	*why = NULL;
	end = NULL;
	for (n = 0; n + 3 < len; n++)
		if (!memcmp(buf + n, "\r\n\r\n", 4)) {
			end = buf + n;
			break;
		}
	if (!end) {
		if (len > HTTP_HEAD_MAX)
			return (*why = "the request's head is too long"), -E2BIG;
		return 0;
	}
	if ((size_t)(end - buf) + 4 > HTTP_HEAD_MAX)
		return (*why = "the request's head is too long"), -E2BIG;
	*used = (size_t)(end - buf) + 4;
	/* The request line: METHOD SP TARGET SP HTTP/1.x */
	eol = memchr(buf, '\r', (size_t)(end - buf) + 1);
	sp1 = memchr(buf, ' ', (size_t)(eol - buf));
	if (!sp1 || sp1 == buf || (size_t)(sp1 - buf) >= sizeof(r->method))
		goto bad_line;
	for (p = buf; p < sp1; p++)
		if (!tchar((unsigned char)*p))
			goto bad_line;
	sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1));
	if (!sp2 || sp2 == sp1 + 1 || sp2[1] == ' ')
		goto bad_line;
	if ((size_t)(eol - sp2 - 1) != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) ||
	    (sp2[8] != '0' && sp2[8] != '1'))
		goto bad_line;
	memcpy(r->method, buf, (size_t)(sp1 - buf));
	r->http11 = sp2[8] == '1';
	for (p = sp1 + 1; p < sp2; p++)
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
			goto bad_line;
	if (sp1[1] != '/')
		goto bad_line; /* origin-form only: no proxy requests */
	r->target = xstrndup(sp1 + 1, (size_t)(sp2 - sp1 - 1));
	q = strchr(r->target, '?');
	r->query = xstrdup(q ? q + 1 : "");
	if (http_unescape(r->target, q ? (size_t)(q - r->target) : strlen(r->target), &path, 0)) {
		buf_release(&path);
		http_req_release(r);
		return (*why = "a bad escape in the path"), -EINVAL;
	}
	r->path = buf_detach(&path, NULL);
	/* The headers: NAME ":" OWS VALUE OWS, no folding. */
	for (p = eol + 2; p < end + 2; p = eol + 2) {
		const char *colon, *v, *ve;
		struct http_header *h;

		eol = memchr(p, '\r', (size_t)(end + 2 - p));
		if (!eol || eol[1] != '\n')
			goto bad_header;
		colon = memchr(p, ':', (size_t)(eol - p));
		if (!colon || colon == p)
			goto bad_header;
		for (q = p; q < colon; q++)
			if (!tchar((unsigned char)*q))
				goto bad_header;
		for (v = colon + 1; v < eol && (*v == ' ' || *v == '\t'); v++)
			;
		for (ve = eol; ve > v && (ve[-1] == ' ' || ve[-1] == '\t'); ve--)
			;
		for (q = v; q < ve; q++)
			if (!*q || *q == '\n')
				goto bad_header;
		if (r->nhdr == HTTP_MAX_HEADERS) {
			http_req_release(r);
			return (*why = "too many headers"), -E2BIG;
		}
		h = &r->hdr[r->nhdr++];
		h->name = xstrndup(p, (size_t)(colon - p));
		for (char *c = h->name; *c; c++)
			*c = (char)tolower((unsigned char)*c);
		h->value = xstrndup(v, (size_t)(ve - v));
	}
	if (http_header(r, "transfer-encoding")) {
		http_req_release(r);
		return (*why = "a chunked request body"), -EINVAL;
	}
	if ((q = http_header(r, "content-length"))) {
		long v;

		if (parse_long(q, 0, LONG_MAX, &v)) {
			http_req_release(r);
			return (*why = "a bad Content-Length"), -EINVAL;
		}
		if ((size_t)v > max_body) {
			http_req_release(r);
			return (*why = "the request's body is too big"), -E2BIG;
		}
		r->content_length = (size_t)v;
	}
	if (r->http11 && !http_header(r, "host")) {
		http_req_release(r);
		return (*why = "no Host header"), -EINVAL;
	}
	return 1;
bad_line:
	http_req_release(r);
	return (*why = "a malformed request line"), -EINVAL;
bad_header:
	http_req_release(r);
	return (*why = "a malformed header"), -EINVAL;
}

const char *http_header(const struct http_req *r, const char *name)
{
	size_t i;

	for (i = 0; i < r->nhdr; i++)
		if (!strcmp(r->hdr[i].name, name))
			return r->hdr[i].value;
	return NULL;
}

/* The value of key among sep-separated k=v pairs (blanks after sep skipped). */
static int pair_get(const char *s, char sep, const char *key, char *out, size_t size, int unescape)
{
	size_t klen = strlen(key);

	while (s && *s) {
		const char *e = strchr(s, sep), *next = e ? e + 1 : NULL;
		size_t len = e ? (size_t)(e - s) : strlen(s);

		if (len > klen && !strncmp(s, key, klen) && s[klen] == '=') {
			const char *v = s + klen + 1;
			size_t vlen = len - klen - 1;
			struct buf b = BUF_INIT(0);
			int r = 0;

			if (unescape)
				r = http_unescape(v, vlen, &b, 1);
			else
				buf_add(&b, v, vlen);
			if (!r && b.len + 1 > size)
				r = -E2BIG;
			if (!r) {
				memcpy(out, b.len ? b.p : "", b.len);
				out[b.len] = '\0';
			}
			buf_release(&b);
			return r;
		}
		s = next;
		while (s && *s == ' ')
			s++;
	}
	return -ENOENT;
}

int http_query_get(const char *query, const char *key, char *out, size_t size)
{
	return pair_get(query, '&', key, out, size, 1);
}

int http_cookie_get(const char *cookie, const char *name, char *out, size_t size)
{
	return pair_get(cookie, ';', name, out, size, 0);
}

const char *http_status_text(int code)
{
	switch (code) {
	case 200: return "200 OK";
	case 204: return "204 No Content";
	case 302: return "302 Found";
	case 400: return "400 Bad Request";
	case 401: return "401 Unauthorized";
	case 403: return "403 Forbidden";
	case 404: return "404 Not Found";
	case 405: return "405 Method Not Allowed";
	case 408: return "408 Request Timeout";
	case 409: return "409 Conflict";
	case 413: return "413 Content Too Large";
	case 421: return "421 Misdirected Request";
	case 431: return "431 Request Header Fields Too Large";
	case 500: return "500 Internal Server Error";
	case 503: return "503 Service Unavailable";
	default: return "500 Internal Server Error";
	}
}
