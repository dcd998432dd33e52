/*
 * `skiff dashboard`'s TLS (mbedTLS, TLS 1.2): the server's certificate and key, given
 * (--cert/--key) or made on first use (a self-signed ECDSA P-256 certificate kept in
 * $SKIFF_HOME/dashboard/, 0600), and each connection's session over its non-blocking
 * socket. See cmd/dashboard.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/ecdsa.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#include <mbedtls/x509_csr.h>

#include "cmd/dashboard.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

/* A made certificate is valid this long from the day it is made. */
#define TLS_CERT_DAYS 825
#define TLS_PEM_MAX ((size_t)64 << 10)

struct dash_tls {
	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
	mbedtls_ssl_config conf;
	mbedtls_x509_crt cert;
	mbedtls_pk_context key;
};

struct dash_tls_conn {
	mbedtls_ssl_context ssl;
	int fd;
};

static int tls_error(int ret, const char *what)
{
	char why[160];

	mbedtls_strerror(ret, why, sizeof(why));
	return error("dashboard TLS: %s: %s", what, why);
}

/* Writes data to path, 0600, through a temp file and a rename. */
static int write_private(const char *path, const unsigned char *data, size_t len)
{
	char *tmp = xasprintf("%s.tmp.%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), r = 0;

	if (fd < 0 || write_all(fd, data, len) || fsync(fd))
		r = error_errno("cannot write '%s'", tmp);
	if (fd >= 0)
		close(fd);
	if (!r && rename(tmp, path))
		r = error_errno("cannot rename '%s'", tmp);
	if (r)
		unlink(tmp);
	free(tmp);
	return r;
}

/* A new ECDSA P-256 key and a self-signed certificate for host into key_path, cert_path. */
static int make_cert(struct dash_tls *t, const char *host, const char *cert_path,
                     const char *key_path)
{
	mbedtls_x509write_cert crt;
	mbedtls_pk_context key;
	mbedtls_mpi serial;
	unsigned char *pem = xmalloc(TLS_PEM_MAX);
	char subject[160], from[16], to[16];
	time_t now = time(NULL), until = now + (time_t)TLS_CERT_DAYS * 86400;
	struct tm a, b;
	unsigned char sn[16];
	int ret;

	mbedtls_pk_init(&key);
	mbedtls_x509write_crt_init(&crt);
	mbedtls_mpi_init(&serial);
	gmtime_r(&now, &a);
	gmtime_r(&until, &b);
	strftime(from, sizeof(from), "%Y%m%d%H%M%S", &a);
	strftime(to, sizeof(to), "%Y%m%d%H%M%S", &b);
	xsnprintf(subject, sizeof(subject), "CN=%s,O=skiff dashboard (self-signed)", host);
	if ((ret = mbedtls_pk_setup(&key, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY))) ||
	    (ret = mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(key),
	                               mbedtls_ctr_drbg_random, &t->drbg))) {
		ret = tls_error(ret, "cannot make a key");
		goto out;
	}
	if ((ret = mbedtls_ctr_drbg_random(&t->drbg, sn, sizeof(sn))))
		goto fail;
	sn[0] &= 0x7f; /* a positive serial */
	if ((ret = mbedtls_mpi_read_binary(&serial, sn, sizeof(sn))))
		goto fail;
	mbedtls_x509write_crt_set_version(&crt, MBEDTLS_X509_CRT_VERSION_3);
	mbedtls_x509write_crt_set_md_alg(&crt, MBEDTLS_MD_SHA256);
	mbedtls_x509write_crt_set_subject_key(&crt, &key);
	mbedtls_x509write_crt_set_issuer_key(&crt, &key);
	if ((ret = mbedtls_x509write_crt_set_subject_name(&crt, subject)) ||
	    (ret = mbedtls_x509write_crt_set_issuer_name(&crt, subject)) ||
	    (ret = mbedtls_x509write_crt_set_serial(&crt, &serial)) ||
	    (ret = mbedtls_x509write_crt_set_validity(&crt, from, to)) ||
	    (ret = mbedtls_x509write_crt_set_basic_constraints(&crt, 0, -1)) ||
	    (ret = mbedtls_x509write_crt_pem(&crt, pem, TLS_PEM_MAX, mbedtls_ctr_drbg_random,
	                                     &t->drbg)))
		goto fail;
	if (write_private(cert_path, pem, strlen((char *)pem))) {
		ret = -1;
		goto out;
	}
	if ((ret = mbedtls_pk_write_key_pem(&key, pem, TLS_PEM_MAX)))
		goto fail;
	ret = write_private(key_path, pem, strlen((char *)pem));
	goto out;
fail:
	ret = tls_error(ret, "cannot make a self-signed certificate");
out:
	mbedtls_platform_zeroize(pem, TLS_PEM_MAX);
	free(pem);
	mbedtls_mpi_free(&serial);
	mbedtls_x509write_crt_free(&crt);
	mbedtls_pk_free(&key);
	return ret ? -1 : 0;
}

