/* supervisor/templates.c: ~/sky_templates written, kept, replaced, and the record. */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/harness.h"
#include "bootstrap/launch/install.h"
#include "lib/buf.h"
#include "lib/sha256.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "supervisor/templates.h"

static char home[512], state[600];

static char *tpl_path(const char *rel)
{
	return xasprintf("%s/sky_templates/%s", home, rel);
}

/* 1 when the file at rel holds exactly the embedded template t. */
static int holds(const struct node_template *t)
{
	struct buf b = BUF_INIT(1 << 20);
	char *p = tpl_path(t->path);
	int same = !buf_read_file(&b, p) && b.len == t->len && !memcmp(b.p, t->data, t->len);

	buf_release(&b);
	free(p);
	return same;
}

static int mode_of(const char *rel)
{
	struct stat st;
	char *p = tpl_path(rel);
	int m = stat(p, &st) ? -1 : (int)(st.st_mode & 07777);

	free(p);
	return m;
}

static void put(const char *rel, const char *text)
{
	char *p = tpl_path(rel);

	write_file_atomic(p, text, strlen(text), 0644);
	free(p);
}

/* What the record should say: "HEX  PATH" per template, each with hex[i] (or ours). */
static char *record_of(const struct node_template *t, size_t n, const char *const *hex)
{
	struct buf b = BUF_INIT(0);
	size_t i;

	for (i = 0; i < n; i++) {
		char h[SHA256_HEX_LEN + 1];

		sha256_hex(t[i].data, t[i].len, h);
		buf_addf(&b, "%s  %s\n", hex && hex[i] ? hex[i] : h, t[i].path);
	}
	return buf_detach(&b, NULL);
}

static char *read_record(void)
{
	struct buf b = BUF_INIT(1 << 16);
	char *p = xasprintf("%s/sky_templates.sha256", state), *s;

	if (buf_read_file(&b, p))
		buf_reset(&b);
	free(p);
	s = xstrdup(b.p);
	buf_release(&b);
	return s;
}

static void test_templates_embedded(void)
{
	struct node_template t[NODE_TEMPLATES];

	node_templates(t);
	is_int(NODE_TEMPLATES, 2, "two templates");
	is_str(t[0].path, "ray/start_cluster", "the first is ray/start_cluster");
	is_str(t[1].path, "ray/stop_cluster", "the second is ray/stop_cluster");
	ok(t[0].len > 1000 && !memcmp(t[0].data, "#!/bin/sh\n", 10), "start_cluster: a sh script");
	ok(t[1].len > 500 && !memcmp(t[1].data, "#!/bin/sh\n", 10), "stop_cluster: a sh script");
}

static void test_install_rules(void)
{
	size_t n = NODE_TEMPLATES;
	struct node_template t[NODE_TEMPLATES];
	char old[SHA256_HEX_LEN + 1], *want, *got, *p;
	const char *hex[2] = {NULL, NULL};

	node_templates(t);

	is_int(node_templates_install(home, state), 2, "a fresh home: both written");
	ok(holds(&t[0]) && holds(&t[1]), "both hold the embedded bytes");
	is_int(mode_of(t[0].path), 0700, "start_cluster is 0700 (private, as all of a node state)");
	is_int(mode_of(t[1].path), 0700, "stop_cluster is 0700");
	want = record_of(t, n, NULL);
	got = read_record();
	is_str(got, want, "the record names what was written");
	free(got);

	is_int(node_templates_install(home, state), 0, "again: nothing to write");

	/* The user's edit stays, and so does the record's line. */
	put(t[1].path, "#!/bin/sh\necho mine\n");
	is_int(node_templates_install(home, state), 0, "an edited stop_cluster is kept");
	ok(!holds(&t[1]), "it still holds the edit");
	got = read_record();
	is_str(got, want, "the record still says what skiff wrote");
	free(got);

	/* Gone: written again. */
	p = tpl_path(t[1].path);
	unlink(p);
	free(p);
	is_int(node_templates_install(home, state), 1, "a removed stop_cluster is written again");
	ok(holds(&t[1]), "with the embedded bytes");

	/* Empty (a crash soon after a write): as missing. */
	put(t[1].path, "");
	is_int(node_templates_install(home, state), 1, "an empty stop_cluster is written again");
	ok(holds(&t[1]), "with the embedded bytes");

	/* An older skiff's file, by the record: replaced. */
	put(t[0].path, "#!/bin/sh\necho an older skiff\n");
	sha256_hex("#!/bin/sh\necho an older skiff\n", 30, old);
	hex[0] = old;
	free(want);
	want = record_of(t, n, hex);
	p = xasprintf("%s/sky_templates.sha256", state);
	write_file_atomic(p, want, strlen(want), 0600);
	free(p);
	is_int(node_templates_install(home, state), 1,
	       "an older skiff's start_cluster is replaced");
	ok(holds(&t[0]), "by the embedded bytes");
	free(want);
	want = record_of(t, n, NULL);
	got = read_record();
	is_str(got, want, "and the record says so");
	free(got);

	/* No record (another state dir, a lost one): only what is missing is written. */
	p = xasprintf("%s/sky_templates.sha256", state);
	unlink(p);
	free(p);
	put(t[0].path, "#!/bin/sh\necho an older skiff\n");
	is_int(node_templates_install(home, state), 0, "without a record a changed file is kept");
	ok(!holds(&t[0]), "start_cluster kept");
	got = read_record();
	ok(!strstr(got, " ray/start_cluster\n") && strstr(got, " ray/stop_cluster\n"),
	   "the record names only what skiff knows it wrote");
	free(got);

	/* A symlink is the user's, even to our own bytes. */
	p = tpl_path(t[0].path);
	unlink(p);
	ok(!symlink("stop_cluster", p), "start_cluster made a symlink");
	is_int(node_templates_install(home, state), 0, "a symlink is kept");
	{
		struct stat st;

		ok(!lstat(p, &st) && S_ISLNK(st.st_mode), "still a symlink");
	}
	unlink(p);
	free(p);
	free(want);
}

