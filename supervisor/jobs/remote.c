/*
 * The launcher's side of a managed-jobs controller on a cluster of its own
 * (jobs.controller.resources.infra; docs/managed-jobs.md, "Placement"): the controller
 * cluster is brought up with the bootstrap of any cluster, the job's local files go to it
 * first (the two-hop), and every `skiff jobs` command becomes one framed request to
 * `skiff __jobs-remote` on its head over the runner, whose output and exit status are the
 * command's. The host's side is supervisor/jobs/host.c and cmd/jobs.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap/infra/infra.h"
#include "bootstrap/infra/runner.h"
#include "bootstrap/launch/cluster.h"
#include "bootstrap/launch/engine.h"
#include "bootstrap/launch/install.h"
#include "bootstrap/launch/selfimage.h"
#include "bootstrap/renv/renv.h"
#include "lib/buf.h"
#include "lib/config.h"
#include "lib/exit.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/proto.h"
#include "lib/sha256.h"
#include "lib/task.h"
#include "lib/util.h"
#include "supervisor/jobs/jobs.h"
#include "lib/banned.h"

/* A queue, cancel or submit round trip; a dead controller host is found sooner (ssh). */
#define REMOTE_CALL_MS (120 * 1000)

int jobs_remote_infra(char **out)
{
	struct yerrors errs = YERRORS_INIT;
	struct cfg_node *cfg = NULL;
	struct infra inf;
	const char *infra;
	char *path;
	int r = 0;

	*out = NULL;
	if (getenv(JOBS_ON_CONTROLLER_ENV))
		return 0; /* the controller's own host: here */
	path = config_file_path();
	if (path && !config_load_file(path, &cfg, &errs) &&
	    (infra = config_controller_infra(cfg))) {
		r = infra_parse(infra, &inf);
		if (!r) {
			infra_release(&inf);
			*out = xstrdup(infra);
		} else if (r == -ENOTSUP) {
			/* SkyPilot's config names a cloud: skiff's controller stays here. */
			warning("%s: jobs.controller.resources.infra '%s' is a cloud: the managed-jobs "
			        "controller runs on this machine",
			        path, infra);
			r = 0;
		} else {
			error("%s: jobs.controller.resources.infra '%s': see above", path, infra);
		}
	}
	yerr_release(&errs);
	cfg_free(cfg);
	free(path);
	return r;
}

void jobs_remote_cluster_name(char *out, size_t size)
{
	const char *user = getenv("SKIFF_USER");
	char hex[SHA256_HEX_LEN + 1];

	if (!user || !*user)
		user = own_account()->name;
	sha256_hex(user ? user : "", user ? strlen(user) : 0, hex);
	xsnprintf(out, size, "%s%.8s", JOBS_CONTROLLER_CLUSTER_PREFIX, hex);
}

struct ctl {
	struct st_db *db;
	const char *infra;
	char name[64];
	struct cluster c;
	struct clive cl;
	int open;
	int out_fd; /* > 0: the remote command's stdout goes there (else ours) */
};

static void ctl_close(struct ctl *x)
{
	if (!x->open)
		return;
	cluster_free(&x->c);
	cl_close(&x->cl);
	x->open = 0;
}

/* "$HOME/.skiff/bin/skiff-SHA": this binary on a node, as the bootstrap installs it. */
static int our_exe(char *out, size_t size)
{
	const char *data, *sha;
	size_t len;

	if (boot_self_image(&data, &len, &sha))
		return -1;
	boot_exe_word(sha, out, size);
	return 0;
}

/*
 * The controller cluster's task: its name, and jobs.controller.resources.image_id of the
 * config file when it names one (the container or pod image of the controller's node).
 */
static char *controller_task_yaml(const char *name)
{
	struct yerrors errs = YERRORS_INIT;
	struct cfg_node *cfg = NULL;
	struct buf b = BUF_INIT(0);
	char *path = config_file_path();
	const char *image;

	buf_addf(&b, "name: %s\n", name);
	if (path && !config_load_file(path, &cfg, &errs) &&
	    (image = config_controller_image(cfg))) {
		/* A JSON string is a YAML scalar: whatever the value holds stays one. */
		buf_adds(&b, "resources:\n  image_id: ");
		json_quote(&b, image, strlen(image));
		buf_addch(&b, '\n');
	}
	yerr_release(&errs);
	cfg_free(cfg);
	free(path);
	return buf_detach(&b, NULL);
}

