#include "lib/self.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

static int is_exec_file(const char *p)
{
	struct stat st;

	return !stat(p, &st) && S_ISREG(st.st_mode) && !access(p, X_OK);
}

const char *self_path(const char *argv0)
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

const char *self_sha256(const char *argv0)
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
	p = self_path(argv0);
	if (p && !sha256_file(p, hex))
		return hex;
	hex[0] = '\0';
	return NULL;
}
