/*
 * The launcher's side of a managed-jobs controller on a cluster of its own
 * (jobs.controller.resources.infra; docs/managed-jobs.md, "Placement"): the controller
 * cluster is brought up with the bootstrap of any cluster, the job's local files go to it
 * first (the two-hop), and each `skiff jobs` command becomes one framed request to
 * `skiff __jobs-remote` on its head (the frame client, bootstrap/infra/fcall.h), answered
 * in frames by supervisor/jobs/serve.c: the data the command prints here (the queue's
 * rows, the submitted ids, the cancel's counts), its exit status, or the logs' bytes after
 * a stream answer. The host's other side is supervisor/jobs/host.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap/infra/fcall.h"
#include "bootstrap/infra/infra.h"
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
	if (path && access(path, F_OK) == 0 && (r = config_load_file(path, &cfg, &errs))) {
		/* Where the controller runs is the config's to say: an invalid one says nothing. */
		yerr_print(&errs, stderr);
	} else if (path && cfg && (infra = config_controller_infra(cfg))) {
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
 * What one exchange with the host gives: each answer that is no end to row (a non-zero
 * return stops), and with a stream answer, the bytes after it to stream_fd.
 */
struct exchange {
	int (*row)(const struct msg *m, void *arg);
	void *arg;
	int stream_fd;
};

/* Copies what follows the stream answer (c->rx, then the pipe to EOF) to fd: 0 or -errno. */
static int copy_stream(struct fcall *c, int fd)
{
	int r = 0;

	if (c->rx.len && write_all(fd, c->rx.p, c->rx.len))
		r = -errno;
	buf_reset(&c->rx);
	for (;;) {
		int got = fcall_read(c);

		if (got <= 0)
			return got < 0 ? got : r;
		/* A reader that went away (a closed pipe) still lets the host end. */
		if (!r && c->rx.len && write_all(fd, c->rx.p, c->rx.len))
			r = -errno;
		buf_reset(&c->rx);
	}
}

/*
 * One try of req on the controller's head: the answer's exit status, or -errno for the
 * transport (-ENOEXEC: our binary is gone from the host; -EPROTO printed).
 */
static int exchange_once(struct ctl *x, const struct msg *req, const struct exchange *ex,
                         int timeout_ms)
{
	struct cnode *nd = &x->cl.nodes[0];
	int64_t deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	char *script = xasprintf("[ -x %s ] || exit 127; exec %s __jobs-remote", nd->exe, nd->exe);
	int r, got, status = 0, code = -1, streamed = 0;
	struct fcall c;
	struct msg m;

	r = fcall_start(&c, nd->r, script, req, 0);
	free(script);
	if (r) {
		fcall_release(&c);
		return r;
	}
	msg_init(&m);
	while ((got = fcall_recv(&c, &m, deadline)) > 0) {
		int64_t v;

		if (msg_get(&m, "error") || msg_get(&m, "end")) {
			if (msg_get(&m, "error"))
				error("the jobs controller %s: %s", x->name, msg_get(&m, "error"));
			code = !msg_get_int(&m, "code", &v) && v >= 0 && v < 256 ? (int)v
			                                                         : EXIT_FAIL;
			break;
		}
		if (msg_get(&m, "stream")) {
			got = copy_stream(&c, ex->stream_fd);
			if (got)
				warning("cannot write what the jobs controller sent: %s",
				        strerror(-got));
			streamed = 1;
			break;
		}
		if (ex->row && ex->row(&m, ex->arg)) {
			code = EXIT_FAIL;
			break;
		}
	}
	msg_release(&m);
	if (got == -ETIMEDOUT)
		fcall_kill(&c);
	r = fcall_end(&c, &status);
	if (!r && got == -ETIMEDOUT) {
		r = -ETIMEDOUT;
	} else if (!r && streamed) {
		code = status; /* the stream's exit status is the command's */
	} else if (!r && code < 0 && status == 127) {
		r = -ENOEXEC;
	} else if (!r && code < 0) {
		buf_rtrim(&c.rx);
		error("the jobs controller %s gave no answer (exit status %d)%s%.*s", x->name,
		      status, c.rx.len ? ": " : "", (int)(c.rx.len > 512 ? 512 : c.rx.len), c.rx.p);
		r = -EPROTO;
	}
	fcall_release(&c);
	return r ? r : code;
}

/*
 * Sends req to `skiff __jobs-remote` on the controller's head (serve.c): its answers as
 * ex says. The exit status the host answered, EXIT_UNAVAILABLE (printed) when it cannot be
 * reached, EXIT_FAIL for another failure (printed).
 */
static int ctl_call(struct ctl *x, const struct msg *req, const struct exchange *ex, int timeout_ms)
{
	int r = exchange_once(x, req, ex, timeout_ms);

	if (r == -ENOEXEC) {
		/* The host lost our binary (a wiped home): bootstrap it again, once. */
		ctl_close(x);
		if (ctl_bring_up(x, 1) || eng_open(x->db, x->name, &x->c, &x->cl))
			return EXIT_FAIL;
		x->open = 1;
		r = exchange_once(x, req, ex, timeout_ms);
	}
	if (r == -EHOSTUNREACH || r == -ETIMEDOUT)
		return unreachable(x);
	if (r == -ENOEXEC)
		return error("the jobs controller %s: skiff is not on its host", x->name),
		       EXIT_FAIL;
	return r < 0 ? EXIT_FAIL : r;
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

/* The request's fields for what `jobs logs` asks. */
static void add_logs_req(struct msg *m, const struct jobs_logs_req *req)
{
	if (req->id)
		msg_add_int(m, "id", req->id);
	if (req->name)
		msg_add(m, "name", req->name);
	if (req->task)
		msg_add(m, "task", req->task);
	msg_add_int(m, "follow", req->follow);
	msg_add_int(m, "controller", req->controller);
	msg_add_int(m, "sync_down", req->sync_down);
}

/* `jobs logs --sync-down` of a controller on infra: its tar stream, unpacked in ~/sky_logs. */
static int sync_down(const char *infra, const struct jobs_logs_req *lr)
{
	const char *home = user_home();
	char *root, *tmp;
	char tmpl[] = "/tmp/skiff-logs.XXXXXX";
	struct exchange ex = {0};
	struct msg req;
	struct ctl x;
	int rc, fd;

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
	request(&req, "logs");
	add_logs_req(&req, lr);
	ex.stream_fd = fd;
	rc = ctl_call(&x, &req, &ex, -1);
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

int jobs_remote_logs(const char *infra, const struct jobs_logs_req *lr)
{
	struct exchange ex = {.stream_fd = 1};
	struct msg req;
	struct ctl x;
	int rc;

	if (lr->sync_down)
		return sync_down(infra, lr);
	if (ctl_begin(&x, infra))
		return EXIT_FAIL;
	request(&req, "logs");
	add_logs_req(&req, lr);
	rc = ctl_call(&x, &req, &ex, -1);
	msg_release(&req);
	ctl_end(&x);
	return rc;
}

static int snap_row(const struct msg *m, void *arg)
{
	void **a = arg;

	return jobs_snap_take(a[0], m, a[1]);
}

int jobs_remote_queue(const char *infra, int skip_finished, struct jobs_snap *out)
{
	size_t alloc[3] = {0};
	void *args[2] = {out, alloc};
	struct exchange ex = {snap_row, args, -1};
	struct msg req;
	struct ctl x;
	int rc;

	memset(out, 0, sizeof(*out));
	if (ctl_begin(&x, infra))
		return EXIT_FAIL;
	request(&req, "queue");
	msg_add_int(&req, "skip_finished", skip_finished);
	rc = ctl_call(&x, &req, &ex, REMOTE_CALL_MS);
	msg_release(&req);
	ctl_end(&x);
	if (rc)
		jobs_snap_free(out);
	return rc;
}

struct cancel_out {
	int64_t found, done, ended;
	int answered;
};

static int cancel_row(const struct msg *m, void *arg)
{
	struct cancel_out *o = arg;

	o->answered = !msg_get_int(m, "found", &o->found) && !msg_get_int(m, "done", &o->done);
	if (msg_get_int(m, "ended", &o->ended))
		o->ended = 0; /* a controller from before the count */
	return 0;
}

int jobs_remote_cancel(const char *infra, const int64_t *ids, size_t n, const char *name, int all,
                       int *found, int *done, int *ended)
{
	struct cancel_out o = {0};
	struct exchange ex = {cancel_row, &o, -1};
	struct msg req;
	struct ctl x;
	size_t i;
	int rc;

	if (ctl_begin(&x, infra))
		return EXIT_FAIL;
	request(&req, "cancel");
	for (i = 0; i < n; i++)
		msg_add_int(&req, "id", ids[i]);
	if (name && msg_add(&req, "name", name)) {
		msg_release(&req);
		ctl_end(&x);
		return error("jobs cancel: a name the controller cannot be sent"), EXIT_USAGE;
	}
	if (all)
		msg_add(&req, "all", "1");
	rc = ctl_call(&x, &req, &ex, REMOTE_CALL_MS);
	msg_release(&req);
	ctl_end(&x);
	if (!rc && !o.answered)
		rc = (error("the jobs controller %s: no count in its answer to the cancel", x.name),
		      EXIT_FAIL);
	*found = (int)o.found;
	*done = (int)o.done;
	*ended = (int)o.ended;
	return rc;
}

/* One op on the controller of cluster (a known one), its answers to ex. An exit status. */
static int cluster_call(struct st_db *db, const char *cluster, const char *op,
                        const struct exchange *ex)
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
			rc = ctl_call(&x, &req, ex, REMOTE_CALL_MS);
		msg_release(&req);
		ctl_close(&x);
	}
	cluster_free(&c);
	return rc;
}

static int count_row(const struct msg *m, void *arg)
{
	if (msg_get_int(m, "count", arg))
		*(int64_t *)arg = -1;
	return 0;
}

int64_t jobs_remote_active(struct st_db *db, const char *cluster)
{
	int64_t n = -1;
	struct exchange ex = {count_row, &n, -1};

	if (!starts_with(cluster, JOBS_CONTROLLER_CLUSTER_PREFIX))
		return 0;
	if (cluster_call(db, cluster, "count", &ex) != EXIT_OK)
		n = -1;
	return n;
}

int jobs_remote_stop(struct st_db *db, const char *cluster)
{
	struct exchange ex = {0};

	if (!starts_with(cluster, JOBS_CONTROLLER_CLUSTER_PREFIX))
		return 0;
	return cluster_call(db, cluster, "stop", &ex) == EXIT_OK ? 0 : -1;
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

struct submit_ids {
	int64_t last;
};

/* A submitted job's id: on stdout, as `jobs launch` prints it here. */
static int submit_row(const struct msg *m, void *arg)
{
	struct submit_ids *ids = arg;
	int64_t id;

	if (msg_get_int(m, "id", &id) || id <= 0)
		return 0;
	ids->last = id;
	printf("%lld\n", (long long)id);
	fflush(stdout);
	return 0;
}

int jobs_remote_submit(const char *infra, struct jobs_submit_req *req, struct task_list *tl,
                       struct task_overrides *ov, long n, int detach)
{
	struct jobs_logs_req lr = {.follow = 1};
	struct submit_ids ids = {0};
	struct exchange ex = {0};
	struct msg m;
	struct ctl x;
	int rc = EXIT_FAIL;

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
	ex.row = submit_row;
	ex.arg = &ids;
	rc = ctl_call(&x, &m, &ex, REMOTE_CALL_MS);
	if (rc || detach || n > 1 || !ids.last)
		goto out;
	/* Follow the job as `jobs launch` does here: its logs, from the controller. */
	msg_release(&m);
	request(&m, "logs");
	lr.id = ids.last;
	add_logs_req(&m, &lr);
	ex.row = NULL;
	ex.stream_fd = 1;
	rc = ctl_call(&x, &m, &ex, -1);
out:
	msg_release(&m);
	ctl_end(&x);
	return rc;
}
