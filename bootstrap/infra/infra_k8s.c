/*
 * The Kubernetes infra, k8s[/CONTEXT[/NAMESPACE]]: the nodes are pods, reached with
 * `kubectl exec` (runner_k8s.c). kubectl's current context and the context's namespace
 * apply where the spec names none.
 *
 *   existing pods   the Running pods labelled skiff.node (any value), by name, booked
 *                   like the hosts of an SSH pool (node key k8s/CONTEXT/NAMESPACE/POD);
 *                   their default container. Never deleted by skiff.
 *   new pods        the task's image_id is docker:IMAGE: skiff creates num_nodes pods
 *                   skiff-CLUSTER-LAUNCHER-RANK (container "skiff", image IMAGE, the
 *                   task's resources as requests) labelled skiff.managed=1,
 *                   skiff.cluster=CLUSTER, skiff.launcher=ID, all in one `kubectl create`.
 *                   The pod's command waits until the bootstrap has copied skiff into its
 *                   home, then execs `skiff init` (PID 1: reaps, runs the supervisor).
 *                   `down` deletes exactly the pods with those three labels.
 *
 * Tested against a real cluster (tests/t/t0720-k8s.sh on tests/lib/k8s.sh: Kubernetes
 * v1.34, two kubelets, RBAC on). See docs/infra-k8s.md.
 */
#include <errno.h>
#include <unistd.h>
#include <signal.h>
#include <poll.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/infra/infra_internal.h"
#include "bootstrap/infra/live.h"
#include "lib/buf.h"
#include "lib/config.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/spawn.h"
#include "lib/task.h"
#include "lib/util.h"
#include "lib/banned.h"

#define K8S_OUT_MAX (4 << 20)
/* kubectl's --request-timeout for every call but the pods' watch and `exec`. */
#define K8S_REQUEST_TIMEOUT "60s"
#define K8S_CONTAINER "skiff"
/* How long a new pod may take to be Ready (kubernetes.provision_timeout sets it). */
#define K8S_POD_TIMEOUT_S 600
/* How long a launch waits for the pods of a failed earlier launch to be gone. */
#define K8S_DELETE_TIMEOUT "120s"
/* How many hex digits of the launcher's id pod names carry. */
#define K8S_POD_ID_LEN 6
/* How long wait_ready() waits before it starts a watch that ended (the server away). */
#define K8S_REWATCH_MS 500
/* The extended resource a task's accelerators ask for (SkyPilot's default for GPUs). */
#define K8S_GPU_RESOURCE "nvidia.com/gpu"
/*
 * Until the launcher's bootstrap has put skiff in the pod (looked for five times a second,
 * once where sleep takes whole seconds only), then skiff is PID 1.
 */
#define K8S_POD_COMMAND                                                                            \
	"trap 'exit 0' TERM; until [ -x \"$HOME/.skiff/bin/skiff\" ]; do "                         \
	"sleep 0.2 2>/dev/null || sleep 1; done; "                                                 \
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

/* av = kubectl [--context C] [-n NS]: the words before every verb. */
static void kubectl_argv(const struct infra *inf, struct argv *av)
{
	argv_init(av);
	argv_push(av, "kubectl");
	if (inf->context) {
		argv_push(av, "--context");
		argv_push(av, inf->context);
	}
	if (inf->ns) {
		argv_push(av, "-n");
		argv_push(av, inf->ns);
	}
}

/*
 * kubectl [--context C] [-n NS] ARGS...; stdin from in (may be NULL), stdout into out
 * (may be NULL), stderr into err (trimmed). 0 and kubectl's exit code in *code, or a
 * printed error when kubectl cannot be run.
 */
static int kubectl_code(const struct infra *inf, const char *const *args, const char *in,
                        struct buf *out, struct buf *err, int *code)
{
	struct buf dummy = BUF_INIT(K8S_OUT_MAX);
	struct argv av;
	int rc, status = 0;
	size_t i;

