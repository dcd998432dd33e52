/*
 * The download manager's parsers (bootstrap/fetch/fetch_http.c) against good, odd and hostile
 * input: URLs, redirect targets, response heads, the chunked coding. The network side is
 * tested against a real TLS server in tests/t/t0800-fetch.sh.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/harness.h"
#include "bootstrap/fetch/fetch_internal.h"
#include "lib/buf.h"
#include "lib/banned.h"

/* --- URLs ---------------------------------------------------------------------------- */

static void test_url_good(void)
{
	struct http_url u;

	is_int(http_url_parse("https://example.com/a/b.tar.gz?x=1#frag", &u, NULL), 0,
	       "a plain https URL");
	is_str(u.scheme, "https", "scheme");
	is_str(u.host, "example.com", "host");
	is_str(u.port, "443", "default port");
	is_str(u.target, "/a/b.tar.gz?x=1", "path and query, no fragment");
	is_str(u.hostport, "example.com", "Host header without the default port");

	is_int(http_url_parse("HTTPS://Example.COM:8443", &u, NULL), 0, "upper case, a port");
	is_str(u.scheme, "https", "scheme lowercased");
	is_str(u.host, "example.com", "host lowercased");
	is_str(u.port, "8443", "port");
	is_str(u.target, "/", "empty path is /");
	is_str(u.hostport, "example.com:8443", "Host header with the port");

	is_int(http_url_parse("https://[::1]:9000/x", &u, NULL), 0, "IPv6 literal");
	is_str(u.host, "::1", "IPv6 host without brackets");
	ok(u.ipv6, "marked IPv6");
	is_str(u.hostport, "[::1]:9000", "IPv6 Host header keeps brackets");

	is_int(http_url_parse("https://h?q", &u, NULL), 0, "query without a path");
	is_str(u.target, "/?q", "query gets a leading /");

	is_int(http_url_parse("https://h:/p", &u, NULL), 0, "empty port means the default");
	is_str(u.port, "443", "default port for 'h:'");

	is_int(http_url_parse("http://h/p", &u, NULL), 0, "http parses (the caller refuses it)");
	is_str(u.port, "80", "http default port");
}

static void test_url_bad(void)
{
	static const char *const bad[] = {
	        "",
	        "example.com/x",
	        "https:/x",
	        "https//x",
	        "://x",
	        "1https://x",
	        "https://",
	        "https:///path",
	        "https://user:pw@host/",
	        "https://host/a b",
	        "https://host/a\tb",
	        "https://host/a\r\nX-Injected: 1",
	        "https://host/\x7f",
	        "https://h\xc3\xa9st/",
	        "https://host:0/",
	        "https://host:65536/",
	        "https://host:123456/",
	        "https://host:12a/",
	        "https://host:-1/",
	        "https://ho$t/",
	        "https://[::1/",
	        "https://[]/",
	        "https://[zz::1]/",
	        "https://[::1]x/",
	        "averyveryverylongscheme://h/",
	};
	struct buf err = BUF_INIT(1024);
	struct http_url u;
	size_t i;
	char *lng;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		buf_reset(&err);
		is_int(http_url_parse(bad[i], &u, &err), -EINVAL, "bad URL #%zu refused", i);
		ok(err.len > 0 && !strchr(err.p, '\n'), "with a one-line message: %s", err.p);
	}
	lng = malloc(HTTP_URL_MAX + 10);
	memcpy(lng, "https://h/", 10);
	memset(lng + 10, 'a', HTTP_URL_MAX);
	lng[HTTP_URL_MAX + 9] = '\0';
	is_int(http_url_parse(lng, &u, NULL), -EINVAL, "an over-long URL is refused");
	memset(lng, 'a', HTTP_HOST_MAX + 20);
	memcpy(lng, "https://", 8);
	memcpy(lng + HTTP_HOST_MAX + 20, "/x", 3);
	is_int(http_url_parse(lng, &u, NULL), -EINVAL, "an over-long host is refused");
	free(lng);
	buf_release(&err);
}

static void check_resolve(const char *base, const char *loc, const char *want)
{
	struct http_url u;
	char out[HTTP_URL_MAX];

	if (http_url_parse(base, &u, NULL)) {
		ok(0, "base parses: %s", base);
		return;
	}
	out[0] = '\0';
	if (!want) {
		ok(http_url_resolve(&u, loc, out, sizeof(out)) < 0, "'%s' from '%s' refused", loc,
		   base);
		return;
	}
	is_int(http_url_resolve(&u, loc, out, sizeof(out)), 0, "resolve '%s'", loc);
	is_str(out, want, "'%s' against '%s'", loc, base);
}

