/*
 * The job's side of a runtime env, used by the shim: the fast path that finds everything
 * already built (no process started: a few stats, one cache file and a flock), and the
 * activation of the env in the job's environment.
 */
#include "bootstrap/renv/renv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

void renv_job_init(struct renv_job *j)
{
	memset(j, 0, sizeof(*j));
	j->use_fd = -1;
}

void renv_job_release(struct renv_job *j)
{
	renv_spec_release(&j->spec);
	free(j->venv);
	free(j->working_dir);
	renv_strv_release(&j->modules);
	if (j->use_fd >= 0)
		close(j->use_fd);
	while (j->npkg_fds)
		close(j->pkg_fds[--j->npkg_fds]);
	free(j->pkg_fds);
	j->pkg_fds = NULL;
	j->venv = j->working_dir = NULL;
	j->use_fd = -1;
}

/*
 * A local py_module "sha256:HEX/NAME" is importable as NAME: its PYTHONPATH entry is
 * pkgs/mod/HEX-NAME, holding the link NAME -> the unpacked dir.
 */
static char *module_entry(const char *home, const char *ref, const char *dir)
{
	const char *name = strchr(ref, '/');
	char *entry, *link;

	if (!starts_with(ref, "sha256:") || !name || !name[1] || strchr(name + 1, '/') ||
	    !strcmp(name + 1, "..") || !strcmp(name + 1, "."))
		return xstrdup(dir);
	entry = xasprintf("%s/pkgs/mod/%.64s-%s", home, ref + 7, name + 1);
	link = xasprintf("%s/%s", entry, name + 1);
	if (access(link, F_OK)) {
		mkdir_p(entry, 0700);
		if (symlink(dir, link) < 0 && errno != EEXIST) {
			error_errno("cannot link '%s'", link);
			free(link);
			free(entry);
			return NULL;
		}
	}
	free(link);
	return entry;
}

static void keep_fd(struct renv_job *j, int fd)
{
	j->pkg_fds = xrealloc(j->pkg_fds, (j->npkg_fds + 1) * sizeof(*j->pkg_fds));
	j->pkg_fds[j->npkg_fds++] = fd;
}

int renv_job_ready(struct renv_job *j, const char *home, const char *path_env, struct buf *err)
{
	struct renv_conf conf;
	struct renv_py py;
	struct buf pip = BUF_INIT(0);
	char *p;
	size_t i;
	int r;

	if (j->spec.working_dir && !j->working_dir) {
		int fd = renv_pkg_hold(home, j->spec.working_dir, &j->working_dir);

		if (fd < 0)
			return 0;
		keep_fd(j, fd);
	}
	for (i = j->modules.n; i < j->spec.modules.n; i++) {
		char *dir, *e;
		int fd = renv_pkg_hold(home, j->spec.modules.v[i], &dir);

		if (fd < 0)
			return 0;
		keep_fd(j, fd);
		e = module_entry(home, j->spec.modules.v[i], dir);
		free(dir);
		if (!e)
			return -EIO;
		renv_strv_push(&j->modules, e);
		free(e);
	}
	if (!renv_spec_wants_venv(&j->spec) || j->venv)
		return 1;
	renv_conf_load(home, &conf);
	r = renv_python(home, j->spec.python, path_env, 0, &py, err);
	if (r) {
		renv_conf_release(&conf);
		return r > 0 ? 0 : r;
	}
	renv_conf_pip_text(&conf, &pip);
	renv_key(&j->spec, py.id, pip.p, j->key, NULL);
	buf_release(&pip);
	renv_py_release(&py);
	if (renv_failed_get(home, j->key, conf.failed_ttl, err)) {
		renv_conf_release(&conf);
		return -EIO;
	}
	renv_conf_release(&conf);
	if (j->use_fd < 0) {
		p = xasprintf("%s/envs", home);
		mkdir_p(p, 0700);
		free(p);
		p = xasprintf("%s/envs/%s.use", home, j->key);
		j->use_fd = renv_lock(p, LOCK_SH);
		if (j->use_fd < 0) {
			buf_addf(err, "cannot lock '%s': %s", p, strerror(-j->use_fd));
			free(p);
			return j->use_fd;
		}
		free(p);
		futimens(j->use_fd, NULL); /* the last use, for LRU eviction */
	}
	p = xasprintf("%s/envs/%s/%s", home, j->key, RENV_MARKER);
	r = access(p, F_OK) == 0;
	free(p);
	if (r)
		j->venv = xasprintf("%s/envs/%s", home, j->key);
	return r;
}

void renv_job_apply(const struct renv_job *j, struct env *env)
{
	struct buf pp = BUF_INIT(0);
	const char *old;
	size_t i;

	for (i = 0; i < j->spec.env_vars.n; i++)
		env_put(env, j->spec.env_vars.v[i]);
	if (j->venv) {
		char *bin;

		old = env_get(env, "PATH");
		bin = xasprintf("%s/bin%s%s", j->venv, old && *old ? ":" : "", old ? old : "");
		env_set(env, "PATH", bin);
		free(bin);
		env_set(env, "VIRTUAL_ENV", j->venv);
		env_unset(env, "PYTHONHOME");
	}
	/* Ray's order: working_dir first, then py_modules, then what the job set. */
	if (j->working_dir)
		buf_adds(&pp, j->working_dir);
	for (i = 0; i < j->modules.n; i++)
		buf_addf(&pp, "%s%s", pp.len ? ":" : "", j->modules.v[i]);
	if (pp.len) {
		old = env_get(env, "PYTHONPATH");
		if (old && *old)
			buf_addf(&pp, ":%s", old);
		env_set(env, "PYTHONPATH", pp.p);
	}
	if (j->working_dir)
		env_set(env, "SKIFF_RUNTIME_ENV_WORKING_DIR", j->working_dir);
	buf_release(&pp);
}