int dash_tls_setup(struct dash_tls **out, const char *cert, const char *key, const char *host,
                   char **made)
{
	struct dash_tls *t = xcalloc(1, sizeof(*t));
	char *dir = NULL, *cpath = NULL, *kpath = NULL;
	int ret;

	*out = NULL;
	*made = NULL;
	mbedtls_entropy_init(&t->entropy);
	mbedtls_ctr_drbg_init(&t->drbg);
	mbedtls_ssl_config_init(&t->conf);
	mbedtls_x509_crt_init(&t->cert);
	mbedtls_pk_init(&t->key);
	if ((ret = mbedtls_ctr_drbg_seed(&t->drbg, mbedtls_entropy_func, &t->entropy,
	                                 (const unsigned char *)"skiff-dashboard", 15))) {
		tls_error(ret, "cannot seed the random generator");
		goto fail;
	}
	if (!cert) {
		/* One certificate per host name, made once and kept. */
		struct stat st;

		dir = xasprintf("%s/dashboard", skiff_home());
		cpath = xasprintf("%s/cert-%s.pem", dir, host);
		kpath = xasprintf("%s/key-%s.pem", dir, host);
		if (mkdir_p(dir, 0700)) {
			error_errno("cannot create '%s'", dir);
			goto fail;
		}
		if (stat(cpath, &st) || stat(kpath, &st)) {
			if (make_cert(t, host, cpath, kpath))
				goto fail;
			*made = xstrdup(cpath);
		}
		cert = cpath;
		key = kpath;
	}
	if ((ret = mbedtls_x509_crt_parse_file(&t->cert, cert))) {
		tls_error(ret, cert);
		goto fail;
	}
	if ((ret = mbedtls_pk_parse_keyfile(&t->key, key, NULL))) {
		tls_error(ret, key);
		goto fail;
	}
	if ((ret = mbedtls_ssl_config_defaults(&t->conf, MBEDTLS_SSL_IS_SERVER,
	                                       MBEDTLS_SSL_TRANSPORT_STREAM,
	                                       MBEDTLS_SSL_PRESET_DEFAULT)) ||
	    (ret = mbedtls_ssl_conf_own_cert(&t->conf, &t->cert, &t->key))) {
		tls_error(ret, "cannot configure the server");
		goto fail;
	}
	mbedtls_ssl_conf_rng(&t->conf, mbedtls_ctr_drbg_random, &t->drbg);
	mbedtls_ssl_conf_min_version(&t->conf, MBEDTLS_SSL_MAJOR_VERSION_3,
	                             MBEDTLS_SSL_MINOR_VERSION_3); /* TLS 1.2 */
	mbedtls_ssl_conf_renegotiation(&t->conf, MBEDTLS_SSL_RENEGOTIATION_DISABLED);
	free(dir);
	free(cpath);
	free(kpath);
	*out = t;
	return 0;
fail:
	free(dir);
	free(cpath);
	free(kpath);
	free(*made);
	*made = NULL;
	dash_tls_free(t);
	return -1;
}

void dash_tls_free(struct dash_tls *t)
{
	if (!t)
		return;
	mbedtls_pk_free(&t->key);
	mbedtls_x509_crt_free(&t->cert);
	mbedtls_ssl_config_free(&t->conf);
	mbedtls_ctr_drbg_free(&t->drbg);
	mbedtls_entropy_free(&t->entropy);
	free(t);
}

static int bio_send(void *ctx, const unsigned char *p, size_t n)
{
	struct dash_tls_conn *c = ctx;
	ssize_t r = send(c->fd, p, n, MSG_NOSIGNAL);

	if (r >= 0)
		return (int)r;
	return errno == EAGAIN || errno == EINTR ? MBEDTLS_ERR_SSL_WANT_WRITE
	                                         : MBEDTLS_ERR_NET_SEND_FAILED;
}

static int bio_recv(void *ctx, unsigned char *p, size_t n)
{
	struct dash_tls_conn *c = ctx;
	ssize_t r = recv(c->fd, p, n, 0);

	if (r >= 0)
		return (int)r;
	return errno == EAGAIN || errno == EINTR ? MBEDTLS_ERR_SSL_WANT_READ
	                                         : MBEDTLS_ERR_NET_RECV_FAILED;
}

struct dash_tls_conn *dash_tls_accept(struct dash_tls *t, int fd)
{
	struct dash_tls_conn *c = xcalloc(1, sizeof(*c));

	c->fd = fd;
	mbedtls_ssl_init(&c->ssl);
	if (mbedtls_ssl_setup(&c->ssl, &t->conf)) {
		mbedtls_ssl_free(&c->ssl);
		free(c);
		return NULL;
	}
	mbedtls_ssl_set_bio(&c->ssl, c, bio_send, bio_recv, NULL);
	return c;
}

static ssize_t result(int r)
{
	if (r >= 0)
		return r;
	if (r == MBEDTLS_ERR_SSL_WANT_READ || r == MBEDTLS_ERR_SSL_WANT_WRITE)
		return -EAGAIN;
	if (r == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY || r == MBEDTLS_ERR_SSL_CONN_EOF)
		return 0;
	return -EIO;
}

ssize_t dash_tls_read(struct dash_tls_conn *c, void *p, size_t n)
{
	return result(mbedtls_ssl_read(&c->ssl, p, n));
}

ssize_t dash_tls_write(struct dash_tls_conn *c, const void *p, size_t n)
{
	return result(mbedtls_ssl_write(&c->ssl, p, n));
}

size_t dash_tls_pending(struct dash_tls_conn *c)
{
	return mbedtls_ssl_get_bytes_avail(&c->ssl);
}

void dash_tls_close(struct dash_tls_conn *c)
{
	if (!c)
		return;
	mbedtls_ssl_close_notify(&c->ssl);
	mbedtls_ssl_free(&c->ssl);
	free(c);
}
