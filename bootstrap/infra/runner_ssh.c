/*
 * The SSH runner: the system OpenSSH client. Every option it passes, and why, is in
 * docs/bootstrap.md; the short version is next to each one below.
 *
 * The remote side: sshd runs the user's login shell as `SHELL -c STRING`, where STRING
 * is ssh's remaining arguments joined with spaces. So we pass exactly one: the text
 * `sh -c 'SCRIPT'`, with SCRIPT quoted by sh_quote(), which the login shell (any POSIX
 * shell: sh, dash, bash, zsh, busybox ash, ksh) parses back into the exact bytes.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap/infra/runner.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "lib/quote.h"
#include "lib/self.h"
#include "lib/sha256.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "lib/banned.h"

/*
 * A Unix socket path holds 107 bytes (108 with the NUL). ssh binds its ControlPath as
 * "PATH.XXXXXXXXXXXXXXXX" (17 more bytes) and then renames it. The socket's name is
 * ours (CONTROL_NAME_LEN hex digits of a sha256 of the target, see control_path()), so
 * that we know where it is; we leave room for a 64-digit one.
 */
#define SUN_PATH_MAX 107
#define CONTROL_HASH_MAX 64
#define CONTROL_NAME_LEN 40
#define CONTROL_TEMP_SUFFIX 17
#define CONTROL_DIR_MAX (SUN_PATH_MAX - 1 - CONTROL_HASH_MAX - CONTROL_TEMP_SUFFIX)

struct ssh {
	char *host, *user, *identity, *proxy, *config;
	int port;
	char *sock_dir;    /* where ControlPath sockets go */
	char *control;     /* this target's ControlPath: sock_dir/NAME */
	char *known_hosts; /* our own known_hosts file */
};

/* A host, user or jump host as ssh's command line takes it: no option, no blanks. */
static int valid_word(const char *s)
{
	const unsigned char *p;

	if (!s || !*s || *s == '-')
		return 0;
	for (p = (const unsigned char *)s; *p; p++)
		if (*p <= ' ' || *p == 0x7f)
			return 0;
	return 1;
}

/*
 * A path ssh takes as an -o value without expanding or splitting it: ssh_config values
 * are split at blanks (with "..." quoting) and expand %tokens and a leading ~.
 */
static int plain_path(const char *s)
{
	const unsigned char *p;

	if (!s || *s != '/')
		return 0;
	for (p = (const unsigned char *)s; *p; p++)
		if (*p <= ' ' || *p == 0x7f || strchr("\"'\\%", *p))
			return 0;
	return 1;
}

/* /tmp/skiff-ssh.UID, 0700, ours: where sockets go when control_dir cannot hold them. */
static char *fallback_dir(void)
{
	char *d = xasprintf("/tmp/skiff-ssh.%ld", (long)geteuid());
	int rc = ensure_private_dir(d);

	if (rc) {
		errno = -rc;
		error_errno("cannot use '%s' for ssh's control sockets", d);
		free(d);
		return NULL;
	}
	return d;
}

/* -i FILE expands %tokens: a literal % is %%. */
static void push_percent_escaped(struct argv *out, const char *s)
{
	struct buf b = BUF_INIT(0);

	for (; *s; s++) {
		if (*s == '%')
			buf_addch(&b, '%');
		buf_addch(&b, *s);
	}
	argv_push(out, b.p);
	buf_release(&b);
}

/* Where and as whom: config, port, identity, jump host, user. */
static void push_target(struct argv *out, const struct ssh *s)
{
	if (s->config) {
		argv_push(out, "-F");
		argv_push(out, s->config);
	}
	if (s->port) {
		argv_push(out, "-p");
		argv_pushf(out, "%d", s->port);
	}
	if (s->identity) {
		argv_push(out, "-i");
		push_percent_escaped(out, s->identity);
		argv_push(out, "-o");
		argv_push(out, "IdentitiesOnly=yes");
	}
	if (s->proxy) {
		argv_push(out, "-J");
		argv_push(out, s->proxy);
	}
	if (s->user) {
		argv_push(out, "-l");
		argv_push(out, s->user);
	}
}

static void push_opt(struct argv *out, const char *opt)
{
	argv_push(out, "-o");
	argv_push(out, opt);
}

/*
 * The ControlPath of a target: every option that makes ssh reach another account or
 * another way (host, port, user, identity, jump host, config file) is in its name.
 */
