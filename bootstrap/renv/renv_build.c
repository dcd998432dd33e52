/*
 * `skiff __renv-build JOB_ID`: builds a job's runtime env, started by the job's shim as the
 * first part of SETTING_UP, its output in the job's setup.log. The shim kills its process
 * group when setup_timeout_seconds pass, so nothing here has a timeout of its own, and a
 * killed build leaves a dir without its marker, which the next builder removes.
 *
 * working_dir and py_modules are fetched and unpacked by one thread each while the main
 * thread builds the venv (renv.conf `parallel = 0` does them one after the other).
 */
#include "bootstrap/renv/renv.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "lib/banned.h"

struct build {
	const char *home;
	const char *log_dir;
	const struct renv_spec *s;
	struct renv_conf conf;
	struct renv_py py;
	char key[65];
	char *envs;         /* $home/envs */
	char *dir;          /* envs/<key> */
	char *vpy;          /* envs/<key>/bin/python */
	char *uv;           /* a uv binary, or NULL */
	struct buf failure; /* what went wrong, for the .failed file */
};

static void say(const char *fmt, ...) SKIFF_PRINTF(1, 2);
static void say(const char *fmt, ...)
{
	struct buf b = BUF_INIT(0);
	va_list ap;

	buf_adds(&b, "skiff: runtime_env: ");
	va_start(ap, fmt);
	buf_vaddf(&b, fmt, ap);
	va_end(ap);
	buf_addch(&b, '\n');
	write_all(1, b.p, b.len);
	buf_release(&b);
}

static void step(struct build *b, const char *name)
{
	char *path = xasprintf("%s/renv.step", b->log_dir);

	write_file_atomic(path, name, strlen(name), 0600);
	free(path);
	say("step: %s", name);
}

void renv_step_get(const char *log_dir, char *out, size_t size)
{
	char *path = xasprintf("%s/renv.step", log_dir);
	struct buf b = BUF_INIT(256);

	out[0] = '\0';
	/* Ours (step()'s names), but a file: one longer than out is cut, never fatal. */
	if (!buf_read_file(&b, path))
		xsnprintf(out, size, "%.*s", (int)(size - 1), b.p);
	buf_release(&b);
	free(path);
}

/* Runs argv with its output in the setup log; 0 or an error naming the step. */
static int run(struct build *b, const char *what, char *const *argv)
{
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct buf line = BUF_INIT(0);
	pid_t pid;
	int r, status, i;

	for (i = 0; argv[i]; i++)
		buf_addf(&line, "%s%s", i ? " " : "", argv[i]);
	say("$ %s", line.p);
	buf_release(&line);
	o.argv = argv;
	o.fd_out = 1;
	o.err_to_out = 1;
	o.cwd = b->envs; /* exists; a stray package dir there cannot shadow anything */
	r = spawn(&o, &pid);
	if (r) {
		buf_addf(&b->failure, "%s: cannot run '%s': %s", what, argv[0], strerror(-r));
		return r;
	}
	r = spawn_wait(pid, &status);
	if (r || status) {
		buf_addf(&b->failure, "%s failed (exit status %d)", what, status_to_code(status));
		return -EIO;
	}
	return 0;
}

/* --- packages, beside the venv ------------------------------------------------------ */

struct pkg_job {
	struct build *b;
	const char *ref;
	pthread_t th;
	int started;
	int r;
	int fd; /* its use lock, once ready */
	struct buf err;
};

static void *pkg_thread(void *arg)
{
	struct pkg_job *p = arg;
	int64_t t0 = now_ms();
	char *dir = NULL;

	p->r = renv_pkg_ensure(p->b->home, p->ref, &p->b->conf, &dir, &p->err);
	if (!p->r)
		say("package %.80s ready in %s (%lld ms)", p->ref, dir, (long long)(now_ms() - t0));
	free(dir);
	/* Held until the build ends, so that its own eviction pass leaves it alone. */
	if (!p->r)
		p->fd = renv_pkg_hold(p->b->home, p->ref, &dir);
	free(dir);
	return NULL;
}

static void pkgs_start(struct build *b, struct pkg_job *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		v[i].b = b;
		v[i].fd = -1;
		buf_init(&v[i].err, 1 << 16);
		if (b->conf.serial || pthread_create(&v[i].th, NULL, pkg_thread, &v[i]))
			pkg_thread(&v[i]);
		else
			v[i].started = 1;
	}
}