static void test_resolve(void)
{
	char *lng;

	check_resolve("https://a.example/x/y?q", "https://b.example/z", "https://b.example/z");
	check_resolve("https://a.example/x/y?q", "http://b.example/z", "http://b.example/z");
	check_resolve("https://a.example:444/x/y", "//c.example/z", "https://c.example/z");
	check_resolve("https://a.example:444/x/y", "/z?w", "https://a.example:444/z?w");
	check_resolve("https://a.example/x/y?q", "z", "https://a.example/x/z");
	check_resolve("https://a.example/x/", "z", "https://a.example/x/z");
	check_resolve("https://a.example/x/y?q", "?r", "https://a.example/x/y?r");
	check_resolve("https://[::1]:8/x/y", "/z", "https://[::1]:8/z");
	lng = malloc(HTTP_URL_MAX + 1);
	memset(lng, 'a', HTTP_URL_MAX);
	lng[0] = '/';
	lng[HTTP_URL_MAX] = '\0';
	check_resolve("https://a.example/x", lng, NULL);
	free(lng);
}

/* --- response heads -------------------------------------------------------------------- */

static int head(const char *s, struct http_resp *r, size_t *len)
{
	return http_parse_head(s, strlen(s), r, len, NULL);
}

static void test_head_good(void)
{
	static const char resp[] = "HTTP/1.1 200 OK\r\n"
	                           "Content-Type: text/plain\r\n"
	                           "content-length:   12  \r\n"
	                           "X-Empty:\r\n"
	                           "\r\n"
	                           "hello world!";
	struct http_resp r;
	size_t len = 0, i;

	is_int(head(resp, &r, &len), 0, "a complete head");
	is_int(r.status, 200, "status");
	is_str(r.reason, "OK", "reason phrase");
	ok(r.has_length && r.length == 12, "Content-Length, case-insensitive, spaces trimmed");
	ok(!r.chunked, "not chunked");
	is_int(len, strlen(resp) - 12, "head length stops before the body");

	for (i = 0; i < strlen(resp) - 12; i++)
		if (http_parse_head(resp, i, &r, &len, NULL) != -EAGAIN)
			break;
	is_int(i, strlen(resp) - 12, "every cut before the empty line asks for more");

	is_int(head("HTTP/1.0 404 Not Found\n\n", &r, &len), 0, "bare LF line ends");
	is_int(r.status, 404, "404");
	is_int(len, 24, "head length with bare LFs");

	is_int(head("HTTP/1.1 204\r\n\r\n", &r, &len), 0, "no reason phrase");
	is_str(r.reason, "", "empty reason");

	is_int(head("HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\nContent-Length: 5\r\n\r\n",
	            &r, &len),
	       0, "chunked and a length");
	ok(r.chunked && !r.has_length, "chunked wins over Content-Length");

	is_int(head("HTTP/1.1 200 OK\r\nContent-Length: 7, 7\r\nContent-Length: 7\r\n\r\n", &r,
	            &len),
	       0, "repeated equal lengths");
	ok(r.has_length && r.length == 7, "length 7");

	is_int(head("HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551615\r\n\r\n", &r, &len), 0,
	       "the largest length parses");
	ok(r.length == UINT64_MAX, "UINT64_MAX (the size limit refuses it later)");

	is_int(head("HTTP/1.1 302 Found\r\nLocation: /next?a=1\r\n\r\n", &r, &len), 0,
	       "a redirect");
	is_str(r.location, "/next?a=1", "Location");

	is_int(head("HTTP/1.1 200 OK\r\nX-Latin: caf\xe9\r\n\r\n", &r, &len), 0,
	       "obs-text in a value is allowed");
}