/*
 * Brings the controller cluster up (or adopts it: a launcher with an empty SKIFF_HOME
 * books the same host of an ssh pool), or upgrades its binary to ours: a launch of an
 * empty task, which bootstraps the node and runs nothing.
 */
static int ctl_bring_up(struct ctl *x, int existed)
{
	struct task_list tl = TASK_LIST_INIT;
	struct yerrors errs = YERRORS_INIT;
	struct eng_launch req = {0};
	struct eng_launched res;
	char *yaml = controller_task_yaml(x->name);
	int r;

	fprintf(stderr, "%s the jobs controller %s on %s\n", existed ? "Updating" : "Starting",
	        x->name, x->infra);
	r = task_parse_buf(&tl, "(the jobs controller)", yaml, strlen(yaml), &errs);
	yerr_print(&errs, stderr);
	yerr_release(&errs);
	free(yaml);
	if (r)
		return -EINVAL;
	req.cluster = x->name;
	req.infra = x->infra;
	req.task = tl.tasks[0];
	req.entrypoint = "(the managed-jobs controller)";
	req.detach = 1;
	req.idle_minutes = -1;
	req.always_submit = 1; /* the controller follows the job it makes */
	req.no_default_cpus = 1;
	req.quiet = 1;
	r = eng_launch(x->db, &req, &res);
	task_list_release(&tl);
	return r;
}

/* The controller cluster open, running our binary (brought up or upgraded first). */
static int ctl_open(struct ctl *x)
{
	char exe[128];
	int existed;

	if (our_exe(exe, sizeof(exe)))
		return -EIO;
	existed = !st_cluster_get(x->db, x->name, &x->c);
	if (existed) {
		int other = strcmp(x->c.infra, x->infra);

		if (other) {
			error("the jobs controller %s runs on %s, and the config places it on %s: "
			      "'skiff down %s' first (once its jobs have ended), or set "
			      "jobs.controller.resources.infra back",
			      x->name, x->c.infra, x->infra, x->name);
			cluster_free(&x->c);
			return -EINVAL;
		}
		cluster_free(&x->c);
	}
	if (!existed && ctl_bring_up(x, 0))
		return -EIO;
	if (eng_open(x->db, x->name, &x->c, &x->cl))
		return -EIO;
	x->open = 1;
	if (!x->cl.n) {
		ctl_close(x);
		return error("the jobs controller %s has no node", x->name);
	}
	if (x->cl.nodes[0].exe && !strcmp(x->cl.nodes[0].exe, exe))
		return 0;
	ctl_close(x);
	if (ctl_bring_up(x, 1) || eng_open(x->db, x->name, &x->c, &x->cl))
		return -EIO;
	x->open = 1;
	return x->cl.n ? 0 : -EIO;
}

static int unreachable(const struct ctl *x)
{
	error("the jobs controller %s (%s) cannot be reached: its jobs go on there, and it "
	      "catches up on them; try again once it answers",
	      x->name, x->infra);
	return EXIT_UNAVAILABLE;
}

/*
 * Sends req to `skiff __jobs-remote` on the controller's head: its stdout is ours, or
 * captured into out. The remote command's exit status, or EXIT_UNAVAILABLE (printed).
 */
static int ctl_call(struct ctl *x, const struct msg *req, struct buf *out, int timeout_ms)
{
	unsigned char hdr[PROTO_HDR];
	struct buf in = BUF_INIT(PROTO_MAX_MSG + PROTO_HDR);
	struct cnode *nd = &x->cl.nodes[0];
	char *script = xasprintf("exec %s __jobs-remote", nd->exe);
	int r, status = 0, tries;

	proto_header(req, hdr);
	buf_add(&in, (const char *)hdr, sizeof(hdr));
	buf_add(&in, req->raw.p, req->raw.len);
	for (tries = 0;; tries++) {
		if (out) {
			out->len = 0;
			r = runner_capture(nd->r, script, in.p, in.len, out, NULL, timeout_ms,
			                   &status);
		} else {
			char tmpl[] = "/tmp/skiff-jobreq.XXXXXX";
			int fd = mkstemp(tmpl);
			struct runner_io io = {fd, x->out_fd > 0 ? x->out_fd : RUNNER_INHERIT,
			                       RUNNER_INHERIT};

			if (fd < 0) {
				r = error_errno("cannot make a temporary file");
				break;
			}
			unlink(tmpl);
			if (write_all(fd, in.p, in.len) || lseek(fd, 0, SEEK_SET) < 0) {
				close(fd);
				r = error_errno("cannot write a temporary file");
				break;
			}
			r = runner_run(nd->r, script, &io, timeout_ms, &status);
			close(fd);
		}
		/* 127: the host lost our binary (a wiped home): bootstrap it again, once. */
		if (r || status != 127 || tries)
			break;
		ctl_close(x);
		if (ctl_bring_up(x, 1) || eng_open(x->db, x->name, &x->c, &x->cl)) {
			r = -EIO;
			break;
		}
		x->open = 1;
		nd = &x->cl.nodes[0];
		free(script);
		script = xasprintf("exec %s __jobs-remote", nd->exe);
	}
	free(script);
	buf_release(&in);
	if (r == -EHOSTUNREACH || r == -ETIMEDOUT)
		return unreachable(x);
	if (r)
		return EXIT_FAIL;
	return status;
}

