/*
 * The node's runtime env cache: settings, interpreters, locks, remembered failures and
 * LRU eviction. The layout and the locking rules are in bootstrap/renv/renv.h.
 */
#define _XOPEN_SOURCE 700
#include "bootstrap/renv/renv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/sha256.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "lib/banned.h"

/* A probe that failed is tried again after this long (an interpreter may be installed). */
#define PY_BAD_TTL 60

/* --- settings ---------------------------------------------------------------------- */

static void set_str(char **slot, const char *v)
{
	free(*slot);
	*slot = v && *v ? xstrdup(v) : NULL;
}

struct conf_raw {
	char *index_url, *extra, *find_links, *no_index;
};

static void conf_kv(struct renv_conf *c, struct conf_raw *raw, const char *k, const char *v)
{
	long n;

	if (!strcmp(k, "index_url"))
		set_str(&raw->index_url, v);
	else if (!strcmp(k, "extra_index_url"))
		set_str(&raw->extra, v);
	else if (!strcmp(k, "find_links"))
		set_str(&raw->find_links, v);
	else if (!strcmp(k, "no_index"))
		set_str(&raw->no_index, v);
	else if (!strcmp(k, "max_size_mb") && !parse_long(v, 0, 1L << 40, &n))
		c->max_size = (uint64_t)n << 20;
	else if (!strcmp(k, "failed_ttl_seconds") && !parse_long(v, 0, 1L << 30, &n))
		c->failed_ttl = n;
	else if (!strcmp(k, "parallel"))
		c->serial = !strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "no");
	else if (!strcmp(k, "ca_file"))
		set_str(&c->ca_file, v);
	else
		warning("renv.conf: unknown setting '%s'", k);
}

/* Adds "FLAG word" for each space-separated word of v. */
static void add_words(struct renv_conf *c, const char *flag, const char *v)
{
	while (v && *v) {
		size_t n;
		char *w;

		v += strspn(v, " \t,");
		n = strcspn(v, " \t,");
		if (!n)
			break;
		renv_strv_push(&c->index_args, flag);
		w = xstrndup(v, n);
		renv_strv_push(&c->index_args, w);
		free(w);
		v += n;
	}
}

static const char *const conf_envs[][2] = {
        {"SKIFF_PIP_INDEX_URL", "index_url"},      {"SKIFF_PIP_EXTRA_INDEX_URL", "extra_index_url"},
        {"SKIFF_PIP_FIND_LINKS", "find_links"},    {"SKIFF_PIP_NO_INDEX", "no_index"},
        {"SKIFF_RENV_MAX_SIZE_MB", "max_size_mb"}, {"SKIFF_RENV_CA_FILE", "ca_file"},
};

void renv_conf_env_copy(struct env *env)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(conf_envs); i++) {
		const char *v = getenv(conf_envs[i][0]);

		if (v)
			env_set(env, conf_envs[i][0], v);
		else
			env_unset(env, conf_envs[i][0]);
	}
}

