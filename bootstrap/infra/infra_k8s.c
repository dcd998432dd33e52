/*
 * The Kubernetes infra, k8s[/CONTEXT[/NAMESPACE]]: the nodes are pods, reached with
 * `kubectl exec` (runner_k8s.c). kubectl's current context and the context's namespace
 * apply where the spec names none.
 *
 *   existing pods   the Running pods labelled skiff.node (any value), by name, booked
 *                   like the hosts of an SSH pool (node key k8s/CONTEXT/NAMESPACE/POD);
 *                   their default container. Never deleted by skiff.
 *   new pods        the task's image_id is docker:IMAGE: skiff creates num_nodes pods
 *                   skiff-CLUSTER-RANK (container "skiff", image IMAGE) labelled
 *                   skiff.managed=1, skiff.cluster=CLUSTER, skiff.launcher=ID. The pod's
 *                   command waits until the bootstrap has copied skiff into its home,
 *                   then execs `skiff init` (PID 1: reaps, runs the supervisor). `down`
 *                   deletes exactly the pods with those three labels.
 *
 * NOT TESTED AGAINST A LIVE CLUSTER (no API server can run where skiff is tested): the
 * kubectl calls here follow kubectl's documented CLI; the exec transport is tested with a
 * stand-in kubectl. See docs/infra-k8s.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/infra/infra_internal.h"
#include "bootstrap/launch/cluster.h"
#include "lib/buf.h"
#include "lib/config.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/spawn.h"
#include "lib/task.h"
#include "lib/util.h"
#include "lib/banned.h"

#define K8S_OUT_MAX (4 << 20)
#define K8S_CONTAINER "skiff"
/* How long a new pod may take to be Ready (kubernetes.provision_timeout sets it). */
#define K8S_POD_TIMEOUT_S 600
/* Until the launcher's bootstrap has put skiff in the pod, then skiff is PID 1. */
#define K8S_POD_COMMAND                                                                            \
	"until [ -x \"$HOME/.skiff/bin/skiff\" ]; do sleep 1; done; "                              \
	"exec \"$HOME/.skiff/bin/skiff\" init"

static int k8s_parse(const char *rest, const char *spec, struct infra *out)
{
	const char *slash = rest ? strchr(rest, '/') : NULL;
	char *ctx = NULL, *ns = NULL;

	if (rest) {
		ctx = slash ? xstrndup(rest, (size_t)(slash - rest)) : xstrdup(rest);
		ns = slash ? xstrdup(slash + 1) : NULL;
	}
	if ((ctx && (!*ctx || *ctx == '-')) || (ns && !runner_valid_object_name(ns))) {
		free(ctx);
		free(ns);
		return error("infra '%s': expected k8s[/CONTEXT[/NAMESPACE]], a kubeconfig context "
		             "and a namespace name",
		             spec);
	}
	out->kind = INFRA_K8S;
	out->context = ctx;
	out->ns = ns;
	out->spec = !ctx  ? xstrdup("k8s")
	            : !ns ? xasprintf("k8s/%s", ctx)
	                  : xasprintf("k8s/%s/%s", ctx, ns);
	return 0;
}

/* kubectl [--context C] [-n NS] ARGS...; stdin from in (may be NULL). 0 or printed error. */
static int kubectl(const struct infra *inf, const char *const *args, const char *in,
                   struct buf *out)
{
	struct buf err = BUF_INIT(64 << 10), dummy = BUF_INIT(K8S_OUT_MAX);
	struct argv av;
	int rc, status = 0;
	size_t i;

	argv_init(&av);
	argv_push(&av, "kubectl");
	if (inf->context) {
		argv_push(&av, "--context");
		argv_push(&av, inf->context);
	}
	if (inf->ns) {
		argv_push(&av, "-n");
		argv_push(&av, inf->ns);
	}
	/* `wait` has its own --timeout (an image pull may take minutes). */
	if (strcmp(args[0], "wait"))
		argv_push(&av, "--request-timeout=60s");
	for (i = 0; args[i]; i++)
		argv_push(&av, args[i]);
	rc = run_capture(av.v, NULL, in, out ? out : &dummy, &err, &status);
	buf_rtrim(&err);
	if (rc) {
		errno = -rc;
		rc = error_errno("cannot run 'kubectl %s'", args[0]);
	} else if (status_to_code(status)) {
		rc = error("'kubectl %s' failed (exit %d): %s", args[0], status_to_code(status),
		           err.len ? err.p : "no message");
	}
	argv_release(&av);
	buf_release(&err);
	buf_release(&dummy);
	return rc;
}