/* A request for op, with the controller's knobs: they travel as they reach a local node. */
static void request(struct msg *m, const char *op)
{
	char **e;

	msg_init(m);
	msg_add(m, "op", op);
	for (e = environ; *e; e++)
		if (starts_with(*e, "SKIFF_JOBS_"))
			msg_add(m, "env", *e);
}

static int ctl_begin(struct ctl *x, const char *infra)
{
	memset(x, 0, sizeof(*x));
	x->infra = infra;
	jobs_remote_cluster_name(x->name, sizeof(x->name));
	if (st_launcher_open(0, &x->db))
		return -EIO;
	if (ctl_open(x)) {
		st_close(x->db);
		x->db = NULL;
		return -EIO;
	}
	return 0;
}

static void ctl_end(struct ctl *x)
{
	ctl_close(x);
	st_close(x->db);
}

/* Moves each CLUSTER/JOB of tmp to root/CLUSTER/JOB (replacing it) and says where. */
static int move_runs(const char *tmp, const char *root)
{
	DIR *d = opendir(tmp);
	struct dirent *c;
	int r = 0;

	if (!d)
		return error_errno("cannot open '%s'", tmp);
	while ((c = readdir(d))) {
		char *cdir, *dst_c;
		DIR *e;
		struct dirent *j;

		if (c->d_name[0] == '.')
			continue;
		cdir = xasprintf("%s/%s", tmp, c->d_name);
		dst_c = xasprintf("%s/%s", root, c->d_name);
		e = opendir(cdir);
		if (e && !mkdir_p(dst_c, 0700)) {
			while ((j = readdir(e))) {
				char *from, *to;

				if (j->d_name[0] == '.')
					continue;
				from = xasprintf("%s/%s", cdir, j->d_name);
				to = xasprintf("%s/%s", dst_c, j->d_name);
				rm_rf(to);
				if (rename(from, to))
					r = error_errno("cannot move the logs to '%s'", to);
				else
					printf("logs synced to %s\n", to);
				free(from);
				free(to);
			}
		} else {
			r = error_errno("cannot create '%s'", dst_c);
		}
		if (e)
			closedir(e);
		free(cdir);
		free(dst_c);
	}
	closedir(d);
	return r;
}

int jobs_remote_sync_down(const char *infra, int argc, char **argv)
{
	const char *home = user_home();
	char *root, *tmp;
	char tmpl[] = "/tmp/skiff-logs.XXXXXX";
	struct msg req;
	struct ctl x;
	int i, rc, fd;

	if (!home)
		return error("no home directory to put ~/sky_logs in"), EXIT_FAIL;
	root = xasprintf("%s/sky_logs", home);
	tmp = xasprintf("%s/.sync-down.XXXXXX", root);
	fd = mkstemp(tmpl);
	if (fd < 0 || mkdir_p(root, 0700) || !mkdtemp(tmp)) {
		rc = (error_errno("cannot make a place for the logs in '%s'", root), EXIT_FAIL);
		goto done;
	}
	unlink(tmpl);
	if (ctl_begin(&x, infra)) {
		rc = EXIT_FAIL;
		goto done;
	}
	request(&req, "sync_down");
	for (i = 0; i < argc; i++)
		msg_add(&req, "arg", argv[i]);
	x.out_fd = fd;
	rc = ctl_call(&x, &req, NULL, -1);
	msg_release(&req);
	ctl_end(&x);
	if (rc != EXIT_UNAVAILABLE && rc != EXIT_USAGE && lseek(fd, 0, SEEK_SET) == 0) {
		struct stat st;

		if (!fstat(fd, &st) && st.st_size > 0 &&
		    (jobs_kept_untar(fd, tmp) || move_runs(tmp, root)))
			rc = EXIT_FAIL;
	}
done:
	if (fd >= 0)
		close(fd);
	rm_rf(tmp);
	free(tmp);
	free(root);
	return rc;
}