int renv_conf_load(const char *home, struct renv_conf *c)
{
	struct conf_raw raw = {0};
	struct buf b = BUF_INIT(1 << 20);
	char *path = xasprintf("%s/renv.conf", home);
	const char *p;
	size_t i;

	memset(c, 0, sizeof(*c));
	c->max_size = RENV_MAX_SIZE_DEFAULT;
	c->failed_ttl = RENV_FAILED_TTL_DEFAULT;
	if (!buf_read_file(&b, path)) {
		for (p = b.p; *p;) {
			size_t n = strcspn(p, "\n");
			char *line = xstrndup(p, n), *eq = strchr(line, '='), *k, *v, *e;

			p += n + (p[n] == '\n');
			k = line + strspn(line, " \t");
			if (*k == '#' || !eq) {
				free(line);
				continue;
			}
			*eq = '\0';
			for (e = eq; e > k && (e[-1] == ' ' || e[-1] == '\t'); e--)
				e[-1] = '\0';
			v = eq + 1 + strspn(eq + 1, " \t");
			for (e = v + strlen(v);
			     e > v && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'); e--)
				e[-1] = '\0';
			conf_kv(c, &raw, k, v);
			free(line);
		}
	}
	for (i = 0; i < ARRAY_SIZE(conf_envs); i++)
		if (getenv(conf_envs[i][0]))
			conf_kv(c, &raw, conf_envs[i][1], getenv(conf_envs[i][0]));
	if (raw.no_index && strcmp(raw.no_index, "0") && strcmp(raw.no_index, "false"))
		renv_strv_push(&c->index_args, "--no-index");
	add_words(c, "--index-url", raw.index_url);
	add_words(c, "--extra-index-url", raw.extra);
	add_words(c, "--find-links", raw.find_links);
	free(raw.index_url);
	free(raw.extra);
	free(raw.find_links);
	free(raw.no_index);
	buf_release(&b);
	free(path);
	return 0;
}

void renv_conf_release(struct renv_conf *c)
{
	renv_strv_release(&c->index_args);
	free(c->ca_file);
	memset(c, 0, sizeof(*c));
}

void renv_conf_pip_text(const struct renv_conf *c, struct buf *out)
{
	size_t i;

	for (i = 0; i < c->index_args.n; i++)
		buf_addf(out, "%s%s", c->index_args.v[i],
		         c->index_args.v[i][0] == '-' && i + 1 < c->index_args.n &&
		                         c->index_args.v[i + 1][0] != '-'
		                 ? " "
		                 : "\n");
}

/* --- interpreters ------------------------------------------------------------------ */

void renv_py_release(struct renv_py *py)
{
	free(py->path);
	free(py->id);
	free(py->version);
	free(py->pip);
	memset(py, 0, sizeof(*py));
}

static const char probe_script[] = "import sys, os, platform\n"
                                   "print(os.path.realpath(sys.executable))\n"
                                   "print(sys.version.replace('\\n', ' '))\n"
                                   "print(platform.machine())\n"
                                   "print('%d.%d.%d' % sys.version_info[:3])\n"
                                   "try:\n"
                                   "    import importlib.metadata as m; print(m.version('pip'))\n"
                                   "except Exception:\n"
                                   "    print('')\n";

/* Cache file text: "STAT\nOK|BAD EPOCH\nREALPATH\nVERSION\nMACHINE\nVER\nPIP\n". */
static char *stat_line(const char *path)
{
	struct stat st;

	if (stat(path, &st) || !S_ISREG(st.st_mode) || access(path, X_OK))
		return NULL;
	return xasprintf("%llu %llu %lld %lld.%09ld", (unsigned long long)st.st_dev,
	                 (unsigned long long)st.st_ino, (long long)st.st_size,
	                 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

static int lines_split(char *text, char **v, int max)
{
	int n = 0;

	while (n < max && text) {
		char *nl = strchr(text, '\n');

		v[n++] = text;
		if (nl)
			*nl++ = '\0';
		text = nl;
	}
	return n;
}

/* 1: answered ok (out filled), 0: bad, -1: unknown (not probed or stale). */
static int probe(const char *home, const char *cand, const char *want_ver, int run,
                 struct renv_py *out)
{
	char h[65], *cache, *st = stat_line(cand), *v[8];
	struct buf b = BUF_INIT(1 << 16), err = BUF_INIT(1 << 16);
	int r = -1, n, status;

	if (!st)
		return 0;
	sha256_hex(cand, strlen(cand), h);
	cache = xasprintf("%s/envs/.py/%s", home, h);
	if (!buf_read_file(&b, cache)) {
		n = lines_split(b.p, v, 8);
		if (n >= 2 && !strcmp(v[0], st)) {
			long when = strtol(v[1] + 3, NULL, 10);

			if (starts_with(v[1], "OK ") && n >= 7)
				r = 1;
			else if (starts_with(v[1], "BAD ") && time(NULL) - when < PY_BAD_TTL)
				r = 0;
		}
	}
	if (r < 0 && run) {
		char *argv[] = {(char *)cand, "-I", "-c", (char *)probe_script, NULL};
		struct buf text = BUF_INIT(0);
		char *dir;

		buf_reset(&b);
		r = run_capture(argv, NULL, NULL, &b, &err, &status) == 0 && status == 0;
		n = r ? lines_split(b.p, v, 8) : 0;
		r = n >= 5 && *v[0] == '/';
		if (r)
			buf_addf(&text, "%s\nOK %ld\n%s\n%s\n%s\n%s\n%s\n", st, (long)time(NULL),
			         v[0], v[1], v[2], v[3], v[4]);
		else
			buf_addf(&text, "%s\nBAD %ld\n", st, (long)time(NULL));
		dir = xasprintf("%s/envs/.py", home);
		mkdir_p(dir, 0700);
		write_file_atomic(cache, text.p, text.len, 0600);
		free(dir);
		buf_release(&text);
		buf_reset(&b);
		if (buf_read_file(&b, cache) || (n = lines_split(b.p, v, 8)) < 7)
			r = 0;
	}
	if (r == 1) {
		/* v: stat, OK, realpath, sys.version, machine, version, pip */
		if (want_ver && !(starts_with(v[5], want_ver) &&
		                  (v[5][strlen(want_ver)] == '.' || !v[5][strlen(want_ver)])))
			r = 0;
		else {
			out->path = xstrdup(cand);
			out->id = xasprintf("%s\n%s\n%s", v[2], v[3], v[4]);
			out->version = xstrdup(v[5]);
			out->pip = xstrdup(n >= 7 ? v[6] : "");
		}
	}
	free(st);
	free(cache);
	buf_release(&b);
	buf_release(&err);
	return r;
}

static int is_version(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || *s == '.'))
			return 0;
	return 1;
}

static void add_dir(struct renv_strv *dirs, const char *d)
{
	size_t i;

	if (!d || !*d)
		return;
	for (i = 0; i < dirs->n; i++)
		if (!strcmp(dirs->v[i], d))
			return;
	renv_strv_push(dirs, d);
}

static void add_glob(struct renv_strv *dirs, const char *pat)
{
	glob_t g;
	size_t i;

	add_dir(dirs, pat); /* listed as searched even when nothing matches */
	dirs->n--;
	free(dirs->v[dirs->n]);
	if (glob(pat, 0, NULL, &g))
		return;
	for (i = g.gl_pathc; i-- > 0;) /* newest version first */
		add_dir(dirs, g.gl_pathv[i]);
	globfree(&g);
}

int renv_python(const char *home, const char *want, const char *path_env, int probe_ok,
                struct renv_py *out, struct buf *err)
{
	const char *uhome = user_home();
	struct renv_strv dirs = {0}, searched = {0};
	char *name, *ver = NULL;
	const char *p;
	size_t i;
	int r = -ENOENT, unknown = 0;

	memset(out, 0, sizeof(*out));
	if (!want || !*want)
		want = "python3";
	if (strchr(want, '/')) {
		r = probe(home, want, NULL, probe_ok, out);
		if (r == 1)
			return 0;
		if (r < 0)
			return 1;
		buf_addf(err, "runtime_env.python: '%s' is not a working Python interpreter", want);
		return -ENOENT;
	}
	if (is_version(want)) {
		ver = xstrdup(want);
		name = xasprintf("python%s", want);
	} else
		name = xstrdup(want);
	for (p = path_env ? path_env : ""; *p;) {
		size_t n = strcspn(p, ":");
		char *d = xstrndup(p, n);

		add_dir(&dirs, d);
		free(d);
		p += n + (p[n] == ':');
	}
	add_dir(&dirs, "/usr/local/bin");
	add_dir(&dirs, "/usr/bin");
	add_dir(&dirs, "/bin");
	if (uhome) {
		char *g;

		g = xasprintf("%s/.local/bin", uhome);
		add_dir(&dirs, g);
		free(g);
		g = xasprintf("%s/.pyenv/versions/%s*/bin", uhome, ver ? ver : "3");
		renv_strv_push(&searched, g);
		add_glob(&dirs, g);
		free(g);
		g = xasprintf("%s/.local/share/uv/python/cpython-%s*/bin", uhome, ver ? ver : "3");
		renv_strv_push(&searched, g);
		add_glob(&dirs, g);
		free(g);
	}
	for (i = 0; i < dirs.n; i++) {
		char *cand = xasprintf("%s/%s", dirs.v[i], name);
		int pr = probe(home, cand, ver, probe_ok, out);

		free(cand);
		if (pr == 1) {
			r = 0;
			break;
		}
		/* Without probing, an earlier unknown candidate may be the one that wins. */
		if (pr < 0) {
			unknown = 1;
			if (!probe_ok)
				break;
		}
	}
	if (r && unknown) {
		r = 1;
	} else if (r) {
		buf_addf(err, "runtime_env.python: no working '%s'%s%s%s found; searched:", name,
		         ver ? " (Python " : "", ver ? ver : "", ver ? ")" : "");
		for (i = 0; i < dirs.n; i++)
			buf_addf(err, " %s", dirs.v[i]);
		for (i = 0; i < searched.n; i++)
			buf_addf(err, " %s", searched.v[i]);
	}
	renv_strv_release(&dirs);
	renv_strv_release(&searched);
	free(name);
	free(ver);
	return r;
}

/* --- locks, failures, sizes -------------------------------------------------------- */

int renv_lock(const char *path, int op)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0)
		return -errno;
	while (flock(fd, op) < 0) {
		int e = errno;

		if (e == EINTR)
			continue;
		close(fd);
		return -e;
	}
	return fd;
}

