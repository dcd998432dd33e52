/*
 * A git workdir (`workdir: {url, ref}`, --git-url/--git-ref): the launcher fetches the
 * commit and checks it out into a tree of its own, which is then synced as a local
 * workdir, so that a node needs no git (and no credentials: the launcher's git config
 * and credential helpers are the ones used).
 *
 *   $SKIFF_HOME/git/repos/KEY      a bare repository per URL (KEY: sha256 of the URL)
 *   $SKIFF_HOME/git/trees/COMMIT   the tree of one commit, made once (tmp, then rename)
 *
 * Each fetch asks for one ref (or HEAD) at depth 1, under the repository's lock, into a
 * ref of its own so that concurrent launches never read each other's FETCH_HEAD.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap/launch/engine_internal.h"
#include "bootstrap/renv/renv.h"
#include "lib/buf.h"
#include "lib/env.h"
#include "lib/lock.h"
#include "lib/log.h"
#include "lib/sha256.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "lib/banned.h"

/* A fetch of a large repository over a slow link still ends; a hung one does not hang us. */
#define GIT_FETCH_TIMEOUT_MS (10 * 60 * 1000)
#define GIT_LOCAL_TIMEOUT_MS (5 * 60 * 1000)
/* `git rev-parse HEAD` of a local workdir, on every launch and exec that has one. */
#define GIT_COMMIT_TIMEOUT_MS (10 * 1000)
/* A commit's name: sha1's 40 hex digits, or sha256's 64. */
#define GIT_COMMIT_MAX 64

/* Runs git with argv[1..]; its stderr is captured into err. 0, or -1 (printed). */
static int git(const char *what, char *const *argv, const char *const *env_add, int timeout_ms,
               struct buf *out)
{
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct buf err = BUF_INIT(64 << 10);
	struct spawn_io io = {NULL, 0, out, &err, timeout_ms};
	struct env e;
	int status = 0, r;

	env_init(&e, 1);
	while (env_add && *env_add)
		env_put(&e, *env_add++);
	/* Never a prompt for a password on a launch: fail with git's own words instead. */
	env_set(&e, "GIT_TERMINAL_PROMPT", "0");
	o.argv = argv;
	o.envp = e.v;
	r = spawn_run(&o, &io, &status);
	env_release(&e);
	if (r == -ENOENT)
		r = error("workdir: git is not installed on this machine (a git workdir is "
		          "fetched here, then synced)");
	else if (r == -ETIMEDOUT)
		r = error("workdir: git %s ran past %d s", what, timeout_ms / 1000);
	else if (r || status)
		r = error("workdir: git %s failed: %.*s", what,
		          (int)strcspn(err.p, "\n") ? (int)strcspn(err.p, "\n") : 40,
		          err.len ? err.p : "(no message)");
	buf_release(&err);
	return r ? -1 : 0;
}

/* 1 when dir or a directory above it has a .git (a directory, or a worktree's file). */
static int in_git_tree(const char *dir)
{
	char *d = xstrdup(dir), *slash;
	int found = 0;

	for (;;) {
		char *dotgit = xasprintf("%s/.git", d); /* d "": the root's */
		struct stat st;

		found = !lstat(dotgit, &st);
		free(dotgit);
		if (found || !*d || !(slash = strrchr(d, '/')))
			break;
		*slash = '\0';
	}
	free(d);
	return found;
}

char *eng_workdir_commit(const char *dir)
{
	struct spawn_opts o = SPAWN_OPTS_INIT;
	struct buf out = BUF_INIT(4096), err = BUF_INIT(4096);
	struct spawn_io io = {NULL, 0, &out, &err, GIT_COMMIT_TIMEOUT_MS};
	char *abs = dir ? realpath(dir, NULL) : NULL, *commit = NULL;
	char *argv[] = {"git", "-C", abs, "rev-parse", "--verify", "-q", "HEAD", NULL};
	size_t n;
	int status = 0;

	/* Most workdirs are no repository: git is not even started for them. */
	if (!abs || !in_git_tree(abs)) {
		free(abs);
		return NULL;
	}
	o.argv = argv;
	if (!spawn_run(&o, &io, &status) && !status) {
		n = strcspn(out.p, "\n");
		if (n >= 40 && n <= GIT_COMMIT_MAX && strspn(out.p, "0123456789abcdef") == n)
			commit = xstrndup(out.p, n);
	}
	if (!commit)
		debug("workdir %s: no git commit to record (%.*s)", dir, (int)strcspn(err.p, "\n"),
		      err.len ? err.p : "git said nothing");
	buf_release(&out);
	buf_release(&err);
	free(abs);
	return commit;
}