int jobs_remote_cli(const char *infra, int argc, char **argv)
{
	struct msg req;
	struct ctl x;
	int i, rc;

	if (ctl_begin(&x, infra))
		return EXIT_FAIL;
	request(&req, "cli");
	for (i = 0; i < argc; i++)
		if (msg_add(&req, "arg", argv[i])) {
			msg_release(&req);
			ctl_end(&x);
			return error("jobs: an argument the controller cannot be sent"), EXIT_USAGE;
		}
	rc = ctl_call(&x, &req, NULL, strcmp(argv[1], "logs") ? REMOTE_CALL_MS : -1);
	msg_release(&req);
	ctl_end(&x);
	return rc;
}

/* One op on the controller of cluster (a known one); its exit status, output in out. */
static int cluster_call(struct st_db *db, const char *cluster, const char *op, struct buf *out)
{
	struct cluster c;
	struct msg req;
	struct ctl x;
	int rc = EXIT_FAIL;

	if (st_cluster_get(db, cluster, &c))
		return EXIT_FAIL;
	memset(&x, 0, sizeof(x));
	x.db = db;
	xsnprintf(x.name, sizeof(x.name), "%s", cluster);
	x.infra = c.infra;
	if (!eng_open(db, cluster, &x.c, &x.cl)) {
		x.open = 1;
		request(&req, op);
		if (x.cl.n && x.cl.nodes[0].exe)
			rc = ctl_call(&x, &req, out, REMOTE_CALL_MS);
		msg_release(&req);
		ctl_close(&x);
	}
	cluster_free(&c);
	return rc;
}

int64_t jobs_remote_active(struct st_db *db, const char *cluster)
{
	struct buf out = BUF_INIT(4096);
	long long n = -1;

	if (!starts_with(cluster, JOBS_CONTROLLER_CLUSTER_PREFIX))
		return 0;
	if (cluster_call(db, cluster, "count", &out) != EXIT_OK ||
	    sscanf(out.p ? out.p : "", "%lld", &n) != 1)
		n = -1;
	buf_release(&out);
	return n;
}

int jobs_remote_stop(struct st_db *db, const char *cluster)
{
	struct buf out = BUF_INIT(4096);
	int rc;

	if (!starts_with(cluster, JOBS_CONTROLLER_CLUSTER_PREFIX))
		return 0;
	rc = cluster_call(db, cluster, "stop", &out);
	if (out.len)
		fputs(out.p, stdout);
	buf_release(&out);
	return rc == EXIT_OK ? 0 : -1;
}

/* ---- shipping a job --------------------------------------------------------------------- */

/*
 * Every local file the job's tasks read (workdirs, a git workdir's tree, file_mounts
 * sources) goes to the controller under files/TOKEN/K, and the overrides map the task's
 * paths to those: the controller syncs them on to the job's cluster as it would its own.
 */
static int ship_files(struct ctl *x, const struct task_list *tl, struct task_overrides *ov)
{
	char token[JOBS_FILES_TOKEN_HEX + 1];
	size_t i, k;
	int n = 0, r = 0;

	random_hex(token, JOBS_FILES_TOKEN_HEX / 2);
	for (i = 0; i < tl->n && !r; i++) {
		const struct task *t = tl->tasks[i];

		for (k = 0; k <= t->nmounts && !r; k++) {
			char *key = NULL, *src = NULL, *dst;
			struct stat st;
			size_t m;
			int dup = 0;

			if (k == t->nmounts) {
				if (t->workdir.kind == TASK_WORKDIR_PATH) {
					key = xstrdup(t->workdir.path);
					src = user_path(t->workdir.path);
				} else if (t->workdir.kind == TASK_WORKDIR_GIT) {
					key = task_git_key(&t->workdir);
					if (eng_git_tree(&t->workdir, &src)) {
						free(key);
						r = -1;
						break;
					}
				}
			} else if (t->mounts[k].src && !strstr(t->mounts[k].src, "://")) {
				key = xstrdup(t->mounts[k].src);
				src = user_path(t->mounts[k].src);
			}
			if (!key)
				continue;
			for (m = 0; m < ov->npaths; m++)
				dup |= !strcmp(ov->path_from[m], key);
			if (dup) {
				free(key);
				free(src);
				continue;
			}
			if (stat(src, &st)) {
				r = error_errno(
				        "%s: cannot read '%s' to send it to the jobs controller",
				        tl->file ? tl->file : "the task", src);
			} else {
				dst = xasprintf("~/" JOBS_CONTROLLER_HOME "/" JOBS_FILES_DIR
				                "/%s/%d",
				                token, n++);
				r = cl_sync(&x->cl.nodes[0], src, dst, !S_ISDIR(st.st_mode));
				if (!r)
					task_overrides_map_path(ov, key, dst);
				free(dst);
			}
			free(key);
			free(src);
		}
	}
	return r ? -1 : 0;
}