static void node_fill(struct cluster_node *n, const struct infra *inf, const char *cluster,
                      int rank, const char *pod, const char *ip, const char *container)
{
	memset(n, 0, sizeof(*n));
	n->cluster = xstrdup(cluster);
	n->rank = rank;
	n->node_key = xasprintf("k8s/%s/%s/%s", inf->context ? inf->context : "",
	                        inf->ns ? inf->ns : "", pod);
	n->ip = xstrdup(ip && *ip ? ip : pod);
	n->user = xstrdup(container ? container : "");
	n->identity_file = xstrdup("");
	n->proxy_jump = xstrdup("");
	n->home = xstrdup("");
	n->skiff_exe = xstrdup("");
}

struct pod {
	char *name, *ip, *phase;
};

static int cmp_pod(const void *a, const void *b)
{
	return strcmp(((const struct pod *)a)->name, ((const struct pod *)b)->name);
}

/* "NAME\tIP\tPHASE" lines, as the jsonpath below prints them. */
static struct pod *parse_pods(char *text, size_t *n)
{
	struct pod *v = NULL;
	size_t cap = 0;
	char *line, *next;

	*n = 0;
	for (line = text; line && *line; line = next) {
		char *f[3] = {NULL, NULL, NULL}, *p = line;
		int k;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		for (k = 0; k < 3 && p; k++)
			f[k] = strsep(&p, "\t");
		if (!f[0] || !*f[0])
			continue;
		v = xgrow(v, *n, &cap, sizeof(*v));
		v[*n].name = xstrdup(f[0]);
		v[*n].ip = xstrdup(f[1] ? f[1] : "");
		v[*n].phase = xstrdup(f[2] ? f[2] : "");
		(*n)++;
	}
	return v;
}

static void free_pods(struct pod *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].ip);
		free(v[i].phase);
	}
	free(v);
}

#define PODS_JSONPATH                                                                              \
	"jsonpath={range .items[*]}{.metadata.name}{\"\\t\"}{.status.podIP}{\"\\t\"}"              \
	"{.status.phase}{\"\\n\"}{end}"

static int pick_existing(struct infra *inf, struct st_db *ldb, const char *cluster, int num_nodes,
                         struct cluster_node *v)
{
	const char *args[] = {"get", "pods", "-l", "skiff.node", "-o", PODS_JSONPATH, NULL};
	struct buf out = BUF_INIT(K8S_OUT_MAX);
	struct infra_candidate *cand = NULL;
	struct pod *pods = NULL;
	size_t n = 0, i, running = 0, busy = 0, *picked = NULL, *idx = NULL;
	int taken = 0, rc;

	rc = kubectl(inf, args, NULL, &out);
	if (rc)
		goto out;
	pods = parse_pods(out.p, &n);
	if (n)
		qsort(pods, n, sizeof(*pods), cmp_pod);
	cand = xcalloc(n ? n : 1, sizeof(*cand));
	picked = xcalloc(n ? n : 1, sizeof(*picked));
	idx = xcalloc(n ? n : 1, sizeof(*idx));
	for (i = 0; i < n; i++) {
		if (strcmp(pods[i].phase, "Running") || !runner_valid_object_name(pods[i].name))
			continue;
		cand[running].key = xasprintf("k8s/%s/%s/%s", inf->context ? inf->context : "",
		                              inf->ns ? inf->ns : "", pods[i].name);
		idx[running++] = i;
	}
	rc = infra_book(ldb, cluster, cand, running, num_nodes, picked, &busy, NULL);
	if (rc < 0)
		goto out;
	for (i = 0; i < (size_t)rc; i++) {
		const struct pod *pd = &pods[idx[picked[i]]];

		node_fill(&v[taken], inf, cluster, taken, pd->name, pd->ip, NULL);
		taken++;
	}
	rc = 0;
	if (taken < num_nodes) {
		error("infra %s: %zu Running pod%s labelled skiff.node, %zu in use by other "
		      "clusters; need %d (or give the task an image to start pods from: image_id: "
		      "docker:IMAGE)",
		      inf->spec, running, running == 1 ? "" : "s", busy, num_nodes);
		rc = running < (size_t)num_nodes ? -ENOSPC : -EBUSY;
	}
out:
	for (i = 0; cand && i < running; i++)
		free((char *)cand[i].key);
	free(cand);
	free(picked);
	free(idx);
	free_pods(pods, n);
	buf_release(&out);
	return rc;
}