int renv_failed_get(const char *home, const char *key, long ttl, struct buf *msg)
{
	char *path = xasprintf("%s/envs/%s.failed", home, key);
	struct buf b = BUF_INIT(1 << 16);
	int r = 0;

	if (!buf_read_file(&b, path)) {
		long when = strtol(b.p, NULL, 10);
		const char *nl = strchr(b.p, '\n');

		if (nl && time(NULL) - when < ttl) {
			buf_adds(msg, nl + 1);
			buf_rtrim(msg);
			r = 1;
		}
	}
	buf_release(&b);
	free(path);
	return r;
}

int renv_failed_set(const char *home, const char *key, const char *msg)
{
	char *path = xasprintf("%s/envs/%s.failed", home, key);
	char *text = xasprintf("%ld\n%s\n", (long)time(NULL), msg);
	int r = write_file_atomic(path, text, strlen(text), 0600);

	free(path);
	free(text);
	return r;
}

static uint64_t du_total;

static int du_entry(const char *p, const struct stat *st, int type, struct FTW *f)
{
	(void)p;
	(void)type;
	(void)f;
	du_total += (uint64_t)st->st_blocks * 512;
	return 0;
}

uint64_t renv_du(const char *path)
{
	du_total = 0;
	nftw(path, du_entry, 32, FTW_PHYS | FTW_MOUNT);
	return du_total;
}

