/* The gitignore matcher for sync: globs, anchoring, negation, dir-only, '**', scoping. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/harness.h"
#include "bootstrap/sync/sync.h"
#include "lib/util.h"
#include "lib/banned.h"

static void test_wildmatch(void)
{
	static const struct {
		const char *pat, *str;
		int want;
	} cases[] = {
	        {"foo", "foo", 1},
	        {"foo", "fo", 0},
	        {"*.c", "a.c", 1},
	        {"*.c", ".c", 1},
	        {"*.c", "a/b.c", 0},
	        {"a*", "a/b", 0},
	        {"?", "a", 1},
	        {"?", "/", 0},
	        {"a?c", "abc", 1},
	        {"a?c", "a/c", 0},
	        {"[abc]", "b", 1},
	        {"[abc]", "d", 0},
	        {"[!abc]", "d", 1},
	        {"[^abc]", "a", 0},
	        {"[a-c]x", "bx", 1},
	        {"[a-c]x", "dx", 0},
	        {"[]]", "]", 1},
	        {"[!]]", "a", 1},
	        {"[[:digit:]]", "7", 1},
	        {"[[:digit:]]", "x", 0},
	        {"[[:alpha:][:digit:]]", "x", 1},
	        {"[[:bogus:]]", "x", 0},
	        {"[a", "a", 0},
	        {"a[/]b", "a/b", 0},
	        {"\\*", "*", 1},
	        {"\\*", "x", 0},
	        {"\\#a", "#a", 1},
	        {"**", "a/b/c", 1},
	        {"**/foo", "foo", 1},
	        {"**/foo", "a/b/foo", 1},
	        {"**/foo", "a/b/foox", 0},
	        {"**/foo/bar", "x/foo/bar", 1},
	        {"a/**", "a/b", 1},
	        {"a/**", "a/b/c", 1},
	        {"a/**", "a", 0},
	        {"a/**/b", "a/b", 1},
	        {"a/**/b", "a/x/b", 1},
	        {"a/**/b", "a/x/y/b", 1},
	        {"a/**/b", "a/x/y/c", 0},
	        {"a**b", "axxb", 1},
	        {"a**b", "ax/xb", 0},
	        {"*/b", "a/b", 1},
	        {"*/b", "a/c/b", 0},
	        {"a/*", "a/b", 1},
	        {"a/*", "a/b/c", 0},
	        {"*a*b*c*", "xxaxxbxxcxx", 1},
	        {"*a*b*c*", "xxaxxcxxbxx", 0},
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++)
		is_int(sync_wildmatch(cases[i].pat, cases[i].str), cases[i].want,
		       "wildmatch '%s' '%s'", cases[i].pat, cases[i].str);
}

static int ignored(const char *rules, const char *path, int is_dir)
{
	struct sync_ignore ig;
	int r;

	sync_ignore_init(&ig);
	sync_ignore_add(&ig, "", rules, strlen(rules));
	r = sync_ignore_path(&ig, path, is_dir);
	sync_ignore_release(&ig);
	return r;
}