static char *control_path(const struct ssh *s)
{
	struct buf key = BUF_INIT(0);
	char hex[SHA256_HEX_LEN + 1];

	buf_addf(&key, "skiff-ssh-control 1%c%s%c%d%c%s%c%s%c%s%c%s", 0, s->host, 0, s->port, 0,
	         s->user ? s->user : "", 0, s->identity ? s->identity : "", 0,
	         s->proxy ? s->proxy : "", 0, s->config ? s->config : "");
	sha256_hex(key.p, key.len, hex);
	buf_release(&key);
	hex[CONTROL_NAME_LEN] = '\0';
	return xasprintf("%s/%s", s->sock_dir, hex);
}

/* A master is listening there (or was: a stale socket makes __ssh-mux run ssh). */
static int master_up(const struct ssh *s)
{
	struct stat st;

	return !stat(s->control, &st) && S_ISSOCK(st.st_mode);
}

static int ssh_build_argv(struct runner *r, const char *script, int interactive, struct argv *out)
{
	const struct ssh *s = r->priv;
	struct buf cmd = BUF_INIT(0);
	const char *self;
	int rc;

	if (!script && !interactive)
		return -EINVAL;
	if (script) {
		/* exec: the login shell becomes sh, one fork fewer per call. */
		buf_adds(&cmd, "exec sh -c ");
		rc = sh_quote(&cmd, script);
		if (rc) {
			buf_release(&cmd);
			return rc;
		}
	}
	/*
	 * Over a running master, skiff itself asks it for the session: starting ssh costs
	 * more than the rest of a call. The ssh command follows, for when that fails.
	 */
	self = script && !interactive && master_up(s) ? self_exec_path() : NULL;
	if (self) {
		argv_push(out, self);
		argv_push(out, "__ssh-mux");
		if (r->diag_path) {
			argv_push(out, "-E");
			argv_push(out, r->diag_path);
		}
		argv_push(out, s->control);
		argv_push(out, cmd.p);
		argv_push(out, "--");
	}
	argv_push(out, "ssh");
	/* -T: no terminal, so bytes on stdin arrive as they are (binaries, tar streams). */
	argv_push(out, interactive ? "-tt" : "-T");
	/* Never prompt (passwords, passphrases): a prompt would hang a batch call. */
	if (!interactive)
		push_opt(out, "BatchMode=yes");
	/* Trust on first use, pinned in our own file; a changed key is refused. */
	push_opt(out, "StrictHostKeyChecking=" SSH_HOST_KEY_CHECKING);
	argv_push(out, "-o");
	argv_pushf(out, "UserKnownHostsFile=%s", s->known_hosts);
	/* A node that does not answer fails in seconds... */
	argv_push(out, "-o");
	argv_pushf(out, "ConnectTimeout=%d", SSH_CONNECT_TIMEOUT_S);
	/*
	 * ...and so does one that stops answering: without these a master on a dead link
	 * waits forever. 3 s x 3: silent for ~12 s is dead (any data from the node, such as
	 * the window updates of an upload, counts as an answer).
	 */
	argv_push(out, "-o");
	argv_pushf(out, "ServerAliveInterval=%d", SSH_ALIVE_INTERVAL_S);
	argv_push(out, "-o");
	argv_pushf(out, "ServerAliveCountMax=%d", SSH_ALIVE_COUNT_MAX);
	/* One TCP+SSH handshake per node, shared by every call for 5 minutes. */
	push_opt(out, "ControlMaster=auto");
	argv_push(out, "-o");
	argv_pushf(out, "ControlPath=%s", s->control);
	argv_push(out, "-o");
	argv_pushf(out, "ControlPersist=%d", SSH_CONTROL_PERSIST_S);
	/* curve25519 first: the post-quantum default costs ~110 ms of CPU per handshake. */
	push_opt(out, "KexAlgorithms=" SSH_KEX_ALGORITHMS);
	/* AES-GCM first: a fraction of chacha20-poly1305's CPU per byte (runner.h). */
	push_opt(out, "Ciphers=" SSH_CIPHERS);
	/* INFO: ssh logs every failure to connect or stay connected (see runner.h). */
	push_opt(out, "LogLevel=INFO");
	if (r->diag_path) {
		argv_push(out, "-E");
		argv_push(out, r->diag_path);
	}
	push_target(out, s);
	argv_push(out, "--");
	argv_push(out, s->host);
	if (script)
		argv_push(out, cmd.p);
	buf_release(&cmd);
	return 0;
}

static void ssh_release(struct runner *r)
{
	struct ssh *s = r->priv;

	if (s) {
		free(s->host);
		free(s->user);
		free(s->identity);
		free(s->proxy);
		free(s->config);
		free(s->sock_dir);
		free(s->control);
		free(s->known_hosts);
		free(s);
	}
	r->priv = NULL;
}

static const struct runner_ops ssh_ops = {
        .kind = "ssh",
        .build_argv = ssh_build_argv,
        .build_env = NULL,
        .release = ssh_release,
        .cwd = NULL,
        .transport_status = 255,
};