static int pkgs_finish(struct pkg_job *v, size_t n)
{
	size_t i;
	int r = 0;

	for (i = 0; i < n; i++) {
		if (v[i].started)
			pthread_join(v[i].th, NULL);
		if (v[i].r) {
			error("runtime_env: package '%s': %s", v[i].ref,
			      v[i].err.len ? v[i].err.p : strerror(-v[i].r));
			r = -EIO;
		}
		buf_release(&v[i].err);
	}
	return r;
}

static void pkgs_unlock(struct pkg_job *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i].fd >= 0)
			close(v[i].fd);
}

/* --- the venv ---------------------------------------------------------------------- */

static char *find_exe(const char *name)
{
	const char *p = getenv("PATH");

	while (p && *p) {
		size_t n = strcspn(p, ":");
		char *c = xasprintf("%.*s/%s", (int)n, p, name);

		if (n && !access(c, X_OK))
			return c;
		free(c);
		p += n + (p[n] == ':');
	}
	return NULL;
}

/* pip >= 22.3 can install into another interpreter's environment (--python). */
static int pip_can_target(const char *v)
{
	long maj = strtol(v, NULL, 10), min = 0;
	const char *dot = strchr(v, '.');

	if (dot)
		min = strtol(dot + 1, NULL, 10);
	return maj > 22 || (maj == 22 && min >= 3);
}

static int write_requirements(struct build *b, const char *path)
{
	struct buf t = BUF_INIT(0);
	size_t i;
	int r = 0;

	for (i = 0; i < b->s->pkgs.n; i++)
		if (!strchr(b->s->pkgs.v[i], '\n'))
			buf_addf(&t, "%s\n", b->s->pkgs.v[i]);
	for (i = 0; i < b->s->wheels.n && !r; i++) {
		const char *sp = strchr(b->s->wheels.v[i], ' ');
		char *w;

		if (!sp || sp - b->s->wheels.v[i] != 64 || strchr(sp + 1, '/'))
			return buf_release(&t), error("runtime_env: bad wheel entry");
		w = xasprintf("%s/pkgs/whl/%.64s/%s", b->home, b->s->wheels.v[i], sp + 1);
		if (access(w, R_OK)) {
			buf_addf(&b->failure, "wheel %s was not shipped to this node", sp + 1);
			r = -ENOENT;
		} else
			buf_addf(&t, "%s\n", w);
		free(w);
	}
	for (i = 0; i < b->s->urls.n && !r; i++) {
		struct buf err = BUF_INIT(1 << 16);
		char *file = NULL, *name, *link, *q;

		r = renv_fetch(b->home, b->s->urls.v[i], &b->conf, &file, &err);
		if (r) {
			buf_addf(&b->failure, "download of %s failed: %s", b->s->urls.v[i], err.p);
			buf_release(&err);
			break;
		}
		/* pip reads a wheel's name from its file name: link the cached file under it. */
		name = xstrdup(strrchr(b->s->urls.v[i], '/') + 1);
		if ((q = strpbrk(name, "#?")))
			*q = '\0';
		q = xasprintf("%s/.skiff-downloads", b->dir);
		mkdir_p(q, 0700);
		link = xasprintf("%s/%s", q, name);
		free(q);
		unlink(link);
		if (symlink(file, link) < 0)
			r = error_errno("cannot link '%s'", link);
		buf_addf(&t, "%s\n", link);
		free(name);
		free(link);
		free(file);
		buf_release(&err);
	}
	if (!r && (r = write_file_atomic(path, t.p, t.len, 0600)))
		error("cannot write '%s': %s", path, strerror(-r));
	buf_release(&t);
	return r;
}

