/*
 * A task's local sources, checked where the task is accepted (check, launch, exec, jobs
 * launch) and before any node is made: its workdir, the file_mounts sources that are
 * local paths, and runtime_env's requirements files, working_dir and py_modules. A launch that
 * found one missing only after making its cluster left the cluster behind, and the sync said so
 * three times.
 */
#include "lib/task.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/util.h"
#include "lib/banned.h"

/* NULL if the sync can read path (a directory when dir is set), else why not. */
static const char *why_not(const char *path, int dir)
{
	struct stat sb;

	if (stat(path, &sb) < 0)
		return strerror(errno);
	if (dir && !S_ISDIR(sb.st_mode))
		return "not a directory";
	if (!S_ISDIR(sb.st_mode) && !S_ISREG(sb.st_mode))
		return "not a file or a directory";
	if (access(path, S_ISDIR(sb.st_mode) ? R_OK | X_OK : R_OK) < 0)
		return strerror(errno);
	return NULL;
}

/* A source launch reads from this machine: not a bucket URL, not a storage mount. */
static int is_local(const char *src)
{
	return src && !strstr(src, "://");
}

/*
 * Whether path names an env or secret still without a value ($NAME, ${NAME}): that is
 * the error (launch) or the warning (check) already, and the path is not known yet.
 */
static int names_unset(const struct task *t, const char *path)
{
	const char *s;
	size_t k;

	for (s = strchr(path, '$'); s; s = strchr(s + 1, '$'))
		for (k = 0; k < t->envs.n + t->secrets.n; k++) {
			const struct task_kv *kv =
			        k < t->envs.n ? &t->envs.v[k] : &t->secrets.v[k - t->envs.n];
			const char *name = s[1] == '{' ? s + 2 : s + 1;
			size_t n = strlen(kv->key);

			if (!kv->value && !strncmp(name, kv->key, n) &&
			    !(isalnum((unsigned char)name[n]) || name[n] == '_'))
				return 1;
		}
	return 0;
}

/* One local path the launch reads (what, at line:col): its error into errs. 1 if so. */
static size_t check_local(const struct task *t, const char *file, const char *what, const char *src,
                          int dir, int line, int col, struct yerrors *errs)
{
	const char *why;
	char *path;
	size_t n = 0;

	if (!src || !is_local(src) || names_unset(t, src))
		return 0;
	path = user_path(src);
	if ((why = why_not(path, dir))) {
		yerr_add(errs, file, line, col, "%s '%s': %s", what, path, why);
		n = 1;
	}
	free(path);
	return n;
}

/* runtime_env's local paths: its requirements files, working_dir and py_modules. */
static size_t check_runtime_env(const struct task *t, const char *file, struct yerrors *errs)
{
	const struct task_runtime_env *rt = &t->runtime_env;
	const struct task_pkgs *k[] = {&rt->pip, &rt->uv};
	size_t i, n = 0;

	for (i = 0; i < 2; i++)
		if (k[i]->set && k[i]->requirements)
			n += check_local(t, file,
			                 i ? "runtime_env.uv requirements file"
			                   : "runtime_env.pip requirements file",
			                 k[i]->requirements, 0, k[i]->req_line, k[i]->req_col,
			                 errs);
	n += check_local(t, file, "runtime_env.working_dir", rt->working_dir, 1, rt->line, rt->col,
	                 errs);
	for (i = 0; i < rt->npy_modules; i++)
		n += check_local(t, file, "runtime_env.py_modules entry", rt->py_modules[i], 0,
		                 rt->line, rt->col, errs);
	return n;
}

size_t task_list_check_paths(const struct task_list *l, struct yerrors *errs)
{
	const char *file = l->file ? l->file : "task";
	const char *why;
	size_t i, k, n = 0;

	for (i = 0; i < l->n; i++) {
		const struct task *t = l->tasks[i];
		const struct task_workdir *w = &t->workdir;

		if (w->kind == TASK_WORKDIR_PATH && !names_unset(t, w->path)) {
			char *path = user_path(w->path);

			if ((why = why_not(path, 1))) {
				/* Set by --workdir: said of the flag, as --config's are. */
				if (w->line)
					yerr_add(errs, file, w->line, w->col, "workdir '%s': %s",
					         path, why);
				else
					yerr_add(errs, TASK_PATHS_FLAG_FILE, 1, 1,
					         "workdir '%s': %s", path, why);
				n++;
			}
			free(path);
		}
		for (k = 0; k < t->nmounts; k++) {
			const struct task_mount *m = &t->mounts[k];
			const char *c;
			char *path;

			/* The remote path as ${VAR}s made it: the parse saw it before them. */
			if ((c = str_control(m->dst))) {
				yerr_add(errs, file, m->line, m->col,
				         "file_mounts: its remote path has a control character "
				         "(0x%02x) once its variables are filled in",
				         (unsigned char)*c);
				n++;
				continue;
			}
			if (!strcmp(m->dst, TASK_WORKDIR_ON_NODE "/")) {
				yerr_add(errs, file, m->line, m->col,
				         "file_mounts: its remote path is empty once its variables "
				         "are filled in");
				n++;
				continue;
			}
			if (!is_local(m->src) || names_unset(t, m->src))
				continue;
			path = user_path(m->src);
			if ((why = why_not(path, 0))) {
				yerr_add(errs, file, m->line, m->col,
				         "file_mounts source '%s' (for %s): %s", path, m->dst, why);
				n++;
			}
			free(path);
		}
		n += check_runtime_env(t, file, errs);
	}
	return n;
}
