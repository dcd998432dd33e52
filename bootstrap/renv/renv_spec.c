/*
 * A runtime env spec: built from a task by the launcher (local files read, hashed, packed),
 * carried as renv_* fields of the submit message, stored as a blob in the job's row and
 * read back by the job's shim.
 */
#include "bootstrap/renv/renv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/sha256.h"
#include "lib/task.h"
#include "lib/util.h"
#include "lib/proto.h"
#include "lib/banned.h"

/* Nested `-r FILE` deeper than this is a loop. */
#define REQ_MAX_DEPTH 8
#define REQ_FILE_MAX ((size_t)4 << 20)

static void add_strv(struct msg *m, const char *key, const struct renv_strv *v)
{
	size_t i;

	for (i = 0; i < v->n; i++)
		msg_add(m, key, v->v[i]);
}

int renv_spec_to_msg(const struct renv_spec *s, struct msg *m)
{
	if (!s->set)
		return 0;
	msg_add(m, "renv_set", "1");
	if (s->python)
		msg_add(m, "renv_python", s->python);
	if (s->tool)
		msg_add(m, "renv_tool", s->tool == RENV_TOOL_UV ? "uv" : "pip");
	add_strv(m, "renv_pkg", &s->pkgs);
	add_strv(m, "renv_whl", &s->wheels);
	add_strv(m, "renv_url", &s->urls);
	add_strv(m, "renv_opt", &s->opts);
	if (s->check > 0)
		msg_add(m, "renv_check", "1");
	if (s->tool_version)
		msg_add(m, "renv_ver", s->tool_version);
	if (s->working_dir)
		msg_add(m, "renv_wd", s->working_dir);
	add_strv(m, "renv_mod", &s->modules);
	add_strv(m, "renv_env", &s->env_vars);
	return msg_add_int(m, "renv_timeout", s->timeout);
}

int renv_spec_from_msg(struct renv_spec *s, const struct msg *m)
{
	size_t i;

	memset(s, 0, sizeof(*s));
	s->timeout = TASK_SETUP_TIMEOUT_DEFAULT;
	for (i = 0; i < m->n; i++) {
		const char *k = m->keys[i], *v = m->vals[i];

		if (!starts_with(k, "renv_"))
			continue;
		s->set = 1;
		k += 5;
		if (!strcmp(k, "python"))
			free(s->python), s->python = xstrdup(v);
		else if (!strcmp(k, "tool"))
			s->tool = !strcmp(v, "uv") ? RENV_TOOL_UV : RENV_TOOL_PIP;
		else if (!strcmp(k, "pkg"))
			renv_strv_push(&s->pkgs, v);
		else if (!strcmp(k, "whl"))
			renv_strv_push(&s->wheels, v);
		else if (!strcmp(k, "url"))
			renv_strv_push(&s->urls, v);
		else if (!strcmp(k, "opt"))
			renv_strv_push(&s->opts, v);
		else if (!strcmp(k, "check"))
			s->check = 1;
		else if (!strcmp(k, "ver"))
			free(s->tool_version), s->tool_version = xstrdup(v);
		else if (!strcmp(k, "wd"))
			free(s->working_dir), s->working_dir = xstrdup(v);
		else if (!strcmp(k, "mod"))
			renv_strv_push(&s->modules, v);
		else if (!strcmp(k, "env"))
			renv_strv_push(&s->env_vars, v);
		else if (!strcmp(k, "timeout")) {
			long t;

			if (parse_long(v, -1, 100000000, &t) || !t)
				return error("runtime_env: bad setup timeout '%s'", v);
			s->timeout = t;
		}
	}
	return 0;
}

int renv_spec_from_blob(struct renv_spec *s, const char *blob, size_t len)
{
	const char *why = NULL;
	struct msg m;
	int r;

	memset(s, 0, sizeof(*s));
	if (!len)
		return 0;
	msg_init(&m);
	r = msg_decode(&m, blob, len, &why);
	if (r)
		r = error("runtime_env: the job's stored spec is corrupt (%s)", why ? why : "?");
	else
		r = renv_spec_from_msg(s, &m);
	msg_release(&m);
	return r;
}

/* --- the launcher's side -------------------------------------------------------------- */

