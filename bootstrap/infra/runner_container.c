/*
 * The container runner: `podman exec` / `docker exec` into a running container, and the
 * wrapper that every exec-CLI runner (this one, runner_k8s.c) shares to tell a node that
 * is gone apart from a script that failed.
 *
 * The script is one argv word of `sh -c`: podman, docker and kubectl hand the command's
 * argv to the container as it is (no shell parses it on the way), so it needs no
 * quoting, exactly as with the local runner. Data goes through `exec -i` stdin.
 *
 * Transport failures. The exec CLIs have no log of their own (ssh has -E), and their
 * exit status alone is ambiguous: `podman exec` says 125 for its own errors and 255 for
 * "container state improper", but 137 both for a script killed by SIGKILL and for a
 * container killed under it; docker and kubectl say 1 for their own errors and for a
 * script's `exit 1`. So the exec runs under a small host-side sh (runner_exec_wrap()):
 * when the exec ends with one of the ambiguous statuses, it asks the engine for the
 * node's state (`podman container inspect`, `kubectl get pod`). A node that is not
 * running is a transport failure: the wrapper writes "NODE is not running (STATE)" to
 * the runner's diag file (or, for runner_spawn(), to stderr) and exits 255, the status
 * runner.h treats as the transport's, as with ssh; the diag's RUNNER_GONE_LINE says the
 * node is gone (runner.h's last_gone). A probe that fails where that is no answer
 * (kubectl without its API server) writes "cannot tell whether NODE is running (WHAT IT
 * SAID)": a transport failure too, the node not known to be gone. Any other status, and
 * any status of a node that is still running, is the script's and passes through
 * unchanged. The check costs nothing when the script succeeds, and one engine call when
 * it ends with one of those statuses.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/infra/runner.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "lib/quote.h"
#include "lib/util.h"
#include "lib/banned.h"

/*
 * $1 the probe (a command line quoted with sh_quote_argv()), $2 what it prints for a
 * running node, $3 the diag file ("" for stderr), $4 the node's name, $5 the statuses
 * that call for the probe (space-separated), $6 non-empty when a probe that fails is
 * no answer (kubectl that cannot reach its API server); then the exec argv. A node the
 * probe says is not running is gone: RUNNER_GONE_LINE before the message in the diag.
 */
static const char wrap_sh[] =
        "p=$1 w=$2 d=$3 n=$4 c=\" $5 \" u=$6\n"
        "shift 6\n"
        "\"$@\"\n"
        "r=$?\n"
        "case $c in *\" $r \"*) ;; *) exit $r ;; esac\n"
        "s=$(eval \"$p\" </dev/null 2>&1)\n"
        "q=$?\n"
        "[ \"$s\" = \"$w\" ] && exit $r\n"
        "g='" RUNNER_GONE_LINE "'\n"
        "m=\"$n is not running (${s:-not found})\"\n"
        "if [ $q != 0 ] && [ -n \"$u\" ]; then\n"
        "\tg=\n"
        "\tm=\"cannot tell whether $n is running (${s:-no answer})\"\n"
        "fi\n"
        "if [ -n \"$d\" ]; then\n"
        "\t{ [ -z \"$g\" ] || printf '%s\\n' \"$g\"; printf '%s\\n' \"$m\"; } >>\"$d\"\n"
        "else\n"
        "\tprintf 'skiff: error: %s\\n' \"$m\" >&2\n"
        "fi\n"
        "exit 255\n";

int runner_exec_wrap(struct runner *r, struct argv *out, const struct argv *exec,
                     char *const *probe, const char *running, const char *codes,
                     int failed_probe_unsure)
{
	struct buf p = BUF_INIT(0);
	size_t i;
	int rc;

	rc = sh_quote_argv(&p, probe);
	if (rc) {
		buf_release(&p);
		return rc;
	}
	argv_push(out, "/bin/sh");
	argv_push(out, "-c");
	argv_push(out, wrap_sh);
	argv_push(out, "skiff-exec"); /* $0 */
	argv_push(out, p.p);
	argv_push(out, running);
	argv_push(out, r->diag_path ? r->diag_path : "");
	argv_push(out, r->name);
	argv_push(out, codes);
	argv_push(out, failed_probe_unsure ? "1" : "");
	for (i = 0; i < exec->n; i++)
		argv_push(out, exec->v[i]);
	buf_release(&p);
	return 0;
}

/* A name or id as podman, docker and kubectl take it: no option, no blanks, no '/'. */
int runner_valid_object_name(const char *s)
{
	const unsigned char *p;

	if (!s || !*s || *s == '-' || strlen(s) > 253)
		return 0;
	for (p = (const unsigned char *)s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '.' || *p == '-'))
			return 0;
	return 1;
}

