/*
 * The download manager's HTTP/1.1 parsing: URLs, the response head, the chunked coding.
 * Pure code over byte arrays (no I/O), so that the unit tests can throw anything at it.
 * Everything a server sends is untrusted: every length is bounded, every number checked
 * for overflow, and anything ambiguous (conflicting lengths, folded lines, unknown
 * transfer codings) is refused rather than guessed at.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "bootstrap/fetch/fetch_internal.h"
#include "lib/buf.h"
#include "lib/banned.h"

static int fail(struct buf *err, int code, const char *msg)
{
	if (err) {
		buf_reset(err);
		buf_adds(err, msg);
	}
	return code;
}

static int is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

static int hex_val(int c)
{
	if (is_digit(c))
		return c - '0';
	c = lower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* A byte that may not appear in a URL we send: controls, space, DEL, non-ASCII. */
static int bad_url_byte(unsigned char c)
{
	return c <= 0x20 || c >= 0x7f;
}

static int copy_str(char *dst, size_t size, const char *src, size_t n)
{
	if (n >= size)
		return -1;
	memcpy(dst, src, n);
	dst[n] = '\0';
	return 0;
}

int http_url_parse(const char *s, struct http_url *u, struct buf *err)
{
	const char *p, *auth, *auth_end, *host, *host_end, *port = NULL, *port_end = NULL;
	const char *rest, *rest_end;
	size_t i, n;
	long pnum = 0;

	memset(u, 0, sizeof(*u));
	if (strlen(s) >= HTTP_URL_MAX)
		return fail(err, -EINVAL, "URL is too long");
	for (p = s; *p; p++)
		if (bad_url_byte((unsigned char)*p))
			return fail(
			        err, -EINVAL,
			        "URL has a space, control or non-ASCII character (percent-encode it)");
	for (p = s; is_alpha(*p) || is_digit(*p) || *p == '+' || *p == '-' || *p == '.'; p++)
		;
	n = (size_t)(p - s);
	if (!n || !is_alpha(s[0]) || strncmp(p, "://", 3) || n >= sizeof(u->scheme))
		return fail(err, -EINVAL, "not an absolute URL (expected https://HOST/PATH)");
	for (i = 0; i < n; i++)
		u->scheme[i] = (char)lower(s[i]);
	auth = p + 3;
	auth_end = auth + strcspn(auth, "/?#");
	if (memchr(auth, '@', (size_t)(auth_end - auth)))
		return fail(err, -EINVAL, "URL has user info (user@host), which is not supported");
	if (*auth == '[') {
		host = auth + 1;
		host_end = memchr(host, ']', (size_t)(auth_end - host));
		if (!host_end || host_end == host)
			return fail(err, -EINVAL, "URL has a bad IPv6 address");
		for (p = host; p < host_end; p++)
			if (hex_val(*p) < 0 && *p != ':' && *p != '.')
				return fail(err, -EINVAL, "URL has a bad IPv6 address");
		u->ipv6 = 1;
		p = host_end + 1;
		if (p < auth_end && *p != ':')
			return fail(err, -EINVAL, "URL has junk after the IPv6 address");
	} else {
		host = auth;
		host_end = memchr(auth, ':', (size_t)(auth_end - auth));
		if (!host_end)
			host_end = auth_end;
		if (host_end == host)
			return fail(err, -EINVAL, "URL has no host");
		for (p = host; p < host_end; p++)
			if (!is_alpha(*p) && !is_digit(*p) && *p != '-' && *p != '.' && *p != '_')
				return fail(err, -EINVAL,
				            "URL has a bad character in the host name");
		p = host_end;
	}
	if (p < auth_end) { /* *p == ':' */
		port = p + 1;
		port_end = auth_end;
		if (port_end - port > 5)
			return fail(err, -EINVAL, "URL has a bad port");
		for (p = port; p < port_end; p++) {
			if (!is_digit(*p))
				return fail(err, -EINVAL, "URL has a bad port");
			pnum = pnum * 10 + (*p - '0');
		}
		if (port == port_end)
			port = NULL; /* "host:" means the default port */
		else if (pnum < 1 || pnum > 65535)
			return fail(err, -EINVAL, "URL has a bad port");
	}
	if (copy_str(u->host, sizeof(u->host), host, (size_t)(host_end - host)))
		return fail(err, -EINVAL, "URL's host name is too long");
	for (i = 0; u->host[i]; i++)
		u->host[i] = (char)lower(u->host[i]);
	if (port)
		copy_str(u->port, sizeof(u->port), port, (size_t)(port_end - port));
	else
		copy_str(u->port, sizeof(u->port), strcmp(u->scheme, "http") ? "443" : "80",
		         strcmp(u->scheme, "http") ? 3 : 2);

	rest = auth_end;
	rest_end = rest + strcspn(rest, "#");
	n = (size_t)(rest_end - rest);
	if (!n || *rest == '?') {
		u->target[0] = '/';
		if (copy_str(u->target + 1, sizeof(u->target) - 1, rest, n))
			return fail(err, -EINVAL, "URL is too long");
	} else if (copy_str(u->target, sizeof(u->target), rest, n)) {
		return fail(err, -EINVAL, "URL is too long");
	}

	n = 0;
	if (u->ipv6)
		u->hostport[n++] = '[';
	i = strlen(u->host);
	memcpy(u->hostport + n, u->host, i);
	n += i;
	if (u->ipv6)
		u->hostport[n++] = ']';
	if (port) {
		u->hostport[n++] = ':';
		i = strlen(u->port);
		memcpy(u->hostport + n, u->port, i);
		n += i;
	}
	u->hostport[n] = '\0';
	return 0;
}

