/*
 * The download manager's TLS client on mbedTLS 2.28: TLS 1.2, the peer's chain verified
 * against a PEM bundle, the host name sent as SNI and checked against the certificate.
 *
 * The socket is non-blocking and mbedTLS talks to it through our own send/recv callbacks,
 * which answer WANT_READ / WANT_WRITE instead of blocking; every wait is then one poll()
 * bounded by the timeout, so a server that stalls at any point (connect, handshake, body)
 * costs at most timeout_ms per wait. mbedTLS error codes become errno codes here, once.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

#include "bootstrap/fetch/fetch.h"
#include "bootstrap/fetch/fetch_internal.h"
#include "lib/buf.h"
#include "lib/util.h"
#include "lib/banned.h"

struct tls_client {
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
	mbedtls_x509_crt ca;
	mbedtls_ssl_config conf;
};

struct tls_conn {
	mbedtls_ssl_context ssl;
	int fd;
	int timeout_ms;
	int sys_errno; /* errno of the last failed send/recv */
};

/* Where distributions keep their CA bundle; the first that exists is used. */
static const char *const system_bundles[] = {
        FETCH_SYSTEM_CA_FILE,               /* Debian, Ubuntu, Alpine, Arch */
        "/etc/pki/tls/certs/ca-bundle.crt", /* Fedora, RHEL, CentOS */
        "/etc/ssl/ca-bundle.pem",           /* openSUSE */
        "/etc/ssl/cert.pem",                /* Alpine, macOS-like layouts */
};

static void set_err(struct buf *err, const char *fmt, ...) SKIFF_PRINTF(2, 3);
static void set_err(struct buf *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	buf_reset(err);
	va_start(ap, fmt);
	buf_vaddf(err, fmt, ap);
	va_end(ap);
}

static void mbed_msg(int ret, char *out, size_t size)
{
	mbedtls_strerror(ret, out, size);
}

