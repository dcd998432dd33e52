#ifndef SKIFF_FETCH_H
#define SKIFF_FETCH_H

/*
 * The download manager: HTTPS GET into a content-addressed cache, shared by every process
 * on the node. Built on mbedTLS (TLS 1.2), with CA verification and host name checks.
 * Design notes and settings: docs/fetch.md.
 *
 * Cache layout under cache_dir (created when missing):
 *
 *   cache_dir/by-url/<sha256(url)>/<sha256(content)>   the complete file (mode 0644)
 *   cache_dir/by-url/<sha256(url)>/lock                 flock: one download per URL
 *   cache_dir/by-url/<sha256(url)>/.tmp-*               a download in progress
 *   cache_dir/by-url/<sha256(url)>/failed               the last failure, for waiters
 *   cache_dir/slots/slot-<i>                            flock: the global download limit
 *
 * A URL whose directory already holds a complete file (and, with o->sha256 set, the file of
 * that digest) is a cache hit: no request is made. Otherwise the caller takes the URL's
 * lock (blocking), looks again (another process may have finished it meanwhile), then takes
 * one of max_parallel slot locks (blocking until one is free) and downloads to a temp file
 * in the same directory, fsyncs, renames it to its content digest and fsyncs the directory.
 * Locks are flock()s, so a killed process releases them; a temp file it left is removed by
 * the next download of that URL.
 *
 * Only https:// URLs are fetched (redirects too, at most 5). http:// is refused, with no
 * switch to allow it: tests use a real TLS server with a test CA.
 *
 * Blocking: fetch_url() blocks the calling thread for the whole download (lock waits, each
 * attempt bounded by timeout_ms of no progress, backoff between attempts). It opens and
 * closes its own fds (all O_CLOEXEC); it spawns nothing and installs no signal handler.
 * Each retry logs one warning() line (lib/log.h) naming the URL, the error and the wait.
 * SIGPIPE is not raised (sends use MSG_NOSIGNAL). No global state: threads of one process
 * may call it at once (each flock is taken on its own open(), so they exclude each other
 * like separate processes do).
 */

#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"

struct fetch_opts {
	/* PEM bundle of trusted CAs. NULL: $SSL_CERT_FILE when set, else the first system
	 * bundle found: FETCH_SYSTEM_CA_FILE, then the RHEL, openSUSE, Alpine paths. */
	const char *ca_file;
	/* Expected sha256 of the content, 64 hex digits (either case), or NULL. A mismatch
	 * fails without retrying and leaves no file. */
	const char *sha256;
	uint64_t max_bytes; /* size limit of the body; 0: FETCH_DEFAULT_MAX_BYTES */
	int retries;        /* attempts after the first on transient errors; < 0: 3 */
	int timeout_ms;     /* per attempt: connect, handshake, and any stall; <= 0: 30000 */
	int max_parallel;   /* downloads at once across every process on the node; <= 0: 4 */
};

#define FETCH_DEFAULT_MAX_BYTES ((uint64_t)1 << 30)
#define FETCH_DEFAULT_RETRIES 3
#define FETCH_DEFAULT_TIMEOUT_MS 30000
#define FETCH_DEFAULT_MAX_PARALLEL 4
#define FETCH_MAX_REDIRECTS 5
#define FETCH_SYSTEM_CA_FILE "/etc/ssl/certs/ca-certificates.crt"

/* Every field at its default. Note that retries 0 means none, so a zeroed struct gets no
 * retries; start from this. o may also be NULL in fetch_url() for all defaults. */
#define FETCH_OPTS_INIT                                                                            \
	{                                                                                          \
		NULL, NULL, 0, -1, 0, 0                                                            \
	}

/*
 * Fetches url into cache_dir (see above). On success returns 0 and sets *path to the
 * absolute path of the complete file (malloc'd; the caller frees it); the file is never a
 * partial one and is never rewritten afterwards. On failure returns a negative errno code,
 * leaves *path NULL, and puts one line (no "skiff: error:" prefix, no newline) in err, which
 * may be NULL. Codes and messages:
 *
 *   -EINVAL        bad URL or options ("unsupported URL scheme 'http' (only https)"),
 *                  a redirect to http:// ("redirect to a non-https URL refused: URL")
 *   -EACCES        certificate refused ("certificate verify failed for host 'h': ...")
 *   -EBADMSG       sha256 mismatch ("sha256 mismatch: expected X, got Y"; the file is
 *                  removed), or a malformed HTTP response
 *   -EFBIG         body (or the cached file) larger than max_bytes
 *   -ENOENT        HTTP 404 or 410 ("HTTP 404 Not Found from URL"); -EPERM: 401 or 403;
 *                  -EPROTO: another status, a truncated body, a TLS failure
 *   -EIO           HTTP 5xx, 408 or 429 after all attempts ("... (after 4 attempts)")
 *   -ETIMEDOUT     no progress for timeout_ms ("no data for 30000 ms (after 4 attempts)")
 *   -ECONNREFUSED, -ECONNRESET, -EHOSTUNREACH (name does not resolve): after all attempts
 *   -ELOOP         more than FETCH_MAX_REDIRECTS redirects
 *   other -errno   from the file system (creating cache_dir, writing the file)
 *
 * Retried (exponential backoff with jitter, one "skiff: warning:" line per retry):
 * connection errors, timeouts, truncated bodies, TLS errors other than certificate
 * verification, HTTP 408, 429 and 5xx. Everything else fails at once. A process that
 * waited on the URL lock while another process's download failed with a server-side
 * error (not a pin, size or certificate error) gets that error without a new request.
 */
int fetch_url(const char *url, const char *cache_dir, const struct fetch_opts *o, char **path,
              struct buf *err);

#endif