static int join(char *out, size_t size, const char *a, size_t alen, const char *b, size_t blen)
{
	if (alen + blen >= size)
		return -EINVAL;
	memcpy(out, a, alen);
	memcpy(out + alen, b, blen);
	out[alen + blen] = '\0';
	return 0;
}

int http_url_resolve(const struct http_url *base, const char *loc, char *out, size_t size)
{
	char prefix[HTTP_HOST_MAX + 32];
	const char *p;
	size_t n, dir;

	for (p = loc; is_alpha(*p) || is_digit(*p) || *p == '+' || *p == '-' || *p == '.'; p++)
		;
	if (p != loc && is_alpha(loc[0]) && !strncmp(p, "://", 3))
		return join(out, size, loc, strlen(loc), "", 0);
	if (!strncmp(loc, "//", 2)) {
		n = strlen(base->scheme);
		if (join(out, size, base->scheme, n, ":", 1))
			return -EINVAL;
		return join(out + n + 1, size - n - 1, loc, strlen(loc), "", 0);
	}
	n = strlen(base->scheme) + 3 + strlen(base->hostport);
	if (n >= sizeof(prefix))
		return -EINVAL;
	memcpy(prefix, base->scheme, strlen(base->scheme));
	memcpy(prefix + strlen(base->scheme), "://", 3);
	memcpy(prefix + strlen(base->scheme) + 3, base->hostport, strlen(base->hostport));
	prefix[n] = '\0';
	if (loc[0] == '/')
		return join(out, size, prefix, n, loc, strlen(loc));
	/* A relative reference: replace the query, or the last segment of the base path. */
	dir = strcspn(base->target, "?");
	if (loc[0] != '?')
		while (dir > 0 && base->target[dir - 1] != '/')
			dir--;
	if (n + dir >= size)
		return -EINVAL;
	memcpy(out, prefix, n);
	memcpy(out + n, base->target, dir);
	return join(out + n + dir, size - n - dir, loc, strlen(loc), "", 0);
}

/* --- response head ----------------------------------------------------------------------- */