static char *resolve(const char *base, const char *p)
{
	if (!strcmp(p, "~") || starts_with(p, "~/"))
		return user_path(p);
	if (*p == '/' || !base)
		return xstrdup(p);
	return xasprintf("%s/%s", base, p);
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? xstrndup(path, (size_t)(slash != path ? slash - path : 1)) : NULL;
}

/* Copies src to dst atomically (a store entry). */
static int copy_file(const char *src, const char *dst)
{
	struct buf b = BUF_INIT((size_t)2 << 30);
	char *dir = dir_of(dst);
	int r;

	r = buf_read_file(&b, src);
	if (r)
		r = error("cannot read '%s': %s", src, buf_read_strerror(r));
	else if ((r = mkdir_p(dir, 0700)))
		r = error("cannot create '%s': %s", dir, strerror(-r));
	else if ((r = write_file_atomic(dst, b.p, b.len, 0644)))
		r = error("cannot write '%s': %s", dst, strerror(-r));
	buf_release(&b);
	free(dir);
	return r;
}

/* A local wheel: hashed, put into the store, named by its digest. */
static int add_wheel(struct renv_spec *s, const char *store, struct renv_strv *ship,
                     const char *path)
{
	const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	char hex[65], *rel, *dst, *line;
	struct stat st;
	int r;

	r = sha256_file(path, hex);
	if (r)
		return error("runtime_env: cannot read wheel '%s': %s", path, strerror(-r));
	rel = xasprintf("whl/%s/%s", hex, name);
	dst = xasprintf("%s/%s", store, rel);
	r = stat(dst, &st) ? copy_file(path, dst) : 0;
	if (!r) {
		renv_strv_push(ship, rel);
		line = xasprintf("%s %s", hex, name);
		renv_strv_push(&s->wheels, line);
		free(line);
	}
	free(rel);
	free(dst);
	return r;
}

static int add_req_line(struct renv_spec *s, const char *store, struct renv_strv *ship,
                        const char *base, const char *line, int depth);

/* A requirements file: its lines, with `-r FILE` inlined and wheel paths shipped. */
static int add_req_file(struct renv_spec *s, const char *store, struct renv_strv *ship,
                        const char *path, int depth)
{
	struct buf b = BUF_INIT(REQ_FILE_MAX), line = BUF_INIT(0);
	char *dir = dir_of(path);
	const char *p;
	int r;

	if (depth > REQ_MAX_DEPTH) {
		free(dir);
		return error("runtime_env: requirement files nest deeper than %d at '%s'",
		             REQ_MAX_DEPTH, path);
	}
	r = buf_read_file(&b, path);
	if (r) {
		free(dir);
		buf_release(&b);
		return error("runtime_env: cannot read requirements file '%s': %s", path,
		             buf_read_strerror(r));
	}
	for (p = b.p; *p && !r;) {
		size_t n = strcspn(p, "\n");

		/* pip's line continuation: a trailing backslash joins the next line. */
		if (n && p[n - 1] == '\\') {
			buf_add(&line, p, n - 1);
		} else {
			buf_add(&line, p, n);
			r = add_req_line(s, store, ship, dir, line.p, depth);
			buf_reset(&line);
		}
		p += n + (p[n] == '\n');
	}
	if (!r && line.len)
		r = add_req_line(s, store, ship, dir, line.p, depth);
	free(dir);
	buf_release(&b);
	buf_release(&line);
	return r;
}

static int add_req_line(struct renv_spec *s, const char *store, struct renv_strv *ship,
                        const char *base, const char *line, int depth)
{
	struct buf n = BUF_INIT(0);
	char *path = NULL;
	int r = 0;

	renv_norm_req(line, &n);
	if (!n.len)
		goto out;
	if (starts_with(n.p, "-r ") || starts_with(n.p, "--requirement ")) {
		path = resolve(base, strchr(n.p, ' ') + 1);
		r = add_req_file(s, store, ship, path, depth + 1);
	} else if (starts_with(n.p, "https://") || starts_with(n.p, "http://")) {
		if (!starts_with(n.p, "https://"))
			r = error("runtime_env: '%s': only https:// URLs are fetched", n.p);
		else
			renv_strv_push(&s->urls, n.p);
	} else if (ends_with(n.p, ".whl") && !strchr(n.p, ' ')) {
		path = resolve(base, n.p);
		r = add_wheel(s, store, ship, path);
	} else
		renv_strv_push(&s->pkgs, n.p);
out:
	free(path);
	buf_release(&n);
	return r;
}