/* USER, UID or UID:GID for `exec --user`. */
static int valid_user(const char *s)
{
	const unsigned char *p;

	if (*s == '-' || strlen(s) > 64)
		return 0;
	for (p = (const unsigned char *)s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("_.:-", *p)))
			return 0;
	return 1;
}

char *runner_diag_dir_new(void)
{
	const char *home = skiff_home();
	char *d = home ? xasprintf("%s/exec", home) : NULL;
	int rc = d && !mkdir_p(home, 0700) ? ensure_private_dir(d) : -ENOENT;

	if (!rc)
		return d;
	free(d);
	/* Like the ssh runner's sockets: a private dir of ours in /tmp. */
	d = xasprintf("/tmp/skiff-exec.%ld", (long)geteuid());
	rc = ensure_private_dir(d);
	if (!rc)
		return d;
	debug("cannot make '%s': %s; exec runners cannot tell a lost node from a failed script", d,
	      strerror(-rc));
	free(d);
	return NULL;
}

struct ctr {
	char *engine;    /* "podman" or "docker" */
	char *container; /* name or id */
	char *user;      /* exec --user, or NULL */
};

/* Statuses after which the wrapper asks whether the container still runs (see above). */
#define PODMAN_PROBE_CODES "125 126 127 137 255"
#define DOCKER_PROBE_CODES "1 125 126 127 137 255"

static int ctr_build_argv(struct runner *r, const char *script, int interactive, struct argv *out)
{
	const struct ctr *c = r->priv;
	struct argv ex, probe;
	int rc;

	if (!script && !interactive)
		return -EINVAL;
	argv_init(&ex);
	argv_push(&ex, c->engine);
	argv_push(&ex, "exec");
	argv_push(&ex, "-i");
	if (interactive)
		argv_push(&ex, "-t");
	if (c->user) {
		argv_push(&ex, "--user");
		argv_push(&ex, c->user);
	}
	argv_push(&ex, c->container);
	argv_push(&ex, "sh");
	if (script) {
		argv_push(&ex, "-c");
		argv_push(&ex, script);
	}
	if (interactive) {
		/* A terminal session: the engine's own messages are the user's to read. */
		*out = ex;
		return 0;
	}
	argv_init(&probe);
	argv_push(&probe, c->engine);
	argv_push(&probe, "container");
	argv_push(&probe, "inspect");
	argv_push(&probe, "--format");
	argv_push(&probe, "{{.State.Status}}");
	argv_push(&probe, c->container);
	rc = runner_exec_wrap(r, out, &ex, probe.v, "running",
	                      strcmp(c->engine, "docker") ? PODMAN_PROBE_CODES : DOCKER_PROBE_CODES,
	                      0);
	argv_release(&probe);
	argv_release(&ex);
	return rc;
}

static void ctr_release(struct runner *r)
{
	struct ctr *c = r->priv;

	if (c) {
		free(c->engine);
		free(c->container);
		free(c->user);
		free(c);
	}
	r->priv = NULL;
}

static const struct runner_ops ctr_ops = {
        .kind = "container",
        .build_argv = ctr_build_argv,
        .build_env = NULL,
        .release = ctr_release,
        .cwd = NULL,
        .transport_status = 255,
};

struct runner *runner_container_new(const char *name, const struct container_target *t)
{
	struct runner *r;
	struct ctr *c;

	if (!t->engine || (strcmp(t->engine, "podman") && strcmp(t->engine, "docker"))) {
		error("node %s: unknown container engine '%s' (podman or docker)", name,
		      t->engine ? t->engine : "");
		return NULL;
	}
	if (!runner_valid_object_name(t->container) ||
	    (t->user && *t->user && !valid_user(t->user))) {
		error("node %s: bad container '%s' or user '%s': empty, starting with '-', or "
		      "with characters a container name cannot have",
		      name, t->container ? t->container : "", t->user ? t->user : "");
		return NULL;
	}
	c = xcalloc(1, sizeof(*c));
	c->engine = xstrdup(t->engine);
	c->container = xstrdup(t->container);
	c->user = t->user && *t->user ? xstrdup(t->user) : NULL;
	r = runner_new(&ctr_ops, name, t->ip && *t->ip ? t->ip : t->container);
	r->priv = c;
	/* The wrapper's messages go to a private file per call (runner.c makes it). */
	r->diag_dir = runner_diag_dir_new();
	return r;
}