static int is_tchar(int c)
{
	return is_alpha(c) || is_digit(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Field value bytes: visible ASCII, space, tab, and obs-text (>= 0x80). */
static int bad_value_byte(unsigned char c)
{
	return (c < 0x20 && c != '\t') || c == 0x7f;
}

static int name_is(const char *p, size_t n, const char *name)
{
	return strlen(name) == n && !strncasecmp(p, name, n);
}

/* Parses a Content-Length value: one number, or a list of equal numbers. */
static int parse_length(const char *v, size_t n, uint64_t *out)
{
	size_t i = 0;
	int have = 0;
	uint64_t cur;

	while (i <= n) {
		while (i < n && (v[i] == ' ' || v[i] == '\t'))
			i++;
		if (i >= n || !is_digit(v[i]))
			return -1;
		cur = 0;
		for (; i < n && is_digit(v[i]); i++) {
			uint64_t d = (uint64_t)(v[i] - '0');

			if (cur > (UINT64_MAX - d) / 10)
				return -1;
			cur = cur * 10 + d;
		}
		while (i < n && (v[i] == ' ' || v[i] == '\t'))
			i++;
		if (have && cur != *out)
			return -1;
		*out = cur;
		have = 1;
		if (i == n)
			return 0;
		if (v[i] != ',')
			return -1;
		i++;
	}
	return -1;
}

/* Parses a Transfer-Encoding value into *chunked; any coding but chunked is refused. */
static int parse_te(const char *v, size_t n, int *chunked, struct buf *err)
{
	size_t i = 0, s, e;

	while (i < n) {
		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		if (i == n)
			break;
		s = i;
		while (i < n && v[i] != ',')
			i++;
		e = i;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (!name_is(v + s, e - s, "chunked")) {
			if (err) {
				buf_reset(err);
				buf_addf(err, "unsupported transfer coding '%.*s'",
				         (int)(e - s > 40 ? 40 : e - s), v + s);
			}
			return -EBADMSG;
		}
		if (*chunked)
			return fail(err, -EBADMSG, "transfer coding 'chunked' given twice");
		*chunked = 1;
	}
	return 0;
}

int http_parse_head(const char *p, size_t len, struct http_resp *r, size_t *head_len,
                    struct buf *err)
{
	size_t pos = 0, end = 0, line_end, ln, colon, vs, ve;
	const char *nl, *line;
	int have_len = 0, rc;
	uint64_t cl = 0;

	memset(r, 0, sizeof(*r));
	/* Find the end of the head first, so that a partial head changes nothing. */
	for (;;) {
		size_t limit = len < HTTP_HEAD_MAX ? len : HTTP_HEAD_MAX;

		nl = pos < limit ? memchr(p + pos, '\n', limit - pos) : NULL;
		if (!nl)
			return len >= HTTP_HEAD_MAX
			               ? fail(err, -E2BIG, "response head is too large")
			               : -EAGAIN;
		line_end = (size_t)(nl - p);
		ln = line_end - pos;
		if (ln && p[line_end - 1] == '\r')
			ln--;
		if (ln == 0) {
			if (pos == 0)
				return fail(err, -EBADMSG, "response starts with an empty line");
			end = line_end + 1;
			break;
		}
		pos = line_end + 1;
	}
	*head_len = end;

	/* Status line: HTTP/1.x SP 3DIGIT [SP reason] */
	line = p;
	nl = memchr(p, '\n', end);
	ln = (size_t)(nl - p);
	if (ln && line[ln - 1] == '\r')
		ln--;
	if (ln < 12 || memcmp(line, "HTTP/1.", 7) || !is_digit(line[7]) || line[8] != ' ' ||
	    !is_digit(line[9]) || !is_digit(line[10]) || !is_digit(line[11]) ||
	    (ln > 12 && line[12] != ' '))
		return fail(err, -EBADMSG, "malformed HTTP status line");
	for (pos = 12; pos < ln; pos++)
		if (bad_value_byte((unsigned char)line[pos]))
			return fail(err, -EBADMSG, "control character in the HTTP status line");
	if (ln > 13)
		copy_str(r->reason, sizeof(r->reason), line + 13,
		         ln - 13 < sizeof(r->reason) ? ln - 13 : sizeof(r->reason) - 1);
	r->status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
	if (r->status < 100 || r->status > 599)
		return fail(err, -EBADMSG, "HTTP status code out of range");

	pos = (size_t)(nl - p) + 1;
	while (pos < end) {
		line = p + pos;
		nl = memchr(line, '\n', end - pos);
		ln = (size_t)(nl - line);
		pos += ln + 1;
		if (ln && line[ln - 1] == '\r')
			ln--;
		if (ln == 0)
			break;
		if (line[0] == ' ' || line[0] == '\t')
			return fail(err, -EBADMSG, "folded header line (obsolete line folding)");
		for (colon = 0; colon < ln && is_tchar((unsigned char)line[colon]); colon++)
			;
		if (colon == 0 || colon == ln || line[colon] != ':')
			return fail(err, -EBADMSG, "malformed header line");
		for (vs = colon + 1; vs < ln; vs++)
			if (bad_value_byte((unsigned char)line[vs]))
				return fail(err, -EBADMSG, "control character in a header value");
		vs = colon + 1;
		while (vs < ln && (line[vs] == ' ' || line[vs] == '\t'))
			vs++;
		ve = ln;
		while (ve > vs && (line[ve - 1] == ' ' || line[ve - 1] == '\t'))
			ve--;
		if (name_is(line, colon, "content-length")) {
			uint64_t v = 0;

			if (parse_length(line + vs, ve - vs, &v) || (have_len && v != cl))
				return fail(err, -EBADMSG, "bad or conflicting Content-Length");
			cl = v;
			have_len = 1;
		} else if (name_is(line, colon, "transfer-encoding")) {
			rc = parse_te(line + vs, ve - vs, &r->chunked, err);
			if (rc)
				return rc;
		} else if (name_is(line, colon, "location")) {
			if (r->location[0])
				return fail(err, -EBADMSG, "more than one Location header");
			if (ve == vs ||
			    copy_str(r->location, sizeof(r->location), line + vs, ve - vs))
				return fail(err, -EBADMSG, "empty or over-long Location header");
		}
	}
	if (!r->chunked && have_len) {
		r->has_length = 1;
		r->length = cl;
	}
	return 0;
}

/* --- chunked transfer coding --------------------------------------------------------------- */

enum {
	CH_SIZE,
	CH_EXT,
	CH_SIZE_LF,
	CH_DATA,
	CH_DATA_CR,
	CH_DATA_LF,
	CH_TRAILER,
	CH_TRAILER_LINE,
	CH_TRAILER_LF,
	CH_DONE,
};

#define CH_LINE_MAX 4096
#define CH_TRAILER_MAX (64 << 10)

void http_chunked_init(struct http_chunked *c)
{
	memset(c, 0, sizeof(*c));
	c->state = CH_SIZE;
}

/* The size line ended: data follows, or the trailer after the last chunk. */
static void size_line_done(struct http_chunked *c)
{
	c->state = c->left ? CH_DATA : CH_TRAILER;
	c->line_len = 0;
	c->digits = 0;
}

int http_chunked_decode(struct http_chunked *c, char *p, size_t len, size_t *out_len, size_t *used)
{
	size_t i = 0, o = 0, n;
	unsigned char ch;
	int v;

	while (i < len && c->state != CH_DONE) {
		if (c->state == CH_DATA) {
			n = len - i;
			if ((uint64_t)n > c->left)
				n = (size_t)c->left;
			memmove(p + o, p + i, n);
			o += n;
			i += n;
			c->left -= n;
			if (!c->left)
				c->state = CH_DATA_CR;
			continue;
		}
		ch = (unsigned char)p[i++];
		switch (c->state) {
		case CH_SIZE:
			v = hex_val(ch);
			if (v >= 0) {
				if (++c->digits > 16)
					return -EBADMSG;
				c->left = c->left << 4 | (uint64_t)v;
			} else if (!c->digits) {
				return -EBADMSG;
			} else if (ch == ';' || ch == ' ' || ch == '\t') {
				c->state = CH_EXT;
			} else if (ch == '\r') {
				c->state = CH_SIZE_LF;
			} else if (ch == '\n') {
				size_line_done(c);
			} else {
				return -EBADMSG;
			}
			break;
		case CH_EXT:
			if (++c->line_len > CH_LINE_MAX)
				return -EBADMSG;
			if (ch == '\r')
				c->state = CH_SIZE_LF;
			else if (ch == '\n')
				size_line_done(c);
			else if (bad_value_byte(ch))
				return -EBADMSG;
			break;
		case CH_SIZE_LF:
			if (ch != '\n')
				return -EBADMSG;
			size_line_done(c);
			break;
		case CH_DATA_CR:
			if (ch == '\r')
				c->state = CH_DATA_LF;
			else if (ch == '\n')
				c->state = CH_SIZE;
			else
				return -EBADMSG;
			break;
		case CH_DATA_LF:
			if (ch != '\n')
				return -EBADMSG;
			c->state = CH_SIZE;
			break;
		case CH_TRAILER:
			if (ch == '\r') {
				c->state = CH_TRAILER_LF;
			} else if (ch == '\n') {
				c->state = CH_DONE;
			} else {
				if (++c->line_len > CH_TRAILER_MAX)
					return -EBADMSG;
				c->state = CH_TRAILER_LINE;
			}
			break;
		case CH_TRAILER_LINE:
			/* Trailer fields are read and dropped; line_len bounds them all. */
			if (++c->line_len > CH_TRAILER_MAX)
				return -EBADMSG;
			if (ch == '\n')
				c->state = CH_TRAILER;
			else if (ch != '\r' && bad_value_byte(ch))
				return -EBADMSG;
			break;
		case CH_TRAILER_LF:
			if (ch != '\n')
				return -EBADMSG;
			c->state = CH_DONE;
			break;
		default: return -EBADMSG;
		}
	}
	c->done = c->state == CH_DONE;
	*out_len = o;
	*used = i;
	return 0;
}