/*
 * The pod's manifest (JSON, which kubectl apply takes as it takes YAML), with the
 * config's kubernetes.pod_config and custom_metadata merged into it as SkyPilot merges
 * them (config_k8s_pod()).
 */
char *infra_k8s_pod_manifest(const struct infra *inf, const char *name, const char *cluster,
                             const char *id)
{
	char *base, *pod;
	struct buf b = BUF_INIT(0);
	struct json j;

	json_init(&j, &b, 0);
	json_obj_begin(&j);
	json_key(&j, "apiVersion");
	json_str(&j, "v1");
	json_key(&j, "kind");
	json_str(&j, "Pod");
	json_key(&j, "metadata");
	json_obj_begin(&j);
	json_key(&j, "name");
	json_str(&j, name);
	json_key(&j, "labels");
	json_obj_begin(&j);
	json_key(&j, "skiff.managed");
	json_str(&j, "1");
	json_key(&j, "skiff.cluster");
	json_str(&j, cluster);
	json_key(&j, "skiff.launcher");
	json_str(&j, id);
	json_obj_end(&j);
	json_obj_end(&j);
	json_key(&j, "spec");
	json_obj_begin(&j);
	json_key(&j, "restartPolicy");
	json_str(&j, "Never");
	json_key(&j, "containers");
	json_arr_begin(&j);
	json_obj_begin(&j);
	json_key(&j, "name");
	json_str(&j, K8S_CONTAINER);
	json_key(&j, "image");
	json_str(&j, inf->image);
	json_key(&j, "command");
	json_arr_begin(&j);
	json_str(&j, "/bin/sh");
	json_str(&j, "-c");
	json_str(&j, K8S_POD_COMMAND);
	json_arr_end(&j);
	json_obj_end(&j);
	json_arr_end(&j);
	json_obj_end(&j);
	json_obj_end(&j);
	json_finish(&j);
	base = buf_detach(&b, NULL);
	pod = config_k8s_pod(inf->config, base);
	free(base);
	return pod;
}

static int k8s_remove(const struct infra *inf, const char *cluster);

static int create_pods(struct infra *inf, const char *cluster, int num_nodes,
                       struct cluster_node *v)
{
	char *id;
	int i, rc;

	if (!infra_valid_image(inf->image))
		return error("image '%s' is not an image name", inf->image);
	rc = k8s_remove(inf, cluster);
	if (rc)
		return rc;
	id = infra_launcher_id();
	for (i = 0, rc = 0; i < num_nodes && !rc; i++) {
		/* A pod name is lowercase: "My_c" is pod skiff-my-c-HASH-0 (infra.h). */
		char *name = infra_dns_label("skiff-", cluster, i);
		char *pod = xasprintf("pod/%s", name);
		char *spec = infra_k8s_pod_manifest(inf, name, cluster, id);
		const char *apply[] = {"apply", "-f", "-", NULL};
		char *timeout =
		        xasprintf("--timeout=%lds",
		                  config_k8s_provision_timeout(inf->config, K8S_POD_TIMEOUT_S));
		const char *wait[] = {"wait", "--for=condition=Ready", pod, timeout, NULL};
		const char *ip[] = {"get", "pod", name, "-o", "jsonpath={.status.podIP}", NULL};
		struct buf out = BUF_INIT(64 << 10);

		rc = kubectl(inf, apply, spec, NULL);
		if (!rc)
			rc = kubectl(inf, wait, NULL, NULL);
		if (!rc)
			rc = kubectl(inf, ip, NULL, &out);
		if (!rc) {
			buf_rtrim(&out);
			node_fill(&v[i], inf, cluster, i, name, out.p, K8S_CONTAINER);
		} else {
			error("cannot start pod %s from image %s", name, inf->image);
		}
		buf_release(&out);
		free(spec);
		free(pod);
		free(timeout);
		free(name);
	}
	free(id);
	if (rc)
		k8s_remove(inf, cluster);
	return rc;
}

static int k8s_pick(struct infra *inf, struct st_db *ldb, const char *cluster, int num_nodes,
                    struct cluster_node *v)
{
	if (inf->image)
		return create_pods(inf, cluster, num_nodes, v);
	return pick_existing(inf, ldb, cluster, num_nodes, v);
}

static struct runner *k8s_runner(const struct infra *inf, const struct cluster_node *n)
{
	struct k8s_target t = {0};
	const char *pod = strrchr(n->node_key, '/');