/* --- eviction ---------------------------------------------------------------------- */

struct env_ent {
	char key[65];
	int pkg; /* 1: an unpacked package (pkgs/dir/<key>), 0: an env */
	uint64_t size;
	double used; /* mtime of its lock file: the last use */
};

static int ent_cmp(const void *a, const void *b)
{
	const struct env_ent *x = a, *y = b;

	return x->used < y->used ? -1 : x->used > y->used;
}

void renv_log(const char *home, const char *what, const char *key, uint64_t n)
{
	char *path = xasprintf("%s/envs/builds.log", home);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

	if (fd >= 0) {
		char line[256];
		int len = snprintf(line, sizeof(line), "%ld %s %s %llu\n", (long)time(NULL), what,
		                   key, (unsigned long long)n);

		if (len > 0 && (size_t)len < sizeof(line))
			write_all(fd, line, (size_t)len);
		close(fd);
	}
	free(path);
}

static double mtime_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : (double)st.st_mtim.tv_sec + st.st_mtim.tv_nsec / 1e9;
}

static void ent_add(struct env_ent **v, size_t *n, const char *key, int pkg, uint64_t size,
                    double used)
{
	*v = xrealloc(*v, (*n + 1) * sizeof(**v));
	xsnprintf((*v)[*n].key, sizeof((*v)[*n].key), "%s", key);
	(*v)[*n].pkg = pkg;
	(*v)[*n].size = size;
	(*v)[*n].used = used;
	(*n)++;
}

