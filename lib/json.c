#include "lib/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "lib/banned.h"

void json_init(struct json *j, struct buf *out, int pretty)
{
	memset(j, 0, sizeof(*j));
	j->out = out;
	j->pretty = pretty;
	j->first[0] = 1;
}

static void put(struct json *j, const char *s, size_t n)
{
	int r;

	if (j->err)
		return;
	r = buf_add(j->out, s, n);
	if (r)
		j->err = r;
}

/*
 * One byte, stored rather than copied: libc's memcpy costs tens of cycles to start, and
 * the separators of a long listing are millions of one-byte copies.
 */
static void put_ch(struct json *j, char c)
{
	size_t len = j->out->len;

	if (j->err)
		return;
	if (buf_grow(j->out, 1)) {
		j->err = -ENOBUFS;
		return;
	}
	j->out->p[len] = c;
	j->out->p[len + 1] = '\0';
	j->out->len = len + 1;
}

static void indent(struct json *j)
{
	int i;

	if (!j->pretty)
		return;
	put(j, "\n", 1);
	for (i = 0; i < j->depth; i++)
		put(j, "  ", 2);
}

/* Comma and newline before a value (or key) at the current level. */
static void before_value(struct json *j)
{
	if (j->after_key) {
		j->after_key = 0;
		return;
	}
	if (j->depth == 0)
		return;
	if (!j->first[j->depth])
		put_ch(j, ',');
	j->first[j->depth] = 0;
	indent(j);
}

static void open_level(struct json *j, char c)
{
	before_value(j);
	put_ch(j, c);
	if (j->depth + 1 >= JSON_MAX_DEPTH) {
		j->err = -E2BIG;
		return;
	}
	j->depth++;
	j->first[j->depth] = 1;
}

static void close_level(struct json *j, char c)
{
	int empty = j->first[j->depth];

	if (j->depth == 0) {
		j->err = -EINVAL;
		return;
	}
	j->depth--;
	if (!empty)
		indent(j);
	put_ch(j, c);
}

void json_obj_begin(struct json *j)
{
	open_level(j, '{');
}

void json_obj_end(struct json *j)
{
	close_level(j, '}');
}

void json_arr_begin(struct json *j)
{
	open_level(j, '[');
}

void json_arr_end(struct json *j)
{
	close_level(j, ']');
}

/*
 * The common case in one copy: s[0..n) is printable ASCII with nothing to escape, so it
 * goes in as "s" followed by tail (tn bytes). 1 when written (or j->err set), 0 when s
 * needs json_quote(). Long listings write millions of keys and short strings.
 */
static int put_plain(struct json *j, const char *s, size_t n, const char *tail, size_t tn)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i, len;
	char *o;

	for (i = 0; i < n; i++)
		if (p[i] < 0x20 || p[i] >= 0x7f || p[i] == '"' || p[i] == '\\')
			return 0;
	if (j->err)
		return 1;
	len = j->out->len;
	if (buf_grow(j->out, n + 2 + tn)) {
		j->err = -ENOBUFS;
		return 1;
	}
	o = j->out->p + len;
	o[0] = '"';
	memcpy(o + 1, s, n);
	o += n + 1;
	*o++ = '"';
	for (i = 0; i < tn; i++) /* ":" or ": ": stored, not copied (put_ch()) */
		*o++ = tail[i];
	*o = '\0';
	j->out->len = len + n + 2 + tn;
	return 1;
}

void json_key(struct json *j, const char *key)
{
	const char *colon = j->pretty ? ": " : ":";
	size_t n = strlen(key), cn = j->pretty ? 2 : 1;

	before_value(j);
	if (!put_plain(j, key, n, colon, cn)) {
		if (!j->err && json_quote(j->out, key, n))
			j->err = -ENOBUFS;
		put(j, colon, cn);
	}
	j->after_key = 1;
}

void json_strn(struct json *j, const char *s, size_t n)
{
	before_value(j);
	if (!put_plain(j, s, n, "", 0) && !j->err && json_quote(j->out, s, n))
		j->err = -ENOBUFS;
}

void json_str(struct json *j, const char *s)
{
	if (!s)
		json_null(j);
	else
		json_strn(j, s, strlen(s));
}

int json_put_int(struct buf *b, int64_t v)
{
	char tmp[DEC_DIGITS_MAX], *p = dec_digits(tmp + sizeof(tmp), v);

	if (buf_grow(b, (size_t)(tmp + sizeof(tmp) - p)))
		return -ENOBUFS;
	while (p < tmp + sizeof(tmp)) /* stored, not copied: see put_ch() */
		b->p[b->len++] = *p++;
	b->p[b->len] = '\0';
	return 0;
}

