#include "lib/self.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/sha256.h"
#include "lib/util.h"
#include "version.h"
#include "lib/banned.h"

#ifndef SKIFF_VERSION
#define SKIFF_VERSION "0.0.0-unknown"
#endif
#ifndef SKIFF_COMMIT
#define SKIFF_COMMIT "unknown"
#endif

const char skiff_version[] = SKIFF_VERSION;
const char skiff_commit[] = SKIFF_COMMIT;
const char *skiff_argv0 = "skiff";

/* The three lookups below fill static results once: one lock, whatever thread asks first. */
static pthread_mutex_t self_lock = PTHREAD_MUTEX_INITIALIZER;

static int is_exec_file(const char *p)
{
	struct stat st;

	return !stat(p, &st) && S_ISREG(st.st_mode) && !access(p, X_OK);
}

const char *self_exec_path(void)
{
	static int warned;
	const char *env = getenv("SKIFF_EXE");

	/* A path that cannot be run would leave every job without its shim: ours then. */
	if (env && *env && is_exec_file(env))
		return env;
	if (env && *env && !warned++)
		warning("SKIFF_EXE '%.200s' is not an executable file: running this skiff instead",
		        env);
	if (!access("/proc/self/exe", X_OK))
		return "/proc/self/exe";
	return self_path(NULL);
}

static const char *find_path(const char *argv0)
{
	static char *path;
	char buf[PATH_MAX];
	ssize_t n;
	const char *env;

	if (path)
		return path;
	if (!argv0)
		argv0 = skiff_argv0;
	n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = '\0';
		/* " (deleted)" means the file was replaced: the name is no longer ours. */
		if (!ends_with(buf, " (deleted)") && is_exec_file(buf))
			return path = xstrdup(buf);
	}
	if (!argv0 || !*argv0)
		return NULL;
	if (strchr(argv0, '/'))
		return is_exec_file(argv0) ? (path = xstrdup(argv0)) : NULL;
	env = getenv("PATH");
	while (env && *env) {
		const char *colon = strchr(env, ':');
		size_t len = colon ? (size_t)(colon - env) : strlen(env);
		char *cand = xasprintf("%.*s/%s", (int)len, len ? env : ".", argv0);

		if (is_exec_file(cand))
			return path = cand;
		free(cand);
		env = colon ? colon + 1 : NULL;
	}
	return NULL;
}

static const char *hash_self(const char *argv0)
{
	static char hex[SHA256_HEX_LEN + 1];
	const char *p;

	if (hex[0])
		return hex;
	if (!argv0)
		argv0 = skiff_argv0;
	/* /proc/self/exe reads the running image even if its file was replaced. */
	if (!sha256_file("/proc/self/exe", hex))
		return hex;
	p = find_path(argv0);
	if (p && !sha256_file(p, hex))
		return hex;
	hex[0] = '\0';
	return NULL;
}

static const char *hash_cached(void)
{
	static char hex[SHA256_HEX_LEN + 1];
	const char *path = find_path(NULL), *base, *home, *sha;
	struct stat st;
	char key[160], *cache = NULL, *dir = NULL;
	struct buf b = BUF_INIT(4096);

	char link[PATH_MAX];
	ssize_t n;

	if (hex[0])
		return hex;
	/* A running image whose file was replaced is not what the path names now. */
	n = readlink("/proc/self/exe", link, sizeof(link) - 1);
	if (n > 0) {
		link[n] = '\0';
		if (ends_with(link, " (deleted)"))
			return hash_self(NULL);
	}
	if (!path || stat(path, &st) < 0)
		return hash_self(NULL);
	/* An installed copy is named by its verified content. */
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (starts_with(base, "skiff-") && sha256_hex_valid(base + 6)) {
		memcpy(hex, base + 6, SHA256_HEX_LEN + 1);
		return hex;
	}
	home = skiff_home();
	xsnprintf(key, sizeof(key), "%llu %llu %lld %lld.%09ld ", (unsigned long long)st.st_dev,
	          (unsigned long long)st.st_ino, (long long)st.st_size,
	          (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	if (home) {
		dir = xasprintf("%s/cache", home);
		cache = xasprintf("%s/self-sha256", dir);
		if (!buf_read_file(&b, cache) && starts_with(b.p, key) &&
		    b.len >= strlen(key) + SHA256_HEX_LEN) {
			memcpy(hex, b.p + strlen(key), SHA256_HEX_LEN);
			hex[SHA256_HEX_LEN] = '\0';
			if (sha256_hex_valid(hex))
				goto out;
		}
	}
	hex[0] = '\0';
	sha = hash_self(NULL);
	if (!sha)
		goto out;
	memcpy(hex, sha, SHA256_HEX_LEN + 1);
	if (cache && !ensure_private_dir(home) && !mkdir_p(dir, 0700)) {
		struct buf line = BUF_INIT(0);

		buf_addf(&line, "%s%s\n", key, hex);
		write_file_atomic(cache, line.p, line.len, 0600);
		buf_release(&line);
	}
out:
	buf_release(&b);
	free(cache);
	free(dir);
	return hex[0] ? hex : NULL;
}

const char *self_path(const char *argv0)
{
	const char *p;

	pthread_mutex_lock(&self_lock);
	p = find_path(argv0);
	pthread_mutex_unlock(&self_lock);
	return p;
}

const char *self_sha256(const char *argv0)
{
	const char *p;

	pthread_mutex_lock(&self_lock);
	p = hash_self(argv0);
	pthread_mutex_unlock(&self_lock);
	return p;
}

const char *self_sha256_cached(void)
{
	const char *p;

	pthread_mutex_lock(&self_lock);
	p = hash_cached();
	pthread_mutex_unlock(&self_lock);
	return p;
}
