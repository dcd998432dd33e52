/*
 * The container infras, podman[/POOL] and docker[/POOL]: the nodes are containers of the
 * local engine, reached with `podman exec` / `docker exec` (runner_container.c).
 *
 *   existing containers  podman/POOL: the running containers labelled skiff.pool=POOL,
 *                        by name; when none is, the running container named POOL. They
 *                        are booked like the hosts of an SSH pool (node key
 *                        ENGINE/CONTAINER) and never stopped or removed by skiff.
 *   containers from an   the task's image_id is docker:IMAGE: skiff runs num_nodes new
 *   image                containers skiff-CLUSTER-RANK from IMAGE with `skiff init` as
 *                        their entrypoint (this binary bind-mounted read-only at
 *                        /opt/skiff/bin/skiff), labelled skiff.managed=1,
 *                        skiff.cluster=CLUSTER and skiff.launcher=ID (this launcher:
 *                        its host and $SKIFF_HOME), and skiff.pool=POOL when given.
 *                        `down` removes exactly the containers with those three labels.
 *
 * A node's address (SKYPILOT_NODE_IPS) is the container's IP on its first network; a
 * container with none (--network none, or the host's network) is known by its name.
 * See docs/infra-podman.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/infra/infra_internal.h"
#include "bootstrap/infra/live.h"
#include "lib/buf.h"
#include "lib/config.h"
#include "lib/log.h"
#include "lib/self.h"
#include "lib/spawn.h"
#include "lib/task.h"
#include "lib/util.h"
#include "lib/banned.h"

#define CTR_SELF_PATH "/opt/skiff/bin/skiff"
#define CTR_OUT_MAX (4 << 20)

static const char *engine_of(const struct infra *inf)
{
	return inf->kind == INFRA_DOCKER ? "docker" : "podman";
}

static int parse_engine(enum infra_kind kind, const char *rest, const char *spec, struct infra *out)
{
	const char *engine = kind == INFRA_DOCKER ? "docker" : "podman";

	if (rest && !runner_valid_object_name(rest))
		return error("infra '%s': expected %s/POOL, with POOL a label value or a container "
		             "name (letters, digits, '_', '.', '-')",
		             spec, engine);
	out->kind = kind;
	out->pool = rest ? xstrdup(rest) : NULL;
	out->spec = rest ? xasprintf("%s/%s", engine, rest) : xstrdup(engine);
	return 0;
}

/*
 * Runs the engine with args (NULL-terminated, after the engine's name); stdout in out
 * (may be NULL), stderr kept for the message. 0, or an error (printed, with what the
 * engine said).
 */
static int engine_run(const char *engine, const char *const *args, struct buf *out)
{
	struct buf err = BUF_INIT(64 << 10), dummy = BUF_INIT(CTR_OUT_MAX);
	struct argv av;
	int rc, status = 0;
	size_t i;

	argv_init(&av);
	argv_push(&av, engine);
	for (i = 0; args[i]; i++)
		argv_push(&av, args[i]);
	rc = run_capture(av.v, NULL, NULL, out ? out : &dummy, &err, &status);
	buf_rtrim(&err);
	if (rc) {
		errno = -rc;
		rc = error_errno("cannot run '%s %s'", engine, args[0]);
	} else if (status_to_code(status)) {
		rc = error("'%s %s' failed (exit %d): %s", engine, args[0], status_to_code(status),
		           err.len ? err.p : "no message");
	}
	argv_release(&av);
	buf_release(&err);
	buf_release(&dummy);
	return rc;
}

/* The lines of text, without empty ones; *n of them. Free each, then the array. */
static char **split_lines(char *text, size_t *n)
{
	char **v = NULL, *line, *next;
	size_t cap = 0;

	*n = 0;
	for (line = text; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line[strcspn(line, "\r")] = '\0';
		if (!*line)
			continue;
		v = xgrow(v, *n, &cap, sizeof(*v));
		v[(*n)++] = xstrdup(line);
	}
	return v;
}