/* Candidates in dir (envs or pkgs/dir); leftovers of killed evictions are removed. */
static void scan(const char *home, const char *dir, int pkg, struct env_ent **v, size_t *n)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		struct buf b = BUF_INIT(4096);
		const char *sz;
		char *m;

		if (starts_with(de->d_name, ".trash.")) {
			m = xasprintf("%s/%s", dir, de->d_name);
			rm_rf(m);
			free(m);
			continue;
		}
		if (strlen(de->d_name) != 64 || strchr(de->d_name, '.'))
			continue;
		if (pkg) {
			m = xasprintf("%s/pkgs/%s.lock", home, de->d_name);
			ent_add(v, n, de->d_name, 1, 0, mtime_of(m));
			free(m);
			m = xasprintf("%s/%s", dir, de->d_name);
			(*v)[*n - 1].size = renv_du(m);
		} else {
			m = xasprintf("%s/%s/%s", dir, de->d_name, RENV_MARKER);
			if (!buf_read_file(&b, m) && (sz = strstr(b.p, "size="))) {
				free(m);
				m = xasprintf("%s/%s.use", dir, de->d_name);
				ent_add(v, n, de->d_name, 0, strtoull(sz + 5, NULL, 10),
				        mtime_of(m));
			}
		}
		free(m);
		buf_release(&b);
	}
	closedir(d);
}

int renv_evict(const char *home, uint64_t max_size, const char *keep_key)
{
	char *envs = xasprintf("%s/envs", home), *pkgs = xasprintf("%s/pkgs/dir", home);
	struct env_ent *v = NULL;
	size_t n = 0, i;
	uint64_t total = 0;

	scan(home, envs, 0, &v, &n);
	scan(home, pkgs, 1, &v, &n);
	for (i = 0; i < n; i++)
		total += v[i].size;
	if (n)
		qsort(v, n, sizeof(*v), ent_cmp);
	for (i = 0; i < n && total > max_size; i++) {
		const char *what = v[i].pkg ? "package" : "env";
		char *lock, *path, *trash, *m = NULL;
		int fd, gone;

		if (keep_key && !strcmp(v[i].key, keep_key))
			continue;
		if (v[i].pkg)
			lock = xasprintf("%s/pkgs/%s.lock", home, v[i].key);
		else
			lock = xasprintf("%s/%s.use", envs, v[i].key);
		fd = renv_lock(lock, LOCK_EX | LOCK_NB);
		free(lock);
		if (fd < 0) {
			info("runtime %s %.12s is in use: not evicted", what, v[i].key);
			continue;
		}
		path = xasprintf("%s/%s", v[i].pkg ? pkgs : envs, v[i].key);
		trash = xasprintf("%s/.trash.%s.%ld", v[i].pkg ? pkgs : envs, v[i].key,
		                  (long)getpid());
		/* An env loses its marker first: no job can pick up a half-removed one. */
		if (!v[i].pkg)
			m = xasprintf("%s/%s", path, RENV_MARKER);
		gone = (!m || !unlink(m)) && !rename(path, trash);
		if (gone) {
			rm_rf(trash);
			total -= v[i].size;
			renv_log(home, v[i].pkg ? "evict-pkg" : "evict", v[i].key, v[i].size);
			info("evicted runtime %s %.12s (%llu KiB, least recently used)", what,
			     v[i].key, (unsigned long long)(v[i].size >> 10));
		}
		close(fd);
		free(path);
		free(m);
		free(trash);
	}
	free(v);
	free(envs);
	free(pkgs);
	return 0;
}