static int build_venv(struct build *b)
{
	char *req = xasprintf("%s/.skiff-requirements.txt", b->dir);
	char *argv[64], *bin_uv = NULL, *marker, *text;
	int uv = b->s->tool == RENV_TOOL_UV, r, n = 0, own_pip = 0;
	int64_t t0 = now_ms();
	size_t i;

	step(b, "venv");
	if (uv && b->uv) {
		char *a[] = {b->uv, "venv", "--python", b->py.path, b->dir, NULL};

		r = run(b, "venv", a);
	} else {
		char *a[] = {b->py.path, "-m", "venv", "--without-pip", b->dir, NULL};

		r = run(b, "venv", a);
	}
	if (r)
		goto out;
	step(b, "requirements");
	if ((r = write_requirements(b, req)))
		goto out;
	if (!b->s->pkgs.n && !b->s->wheels.n && !b->s->urls.n)
		goto done;
	if (uv && (!b->uv || b->s->tool_version)) {
		/* No uv on the node, or a pinned one: put uv into the venv with pip (Ray's way). */
		own_pip = 1;
	}
	if (!uv || own_pip) {
		own_pip =
		        own_pip || b->s->tool_version || !*b->py.pip || !pip_can_target(b->py.pip);
		if (own_pip) {
			char *a[] = {b->vpy, "-m", "ensurepip", "--default-pip", NULL};

			step(b, "ensurepip");
			if ((r = run(b, "ensurepip", a)))
				goto out;
		}
		if (b->s->tool_version && !uv) {
			char *spec = xasprintf("pip%s", b->s->tool_version);
			char *a[64] = {b->vpy, "-m", "pip", "install",
			               "--disable-pip-version-check"};

			n = 5;
			for (i = 0; i < b->conf.index_args.n && n < 60; i++)
				a[n++] = b->conf.index_args.v[i];
			a[n++] = spec;
			a[n] = NULL;
			step(b, "pip version");
			r = run(b, "pip version", a);
			free(spec);
			if (r)
				goto out;
		}
	}
	if (uv && !b->uv) {
		char *spec = xasprintf("uv%s", b->s->tool_version ? b->s->tool_version : "");
		char *a[64] = {b->vpy, "-m", "pip", "install", "--disable-pip-version-check"};

		n = 5;
		for (i = 0; i < b->conf.index_args.n && n < 60; i++)
			a[n++] = b->conf.index_args.v[i];
		a[n++] = spec;
		a[n] = NULL;
		step(b, "uv install");
		r = run(b, "uv install", a);
		free(spec);
		if (r)
			goto out;
		bin_uv = xasprintf("%s/bin/uv", b->dir);
	}
	n = 0;
	if (uv) {
		argv[n++] = bin_uv ? bin_uv : b->uv;
		argv[n++] = "pip";
		argv[n++] = "install";
		argv[n++] = "--python";
		argv[n++] = b->vpy;
		for (i = 0; i < b->s->opts.n && n < 40; i++)
			argv[n++] = b->s->opts.v[i];
	} else if (own_pip) {
		argv[n++] = b->vpy;
		argv[n++] = "-m";
		argv[n++] = "pip";
		argv[n++] = "install";
		argv[n++] = "--disable-pip-version-check";
	} else {
		argv[n++] = b->py.path;
		argv[n++] = "-m";
		argv[n++] = "pip";
		argv[n++] = "--python";
		argv[n++] = b->vpy;
		argv[n++] = "install";
		argv[n++] = "--disable-pip-version-check";
	}
	for (i = 0; i < b->conf.index_args.n && n < 60; i++)
		argv[n++] = b->conf.index_args.v[i];
	argv[n++] = "-r";
	argv[n++] = req;
	argv[n] = NULL;
	step(b, uv ? "uv pip install" : "pip install");
	if ((r = run(b, uv ? "uv pip install" : "pip install", argv)))
		goto out;
	if (b->s->check) {
		n = 0;
		if (uv) {
			argv[n++] = bin_uv ? bin_uv : b->uv;
			argv[n++] = "pip";
			argv[n++] = "check";
			argv[n++] = "--python";
			argv[n++] = b->vpy;
		} else {
			argv[n++] = own_pip ? b->vpy : b->py.path;
			argv[n++] = "-m";
			argv[n++] = "pip";
			if (!own_pip) {
				argv[n++] = "--python";
				argv[n++] = b->vpy;
			}
			argv[n++] = "check";
		}
		argv[n] = NULL;
		step(b, uv ? "uv pip check" : "pip check");
		if ((r = run(b, uv ? "uv pip check" : "pip check", argv)))
			goto out;
	}
done:
	marker = xasprintf("%s/%s", b->dir, RENV_MARKER);
	text = xasprintf("key=%s\nsize=%llu\nbuilt=%ld\nseconds=%.3f\npython=%s\n", b->key,
	                 (unsigned long long)renv_du(b->dir), (long)time(NULL),
	                 (double)(now_ms() - t0) / 1000, b->py.path);
	r = write_file_atomic(marker, text, strlen(text), 0644);
	if (r)
		buf_addf(&b->failure, "cannot write '%s': %s", marker, strerror(-r));
	free(marker);
	free(text);
out:
	free(req);
	free(bin_uv);
	return r;
}