static void test_head_bad(void)
{
	static const char *const bad[] = {
	        "\r\nHTTP/1.1 200 OK\r\n\r\n",
	        "HTTP/2 200 OK\r\n\r\n",
	        "HTTP/1.1 20 OK\r\n\r\n",
	        "HTTP/1.1 2000 OK\r\n\r\n",
	        "HTTP/1.1 099 Low\r\n\r\n",
	        "HTTP/1.1 600 High\r\n\r\n",
	        "HTTP/1.1  200 OK\r\n\r\n",
	        "HTTP/1.1 200OK\r\n\r\n",
	        "ICY 200 OK\r\n\r\n",
	        "HTTP/1.x 200 OK\r\n\r\n",
	        "HTTP/1.1 200 O\x01K\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nNoColon\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nName : x\r\n\r\n",
	        "HTTP/1.1 200 OK\r\n: x\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nA: b\r\n\tfolded\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nA: b\x7f\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nContent-Length: 5 5\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nContent-Length: 5,\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551616\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
	        "HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\n",
	        "HTTP/1.1 302 Found\r\nLocation: /a\r\nLocation: /b\r\n\r\n",
	        "HTTP/1.1 302 Found\r\nLocation:\r\n\r\n",
	};
	struct buf err = BUF_INIT(1024);
	struct http_resp r;
	size_t i, len, n;
	char *big;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		buf_reset(&err);
		is_int(http_parse_head(bad[i], strlen(bad[i]), &r, &len, &err), -EBADMSG,
		       "refused #%zu", i);
		ok(err.len > 0 && !strchr(err.p, '\n'), "one-line message: %s", err.p);
	}
	/* A NUL inside a value (strlen would stop there, so pass the length). */
	{
		static const char nul[] = "HTTP/1.1 200 OK\r\nA: b\0c\r\n\r\n";

		is_int(http_parse_head(nul, sizeof(nul) - 1, &r, &len, NULL), -EBADMSG,
		       "a NUL in a header value is refused");
	}

	/* A head that never ends: more than HTTP_HEAD_MAX bytes of headers. */
	n = HTTP_HEAD_MAX + 100;
	big = malloc(n);
	memcpy(big, "HTTP/1.1 200 OK\r\n", 17);
	for (i = 17; i + 8 < n; i += 8)
		memcpy(big + i, "A: bcd\r\n", 8);
	memset(big + i, 'x', n - i);
	is_int(http_parse_head(big, n, &r, &len, NULL), -E2BIG, "an endless head is refused");
	is_int(http_parse_head(big, HTTP_HEAD_MAX - 1, &r, &len, NULL), -EAGAIN,
	       "just under the limit asks for more");
	/* One long line without a newline at all. */
	memset(big, 'H', n);
	is_int(http_parse_head(big, n, &r, &len, NULL), -E2BIG, "one endless line is refused");
	/* An over-long Location. */
	memcpy(big, "HTTP/1.1 302 F\r\nLocation: /", 27);
	memset(big + 27, 'a', HTTP_URL_MAX + 10);
	memcpy(big + 27 + HTTP_URL_MAX + 10, "\r\n\r\n", 4);
	is_int(http_parse_head(big, 27 + HTTP_URL_MAX + 14, &r, &len, NULL), -EBADMSG,
	       "an over-long Location is refused");
	free(big);
	buf_release(&err);
}

/* --- chunked --------------------------------------------------------------------------- */

/* Decodes s fed `step` bytes at a time; the body in out. 0, or the decoder's error. */
static int dechunk(const char *s, size_t len, size_t step, struct buf *out, size_t *used_total,
                   int *done)
{
	struct http_chunked c;
	size_t i = 0, n, o, used;
	char *tmp = malloc(len + 1);
	int rc = 0;

	http_chunked_init(&c);
	buf_reset(out);
	*used_total = 0;
	while (i < len && !c.done) {
		n = len - i < step ? len - i : step;
		memcpy(tmp, s + i, n);
		rc = http_chunked_decode(&c, tmp, n, &o, &used);
		if (rc)
			break;
		if (o > used || used > n) {
			rc = -999; /* the in-place contract is broken */
			break;
		}
		buf_add(out, tmp, o);
		i += used;
		*used_total += used;
		if (used < n && !c.done) {
			rc = -998; /* stopped early without being done */
			break;
		}
	}
	*done = c.done;
	free(tmp);
	return rc;
}

