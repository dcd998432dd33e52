#ifndef SKIFF_FETCH_INTERNAL_H
#define SKIFF_FETCH_INTERNAL_H

/*
 * The download manager's parts, shared by bootstrap/fetch*.c and the unit tests:
 * the URL and HTTP/1.1 response parsers and the chunked decoder (fetch_http.c, pure code,
 * no I/O), and the TLS connection (fetch_tls.c).
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/buf.h"

#define HTTP_URL_MAX 4096
#define HTTP_HOST_MAX 256
#define HTTP_HEAD_MAX (64 << 10)

/* --- URLs (fetch_http.c) ------------------------------------------------------------- */

struct http_url {
	char scheme[8];                   /* "https" (lowercased) */
	char host[HTTP_HOST_MAX];         /* lowercased; an IPv6 literal without its brackets */
	char port[6];                     /* decimal, "443" when the URL has none */
	int ipv6;                         /* host was a bracketed literal */
	char target[HTTP_URL_MAX];        /* path and query, "/" when empty; no fragment */
	char hostport[HTTP_HOST_MAX + 8]; /* the Host header: "h", "h:8443", "[::1]:8443" */
};

/*
 * Parses an absolute http(s) URL. Refuses user info, control characters and spaces
 * anywhere, bad ports, hosts with characters outside letters, digits, '-', '.', '_'.
 * 0 or -EINVAL with a message in err (may be NULL). Any scheme is parsed; the caller
 * decides which it accepts.
 */
int http_url_parse(const char *s, struct http_url *u, struct buf *err);
/*
 * Resolves a Location header value against the URL that sent it into out (size
 * HTTP_URL_MAX): absolute URLs, "//host/...", "/path" and relative paths. 0 or -EINVAL.
 */
int http_url_resolve(const struct http_url *base, const char *loc, char *out, size_t size);

/* --- response head (fetch_http.c) ----------------------------------------------------- */

struct http_resp {
	int status;      /* 100..599 */
	char reason[64]; /* the reason phrase, cut to fit */
	int chunked;     /* Transfer-Encoding: chunked (wins over Content-Length) */
	int has_length;  /* Content-Length was given (and no chunked) */
	uint64_t length;
	char location[HTTP_URL_MAX]; /* "" when absent */
};

/*
 * Looks for a complete response head (status line, headers, empty line; CRLF or bare LF
 * line ends) at the start of p[0..len). Returns 0 and sets *head_len to its length
 * including the empty line; -EAGAIN when the head is not complete yet (and len is under
 * HTTP_HEAD_MAX); -E2BIG when it is longer than HTTP_HEAD_MAX; -EBADMSG for anything
 * malformed (message in err): a bad status line, a header line without a colon or with
 * a space before it, obsolete line folding, control characters, a bad or conflicting
 * Content-Length, a Transfer-Encoding other than chunked, an over-long Location.
 */
int http_parse_head(const char *p, size_t len, struct http_resp *r, size_t *head_len,
                    struct buf *err);

/* --- chunked transfer coding (fetch_http.c) --------------------------------------------- */

struct http_chunked {
	int state;
	uint64_t left;   /* bytes left in the current chunk */
	size_t line_len; /* length of the size/extension/trailer line so far */
	int digits;      /* hex digits in the size so far */
	int done;        /* the last chunk and the trailer were read */
};

void http_chunked_init(struct http_chunked *c);
/*
 * Decodes p[0..len) in place: the chunk data is moved to the front of p and *out_len
 * set to its length (never more than len). Bytes after the end of the body are not
 * consumed: *used says how many input bytes were. State carries over between calls, so
 * the input may be cut anywhere. -EBADMSG for a malformed size line (not hex, over 16
 * digits, a size line or trailer line over 4 KiB, a missing CRLF after the data).
 */
int http_chunked_decode(struct http_chunked *c, char *p, size_t len, size_t *out_len, size_t *used);

/* --- TLS (fetch_tls.c) ---------------------------------------------------------------- */

struct tls_client; /* trusted CAs and the RNG; shared by the connections of one fetch */
struct tls_conn;

/*
 * Loads the CA bundle (PEM; NULL: $SSL_CERT_FILE, else the first system bundle found).
 * 0, or -errno with a message in err (-ENOENT no bundle, -EINVAL nothing parsable).
 */
int tls_client_new(struct tls_client **out, const char *ca_file, struct buf *err);
void tls_client_free(struct tls_client *c);

/*
 * Connects to host:port (every address getaddrinfo gives, in order), handshakes with
 * SNI and verifies the certificate chain and the host name. Every wait is a poll() of
 * at most timeout_ms. 0, or -errno with a message in err: -EACCES for a certificate
 * that does not verify (not worth retrying), -ETIMEDOUT, -ECONNREFUSED, -EPROTO for
 * other TLS failures, -EHOSTUNREACH when the name does not resolve.
 */
int tls_connect(struct tls_client *c, const char *host, const char *port, int timeout_ms,
                struct tls_conn **out, struct buf *err);
int tls_write_all(struct tls_conn *t, const void *p, size_t n, struct buf *err);
/*
 * Reads up to n bytes: > 0 bytes read; 0 at the end of the stream (*clean set when the
 * peer sent close_notify); -ETIMEDOUT, -ECONNRESET, -EPROTO with a message in err.
 */
ssize_t tls_read(struct tls_conn *t, void *p, size_t n, int *clean, struct buf *err);
/* Sends close_notify (best effort, no wait) and frees t. NULL is fine. */
void tls_close(struct tls_conn *t);

#endif