	kubectl_argv(inf, &av);
	argv_push(&av, "--request-timeout=" K8S_REQUEST_TIMEOUT);
	for (i = 0; args[i]; i++)
		argv_push(&av, args[i]);
	rc = run_capture(av.v, NULL, in, out ? out : &dummy, err, &status);
	buf_rtrim(err);
	if (rc) {
		errno = -rc;
		rc = error_errno("cannot run 'kubectl %s'", args[0]);
	}
	*code = status_to_code(status);
	argv_release(&av);
	buf_release(&dummy);
	return rc;
}

/* kubectl_code(), where anything but exit 0 is a printed error. */
static int kubectl(const struct infra *inf, const char *const *args, const char *in,
                   struct buf *out)
{
	struct buf err = BUF_INIT(64 << 10);
	int code = 0, rc = kubectl_code(inf, args, in, out, &err, &code);

	if (!rc && code)
		rc = error("'kubectl %s' failed (exit %d): %s", args[0], code,
		           err.len ? err.p : "no message");
	buf_release(&err);
	return rc;
}

/*
 * skiff does everything in a pod through `kubectl exec`: a user whose RBAC role lacks
 * create on pods/exec gets one line that says so before any pod is made. An answer other
 * than yes or no (an API server that cannot be reached) is left to the calls that follow.
 */