	if (!pod || !pod[1]) {
		error("cluster '%s': node %d has no pod ('%s')", n->cluster, n->rank, n->node_key);
		return NULL;
	}
	pod++;
	t.context = inf->context;
	t.ns = inf->ns;
	t.pod = pod;
	t.container = n->user;
	t.ip = n->ip;
	return runner_k8s_new(pod, &t);
}

static int k8s_remove(const struct infra *inf, const char *cluster)
{
	char *id = infra_launcher_id();
	char *sel = xasprintf("skiff.managed=1,skiff.cluster=%s,skiff.launcher=%s", cluster, id);
	const char *args[] = {"delete", "pods", "-l", sel, "--wait=false", NULL};
	int rc = kubectl(inf, args, NULL, NULL);

	free(sel);
	free(id);
	return rc;
}

static void k8s_unpick(struct infra *inf, const char *cluster, const struct cluster_node *v, int n)
{
	(void)v;
	(void)n;
	if (inf->image)
		k8s_remove(inf, cluster);
}

static int k8s_teardown(const struct infra *inf, struct st_db *ldb, struct clive *cl,
                        const char *cluster)
{
	(void)ldb;
	(void)cl;
	return k8s_remove(inf, cluster);
}

/*
 * The phase of the cluster's head pod when skiff created it ("Running", "Succeeded"...;
 * the caller frees it), or NULL for a pod it did not create, or when kubectl cannot say.
 */
static char *head_created_phase(const struct clive *cl)
{
	struct infra inf;
	char *id, *sel, *p, *line, *phase = NULL;
	struct buf out = BUF_INIT(K8S_OUT_MAX);
	const char *args[] = {
	        "get", "pods",
	        "-l",  NULL,
	        "-o",  "jsonpath={range .items[*]}{.metadata.name} {.status.phase}{\"\\n\"}{end}",
	        NULL};

	if (!cl->n || infra_parse(cl->infra, &inf))
		return NULL;
	id = infra_launcher_id();
	sel = xasprintf("skiff.managed=1,skiff.cluster=%s,skiff.launcher=%s", cl->name, id);
	args[3] = sel;
	if (!kubectl(&inf, args, NULL, &out)) {
		p = out.p;
		while (!phase && (line = strsep(&p, "\n"))) {
			char *sp = strchr(line, ' ');

			if (sp && (size_t)(sp - line) == strlen(cl->nodes[0].r->name) &&
			    !strncmp(line, cl->nodes[0].r->name, (size_t)(sp - line)))
				phase = xstrdup(sp + 1);
		}
	}
	buf_release(&out);
	free(sel);
	free(id);
	infra_release(&inf);
	return phase;
}

/* A pod skiff created ends when its PID 1 (`skiff init`) does (restartPolicy Never). */
static char *k8s_idle_hook(const struct clive *cl, int down)
{
	char *phase = head_created_phase(cl);

	(void)down;
	if (!phase)
		return NULL;
	free(phase);
	return xstrdup("#!/bin/sh\n# skiff, k8s infra: autostop ends the pod (its PID 1 is skiff "
	               "init)\nkill -TERM 1\n");
}

static int k8s_hook_fired(struct st_db *ldb, const struct clive *cl)
{
	char *phase = head_created_phase(cl);
	int r = !phase                                                    ? -1
	        : !strcmp(phase, "Running")                               ? 0
	        : !strcmp(phase, "Succeeded") || !strcmp(phase, "Failed") ? 1
	                                                                  : -1;

	(void)ldb;
	free(phase);
	return r;
}

/* Pods: what one launcher follows sensibly; a namespace's quota says the rest. */
#define K8S_MAX_NODES 1024

/*
 * The pod spec skiff writes names the image; cloud and region name the context. Task
 * labels, disk sizes and volumes are not put in it (yet): they are warned as ignored.
 */
const struct infra_ops infra_k8s_ops = {
        .name = "k8s",
        .kind = INFRA_K8S,
        .flags = INFRA_IMAGE,
        .max_nodes = K8S_MAX_NODES,
        .honours = TR_CLOUD | TR_REGION | TR_IMAGE_ID,
        .parse = k8s_parse,
        .pick = k8s_pick,
        .unpick = k8s_unpick,
        .runner = k8s_runner,
        .teardown = k8s_teardown,
        .idle_hook = k8s_idle_hook,
        .hook_fired = k8s_hook_fired,
};