static void test_install_errors(void)
{
	char *p = xasprintf("%s/blocked", home);
	char *sky = xasprintf("%s/sky_templates", p);

	mkdir(p, 0700);
	write_file_atomic(sky, "x", 1, 0600); /* a file where the dir should be */
	ok(node_templates_install(p, state) < 0, "sky_templates a file: an error, not a crash");
	is_int(node_templates_install(NULL, state), -ENOENT, "no home: -ENOENT");
	unlink(sky);
	rmdir(p);
	free(sky);
	free(p);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(path);
}

/* A node's exe word, and the path it names on a node that is a directory here. */
static void test_exe_word_here(void)
{
	char word[128], *p;

	boot_exe_word("ab12", word, sizeof(word));
	is_str(word, "\"$HOME/.skiff/bin/skiff-ab12\"", "the exe word is quoted, under $HOME");
	p = boot_exe_path_here(word, "/n/0");
	is_str(p, "/n/0/.skiff/bin/skiff-ab12", "... and names that file under the node's home");
	free(p);
	ok(!boot_exe_path_here("\"/opt/skiff\"", "/n/0"), "another form names nothing here");
	ok(!boot_exe_path_here("\"$HOME/", "/n/0") && !boot_exe_path_here("$HOME/x", "/n/0"),
	   "nor a word cut short or unquoted");
}

/*
 * The session script writes the splitter with printf lines: run by a real sh, they make
 * exactly its bytes (every byte value is in it: octal escapes, a quote, %, a backslash).
 */
static void test_session_splitter(void)
{
	static const char sha[] =
	        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	struct buf script = BUF_INIT(0), run = BUF_INIT(0), out = BUF_INIT(0), err = BUF_INIT(0),
	           got = BUF_INIT(0);
	struct boot_stub split, unz;
	char *file = NULL;
	const char *from, *to;
	char *argv[] = {"sh", "-c", NULL, NULL};
	int status = -1;

	boot_stubs(&split, &unz);
	ok(split.len > 1000, "the splitter is embedded (%zu bytes)", split.len);
	ok(!boot_install_script(&script, BOOT_SCRIPT_SESSION, sha, 12345, 0, " --x"),
	   "the session script is made");
	from = strstr(script.p, "printf '");
	to = strstr(script.p, "chmod 700 \"$split\"");
	ok(from && to && from < to, "it writes the splitter with printf, then makes it executable");
	if (!from || !to || from > to)
		return;
	file = xasprintf("%s/split.out", home);
	buf_addf(&run, "split='%s'\nfail() { exit 1; }\n: >\"$split\"\n%.*s", file,
	         (int)(to - from), from);
	argv[2] = run.p;
	ok(!run_capture(argv, NULL, NULL, &out, &err, &status) && status == 0,
	   "sh runs those lines (%s)", err.p);
	ok(!buf_read_file(&got, file) && got.len == split.len &&
	           !memcmp(got.p, split.data, got.len),
	   "they write exactly the splitter's %zu bytes", split.len);
	buf_release(&got);
	free(file);
	buf_release(&script);
	buf_release(&run);
	buf_release(&out);
	buf_release(&err);
}

int main(void)
{
	const char *t = getenv("TMPDIR");

	xsnprintf(home, sizeof(home), "%s/skiff-test-templates.XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(home))
		return 1;
	xsnprintf(state, sizeof(state), "%s/.skiff", home);
	mkdir(state, 0700);
	plan_run(test_templates_embedded);
	plan_run(test_install_rules);
	plan_run(test_install_errors);
	plan_run(test_exe_word_here);
	plan_run(test_session_splitter);
	nftw(home, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return done_testing();
}