void json_int(struct json *j, int64_t v)
{
	before_value(j);
	if (!j->err && json_put_int(j->out, v))
		j->err = -ENOBUFS;
}

void json_double(struct json *j, double v)
{
	char tmp[64];
	int n;

	if (!isfinite(v)) {
		json_null(j);
		return;
	}
	/* Range first: converting a double outside int64's range is undefined behaviour. */
	if (fabs(v) < 1e15 && v == (double)(int64_t)v)
		n = snprintf(tmp, sizeof(tmp), "%lld", (long long)v);
	else
		n = snprintf(tmp, sizeof(tmp), "%.17g", v);
	/* Shorter form if it round-trips (0.5 rather than 0.50000000000000000). */
	if (n > 0) {
		char shorter[64];
		int m = snprintf(shorter, sizeof(shorter), "%.15g", v);
		double back;

		if (m > 0 && sscanf(shorter, "%lf", &back) == 1 && back == v) {
			memcpy(tmp, shorter, (size_t)m + 1);
			n = m;
		}
	}
	before_value(j);
	put(j, tmp, (size_t)n);
}

void json_bool(struct json *j, int v)
{
	before_value(j);
	put(j, v ? "true" : "false", v ? 4 : 5);
}

void json_null(struct json *j)
{
	before_value(j);
	put(j, "null", 4);
}

void json_time(struct json *j, double t)
{
	long long ms;
	char frac[4];
	int i;

	if (!(t > 0)) {
		json_null(j);
		return;
	}
	if (t >= 1e15) { /* no time of ours; converting it to ms would overflow */
		json_double(j, t);
		return;
	}
	ms = (long long)(t * 1000 + 0.5);
	json_int(j, ms / 1000);
	frac[0] = '.';
	frac[1] = (char)('0' + (ms / 100) % 10);
	frac[2] = (char)('0' + (ms / 10) % 10);
	frac[3] = (char)('0' + ms % 10);
	for (i = 0; i < 4; i++)
		put_ch(j, frac[i]);
}

void json_codes(struct json *j, const char *codes)
{
	const char *p = codes;

	json_arr_begin(j);
	while (*p) {
		char *end;
		long v = strtol(p, &end, 10);

		if (end == p)
			json_null(j);
		else
			json_int(j, v);
		p = end + strcspn(end, ",");
		if (*p)
			p++;
	}
	json_arr_end(j);
}

void json_raw(struct json *j, const char *text)
{
	before_value(j);
	put(j, text, strlen(text));
}

int json_finish(struct json *j)
{
	if (j->pretty)
		put(j, "\n", 1);
	return j->err;
}

size_t utf8_seq_len(const unsigned char *s, size_t avail)
{
	unsigned char c = s[0];
	size_t n, i;
	unsigned cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	if (n > avail)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and values past U+10FFFF are invalid. */
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

int utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		size_t k = utf8_seq_len(p + i, n - i);

		if (!k)
			return 0;
		i += k;
	}
	return 1;
}

int json_quote(struct buf *b, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	int r = buf_addch(b, '"');

	while (!r && i < n) {
		unsigned char c = p[i];
		size_t k;

		/* A run of plain printable ASCII, the common case, goes in at once. */
		for (k = i; k < n && p[k] >= 0x20 && p[k] < 0x7f && p[k] != '"' && p[k] != '\\';
		     k++)
			;
		if (k > i) {
			r = buf_add(b, s + i, k - i);
			i = k;
			continue;
		}
		switch (c) {
		case '"':
			r = buf_add(b, "\\\"", 2);
			i++;
			continue;
		case '\\':
			r = buf_add(b, "\\\\", 2);
			i++;
			continue;
		case '\n':
			r = buf_add(b, "\\n", 2);
			i++;
			continue;
		case '\r':
			r = buf_add(b, "\\r", 2);
			i++;
			continue;
		case '\t':
			r = buf_add(b, "\\t", 2);
			i++;
			continue;
		case '\b':
			r = buf_add(b, "\\b", 2);
			i++;
			continue;
		case '\f':
			r = buf_add(b, "\\f", 2);
			i++;
			continue;
		default: break;
		}
		if (c < 0x20 || c == 0x7f) {
			r = buf_addf(b, "\\u%04x", c);
			i++;
			continue;
		}
		k = utf8_seq_len(p + i, n - i);
		if (!k) {
			r = buf_add(b, "\\ufffd", 6);
			i++;
			continue;
		}
		r = buf_add(b, s + i, k);
		i += k;
	}
	if (!r)
		r = buf_addch(b, '"');
	return r;
}