/* The ssh pools the tasks (or --infra) name, once each. */
static void pools_named(const struct task_list *tl, const char *infra, char ***names, size_t *n)
{
	size_t i, k, m;

	for (i = 0; i <= tl->n; i++) {
		size_t nres = i < tl->n ? tl->tasks[i]->nres : 1;

		for (k = 0; k < nres; k++) {
			const char *spec = i < tl->n ? tl->tasks[i]->res[k].infra : infra;
			struct infra inf;
			int seen = 0;

			/* A spec that does not parse is the launch's to refuse, not ours. */
			if (!spec || infra_parse_quiet(spec, &inf, NULL))
				continue;
			if ((inf.ops->flags & INFRA_POOL_FILE) && inf.pool) {
				for (m = 0; m < *n; m++)
					seen |= !strcmp((*names)[m], inf.pool);
				if (!seen) {
					*names = xrealloc(*names, (*n + 1) * sizeof(**names));
					(*names)[(*n)++] = xstrdup(inf.pool);
				}
			}
			infra_release(&inf);
		}
	}
}

static void yaml_str(struct buf *b, const char *s)
{
	json_quote(b, s, strlen(s));
}

/*
 * The pool entries and identity files the job's infras use, as files for the controller's
 * home: pools.d/POOL.yaml (its hosts, the keys at their new paths) and keys/SHA (0600).
 */
static int add_pool_files(struct msg *req, const struct task_list *tl, const char *infra)
{
	struct yerrors errs = YERRORS_INIT;
	struct infra_pools pools = {0};
	char **names = NULL, *path = NULL;
	size_t n = 0, i, h;
	int r = 0;

	pools_named(tl, infra, &names, &n);
	if (!n)
		return 0;
	path = infra_pools_path();
	if (!path || infra_pools_load(&pools, path, &errs)) {
		yerr_print(&errs, stderr);
		r = -1;
		goto out;
	}
	for (i = 0; i < n && !r; i++) {
		const struct infra_pool *p = NULL;
		struct buf y = BUF_INIT(0);
		size_t k;

		for (k = 0; k < pools.n; k++)
			if (!strcmp(pools.v[k].name, names[i]))
				p = &pools.v[k];
		if (!p) {
			r = error("%s: no ssh pool '%s' for infra ssh/%s (the jobs controller "
			          "launches with the pools this machine has)",
			          path, names[i], names[i]);
			break;
		}
		buf_addf(&y, "# pool %s, sent by a launcher (skiff jobs launch)\n", p->name);
		yaml_str(&y, p->name);
		buf_adds(&y, ":\n  hosts:\n");
		for (h = 0; h < p->nhosts && !r; h++) {
			const struct infra_host *ho = &p->hosts[h];

			buf_adds(&y, "    - ip: ");
			yaml_str(&y, ho->ip);
			buf_addf(&y, "\n      port: %d\n", ho->port);
			if (ho->user) {
				buf_adds(&y, "      user: ");
				yaml_str(&y, ho->user);
				buf_addch(&y, '\n');
			}
			if (ho->proxy_jump) {
				buf_adds(&y, "      proxy_jump: ");
				yaml_str(&y, ho->proxy_jump);
				buf_addch(&y, '\n');
			}
			if (ho->identity_file) {
				struct buf key = BUF_INIT((size_t)1 << 20);
				char hex[SHA256_HEX_LEN + 1], *kp;

				if (buf_read_file(&key, ho->identity_file) < 0) {
					r = error_errno(
					        "pool %s: cannot read identity_file '%s' to send it "
					        "to the jobs controller",
					        p->name, ho->identity_file);
				} else {
					sha256_hex(key.p, key.len, hex);
					kp = xasprintf("keys/%.16s", hex);
					msg_add(req, "file_path", kp);
					if (msg_add(req, "file_data", key.p))
						r = error(
						        "pool %s: identity_file '%s' is not a key "
						        "file that can be sent",
						        p->name, ho->identity_file);
					buf_addf(&y, "      identity_file: ~/%s/%s\n",
					         JOBS_CONTROLLER_HOME, kp);
					free(kp);
				}
				buf_release(&key);
			}
		}
		if (!r) {
			char *fp = xasprintf("pools.d/%s.yaml", p->name);

			msg_add(req, "file_path", fp);
			msg_add(req, "file_data", y.p);
			free(fp);
		}
		buf_release(&y);
	}
out:
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(path);
	infra_pools_release(&pools);
	yerr_release(&errs);
	return r;
}