static void test_rules(void)
{
	ok(!ignored("", "a", 0), "no rules, nothing ignored");
	ok(!ignored("# *.o\n\n   \n", "x.o", 0), "comments and blank lines are no rules");
	ok(ignored("\\#x\n", "#x", 0), "\\# is a literal #");
	ok(ignored("*.o\n", "x.o", 0), "a name glob");
	ok(ignored("*.o\n", "a/b/x.o", 0), "a slash-less pattern matches at any depth");
	ok(ignored("*.o   \n", "x.o", 0), "trailing spaces are dropped");
	ok(ignored("x\\ \n", "x ", 0), "an escaped trailing space stays");
	ok(ignored("*.o\r\n", "x.o", 0), "CRLF line ends work");
	ok(ignored("/x.o\n", "x.o", 0), "a leading / anchors...");
	ok(!ignored("/x.o\n", "a/x.o", 0), "...to the top only");
	ok(ignored("a/x.o\n", "a/x.o", 0), "a middle / anchors too");
	ok(!ignored("a/x.o\n", "b/a/x.o", 0), "...so it does not match deeper");
	ok(ignored("build/\n", "build", 1), "a trailing / matches a directory");
	ok(!ignored("build/\n", "build", 0), "...not a file");
	ok(ignored("build/\n", "a/build", 1), "...at any depth");
	ok(ignored("build/\n", "build/x/y.c", 0), "files under an ignored dir are ignored");
	ok(ignored("*.log\n!keep.log\n", "a.log", 0), "negation: others stay ignored");
	ok(!ignored("*.log\n!keep.log\n", "keep.log", 0), "negation re-includes");
	ok(ignored("!keep.log\n*.log\n", "keep.log", 0), "the last matching rule wins");
	ok(ignored("d/\n!d/x\n", "d/x", 0), "nothing is re-included below an excluded directory");
	ok(!ignored("d/*\n!d/x\n", "d/x", 0), "but d/* then !d/x works, as in git");
	ok(ignored("d/*\n!d/x\n", "d/y", 0), "...and d/y stays ignored");
	ok(ignored("**/logs\n", "a/b/logs", 1), "leading **/");
	ok(ignored("logs/**\n", "logs/a/b", 0), "trailing /**");
	ok(!ignored("logs/**\n", "logs", 1), "trailing /** leaves the dir itself");
	ok(ignored("a/**/z\n", "a/z", 0), "/**/ matches zero dirs");
	ok(ignored("a/**/z\n", "a/b/c/z", 0), "/**/ matches several");
	ok(ignored("\\!x\n", "!x", 0), "\\! is a literal !");
	ok(!ignored("/\n!\n", "x", 0), "a lone / or ! is no rule");
	ok(ignored("[Bb]uild\n", "Build", 1), "brackets");
	ok(!ignored("foo\n", "Foo", 0), "case matters");
}

static void test_nested(void)
{
	struct sync_ignore ig;
	size_t mark;
	const char *root = "*.log\n/top\n", *sub = "!keep.log\n/local\ntmp/\n";

	sync_ignore_init(&ig);
	sync_ignore_add(&ig, "", root, strlen(root));
	mark = ig.n;
	sync_ignore_add(&ig, "sub", sub, strlen(sub));
	ok(sync_ignore_path(&ig, "x.log", 0), "root rule at the root");
	ok(sync_ignore_path(&ig, "sub/x.log", 0), "root rule below");
	ok(!sync_ignore_path(&ig, "sub/keep.log", 0), "a nested file overrides its parent");
	ok(sync_ignore_path(&ig, "keep.log", 0), "...only in its own subtree");
	ok(sync_ignore_path(&ig, "other/keep.log", 0), "...not in a sibling");
	ok(sync_ignore_path(&ig, "sub/local", 0), "a nested /anchor is relative to its dir");
	ok(!sync_ignore_path(&ig, "local", 0), "...so it does not match at the root");
	ok(!sync_ignore_path(&ig, "sub/x/local", 0), "...nor deeper");
	ok(sync_ignore_path(&ig, "sub/a/tmp", 1), "a nested unanchored rule matches deeper");
	ok(!sync_ignore_path(&ig, "tmp", 1), "...but not above its dir");
	ok(!sync_ignore_path(&ig, "subx/local", 0), "a base is a whole component");
	ok(sync_ignore_path(&ig, "top", 0), "anchored root rule");
	ok(!sync_ignore_path(&ig, "sub/top", 0), "anchored root rule, not deeper");
	ok(sync_ignore_match(&ig, "sub/tmp", 1) && !sync_ignore_match(&ig, "sub/tmp/x", 0),
	   "match looks at the entry only; path looks at its parents too");
	sync_ignore_truncate(&ig, mark);
	ok(sync_ignore_path(&ig, "sub/keep.log", 0), "truncate drops the nested rules");
	sync_ignore_release(&ig);
	sync_ignore_release(&ig);
	ok(1, "release twice is harmless");
}