int eng_git_tree(const struct task_workdir *w, char **tree)
{
	const char *home = skiff_home();
	char key[SHA256_HEX_LEN + 1], ref[64];
	char *repo = NULL, *lockp = NULL, *dst = NULL, *tmp = NULL, *index = NULL;
	char *want = NULL, *head = NULL, *envs[2] = {NULL, NULL};
	struct buf out = BUF_INIT(4096);
	struct stat st;
	int lock_fd = -1, r = -1;

	*tree = NULL;
	if (!home)
		return -1;
	sha256_hex(w->url, strlen(w->url), key);
	repo = xasprintf("%s/git/repos/%.32s", home, key);
	lockp = xasprintf("%s.lock", repo);
	if (mkdir_p(repo, 0700))
		goto out;
	lock_fd = lock_take(lockp, "the git workdir cache", "skiff launch", LOCK_TAKE_WAIT);
	if (lock_fd < 0)
		goto out;
	head = xasprintf("%s/HEAD", repo);
	if (stat(head, &st)) {
		char *argv[] = {"git", "init", "-q", "--bare", repo, NULL};

		if (git("init", argv, NULL, GIT_LOCAL_TIMEOUT_MS, NULL))
			goto out;
	}
	xsnprintf(ref, sizeof(ref), "refs/skiff/fetch-%ld", (long)getpid());
	want = xasprintf("+%s:%s", w->ref && *w->ref ? w->ref : "HEAD", ref);
	{
		char *argv[] = {"git", "--git-dir", repo,           "fetch", "-q", "--depth",
		                "1",   "--no-tags", (char *)w->url, want,    NULL};

		if (git("fetch", argv, NULL, GIT_FETCH_TIMEOUT_MS, NULL))
			goto out;
	}
	{
		char spec[80];
		char *argv[] = {"git", "--git-dir", repo, "rev-parse", spec, NULL};

		xsnprintf(spec, sizeof(spec), "%s^{commit}", ref);
		if (git("rev-parse", argv, NULL, GIT_LOCAL_TIMEOUT_MS, &out))
			goto out;
	}
	out.p[strcspn(out.p, "\n")] = '\0';
	if (strlen(out.p) < 40 || strspn(out.p, "0123456789abcdef") != strlen(out.p)) {
		error("workdir: git rev-parse said '%.60s', not a commit", out.p);
		goto out;
	}
	dst = xasprintf("%s/git/trees/%s", home, out.p);
	if (!access(dst, F_OK)) {
		r = 0;
		goto out;
	}
	tmp = xasprintf("%s.tmp.%ld", dst, (long)getpid());
	index = xasprintf("GIT_INDEX_FILE=%s.index", tmp);
	envs[0] = index;
	rm_rf(tmp);
	if (mkdir_p(tmp, 0700))
		goto out;
	{
		char *argv[] = {"git", "--git-dir", repo,  "--work-tree", tmp, "checkout",
		                "-q",  "-f",        out.p, "--",          ".", NULL};

		if (git("checkout", argv, (const char *const *)envs, GIT_LOCAL_TIMEOUT_MS, NULL))
			goto out;
	}
	unlink(index + strlen("GIT_INDEX_FILE="));
	if (rename(tmp, dst) && errno != EEXIST && errno != ENOTEMPTY) {
		error_errno("workdir: cannot move the checkout to %s", dst);
		goto out;
	}
	r = 0;
out:
	/* Failed, or another launch made the same tree first. */
	if (tmp && !access(tmp, F_OK))
		rm_rf(tmp);
	if (index)
		unlink(index + strlen("GIT_INDEX_FILE="));
	lock_release(lock_fd);
	if (!r)
		*tree = dst;
	else
		free(dst);
	buf_release(&out);
	free(repo);
	free(lockp);
	free(tmp);
	free(index);
	free(want);
	free(head);
	return r;
}
