/*
 * The Kubernetes runner: `kubectl exec -i` into a pod's container, as SkyPilot's
 * Kubernetes command runner does (no ssh into pods).
 *
 *   kubectl [--context CTX] [-n NS] exec -i POD [-c CONTAINER] -- sh -c SCRIPT
 *
 * kubectl hands the command's argv to the container runtime as it is, so SCRIPT is one
 * argv word that no shell parses on the way (as with the local and container runners).
 * The exec runs under runner_exec_wrap() (runner_container.c): when kubectl exits with 1
 * (its own errors, but also a script's `exit 1`), 126, 127, 137 or 255, the wrapper asks
 * `kubectl get pod POD --ignore-not-found -o jsonpath={.status.phase}`. A pod that is not
 * Running (not found, Failed, Succeeded) is gone, and an API server that does not answer
 * leaves that open (the probe fails): both are transport failures.
 *
 * Tested against a real cluster (tests/t/t0720-k8s.sh: exec, the binary and a workdir on
 * stdin, a pod deleted, the API server away); tests/unit/test-runner-k8s.c checks the
 * exact argv. See docs/infra-k8s.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/infra/runner.h"
#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

struct k8s {
	char *kubectl, *context, *ns, *pod, *container;
};

#define K8S_PROBE_CODES "1 126 127 137 255"

/* The options before the verb: the same for exec and for the probe. */
static void push_target(struct argv *out, const struct k8s *k)
{
	argv_push(out, k->kubectl);
	if (k->context) {
		argv_push(out, "--context");
		argv_push(out, k->context);
	}
	if (k->ns) {
		argv_push(out, "-n");
		argv_push(out, k->ns);
	}
}

static int k8s_build_argv(struct runner *r, const char *script, int interactive, struct argv *out)
{
	const struct k8s *k = r->priv;
	struct argv ex, probe;
	int rc;

	if (!script && !interactive)
		return -EINVAL;
	argv_init(&ex);
	push_target(&ex, k);
	argv_push(&ex, "exec");
	argv_push(&ex, "-i");
	if (interactive)
		argv_push(&ex, "-t");
	argv_push(&ex, k->pod);
	if (k->container) {
		argv_push(&ex, "-c");
		argv_push(&ex, k->container);
	}
	argv_push(&ex, "--");
	argv_push(&ex, "sh");
	if (script) {
		argv_push(&ex, "-c");
		argv_push(&ex, script);
	}
	if (interactive) {
		*out = ex;
		return 0;
	}
	argv_init(&probe);
	push_target(&probe, k);
	argv_push(&probe, "get");
	argv_push(&probe, "pod");
	argv_push(&probe, k->pod);
	argv_push(&probe, "--ignore-not-found");
	argv_push(&probe, "-o");
	argv_push(&probe, "jsonpath={.status.phase}");
	rc = runner_exec_wrap(r, out, &ex, probe.v, "Running", K8S_PROBE_CODES, 1);
	argv_release(&probe);
	argv_release(&ex);
	return rc;
}

static void k8s_release(struct runner *r)
{
	struct k8s *k = r->priv;

	if (k) {
		free(k->kubectl);
		free(k->context);
		free(k->ns);
		free(k->pod);
		free(k->container);
		free(k);
	}
	r->priv = NULL;
}

static const struct runner_ops k8s_ops = {
        .kind = "kubernetes",
        .build_argv = k8s_build_argv,
        .build_env = NULL,
        .release = k8s_release,
        .cwd = NULL,
        .transport_status = 255,
};

/* A kubeconfig context name: no option, no blanks or control bytes. */
static int valid_context(const char *s)
{
	const unsigned char *p;

	if (!*s || *s == '-' || strlen(s) > 253)
		return 0;
	for (p = (const unsigned char *)s; *p; p++)
		if (*p <= ' ' || *p == 0x7f)
			return 0;
	return 1;
}

static char *dup_or_null(const char *s)
{
	return s && *s ? xstrdup(s) : NULL;
}

struct runner *runner_k8s_new(const char *name, const struct k8s_target *t)
{
	struct runner *r;
	struct k8s *k;

	if (!runner_valid_object_name(t->pod) ||
	    (t->ns && *t->ns && !runner_valid_object_name(t->ns)) ||
	    (t->container && *t->container && !runner_valid_object_name(t->container)) ||
	    (t->context && *t->context && !valid_context(t->context))) {
		error("node %s: bad pod '%s', container '%s', namespace '%s' or context '%s'", name,
		      t->pod ? t->pod : "", t->container ? t->container : "", t->ns ? t->ns : "",
		      t->context ? t->context : "");
		return NULL;
	}
	k = xcalloc(1, sizeof(*k));
	k->kubectl = xstrdup(t->kubectl && *t->kubectl ? t->kubectl : "kubectl");
	k->context = dup_or_null(t->context);
	k->ns = dup_or_null(t->ns);
	k->pod = xstrdup(t->pod);
	k->container = dup_or_null(t->container);
	r = runner_new(&k8s_ops, name, t->ip && *t->ip ? t->ip : t->pod);
	r->priv = k;
	r->diag_dir = runner_diag_dir_new();
	return r;
}