int tls_client_new(struct tls_client **out, const char *ca_file, struct buf *err)
{
	static const char pers[] = "skiff-fetch";
	struct tls_client *c;
	char msg[160];
	size_t i;
	int ret;

	*out = NULL;
	if (!ca_file || !*ca_file) {
		ca_file = getenv("SSL_CERT_FILE");
		if (!ca_file || !*ca_file) {
			ca_file = NULL;
			for (i = 0; i < ARRAY_SIZE(system_bundles) && !ca_file; i++)
				if (!access(system_bundles[i], R_OK))
					ca_file = system_bundles[i];
			if (!ca_file) {
				set_err(err,
				        "no CA bundle found (looked for %s and 3 other system paths; "
				        "set a CA file or $SSL_CERT_FILE)",
				        FETCH_SYSTEM_CA_FILE);
				return -ENOENT;
			}
		}
	}
	if (access(ca_file, R_OK)) {
		ret = -errno;
		set_err(err, "cannot read CA file '%s': %s", ca_file, strerror(errno));
		return ret;
	}

	c = xcalloc(1, sizeof(*c));
	mbedtls_entropy_init(&c->entropy);
	mbedtls_ctr_drbg_init(&c->drbg);
	mbedtls_x509_crt_init(&c->ca);
	mbedtls_ssl_config_init(&c->conf);

	ret = mbedtls_ctr_drbg_seed(&c->drbg, mbedtls_entropy_func, &c->entropy,
	                            (const unsigned char *)pers, sizeof(pers) - 1);
	if (ret) {
		mbed_msg(ret, msg, sizeof(msg));
		set_err(err, "cannot seed the random generator: %s", msg);
		ret = -EIO;
		goto fail;
	}
	/* A positive return counts certificates that did not parse; a bundle with some
	 * unparsable entries is still usable as long as one parsed. */
	ret = mbedtls_x509_crt_parse_file(&c->ca, ca_file);
	if (ret < 0 || !c->ca.version) {
		if (ret < 0)
			mbed_msg(ret, msg, sizeof(msg));
		else
			xsnprintf(msg, sizeof(msg), "no certificate in it");
		set_err(err, "cannot load CA file '%s': %s", ca_file, msg);
		ret = -EINVAL;
		goto fail;
	}
	ret = mbedtls_ssl_config_defaults(&c->conf, MBEDTLS_SSL_IS_CLIENT,
	                                  MBEDTLS_SSL_TRANSPORT_STREAM, MBEDTLS_SSL_PRESET_DEFAULT);
	if (ret) {
		mbed_msg(ret, msg, sizeof(msg));
		set_err(err, "cannot set up TLS: %s", msg);
		ret = -EIO;
		goto fail;
	}
	mbedtls_ssl_conf_authmode(&c->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
	mbedtls_ssl_conf_ca_chain(&c->conf, &c->ca, NULL);
	mbedtls_ssl_conf_rng(&c->conf, mbedtls_ctr_drbg_random, &c->drbg);
	mbedtls_ssl_conf_min_version(&c->conf, MBEDTLS_SSL_MAJOR_VERSION_3,
	                             MBEDTLS_SSL_MINOR_VERSION_3); /* TLS 1.2 */
	*out = c;
	return 0;
fail:
	tls_client_free(c);
	return ret;
}

void tls_client_free(struct tls_client *c)
{
	if (!c)
		return;
	mbedtls_ssl_config_free(&c->conf);
	mbedtls_x509_crt_free(&c->ca);
	mbedtls_ctr_drbg_free(&c->drbg);
	mbedtls_entropy_free(&c->entropy);
	free(c);
}

static int bio_send(void *ctx, const unsigned char *p, size_t n)
{
	struct tls_conn *t = ctx;
	ssize_t r = send(t->fd, p, n, MSG_NOSIGNAL);

	if (r >= 0)
		return (int)r;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return MBEDTLS_ERR_SSL_WANT_WRITE;
	t->sys_errno = errno;
	return errno == EPIPE || errno == ECONNRESET ? MBEDTLS_ERR_NET_CONN_RESET
	                                             : MBEDTLS_ERR_NET_SEND_FAILED;
}

static int bio_recv(void *ctx, unsigned char *p, size_t n)
{
	struct tls_conn *t = ctx;
	ssize_t r = recv(t->fd, p, n, 0);

	if (r >= 0)
		return (int)r;
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return MBEDTLS_ERR_SSL_WANT_READ;
	t->sys_errno = errno;
	return errno == ECONNRESET ? MBEDTLS_ERR_NET_CONN_RESET : MBEDTLS_ERR_NET_RECV_FAILED;
}

/* One poll for fd, at most timeout_ms; 0 when ready, -ETIMEDOUT, -errno. */
static int wait_fd(int fd, short events, int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms, left;
	struct pollfd pfd = {.fd = fd, .events = events};
	int r;

	for (;;) {
		left = deadline - now_ms();
		if (left < 0)
			left = 0;
		r = poll(&pfd, 1, (int)left);
		if (r > 0)
			return 0;
		if (r == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

static int connect_one(const struct addrinfo *ai, int timeout_ms, int *fd_out)
{
	socklen_t len = sizeof(int);
	int fd, rc, soerr = 0;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
	if (fd < 0)
		return -errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS) {
		rc = -errno;
		goto fail;
	}
	rc = wait_fd(fd, POLLOUT, timeout_ms);
	if (rc)
		goto fail;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len)) {
		rc = -errno;
		goto fail;
	}
	if (soerr) {
		rc = -soerr;
		goto fail;
	}
	*fd_out = fd;
	return 0;
fail:
	close(fd);
	return rc;
}

/* Waits for what mbedTLS asked for; maps its code otherwise. 1: try again. */
static int want(struct tls_conn *t, int ret, struct buf *err)
{
	int rc;

	if (ret != MBEDTLS_ERR_SSL_WANT_READ && ret != MBEDTLS_ERR_SSL_WANT_WRITE)
		return 0;
	rc = wait_fd(t->fd, ret == MBEDTLS_ERR_SSL_WANT_READ ? POLLIN : POLLOUT, t->timeout_ms);
	if (rc && rc != -ETIMEDOUT)
		set_err(err, "poll: %s", strerror(-rc));
	return rc ? rc : 1;
}

static int conn_error(struct tls_conn *t, int ret, const char *what, struct buf *err)
{
	char msg[160];

	if (ret == MBEDTLS_ERR_NET_CONN_RESET) {
		set_err(err, "connection reset during %s", what);
		return -ECONNRESET;
	}
	if ((ret == MBEDTLS_ERR_NET_RECV_FAILED || ret == MBEDTLS_ERR_NET_SEND_FAILED) &&
	    t->sys_errno) {
		set_err(err, "%s failed: %s", what, strerror(t->sys_errno));
		return -t->sys_errno;
	}
	mbed_msg(ret, msg, sizeof(msg));
	set_err(err, "%s failed: %s", what, msg);
	return -EPROTO;
}

/* The certificate checks' result as one line: mbedTLS writes one line per problem. */
static void verify_message(uint32_t flags, char *out, size_t size)
{
	char *p;

	if (mbedtls_x509_crt_verify_info(out, size, "", flags) < 0 || !*out) {
		xsnprintf(out, size, "verification flags 0x%x", (unsigned)flags);
		return;
	}
	p = out + strlen(out);
	while (p > out && (p[-1] == '\n' || p[-1] == ' '))
		*--p = '\0';
	for (p = out; *p; p++)
		if (*p == '\n')
			*p = ';';
}

int tls_connect(struct tls_client *c, const char *host, const char *port, int timeout_ms,
                struct tls_conn **out, struct buf *err)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL, *ai;
	struct tls_conn *t = NULL;
	char msg[512];
	int rc, ret, fd = -1;

	*out = NULL;
	/* getaddrinfo() has no timeout; it is bounded by the resolver's own settings. */
	ret = getaddrinfo(host, port, &hints, &res);
	if (ret) {
		set_err(err, "cannot resolve host '%s': %s", host, gai_strerror(ret));
		return -EHOSTUNREACH;
	}
	rc = -EHOSTUNREACH;
	for (ai = res; ai; ai = ai->ai_next) {
		rc = connect_one(ai, timeout_ms, &fd);
		if (!rc)
			break;
	}
	freeaddrinfo(res);
	if (rc) {
		set_err(err, "cannot connect to %s:%s: %s", host, port,
		        rc == -ETIMEDOUT ? "timed out" : strerror(-rc));
		return rc;
	}

	t = xcalloc(1, sizeof(*t));
	t->fd = fd;
	t->timeout_ms = timeout_ms;
	mbedtls_ssl_init(&t->ssl);
	ret = mbedtls_ssl_setup(&t->ssl, &c->conf);
	if (!ret)
		ret = mbedtls_ssl_set_hostname(&t->ssl, host); /* SNI and the name check */
	if (ret) {
		mbed_msg(ret, msg, sizeof(msg));
		set_err(err, "cannot set up TLS: %s", msg);
		rc = -EIO;
		goto fail;
	}
	mbedtls_ssl_set_bio(&t->ssl, t, bio_send, bio_recv, NULL);
	while ((ret = mbedtls_ssl_handshake(&t->ssl))) {
		rc = want(t, ret, err);
		if (rc == 1)
			continue;
		if (rc == -ETIMEDOUT) {
			set_err(err, "TLS handshake with %s:%s timed out", host, port);
			goto fail;
		}
		if (rc)
			goto fail;
		if (ret == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED) {
			verify_message(mbedtls_ssl_get_verify_result(&t->ssl), msg, sizeof(msg));
			set_err(err, "certificate verify failed for host '%s': %s", host, msg);
			rc = -EACCES;
		} else {
			rc = conn_error(t, ret, "TLS handshake", err);
		}
		goto fail;
	}
	*out = t;
	return 0;
fail:
	mbedtls_ssl_free(&t->ssl);
	close(t->fd);
	free(t);
	return rc;
}