static char *dup_or_null(const char *s)
{
	return s && *s ? xstrdup(s) : NULL;
}

struct runner *runner_ssh_new(const char *name, const struct ssh_target *t)
{
	char abs[PATH_MAX];
	struct runner *r = NULL;
	struct ssh *s = NULL;
	const char *dir = NULL;
	int rc;

	if (!valid_word(t->host) || (t->user && *t->user && !valid_word(t->user)) ||
	    (t->proxy_jump && *t->proxy_jump && !valid_word(t->proxy_jump))) {
		error("node %s: bad ssh target (host '%s', user '%s', jump host '%s'): empty, "
		      "starting with '-', or with blanks or control characters",
		      name, t->host ? t->host : "", t->user ? t->user : "",
		      t->proxy_jump ? t->proxy_jump : "");
		return NULL;
	}
	if (t->port < 0 || t->port > 65535) {
		error("node %s: bad ssh port %d", name, t->port);
		return NULL;
	}
	s = xcalloc(1, sizeof(*s));
	if (t->control_dir && *t->control_dir) {
		rc = ensure_private_dir(t->control_dir);
		if (rc) {
			errno = -rc;
			error_errno("node %s: cannot use '%s' for ssh's control files", name,
			            t->control_dir);
			goto fail;
		}
		if (!realpath(t->control_dir, abs)) {
			error_errno("node %s: cannot resolve '%s'", name, t->control_dir);
			goto fail;
		}
		dir = abs;
	}
	if (dir && plain_path(dir) && strlen(dir) <= CONTROL_DIR_MAX) {
		s->sock_dir = xstrdup(dir);
	} else {
		s->sock_dir = fallback_dir();
		if (!s->sock_dir)
			goto fail;
		if (dir)
			debug("node %s: control dir '%s' is too long for a socket path (or has "
			      "characters ssh expands); sockets go to '%s'",
			      name, dir, s->sock_dir);
	}
	s->known_hosts = xasprintf("%s/known_hosts", dir && plain_path(dir) ? dir : s->sock_dir);
	s->host = xstrdup(t->host);
	s->user = dup_or_null(t->user);
	s->identity = dup_or_null(t->identity_file);
	s->proxy = dup_or_null(t->proxy_jump);
	s->config = dup_or_null(t->ssh_config);
	s->port = t->port;
	s->control = control_path(s);
	r = runner_new(&ssh_ops, name, t->host);
	r->priv = s;
	r->diag_dir = xstrdup(s->sock_dir);
	return r;
fail:
	r = runner_new(&ssh_ops, name, t->host);
	r->priv = s;
	runner_free(r);
	return NULL;
}

int runner_ssh_close_master(struct runner *r)
{
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct buf err = BUF_INIT(1 << 16);
	struct argv av;
	const struct ssh *s;
	int rc, status = 0;

	if (!r || r->ops != &ssh_ops)
		return 0;
	s = r->priv;
	argv_init(&av);
	argv_push(&av, "ssh");
	argv_push(&av, "-o");
	argv_pushf(&av, "ControlPath=%s", s->control);
	push_target(&av, s);
	argv_push(&av, "-O");
	argv_push(&av, "exit");
	argv_push(&av, "--");
	argv_push(&av, s->host);
	o.argv = av.v;
	rc = run_capture_opts(&o, NULL, 0, NULL, &err, &status);
	buf_rtrim(&err);
	if (rc) {
		errno = -rc;
		rc = error_errno("node %s (%s): cannot run 'ssh -O exit'", r->name, r->ip);
	} else if (status_to_code(status) && !strstr(err.p, "No such file or directory") &&
	           !strstr(err.p, "Connection refused")) {
		/* No master (no socket, or a stale one) is what we want: anything else is not. */
		rc = error("node %s (%s): cannot close the ssh master: %s", r->name, r->ip,
		           err.len ? err.p : "no message");
	} else {
		debug("node %s: ssh master closed (%s)", r->name, err.len ? err.p : "none running");
	}
	argv_release(&av);
	buf_release(&err);
	return rc;
}

const char *runner_ssh_control(const struct runner *r)
{
	return r && r->ops == &ssh_ops ? ((const struct ssh *)r->priv)->control : NULL;
}

int runner_ssh_conn(const struct runner *r, struct ssh_conn *out)
{
	const struct ssh *s;

	memset(out, 0, sizeof(*out));
	if (!r || r->ops != &ssh_ops)
		return -EINVAL;
	s = r->priv;
	out->host = s->host;
	out->user = s->user;
	out->identity_file = s->identity;
	out->proxy_jump = s->proxy;
	out->port = s->port;
	out->control = s->control;
	out->known_hosts = s->known_hosts;
	return 0;
}