static void test_chunked_good(void)
{
	static const char s[] = "5\r\nhello\r\n1;ext=\"a b\"\r\n \r\n"
	                        "A\r\n0123456789\r\n"
	                        "0\r\nX-Trailer: 1\r\nY: 2\r\n\r\n"
	                        "GARBAGE AFTER";
	struct buf out = BUF_INIT(1 << 20);
	size_t steps[] = {1, 2, 3, 7, 1000}, i, used;
	int done;

	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		is_int(dechunk(s, sizeof(s) - 1, steps[i], &out, &used, &done), 0,
		       "decodes fed %zu bytes at a time", steps[i]);
		is_str(out.p, "hello 0123456789", "the body (step %zu)", steps[i]);
		ok(done, "done (step %zu)", steps[i]);
		is_int(used, sizeof(s) - 1 - strlen("GARBAGE AFTER"),
		       "bytes after the end are not consumed (step %zu)", steps[i]);
	}
	is_int(dechunk("3\nabc\n0\n\n", 10, 1, &out, &used, &done), 0, "bare LF line ends");
	is_str(out.p, "abc", "body with bare LFs");
	ok(done, "done with bare LFs");

	is_int(dechunk("00000000000000Ff\r\n", 18, 4, &out, &used, &done), 0,
	       "16 hex digits, mixed case");
	ok(!done, "waiting for 255 bytes of data");

	is_int(dechunk("0\r\n\r\n", 5, 1, &out, &used, &done), 0, "an empty body");
	ok(done && out.len == 0, "nothing, and done");

	is_int(dechunk("3\r\nab", 5, 1, &out, &used, &done), 0, "a body cut short");
	ok(!done && out.len == 2, "two bytes so far, not done");
	buf_release(&out);
}

static void test_chunked_bad(void)
{
	static const char *const bad[] = {
	        "\r\n",
	        "x\r\n",
	        "-1\r\n",
	        "+1\r\n",
	        "0x5\r\n",
	        "5 \r\nhello\r\n",       /* fine so far ... */
	        "5\r\nhelloX\r\n",       /* no CRLF after the data */
	        "5\r\nhello\rX",         /* CR then junk */
	        "5\rX",                  /* CR then junk in the size line */
	        "12345678901234567\r\n", /* 17 hex digits */
	        "5;a\x01\r\n",           /* a control in an extension */
	        "0\r\nX: a\x01\r\n\r\n",
	        "0\r\n\rX",
	};
	struct buf out = BUF_INIT(1 << 20);
	size_t i, used, n;
	char *big;
	int done, rc;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rc = dechunk(bad[i], strlen(bad[i]), 1, &out, &used, &done);
		if (i == 5) {
			ok(rc == 0 && !done, "a space before CRLF is an (empty) extension");
			continue;
		}
		is_int(rc, -EBADMSG, "refused #%zu", i);
	}

	/* An endless chunk extension. */
	n = 10000;
	big = malloc(n);
	memset(big, 'e', n);
	memcpy(big, "5;", 2);
	is_int(dechunk(big, n, 100, &out, &used, &done), -EBADMSG,
	       "an over-long size line is refused");
	/* An endless trailer. */
	n = (64 << 10) + 1000;
	big = realloc(big, n);
	memset(big, 'T', n);
	memcpy(big, "0\r\n", 3);
	for (i = 100; i < n; i += 100)
		big[i] = '\n';
	is_int(dechunk(big, n, 4096, &out, &used, &done), -EBADMSG,
	       "an endless trailer is refused");
	free(big);
	buf_release(&out);
}

/* Random bytes and mutated valid streams: never more output than input, no crash (the
 * ASan build checks every access). */
static void test_chunked_random(void)
{
	static const char good[] = "4\r\nwiki\r\n6;x=y\r\npedia \r\nE\r\nin \r\n\r\nchunks.\r\n"
	                           "0\r\nT: v\r\n\r\n";
	struct buf out = BUF_INIT(1 << 20);
	char s[256];
	size_t used, n, i, bad_contract = 0;
	unsigned seed = 12345;
	int done, rc, k;

	for (k = 0; k < 20000; k++) {
		if (k % 2) {
			n = (size_t)(rand_r(&seed) % sizeof(s));
			for (i = 0; i < n; i++)
				s[i] = "0123456789abcdefXx;\r\n \t"[rand_r(&seed) % 24];
		} else {
			n = sizeof(good) - 1;
			memcpy(s, good, n);
			for (i = 0; i < 3; i++)
				s[rand_r(&seed) % n] = (char)(rand_r(&seed) & 0xff);
		}
		rc = dechunk(s, n, 1 + (size_t)(rand_r(&seed) % 9), &out, &used, &done);
		if (rc == -999 || rc == -998 || out.len > n || used > n)
			bad_contract++;
	}
	is_int(bad_contract, 0, "20000 random and mutated streams keep the in-place contract");
	buf_release(&out);
}

int main(void)
{
	plan_run(test_url_good);
	plan_run(test_url_bad);
	plan_run(test_resolve);
	plan_run(test_head_good);
	plan_run(test_head_bad);
	plan_run(test_chunked_good);
	plan_run(test_chunked_bad);
	plan_run(test_chunked_random);
	return done_testing();
}