/* Builds env b->key unless someone did; called with the env's .use lock held (shared). */
static int ensure_venv(struct build *b)
{
	char *lock = xasprintf("%s/envs/%s.build", b->home, b->key), *marker;
	int fd, r = 0;
	int64_t t0;

	fd = renv_lock(lock, LOCK_EX | LOCK_NB);
	if (fd == -EWOULDBLOCK) {
		step(b, "waiting for another job's build of this env");
		fd = renv_lock(lock, LOCK_EX);
	}
	free(lock);
	if (fd < 0)
		return error("cannot lock the env's build: %s", strerror(-fd));
	marker = xasprintf("%s/%s", b->dir, RENV_MARKER);
	if (!access(marker, F_OK)) {
		say("env %.12s is already built: reused", b->key);
		goto out;
	}
	if (renv_failed_get(b->home, b->key, b->conf.failed_ttl, &b->failure)) {
		r = error("runtime_env: this env failed to build less than %ld s ago: %s",
		          b->conf.failed_ttl, b->failure.p);
		goto out;
	}
	/* A dir without its marker is a build that was killed: start again. */
	rm_rf(b->dir);
	t0 = now_ms();
	say("building env %.12s with %s (Python %s)", b->key, b->py.path, b->py.version);
	r = build_venv(b);
	if (r) {
		if (!b->failure.len)
			buf_adds(&b->failure, "the build failed");
		renv_failed_set(b->home, b->key, b->failure.p);
		renv_log(b->home, "failed", b->key, (uint64_t)(now_ms() - t0));
		rm_rf(b->dir);
		error("runtime_env: %s (see the lines above)", b->failure.p);
		goto out;
	}
	renv_log(b->home, "build", b->key, (uint64_t)(now_ms() - t0));
	say("env %.12s built in %.1f s", b->key, (double)(now_ms() - t0) / 1000);
out:
	free(marker);
	close(fd);
	return r;
}

int renv_build_main(int64_t job_id, const char *home, const char *log_dir,
                    const struct renv_spec *s)
{
	struct build b = {.home = home, .log_dir = log_dir, .s = s};
	struct pkg_job *pk;
	struct buf err = BUF_INIT(1 << 16), pip = BUF_INIT(0);
	size_t npk = 0, i;
	int r = 0, use = -1;
	char *p, *path;

	(void)job_id;
	buf_init(&b.failure, 1 << 16);
	renv_conf_load(home, &b.conf);
	/* The interpreter is searched in the job's PATH, as the shim's fast path does. */
	path = xstrdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	for (i = 0; i < s->env_vars.n; i++) /* Ray's rule: pip sees the env's env_vars */
		putenv(s->env_vars.v[i]);
	b.envs = xasprintf("%s/envs", home);
	mkdir_p(b.envs, 0700);
	pk = xcalloc(s->modules.n + 1, sizeof(*pk));
	if (s->working_dir)
		pk[npk++].ref = s->working_dir;
	for (i = 0; i < s->modules.n; i++)
		pk[npk++].ref = s->modules.v[i];
	if (npk && !b.conf.serial) {
		step(&b, "packages");
		pkgs_start(&b, pk, npk);
	}
	if (renv_spec_wants_venv(s)) {
		step(&b, "interpreter");
		r = renv_python(home, s->python, path, 1, &b.py, &err);
		if (r) {
			error("%s", err.len ? err.p : "runtime_env: no interpreter");
			r = -ENOENT;
			goto wait;
		}
		renv_conf_pip_text(&b.conf, &pip);
		renv_key(s, b.py.id, pip.p, b.key, NULL);
		b.dir = xasprintf("%s/envs/%s", home, b.key);
		b.vpy = xasprintf("%s/bin/python", b.dir);
		b.uv = find_exe("uv");
		p = xasprintf("%s/envs/%s.use", home, b.key);
		use = renv_lock(p, LOCK_SH);
		free(p);
		r = ensure_venv(&b);
	}
wait:
	if (npk && b.conf.serial) {
		step(&b, "packages");
		pkgs_start(&b, pk, npk);
	}
	if (npk && pkgs_finish(pk, npk)) {
		if (!r) /* else the venv's failed step is the one to name */
			step(&b, "packages");
		r = -EIO;
	}
	/* With this build's env and packages still locked: they are not candidates. */
	if (!r)
		renv_evict(home, b.conf.max_size, b.key[0] ? b.key : NULL);
	pkgs_unlock(pk, npk);
	free(pk);
	if (use >= 0)
		close(use);
	renv_py_release(&b.py);
	renv_conf_release(&b.conf);
	buf_release(&b.failure);
	buf_release(&err);
	buf_release(&pip);
	free(path);
	free(b.envs);
	free(b.dir);
	free(b.vpy);
	free(b.uv);
	return r ? 1 : 0;
}