int tls_write_all(struct tls_conn *t, const void *p, size_t n, struct buf *err)
{
	const unsigned char *s = p;
	int ret, rc;

	while (n) {
		ret = mbedtls_ssl_write(&t->ssl, s, n);
		if (ret > 0) {
			s += ret;
			n -= (size_t)ret;
			continue;
		}
		rc = want(t, ret, err);
		if (rc == 1)
			continue;
		if (rc == -ETIMEDOUT)
			set_err(err, "sending the request timed out");
		return rc ? rc : conn_error(t, ret, "sending the request", err);
	}
	return 0;
}

ssize_t tls_read(struct tls_conn *t, void *p, size_t n, int *clean, struct buf *err)
{
	int ret, rc;

	*clean = 0;
	for (;;) {
		ret = mbedtls_ssl_read(&t->ssl, p, n);
		if (ret > 0)
			return ret;
		if (ret == 0 || ret == MBEDTLS_ERR_SSL_CONN_EOF)
			return 0;
		if (ret == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY) {
			*clean = 1;
			return 0;
		}
		rc = want(t, ret, err);
		if (rc == 1)
			continue;
		if (rc == -ETIMEDOUT)
			set_err(err, "no data for %d ms", t->timeout_ms);
		return rc ? rc : conn_error(t, ret, "reading the response", err);
	}
}

void tls_close(struct tls_conn *t)
{
	if (!t)
		return;
	(void)mbedtls_ssl_close_notify(&t->ssl); /* non-blocking: may not all go out */
	mbedtls_ssl_free(&t->ssl);
	close(t->fd);
	free(t);
}