static void free_lines(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int infra_valid_image(const char *s)
{
	const unsigned char *p;

	if (!s || !*s || *s == '-' || strlen(s) > 1024)
		return 0;
	for (p = (const unsigned char *)s; *p; p++)
		if (*p <= ' ' || *p >= 0x7f)
			return 0;
	return 1;
}

char *infra_launcher_id(void)
{
	char host[256] = "", hex[SHA256_HEX_LEN + 1], *abs, *s;
	const char *home = skiff_home();

	gethostname(host, sizeof(host) - 1);
	abs = home ? realpath(home, NULL) : NULL;
	s = xasprintf("%s:%s", host, abs ? abs : home ? home : "");
	sha256_hex(s, strlen(s), hex);
	free(abs);
	free(s);
	return xstrndup(hex, 16);
}

/*
 * The container's state and address: "STATUS IP" where IP is the first non-empty
 * address of its networks (the name when it has none).
 */
static int inspect(const char *engine, const char *name, char **status, char **ip)
{
	const char *args[] = {"container",
	                      "inspect",
	                      "--format",
	                      "{{.State.Status}} {{.NetworkSettings.IPAddress}} "
	                      "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}",
	                      name,
	                      NULL};
	struct buf out = BUF_INIT(64 << 10);
	char *p, *tok;
	int rc;

	*status = *ip = NULL;
	rc = engine_run(engine, args, &out);
	if (rc)
		goto out;
	p = out.p;
	tok = strsep(&p, " \n");
	*status = xstrdup(tok ? tok : "unknown");
	while (p && (tok = strsep(&p, " \n")))
		if (*tok && strcmp(tok, "<no") && strcmp(tok, "value>")) {
			*ip = xstrdup(tok);
			break;
		}
	if (!*ip)
		*ip = xstrdup(name);
out:
	buf_release(&out);
	return rc;
}

static void node_fill(struct cluster_node *n, const char *engine, const char *cluster, int rank,
                      const char *name, const char *ip)
{
	memset(n, 0, sizeof(*n));
	n->cluster = xstrdup(cluster);
	n->rank = rank;
	n->node_key = xasprintf("%s/%s", engine, name);
	n->ip = xstrdup(ip);
	n->user = xstrdup("");
	n->identity_file = xstrdup("");
	n->proxy_jump = xstrdup("");
	n->home = xstrdup("");
	n->skiff_exe = xstrdup("");
}

/* The running containers of pool: labelled skiff.pool=POOL, else the one named POOL. */
static int pool_members(const struct infra *inf, char ***names, size_t *n)
{
	const char *engine = engine_of(inf);
	char *filter = xasprintf("label=skiff.pool=%s", inf->pool);
	const char *args[] = {"ps", "--filter", filter, "--format", "{{.Names}}", NULL};
	struct buf out = BUF_INIT(CTR_OUT_MAX);
	char *status = NULL, *ip = NULL;
	int rc;

	*names = NULL;
	*n = 0;
	rc = engine_run(engine, args, &out);
	free(filter);
	if (rc)
		goto out;
	*names = split_lines(out.p, n);
	if (*n) {
		qsort(*names, *n, sizeof(**names), cmp_str);
		goto out;
	}
	/* No labelled container: a container of that name, if it runs. */
	if (inspect(engine, inf->pool, &status, &ip)) {
		rc = error("infra %s: no running container is labelled skiff.pool=%s, and none is "
		           "named %s",
		           inf->spec, inf->pool, inf->pool);
		rc = -ENOENT;
		goto out;
	}
	if (strcmp(status, "running")) {
		rc = -ENOENT;
		error("infra %s: container %s is %s, not running", inf->spec, inf->pool, status);
		goto out;
	}
	*names = xcalloc(1, sizeof(**names));
	(*names)[0] = xstrdup(inf->pool);
	*n = 1;
out:
	free(status);
	free(ip);
	buf_release(&out);
	return rc;
}

static int pick_existing(struct infra *inf, struct st_db *ldb, const char *cluster, int num_nodes,
                         struct cluster_node *v)
{
	const char *engine = engine_of(inf);
	struct infra_candidate *cand = NULL;
	char **names = NULL;
	size_t n = 0, nc = 0, i, busy = 0, held = 0, *picked = NULL, *who = NULL;
	int taken = 0, rc;

	if (!inf->pool)
		return error("infra '%s' names no containers: use %s/POOL (the running containers "
		             "labelled skiff.pool=POOL, or the one named POOL), or give the task "
		             "an image to start (image_id: docker:IMAGE)",
		             inf->spec, engine);
	rc = pool_members(inf, &names, &n);
	if (rc)
		return rc;
	if ((size_t)num_nodes > n) {
		error("infra %s has %zu running container%s; need %d", inf->spec, n,
		      n == 1 ? "" : "s", num_nodes);
		rc = -ENOSPC;
		goto out;
	}
	cand = xcalloc(n, sizeof(*cand));
	picked = xcalloc(n, sizeof(*picked));
	who = xcalloc(n, sizeof(*who));
	/* The candidates, but those another launcher's cluster holds (cand[k]: names[who[k]]). */
	for (i = 0; i < n; i++) {
		char *key = xasprintf("%s/%s", engine, names[i]);

		if (infra_held(inf, key)) {
			free(key);
			held++;
			continue;
		}
		cand[nc].key = key;
		who[nc++] = i;
	}
	rc = infra_book(ldb, cluster, cand, nc, num_nodes, picked, &busy, NULL);
	if (rc < 0)
		goto out;
	for (i = 0; i < (size_t)rc; i++) {
		const char *name = names[who[picked[i]]];
		char *st = NULL, *ip = NULL;

		if (inspect(engine, name, &st, &ip)) {
			rc = -EIO;
			goto out;
		}
		node_fill(&v[taken], engine, cluster, taken, name, ip);
		v[taken].stays = 1; /* the pool's: it outlives the cluster */
		taken++;
		free(st);
		free(ip);
	}
	rc = 0;
	if (taken < num_nodes) {
		if (held)
			error("infra %s has %zu running container%s, %zu held by another launcher's "
			      "cluster, %zu in use by other clusters; need %d",
			      inf->spec, n, n == 1 ? "" : "s", held, busy, num_nodes);
		else
			error("infra %s has %zu running container%s, %zu in use by other clusters; "
			      "need %d",
			      inf->spec, n, n == 1 ? "" : "s", busy, num_nodes);
		rc = -EBUSY;
	}
out:
	for (i = 0; cand && i < nc; i++)
		free((char *)cand[i].key);
	free(cand);
	free(picked);
	free(who);
	free_lines(names, n);
	return rc;
}

/* The last lines a container printed: why it is not running. */
static void tell_logs(const char *engine, const char *name)
{
	const char *args[] = {"logs", "--tail", "5", name, NULL};
	struct buf out = BUF_INIT(64 << 10);

	if (!engine_run(engine, args, &out) && out.len) {
		buf_rtrim(&out);
		error("container %s said: %s", name, out.p);
	}
	buf_release(&out);
}

static int container_remove(const struct infra *inf, const char *cluster);

static int create_one(const struct infra *inf, const char *cluster, const char *id, int rank,
                      const char *self, struct cluster_node *n)
{
	const char *engine = engine_of(inf);
	/* Engines take names of [a-zA-Z0-9_.-] as cluster names are; a hostname is a DNS label. */
	char *name = xasprintf("skiff-%s-%d", cluster, rank);
	char *host = infra_dns_label("skiff-", cluster, rank);
	char *l_cluster = xasprintf("skiff.cluster=%s", cluster);
	char *l_launcher = xasprintf("skiff.launcher=%s", id);
	char *l_pool = inf->pool ? xasprintf("skiff.pool=%s", inf->pool) : NULL;
	char *mount = xasprintf("%s:%s:ro", self, CTR_SELF_PATH);
	/* docker.run_options go before skiff's own --entrypoint and image, which they cannot
	 * replace: the node must run skiff init. */
	char **opts = config_run_options(inf->config);
	size_t nopts = 0, o;
	const char **args;
	char *st = NULL, *ip = NULL;
	int k = 0, rc;

	while (opts && opts[nopts])
		nopts++;
	args = xcalloc(32 + nopts, sizeof(*args));

	args[k++] = "run";
	args[k++] = "-d";
	args[k++] = "--name";
	args[k++] = name;
	args[k++] = "--hostname";
	args[k++] = host;
	args[k++] = "--label";
	args[k++] = "skiff.managed=1";
	args[k++] = "--label";
	args[k++] = l_cluster;
	args[k++] = "--label";
	args[k++] = l_launcher;
	if (l_pool) {
		args[k++] = "--label";
		args[k++] = l_pool;
	}
	args[k++] = "-v";
	args[k++] = mount;
	for (o = 0; o < nopts; o++)
		args[k++] = opts[o];
	args[k++] = "--entrypoint";
	args[k++] = CTR_SELF_PATH;
	args[k++] = inf->image;
	args[k++] = "init";
	args[k] = NULL;
	rc = engine_run(engine, args, NULL);
	if (rc) {
		error("cannot start container %s from image %s", name, inf->image);
		goto out;
	}
	rc = inspect(engine, name, &st, &ip);
	if (rc)
		goto out;
	if (strcmp(st, "running")) {
		rc = error("container %s is %s right after it started (skiff init could not run "
		           "there?)",
		           name, st);
		tell_logs(engine, name);
		goto out;
	}
	node_fill(n, engine, cluster, rank, name, ip);
out:
	free(st);
	free(ip);
	free(name);
	free(host);
	free(l_cluster);
	free(l_launcher);
	free(l_pool);
	free(mount);
	free(args);
	config_words_free(opts);
	return rc;
}

static int create_containers(struct infra *inf, const char *cluster, int num_nodes,
                             struct cluster_node *v)
{
	const char *self = self_path(NULL);
	char *id;
	int i, rc;

	if (!infra_valid_image(inf->image))
		return error("image '%s' is not an image name", inf->image);
	if (!self)
		return error("cannot find this skiff executable to mount it into the containers");
	/* Leftovers of an earlier launch of this cluster that never booked them. */
	rc = container_remove(inf, cluster);
	if (rc)
		return rc;
	id = infra_launcher_id();
	for (i = 0, rc = 0; i < num_nodes && !rc; i++)
		rc = create_one(inf, cluster, id, i, self, &v[i]);
	free(id);
	if (rc)
		container_remove(inf, cluster);
	return rc;
}

static int container_pick(struct infra *inf, struct st_db *ldb, const char *cluster, int num_nodes,
                          struct cluster_node *v)
{
	if (inf->image)
		return create_containers(inf, cluster, num_nodes, v);
	return pick_existing(inf, ldb, cluster, num_nodes, v);
}

static struct runner *container_runner(const struct infra *inf, const struct cluster_node *n)
{
	struct container_target t = {0};
	const char *slash = strchr(n->node_key, '/');

	if (!slash || !slash[1]) {
		error("cluster '%s': node %d has no container ('%s')", n->cluster, n->rank,
		      n->node_key);
		return NULL;
	}
	t.engine = engine_of(inf);
	t.container = slash + 1;
	t.user = n->user;
	t.ip = n->ip;
	return runner_container_new(slash + 1, &t);
}

/* The containers skiff started for cluster (labels: managed, cluster, this launcher). */
static int cluster_containers(const struct infra *inf, const char *cluster, char ***names,
                              size_t *n)
{
	const char *engine = engine_of(inf);
	char *id = infra_launcher_id();
	char *f_cluster = xasprintf("label=skiff.cluster=%s", cluster);
	char *f_launcher = xasprintf("label=skiff.launcher=%s", id);
	const char *ps[] = {"ps",       "-a",         "--filter", "label=skiff.managed=1",
	                    "--filter", f_cluster,    "--filter", f_launcher,
	                    "--format", "{{.Names}}", NULL};
	struct buf out = BUF_INIT(CTR_OUT_MAX);
	int rc;

	*names = NULL;
	*n = 0;
	rc = engine_run(engine, ps, &out);
	if (!rc)
		*names = split_lines(out.p, n);
	buf_release(&out);
	free(f_cluster);
	free(f_launcher);
	free(id);
	return rc;
}

/* `ENGINE VERB [OPTS] NAME...` on the cluster's own containers; what *n found. */
static int on_cluster_containers(const struct infra *inf, const char *cluster,
                                 const char *const *verb, size_t *found)
{
	const char *engine = engine_of(inf);
	const char **args = NULL;
	char **names = NULL;
	size_t n = 0, i, k = 0;
	int rc;

	rc = cluster_containers(inf, cluster, &names, &n);
	if (found)
		*found = n;
	if (rc || !n)
		goto out;
	args = xcalloc(n + 8, sizeof(*args));
	for (i = 0; verb[i]; i++)
		args[k++] = verb[i];
	for (i = 0; i < n; i++)
		args[k++] = names[i];
	rc = engine_run(engine, args, NULL);
out:
	free(args);
	free_lines(names, n);
	return rc;
}

static int container_remove(const struct infra *inf, const char *cluster)
{
	static const char *const rm_podman[] = {"rm", "-f", "-t", "0", NULL};
	static const char *const rm_docker[] = {"rm", "-f", NULL};
	size_t n = 0;
	/* Jobs end with the container: no grace period to wait out (podman has -t). */
	int rc = on_cluster_containers(
	        inf, cluster, strcmp(engine_of(inf), "podman") ? rm_docker : rm_podman, &n);

	if (!rc && n)
		debug("removed %zu container(s) of cluster %s", n, cluster);
	return rc;
}

static int container_stop(const struct infra *inf, const char *cluster)
{
	/* The supervisors are down and the jobs cancelled already: init exits at once. */
	static const char *const stop[] = {"stop", "-t", "10", NULL};

	return on_cluster_containers(inf, cluster, stop, NULL);
}

static int container_start(const struct infra *inf, struct st_db *ldb, const char *cluster)
{
	static const char *const start[] = {"start", NULL};
	const char *engine = engine_of(inf);
	struct cluster_node *v = NULL;
	size_t n = 0, i;
	int rc;

	rc = on_cluster_containers(inf, cluster, start, NULL);
	if (rc)
		return rc;
	/* A container started again may have another address: the nodes' rows follow. */
	rc = st_cluster_nodes(ldb, cluster, &v, &n);
	for (i = 0; !rc && i < n; i++) {
		const char *slash = strchr(v[i].node_key, '/');
		char *st = NULL, *ip = NULL;

		if (!slash || inspect(engine, slash + 1, &st, &ip))
			continue;
		if (strcmp(st, "running"))
			rc = error("container %s is %s after it was started again", slash + 1, st);
		else if (strcmp(ip, v[i].ip)) {
			rc = st_cluster_node_set_ip(ldb, cluster, v[i].rank, ip);
			if (!rc && v[i].rank == 0)
				rc = st_cluster_set_head_ip(ldb, cluster, ip);
		}
		free(st);
		free(ip);
	}
	cluster_nodes_free(v, n);
	return rc;
}

/*
 * The state of the cluster's head container when skiff started it ("running",
 * "exited"...; the caller frees it), or NULL for a container of a pool (or when the
 * engine cannot say: printed).
 */
static char *head_started_state(const struct clive *cl)
{
	struct infra inf;
	char **names = NULL, *st = NULL, *ip = NULL;
	size_t n = 0, i;

	if (!cl->n || infra_parse(cl->infra, &inf))
		return NULL;
	if (!cluster_containers(&inf, cl->name, &names, &n))
		for (i = 0; i < n && !st; i++)
			if (!strcmp(names[i], cl->nodes[0].r->name) &&
			    inspect(engine_of(&inf), names[i], &st, &ip))
				st = NULL;
	free_lines(names, n);
	free(ip);
	infra_release(&inf);
	return st;
}

/* A container skiff started ends when its PID 1 (`skiff init`) does. */
static char *container_idle_hook(const struct clive *cl, int down)
{
	char *st = head_started_state(cl);

	(void)down;
	if (!st)
		return NULL;
	free(st);
	return xstrdup("#!/bin/sh\n# skiff, container infra: autostop ends the container (its "
	               "PID 1 is skiff init)\nkill -TERM 1\n");
}

static int container_hook_fired(struct st_db *ldb, const struct clive *cl)
{
	char *st = head_started_state(cl);
	int r = st ? strcmp(st, "running") != 0 : -1;

	(void)ldb;
	free(st);
	return r;
}

static int podman_parse(const char *rest, const char *spec, struct infra *out)
{
	return parse_engine(INFRA_PODMAN, rest, spec, out);
}

static int docker_parse(const char *rest, const char *spec, struct infra *out)
{
	return parse_engine(INFRA_DOCKER, rest, spec, out);
}

/* Containers this pick started for the cluster go again (-EEXIST: they are another's). */
static void container_unpick(struct infra *inf, const char *cluster, const struct cluster_node *v,
                             int n)
{
	(void)v;
	(void)n;
	if (inf->image)
		container_remove(inf, cluster);
}

static int container_teardown(const struct infra *inf, struct st_db *ldb, struct clive *cl,
                              const char *cluster)
{
	(void)ldb;
	(void)cl;
	return container_remove(inf, cluster);
}

/* Usable when the engine answers `info` (docker: its daemon; podman: its storage). */
/*
 * The containers of its pools (labelled skiff.pool; the one named pool's own), any state,
 * for `skiff check`, booked by node key as container_pick() books them. A container
 * named as a one-container pool carries no label: it is not listed.
 */
static void probe_pools(const struct infra *inf, int64_t deadline, struct infra_probe *out)
{
	static const char *const cols[] = {"pool", "container", "status", "image"};
	struct infra_inv *inv = infra_inv_table(out, "containers", cols, ARRAY_SIZE(cols));
	const char *engine = engine_of(inf);
	/* docker's ps formats its labels as one string, with .Label to pick one. */
	const char *label = inf->kind == INFRA_DOCKER ? "{{.Label \"skiff.pool\"}}"
	                                              : "{{index .Labels \"skiff.pool\"}}";
	char *filter = inf->pool ? xasprintf("label=skiff.pool=%s", inf->pool)
	                         : xstrdup("label=skiff.pool");
	char *format = xasprintf("%s\t{{.Names}}\t{{.Status}}\t{{.Image}}", label);
	char *subject = xasprintf("%s ps", engine);
	char *argv[] = {(char *)engine, "ps", "-a", "--filter", filter, "--format", format, NULL};
	struct buf text = BUF_INIT(CTR_OUT_MAX);
	char **lines;
	size_t n = 0, i;

	if (infra_inv_run(inv, subject, argv, deadline, &text))
		goto out;
	lines = split_lines(text.p, &n);
	if (n)
		qsort(lines, n, sizeof(*lines), cmp_str); /* by pool, then name: rank order */
	for (i = 0; i < n; i++) {
		char *f[4], *key;

		infra_inv_fields(lines[i], '\t', f, ARRAY_SIZE(f));
		key = xasprintf("%s/%s", engine, f[1]);
		infra_inv_add(inv, key, NULL, 0, (const char *const *)f);
		free(key);
	}
	free_lines(lines, n);
out:
	buf_release(&text);
	free(subject);
	free(format);
	free(filter);
}

static void container_probe(const struct infra *inf, int64_t deadline, struct infra_probe *out)
{
	const char *engine = engine_of(inf);
	const char *format =
	        inf->kind == INFRA_DOCKER ? "{{.ServerVersion}}" : "{{.Version.Version}}";
	char *argv[] = {(char *)engine, "info", "--format", (char *)format, NULL};
	struct buf version = BUF_INIT(64 << 10);
	char *subject = xasprintf("%s info", engine);

	if (!infra_probe_run(out, subject, argv, deadline, &version)) {
		buf_rtrim(&version);
		infra_probe_say(out, "%s %s answers", engine,
		                version.len ? version.p : "(version unknown)");
		probe_pools(inf, deadline, out);
	}
	buf_release(&version);
	free(subject);
}

/* Containers: an engine runs as many as the machine holds; a cluster's ranks are bounded
 * by what one launcher follows sensibly. */
#define CONTAINER_MAX_NODES 1024

const struct infra_ops infra_podman_ops = {
        .name = "podman",
        .kind = INFRA_PODMAN,
        .flags = INFRA_IMAGE,
        .max_nodes = CONTAINER_MAX_NODES,
        .honours = TR_IMAGE_ID | TR_PORTS,
        .parse = podman_parse,
        .pick = container_pick,
        .unpick = container_unpick,
        .runner = container_runner,
        .teardown = container_teardown,
        .stop = container_stop,
        .start = container_start,
        .idle_hook = container_idle_hook,
        .hook_fired = container_hook_fired,
        .probe = container_probe,
};

const struct infra_ops infra_docker_ops = {
        .name = "docker",
        .kind = INFRA_DOCKER,
        .flags = INFRA_IMAGE,
        .max_nodes = CONTAINER_MAX_NODES,
        .honours = TR_IMAGE_ID | TR_PORTS,
        .parse = docker_parse,
        .pick = container_pick,
        .unpick = container_unpick,
        .runner = container_runner,
        .teardown = container_teardown,
        .stop = container_stop,
        .start = container_start,
        .idle_hook = container_idle_hook,
        .hook_fired = container_hook_fired,
        .probe = container_probe,
};