/* working_dir or a py_module: a URL is kept, a local dir is packed into the store. */
static int add_tree(const char *what, const char *src, const char *store, struct renv_strv *ship,
                    char **ref, int named)
{
	char hex[65], *path, *rel, *dst;
	struct stat st;
	int r;

	if (starts_with(src, "https://")) {
		*ref = xstrdup(src);
		return 0;
	}
	if (strstr(src, "://"))
		return error("runtime_env.%s: '%s': only local directories and https:// URLs "
		             "are supported",
		             what, src);
	path = resolve(NULL, src);
	if (stat(path, &st) || !S_ISDIR(st.st_mode)) {
		r = error("runtime_env.%s: '%s' is not a directory", what, path);
		free(path);
		return r;
	}
	{
		char *rp = realpath(path, NULL);

		if (rp) {
			free(path);
			path = rp;
		}
	}
	r = renv_tree_hash(path, hex);
	if (r) {
		free(path);
		return error("runtime_env.%s: cannot read '%s'", what, src);
	}
	rel = xasprintf("tgz/%s.tar.gz", hex);
	dst = xasprintf("%s/%s", store, rel);
	if (stat(dst, &st))
		r = renv_pack_dir(path, dst);
	if (!r) {
		renv_strv_push(ship, rel);
		const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;

		/* A py_module keeps its name: it is imported as the dir's name. */
		if (named && *base && strcmp(base, ".") && strcmp(base, ".."))
			*ref = xasprintf("sha256:%s/%s", hex, base);
		else
			*ref = xasprintf("sha256:%s", hex);
	}
	free(rel);
	free(dst);
	free(path);
	return r;
}

static int add_pkgs(struct renv_spec *s, const struct task_pkgs *k, int tool, const char *store,
                    struct renv_strv *ship)
{
	size_t i;
	int r = 0;

	if (!k->set)
		return 0;
	s->tool = tool;
	s->check = k->check > 0;
	if (k->version)
		s->tool_version = xstrdup(k->version);
	for (i = 0; i < k->ninstall_options; i++)
		renv_strv_push(&s->opts, k->install_options[i]);
	for (i = 0; i < k->npackages && !r; i++)
		r = add_req_line(s, store, ship, NULL, k->packages[i], 0);
	if (!r && k->requirements) {
		char *path = resolve(NULL, k->requirements);

		r = add_req_file(s, store, ship, path, 0);
		free(path);
	}
	return r;
}

int renv_spec_from_task(const struct task *t, const char *store, struct renv_spec *s,
                        struct renv_strv *ship)
{
	const struct task_runtime_env *rt = &t->runtime_env;
	size_t i;
	int r;

	memset(s, 0, sizeof(*s));
	if (!rt->set)
		return 0;
	s->set = 1;
	s->timeout = rt->setup_timeout_seconds;
	if (rt->python)
		s->python = xstrdup(rt->python);
	r = add_pkgs(s, &rt->pip, RENV_TOOL_PIP, store, ship);
	if (!r)
		r = add_pkgs(s, &rt->uv, RENV_TOOL_UV, store, ship);
	if (!r && rt->working_dir)
		r = add_tree("working_dir", rt->working_dir, store, ship, &s->working_dir, 0);
	for (i = 0; i < rt->npy_modules && !r; i++) {
		char *ref = NULL;

		r = add_tree("py_modules", rt->py_modules[i], store, ship, &ref, 1);
		if (!r)
			renv_strv_push(&s->modules, ref);
		free(ref);
	}
	for (i = 0; i < rt->env_vars.n && !r; i++) {
		char *kv;

		if (!rt->env_vars.v[i].value)
			continue;
		kv = xasprintf("%s=%s", rt->env_vars.v[i].key, rt->env_vars.v[i].value);
		renv_strv_push(&s->env_vars, kv);
		free(kv);
	}
	if (r)
		renv_spec_release(s);
	return r;
}