/* The config file in effect, for the controller's own settings (jobs.controller.*). */
static int add_config_file(struct msg *req)
{
	struct buf b = BUF_INIT((size_t)4 << 20);
	char *path = config_file_path();
	int r = 0;

	if (path && buf_read_file(&b, path) >= 0) {
		msg_add(req, "file_path", "config.yaml");
		if (msg_add(req, "file_data", b.p))
			r = error("%s: the config file cannot be sent to the jobs controller",
			          path);
	}
	buf_release(&b);
	free(path);
	return r;
}

/* The overrides' fields, each as "ov" = "KEY=VALUE" of req. */
static void add_overrides(struct msg *req, const struct task_overrides *ov)
{
	struct msg m;
	size_t i;

	msg_init(&m);
	task_overrides_encode(ov, &m);
	for (i = 0; i < m.n; i++)
		msg_addf(req, "ov", "%s=%s", m.keys[i], m.vals[i]);
	msg_release(&m);
}

int jobs_remote_submit(const char *infra, struct jobs_submit_req *req, struct task_list *tl,
                       struct task_overrides *ov, long n, int detach)
{
	struct buf out = BUF_INIT((size_t)1 << 20);
	struct msg m;
	struct ctl x;
	int rc = EXIT_FAIL;
	char *last, *args[4];

	/* What the controller needs is checked before anything is brought up or sent. */
	request(&m, "submit");
	if (add_pool_files(&m, tl, req->infra) || add_config_file(&m)) {
		msg_release(&m);
		return EXIT_FAIL;
	}
	if (ctl_begin(&x, infra)) {
		msg_release(&m);
		return EXIT_FAIL;
	}
	if (ship_files(&x, tl, ov))
		goto out;
	msg_add(&m, "entry", req->entry);
	if (req->spec && msg_add(&m, "spec", req->spec)) {
		error("%s: the task cannot be sent to the jobs controller", req->entry);
		goto out;
	}
	if (req->infra)
		msg_add(&m, "infra", req->infra);
	if (req->recovery)
		msg_add(&m, "recovery", req->recovery);
	if (req->have_priority)
		msg_add_int(&m, "priority", req->priority);
	msg_add_int(&m, "num_jobs", n);
	add_overrides(&m, ov);
	if (m.raw.len > PROTO_MAX_MSG - 4096) {
		error("%s: the task and its keys are too big to send to the jobs controller",
		      req->entry);
		goto out;
	}
	rc = ctl_call(&x, &m, &out, REMOTE_CALL_MS);
	if (write_all(1, out.p, out.len))
		rc = EXIT_FAIL;
	if (rc || detach || n > 1)
		goto out;
	/* Follow the job as `jobs launch` does here: its logs, from the controller. */
	while (out.len && out.p[out.len - 1] == '\n')
		out.p[--out.len] = '\0';
	last = strrchr(out.p, '\n');
	last = last ? last + 1 : out.p;
	args[0] = "jobs";
	args[1] = "logs";
	args[2] = last;
	args[3] = NULL;
	msg_release(&m);
	request(&m, "cli");
	msg_add(&m, "arg", args[0]);
	msg_add(&m, "arg", args[1]);
	msg_add(&m, "arg", args[2]);
	rc = ctl_call(&x, &m, NULL, -1);
out:
	msg_release(&m);
	buf_release(&out);
	ctl_end(&x);
	return rc;
}