static int k8s_check_exec(const struct infra *inf)
{
	const char *args[] = {"auth", "can-i", "create", "pods", "--subresource=exec", NULL};
	struct buf out = BUF_INIT(256), err = BUF_INIT(64 << 10);
	int code = 0, rc = kubectl_code(inf, args, NULL, &out, &err, &code);

	buf_rtrim(&out);
	if (!rc && code && out.len && !strcmp(out.p, "no"))
		rc = error("infra %s: RBAC does not let %s create pods/exec in namespace %s "
		           "(kubectl auth can-i create pods --subresource=exec says no); skiff "
		           "reaches every pod through kubectl exec",
		           inf->spec, inf->context ? inf->context : "the current context",
		           inf->ns ? inf->ns : "the context's namespace");
	buf_release(&out);
	buf_release(&err);
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
	size_t n = 0, i, running = 0, busy = 0, held = 0, *picked = NULL, *idx = NULL;
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
		char *key;

		if (strcmp(pods[i].phase, "Running") || !runner_valid_object_name(pods[i].name))
			continue;
		key = xasprintf("k8s/%s/%s/%s", inf->context ? inf->context : "",
		                inf->ns ? inf->ns : "", pods[i].name);
		if (infra_held(inf, key)) { /* another launcher's cluster holds it */
			free(key);
			held++;
			continue;
		}
		cand[running].key = key;
		idx[running++] = i;
	}
	rc = infra_book(ldb, cluster, cand, running, num_nodes, picked, &busy, NULL);
	if (rc < 0)
		goto out;
	for (i = 0; i < (size_t)rc; i++) {
		const struct pod *pd = &pods[idx[picked[i]]];

		node_fill(&v[taken], inf, cluster, taken, pd->name, pd->ip, NULL);
		v[taken].stays = 1; /* the user's pod: it outlives the cluster */
		taken++;
	}
	rc = 0;
	if (taken < num_nodes) {
		error("infra %s: %zu Running pod%s labelled skiff.node, %zu in use by other "
		      "clusters%s; need %d (or give the task an image to start pods from: image_id: "
		      "docker:IMAGE)",
		      inf->spec, running + held, running + held == 1 ? "" : "s", busy,
		      held ? ", more held by another launcher's cluster" : "", num_nodes);
		rc = running + held < (size_t)num_nodes ? -ENOSPC : -EBUSY;
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

static long ceil_pos(double x)
{
	long n = (long)x;

	return (double)n < x ? n + 1 : n;
}

/* The container's resources from the task's: SkyPilot's pod template asks for them. */
static void pod_resources(struct json *j, const struct task_resources *res)
{
	double cpus = res && res->cpus.text ? res->cpus.value : 0;
	double mem = res && res->memory.text ? res->memory.value : 0;
	char num[64];

	if (res && res->memory.text && res->memory.mode == TASK_PER_CPU)
		mem = cpus > 0 ? mem * cpus : 0;
	if (!(cpus > 0) && !(mem > 0) && !(res && res->accel.name))
		return;
	json_key(j, "resources");
	json_obj_begin(j);
	json_key(j, "requests");
	json_obj_begin(j);
	if (cpus > 0) {
		json_key(j, "cpu");
		/* Millicores: the API takes "500m" where it may refuse "0.5" with 4 decimals. */
		xsnprintf(num, sizeof(num), "%ldm", (long)ceil_pos(cpus * 1000));
		json_str(j, num);
	}
	if (mem > 0) {
		json_key(j, "memory");
		xsnprintf(num, sizeof(num), "%ldMi", (long)ceil_pos(mem * 1024));
		json_str(j, num);
	}
	if (res && res->accel.name) {
		json_key(j, K8S_GPU_RESOURCE);
		json_int(j, (int64_t)ceil_pos(res->accel.count));
	}
	json_obj_end(j);
	/* Extended resources (GPUs) must have limits equal to their requests. */
	if (res && res->accel.name) {
		json_key(j, "limits");
		json_obj_begin(j);
		json_key(j, K8S_GPU_RESOURCE);
		json_int(j, (int64_t)ceil_pos(res->accel.count));
		json_obj_end(j);
	}
	json_obj_end(j);
}

/*
 * The pod's manifest (JSON, which kubectl apply takes as it takes YAML): the task's
 * resources as the container's requests and its labels on the pod (as SkyPilot's pod
 * template has them), then the config's kubernetes.pod_config and custom_metadata merged
 * into it as SkyPilot merges them (config_k8s_pod()).
 */
char *infra_k8s_pod_manifest(const struct infra *inf, const char *name, const char *cluster,
                             const char *id)
{
	static const char *const ours[] = {"skiff.managed", "skiff.cluster", "skiff.launcher"};
	char *base, *pod;
	struct buf b = BUF_INIT(0);
	struct json j;
	size_t i, k;

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
	for (i = 0; inf->res && i < inf->res->labels.n; i++) {
		const struct task_kv *kv = &inf->res->labels.v[i];

		for (k = 0; k < ARRAY_SIZE(ours) && strcmp(kv->key, ours[k]); k++)
			;
		if (k < ARRAY_SIZE(ours) || !kv->value)
			continue;
		json_key(&j, kv->key);
		json_str(&j, kv->value);
	}
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
	pod_resources(&j, inf->res);
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

static int k8s_remove(const struct infra *inf, const char *cluster, int wait);

/*
 * One line per event of `kubectl get pods -w`: NAME PHASE READY IP SCHEDULED
 * SCHEDULED_MESSAGE WAITING_REASON WAITING_MESSAGE, separated by US (0x1f: a watch's
 * printer aligns tabs into blanks), the fields of infra_k8s_pod_judge().
 */
#define POD_WATCH_JSONPATH                                                                         \
	"jsonpath={.metadata.name}{\"\\x1f\"}{.status.phase}{\"\\x1f\"}"                           \
	"{.status.conditions[?(@.type==\"Ready\")].status}{\"\\x1f\"}{.status.podIP}{\"\\x1f\"}"   \
	"{.status.conditions[?(@.type==\"PodScheduled\")].status}{\"\\x1f\"}"                      \
	"{.status.conditions[?(@.type==\"PodScheduled\")].message}{\"\\x1f\"}"                     \
	"{.status.containerStatuses[0].state.waiting.reason}{\"\\x1f\"}"                           \
	"{.status.containerStatuses[0].state.waiting.message}{\"\\n\"}"

/* Waiting reasons that waiting does not end (SkyPilot gives up on these too). */
static const char *const pod_fatal_reasons[] = {
        "ErrImagePull",     "ImagePullBackOff",     "ErrImageNeverPull",
        "InvalidImageName", "CreateContainerError", "CreateContainerConfigError",
        "CrashLoopBackOff", "RunContainerError",
};

enum k8s_pod_state infra_k8s_pod_judge(char *line, struct k8s_pod_event *ev)
{
	char *f[8] = {NULL}, *p = line;
	size_t i;

	memset(ev, 0, sizeof(*ev));
	for (i = 0; i < ARRAY_SIZE(f) && p; i++)
		f[i] = strsep(&p, "\x1f");
	if (i < ARRAY_SIZE(f) || p || !*f[0])
		return K8S_POD_NOISE;
	ev->name = f[0];
	ev->ip = f[3];
	if (!strcmp(f[1], "Failed") || !strcmp(f[1], "Succeeded")) {
		ev->why = f[1];
		ev->detail = *f[7] ? f[7] : f[5];
		return K8S_POD_ENDED;
	}
	for (i = 0; i < ARRAY_SIZE(pod_fatal_reasons); i++)
		if (!strcmp(f[6], pod_fatal_reasons[i])) {
			ev->why = f[6];
			ev->detail = f[7];
			return K8S_POD_CANNOT_START;
		}
	if (!strcmp(f[1], "Running") && !strcmp(f[2], "True") && *f[3])
		return K8S_POD_READY;
	if (strcmp(f[4], "True") && *f[5]) {
		ev->why = "not scheduled";
		ev->detail = f[5];
	} else if (*f[6]) {
		ev->why = f[6];
		ev->detail = f[7];
	} else {
		ev->why = *f[1] ? f[1] : "not Ready";
		ev->detail = "";
	}
	return K8S_POD_WAITING;
}

/* The watch: kubectl [--context C] [-n NS] get pods -l SEL -w -o POD_WATCH_JSONPATH. */
static int watch_start(const struct infra *inf, const char *sel, pid_t *pid, int *fd)
{
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct argv av;
	int p[2], rc;

	if (pipe2(p, O_CLOEXEC) < 0)
		return error_errno("pipe");
	kubectl_argv(inf, &av);
	argv_push(&av, "get");
	argv_push(&av, "pods");
	argv_push(&av, "-l");
	argv_push(&av, sel);
	argv_push(&av, "-w");
	argv_push(&av, "-o");
	argv_push(&av, POD_WATCH_JSONPATH);
	o.argv = av.v;
	o.fd_out = p[1];
	o.err_to_out = 1;
	o.pgrp = SPAWN_PGRP_NEW;
	rc = spawn(&o, pid);
	close(p[1]);
	argv_release(&av);
	if (rc) {
		close(p[0]);
		errno = -rc;
		return error_errno("cannot run 'kubectl get pods -w'");
	}
	*fd = p[0];
	return 0;
}

static void watch_stop(pid_t pid, int fd)
{
	int status;

	kill(-pid, SIGKILL);
	spawn_wait(pid, &status);
	close(fd);
}

/*
 * Waits until every pod in names[0..n) is Running and Ready, its IP in ips[i] (the
 * caller frees them), on one watch of the pods of sel: Ready is seen as it happens, a pod
 * that can never be Ready (infra_k8s_pod_judge()) fails at once, and one still pending at
 * kubernetes.provision_timeout fails with the reason the API gives. A watch that ends (a
 * server that went away) is started again until then.
 */
static int wait_ready(const struct infra *inf, const char *sel, char *const *names, int n,
                      char **ips)
{
	long limit = config_k8s_provision_timeout(inf->config, K8S_POD_TIMEOUT_S);
	int64_t deadline = now_ms() + (int64_t)limit * 1000;
	struct buf in = BUF_INIT(K8S_OUT_MAX);
	char *why = NULL, *noise = NULL, blk[16384];
	int ready = 0, rc = 0, fd = -1, i;
	pid_t pid = 0;

	while (!rc && ready < n) {
		struct pollfd pf;
		int64_t left = deadline - now_ms();
		char *nl;
		ssize_t got;

		if (left <= 0) {
			rc = error("the pods were not Ready after %ld s "
			           "(kubernetes.provision_timeout): %s",
			           limit,
			           why     ? why
			           : noise ? noise
			                   : "kubectl says nothing more");
			break;
		}
		if (fd < 0 && (rc = watch_start(inf, sel, &pid, &fd)))
			break;
		pf.fd = fd;
		pf.events = POLLIN;
		if (poll(&pf, 1, left > INT_MAX ? INT_MAX : (int)left) < 0) {
			if (errno != EINTR)
				rc = error_errno("poll");
			continue;
		}
		if (!pf.revents)
			continue;
		got = read(fd, blk, sizeof(blk));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			/* The watch ended: another after a breath, while there is time. */
			watch_stop(pid, fd);
			fd = -1;
			buf_setlen(&in, 0);
			poll_ms(K8S_REWATCH_MS);
			continue;
		}
		if (buf_add(&in, blk, (size_t)got)) {
			rc = error("kubectl get pods -w: a line over %d bytes", K8S_OUT_MAX);
			break;
		}
		while (!rc && (nl = memchr(in.p, '\n', in.len))) {
			struct k8s_pod_event ev;
			size_t len = (size_t)(nl - in.p) + 1;

			*nl = '\0';
			switch (infra_k8s_pod_judge(in.p, &ev)) {
			case K8S_POD_NOISE:
				if (*in.p) {
					free(noise);
					noise = xstrdup(in.p);
				}
				break;
			case K8S_POD_ENDED:
				rc = error("pod %s ended (%s) before it was Ready%s%s", ev.name,
				           ev.why, *ev.detail ? ": " : "", ev.detail);
				break;
			case K8S_POD_CANNOT_START:
				rc = error("pod %s cannot start: %s%s%s", ev.name, ev.why,
				           *ev.detail ? ": " : "", ev.detail);
				break;
			case K8S_POD_READY:
				for (i = 0; i < n && strcmp(names[i], ev.name); i++)
					;
				if (i < n && !ips[i]) {
					ips[i] = xstrdup(ev.ip);
					ready++;
				}
				break;
			case K8S_POD_WAITING:
				free(why);
				why = xasprintf("pod %s is %s%s%s%s", ev.name,
				                strcmp(ev.why, "not scheduled") ? "waiting: " : "",
				                ev.why, *ev.detail ? ": " : "", ev.detail);
				break;
			}
			memmove(in.p, in.p + len, in.len - len);
			buf_setlen(&in, in.len - len);
		}
	}
	if (fd >= 0)
		watch_stop(pid, fd);
	free(why);
	free(noise);
	buf_release(&in);
	return rc;
}

/*
 * kubectl create of the pods in list. Pods of those names that are there already are an
 * earlier launch's of this cluster by this launcher that failed half-way (the names hold
 * its id): they are deleted, and waited for, and the pods created again.
 */
static int create_list(const struct infra *inf, const char *cluster, const char *list)
{
	const char *create[] = {"create", "-f", "-", NULL};
	struct buf err = BUF_INIT(64 << 10);
	int code = 0, rc = kubectl_code(inf, create, list, NULL, &err, &code);

	if (!rc && code && err.len && strstr(err.p, "(AlreadyExists)")) {
		rc = k8s_remove(inf, cluster, 1);
		buf_reset(&err);
		if (!rc)
			rc = kubectl_code(inf, create, list, NULL, &err, &code);
	}
	if (!rc && code)
		rc = error("'kubectl create' failed (exit %d): %s", code,
		           err.len ? err.p : "no message");
	buf_release(&err);
	return rc;
}

static int create_pods(struct infra *inf, const char *cluster, int num_nodes,
                       struct cluster_node *v)
{
	struct buf list = BUF_INIT(0);
	char **names, **ips, *id, *sel, *base;
	int i, rc;

	if (!infra_valid_image(inf->image))
		return error("image '%s' is not an image name", inf->image);
	id = infra_launcher_id();
	sel = xasprintf("skiff.managed=1,skiff.cluster=%s,skiff.launcher=%s", cluster, id);
	names = xcalloc((size_t)num_nodes, sizeof(*names));
	ips = xcalloc((size_t)num_nodes, sizeof(*ips));
	/*
	 * The launcher's id is in the pod names (as SkyPilot's cluster names on a cloud carry
	 * the user's hash): two launchers' clusters of one name share a namespace. create, not
	 * apply: a pod of that name that is there already is an error, never changed.
	 */
	base = xasprintf("%s-%.*s", cluster, K8S_POD_ID_LEN, id);
	/* All pods in one create (a v1 List), so that they are scheduled and start together. */
	buf_adds(&list, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[");
	for (i = 0; i < num_nodes; i++) {
		/* A pod name is lowercase: "My_c" is pod skiff-my-c-HASH-0 (infra.h). */
		char *spec;

		names[i] = infra_dns_label("skiff-", base, i);
		spec = infra_k8s_pod_manifest(inf, names[i], cluster, id);
		if (i)
			buf_addch(&list, ',');
		buf_adds(&list, spec);
		free(spec);
	}
	buf_adds(&list, "]}");
	rc = create_list(inf, cluster, list.p);
	if (!rc)
		rc = wait_ready(inf, sel, names, num_nodes, ips);
	for (i = 0; !rc && i < num_nodes; i++)
		node_fill(&v[i], inf, cluster, i, names[i], ips[i], K8S_CONTAINER);
	if (rc) {
		error("cannot start %d pod%s from image %s", num_nodes, num_nodes == 1 ? "" : "s",
		      inf->image);
		k8s_remove(inf, cluster, 0);
	}
	for (i = 0; i < num_nodes; i++) {
		free(names[i]);
		free(ips[i]);
	}
	free(names);
	free(ips);
	buf_release(&list);
	free(base);
	free(sel);
	free(id);
	return rc;
}

static int k8s_pick(struct infra *inf, struct st_db *ldb, const char *cluster, int num_nodes,
                    struct cluster_node *v)
{
	if (k8s_check_exec(inf))
		return -EPERM;
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

/*
 * Delete the pods this launcher made for the cluster; with wait, until they are gone (a
 * new pod of the same name can be made only then).
 */
static int k8s_remove(const struct infra *inf, const char *cluster, int wait)
{
	char *id = infra_launcher_id();
	char *sel = xasprintf("skiff.managed=1,skiff.cluster=%s,skiff.launcher=%s", cluster, id);
	const char *args[] = {"delete",
	                      "pods",
	                      "-l",
	                      sel,
	                      wait ? "--wait=true" : "--wait=false",
	                      "--timeout=" K8S_DELETE_TIMEOUT,
	                      NULL};
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
		k8s_remove(inf, cluster, 0);
}

static int k8s_teardown(const struct infra *inf, struct st_db *ldb, struct clive *cl,
                        const char *cluster)
{
	(void)ldb;
	(void)cl;
	return k8s_remove(inf, cluster, 0);
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

/*
 * Autodown of a pod skiff created: it ends when its PID 1 (`skiff init`) does
 * (restartPolicy Never), and the launcher deletes it. Autostop (no down) is the nodes'
 * default, supervisors stopped and the pods left Running, so that `start` finds them.
 */
static char *k8s_idle_hook(const struct clive *cl, int down)
{
	char *phase;

	if (!down)
		return NULL;
	phase = head_created_phase(cl);
	if (!phase)
		return NULL;
	free(phase);
	return xstrdup("#!/bin/sh\n# skiff, k8s infra: autostop ends the pod (its PID 1 is skiff "
	               "init)\nkill -TERM 1\n");
}

static int k8s_hook_fired(struct st_db *ldb, const struct clive *cl)
{
	char *phase = head_created_phase(cl);
	/* Running: autostop may have stopped its supervisor; the head says (-1: ask it). */
	int r = !phase ? -1 : !strcmp(phase, "Succeeded") || !strcmp(phase, "Failed") ? 1 : -1;

	(void)ldb;
	free(phase);
	return r;
}

/*
 * A probe's kubectl [--context C] [-n NS] ARGS into av, its request timeout what is left
 * until deadline, and the words that name it in messages ("kubectl auth can-i").
 */
static void probe_argv(const struct infra *inf, const char *const *args, int64_t deadline,
                       struct argv *av, struct buf *subject)
{
	int64_t left_s = (deadline - now_ms() + 999) / 1000;
	size_t i;

	kubectl_argv(inf, av);
	argv_pushf(av, "--request-timeout=%llds", (long long)(left_s > 0 ? left_s : 1));
	buf_adds(subject, "kubectl");
	for (i = 0; args[i]; i++) {
		argv_push(av, args[i]);
		if (i < 2 && args[i][0] != '-')
			buf_addf(subject, " %s", args[i]);
	}
}

/*
 * A probe's kubectl ARGS (probe_argv()), stdout into out (may be NULL): infra_probe_run(),
 * or, for an inventory table (inv not NULL), infra_inv_run().
 */
static int k8s_probe_run(const struct infra *inf, const char *const *args, int64_t deadline,
                         struct infra_probe *p, struct infra_inv *inv, struct buf *out)
{
	struct buf subject = BUF_INIT(0);
	struct argv av;
	int r;

	probe_argv(inf, args, deadline, &av, &subject);
	r = inv ? infra_inv_run(inv, subject.p, av.v, deadline, out)
	        : infra_probe_run(p, subject.p, av.v, deadline, out);
	argv_release(&av);
	buf_release(&subject);
	return r;
}

#define CONTEXTS_JSONPATH                                                                          \
	"jsonpath={range .contexts[*]}{.name}{\"\\t\"}{.context.cluster}{\"\\t\"}"                 \
	"{.context.namespace}{\"\\n\"}{end}"

/*
 * For `skiff check`: kubeconfig's contexts (used: the one this infra uses), and the pods
 * labelled skiff.node in the context probed (ctx), booked as pick_existing() books them.
 */
static void probe_inventory(const struct infra *inf, const char *ctx, int64_t deadline,
                            struct infra_probe *out)
{
	static const char *const ctx_cols[] = {"context", "used", "kube_cluster", "namespace"};
	static const char *const pod_cols[] = {"pod", "phase", "ip"};
	const char *view[] = {"config", "view", "-o", CONTEXTS_JSONPATH, NULL};
	const char *pods_args[] = {"get", "pods", "-l", "skiff.node", "-o", PODS_JSONPATH, NULL};
	struct infra_inv *contexts =
	        infra_inv_table(out, "contexts", ctx_cols, ARRAY_SIZE(ctx_cols));
	struct infra_inv *labelled = infra_inv_table(out, "pods", pod_cols, ARRAY_SIZE(pod_cols));
	struct buf text = BUF_INIT(K8S_OUT_MAX);
	char *line, *next;
	struct pod *pods;
	size_t n = 0, i;

	if (!k8s_probe_run(inf, view, deadline, NULL, contexts, &text)) {
		for (line = text.p; line && *line; line = next) {
			char *f[3];
			const char *cells[4];

			next = strchr(line, '\n');
			if (next)
				*next++ = '\0';
			infra_inv_fields(line, '\t', f, ARRAY_SIZE(f));
			if (!*f[0])
				continue;
			cells[0] = f[0];
			cells[1] = !strcmp(f[0], ctx) ? "yes" : "";
			cells[2] = f[1];
			cells[3] = f[2];
			infra_inv_add(contexts, NULL, NULL, 0, cells);
		}
	}
	buf_reset(&text);
	if (k8s_probe_run(inf, pods_args, deadline, NULL, labelled, &text))
		goto out;
	pods = parse_pods(text.p, &n);
	if (n)
		qsort(pods, n, sizeof(*pods), cmp_pod);
	for (i = 0; i < n; i++) {
		const char *cells[] = {pods[i].name, pods[i].phase, pods[i].ip};
		char *key = xasprintf("k8s/%s/%s/%s", inf->context ? inf->context : "",
		                      inf->ns ? inf->ns : "", pods[i].name);

		infra_inv_add(labelled, key, NULL, 0, cells);
		free(key);
	}
	free_pods(pods, n);
out:
	buf_release(&text);
}

/*
 * Usable when the context (the one named, else kubectl's current one) has an API server
 * that answers and lets this user exec into pods, as skiff reaches every pod that way.
 */
static void k8s_probe(const struct infra *inf, int64_t deadline, struct infra_probe *out)
{
	const char *current[] = {"config", "current-context", NULL};
	const char *version[] = {"version", NULL};
	const char *can_exec[] = {"auth", "can-i", "create", "pods", "--subresource=exec", NULL};
	struct buf ctx = BUF_INIT(4096), answer = BUF_INIT(4096);
	const char *ns = inf->ns ? inf->ns : "the context's namespace";
	const char *ns_word = inf->ns ? "namespace " : "";

	if (inf->context)
		buf_adds(&ctx, inf->context);
	else if (k8s_probe_run(inf, current, deadline, out, NULL, &ctx))
		goto out;
	buf_rtrim(&ctx);
	if (k8s_probe_run(inf, version, deadline, out, NULL, NULL))
		goto out;
	if (k8s_probe_run(inf, can_exec, deadline, out, NULL, &answer)) {
		buf_rtrim(&answer);
		if (out->outcome == INFRA_PROBE_EXIT && !strcmp(answer.p, "no")) {
			infra_probe_set(out, INFRA_PROBE_UNUSABLE, NULL);
			infra_probe_say(
			        out,
			        "context %s: RBAC does not let this user create pods/exec in "
			        "%s%s (kubectl auth can-i says no); skiff reaches every pod "
			        "with kubectl exec",
			        ctx.p, ns_word, ns);
		}
		goto out;
	}
	infra_probe_say(out, "context %s: the API server answers; pods/exec allowed in %s%s", ctx.p,
	                ns_word, ns);
	probe_inventory(inf, ctx.p, deadline, out);
out:
	buf_release(&ctx);
	buf_release(&answer);
}

/* Pods: what one launcher follows sensibly; a namespace's quota says the rest. */
#define K8S_MAX_NODES 1024

/*
 * The pod spec skiff writes names the image, carries the task's labels and asks for its
 * CPUs, memory and accelerators; cloud and region name the context. Disk sizes and
 * volumes are not put in it (yet): they are warned as ignored.
 */
const struct infra_ops infra_k8s_ops = {
        .name = "k8s",
        .kind = INFRA_K8S,
        .flags = INFRA_IMAGE,
        .max_nodes = K8S_MAX_NODES,
        .honours = TR_CLOUD | TR_REGION | TR_IMAGE_ID | TR_LABELS,
        .parse = k8s_parse,
        .pick = k8s_pick,
        .unpick = k8s_unpick,
        .runner = k8s_runner,
        .teardown = k8s_teardown,
        .idle_hook = k8s_idle_hook,
        .hook_fired = k8s_hook_fired,
        .probe = k8s_probe,
};