/* End to end through sync_local_manifest: which files a walk keeps. */
static char tmpdir[PATH_MAX];

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX * 2], *slash;
	int fd;

	xsnprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
	slash = strrchr(path, '/');
	*slash = '\0';
	mkdir_p(path, 0755);
	*slash = '/';
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		write_all(fd, text, strlen(text));
		close(fd);
	}
}

static int listed(const struct sync_manifest *m, const char *path)
{
	return sync_manifest_find(m, path) != NULL;
}

static void test_walk(void)
{
	struct sync_manifest m;

	xsnprintf(tmpdir, sizeof(tmpdir), "%s/skiff-test-ign.XXXXXX",
	          getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmpdir)) {
		ok(0, "mkdtemp");
		return;
	}
	put(".gitignore", "*.log\nbuild/\n/only-top\n");
	put("a.log", "x");
	put("a.c", "x");
	put("only-top", "x");
	put("sub/only-top", "x");
	put("sub/.gitignore", "!keep.log\n*.tmp\n");
	put("sub/keep.log", "x");
	put("sub/drop.log", "x");
	put("sub/x.tmp", "x");
	put("x.tmp", "x");
	put("build/out", "x");
	put("sub/build/out", "x");
	put(".git/config", "x");
	put("sub/.git", "gitdir: x");
	put(".skiff-sync-manifest", "x");

	sync_manifest_init(&m);
	ok(!sync_local_manifest(tmpdir, 0, &m, NULL), "walk with .gitignore files");
	ok(listed(&m, "a.c") && listed(&m, ".gitignore") && listed(&m, "sub/.gitignore"),
	   "plain files and the ignore files themselves are sent");
	ok(!listed(&m, "a.log") && !listed(&m, "sub/drop.log"), "*.log ignored everywhere");
	ok(listed(&m, "sub/keep.log"), "sub/.gitignore re-includes keep.log in sub");
	ok(!listed(&m, "only-top") && listed(&m, "sub/only-top"), "/only-top is anchored");
	ok(!listed(&m, "sub/x.tmp") && listed(&m, "x.tmp"), "sub's *.tmp only applies in sub");
	ok(!listed(&m, "build") && !listed(&m, "build/out") && !listed(&m, "sub/build"),
	   "ignored dirs are not entered");
	ok(!listed(&m, ".git") && !listed(&m, ".git/config") && !listed(&m, "sub/.git"),
	   ".git is never sent");
	ok(!listed(&m, ".skiff-sync-manifest"), "a manifest in the source is not sent");
	sync_manifest_release(&m);

	ok(!sync_local_manifest(tmpdir, SYNC_NO_IGNORE, &m, NULL), "walk without ignore rules");
	ok(listed(&m, "a.log") && listed(&m, "build/out") && !listed(&m, ".git"),
	   "SYNC_NO_IGNORE sends ignored files, never .git");
	sync_manifest_release(&m);

	put(".skyignore", "a.c\n");
	ok(!sync_local_manifest(tmpdir, 0, &m, NULL), "walk with a .skyignore");
	ok(!listed(&m, "a.c"), ".skyignore rules apply");
	ok(listed(&m, "a.log") && listed(&m, "build/out") && listed(&m, "sub/x.tmp"),
	   "and no .gitignore does");
	sync_manifest_release(&m);

	put(".skyignore", "# nothing\n");
	ok(!sync_local_manifest(tmpdir, 0, &m, NULL) && listed(&m, "a.log"),
	   "an empty .skyignore still replaces .gitignore");
	sync_manifest_release(&m);

	rm_rf(tmpdir);
}

int main(void)
{
	plan_run(test_wildmatch);
	plan_run(test_rules);
	plan_run(test_nested);
	plan_run(test_walk);
	return done_testing();
}
