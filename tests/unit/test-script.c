/*
 * A job step's script text (supervisor/script.c): the exact prelude, the pins the
 * profiles may not take back, and real runs of the text under bash and busybox sh with
 * a home whose profile changes the environment and the directory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/unit/harness.h"
#include "lib/buf.h"
#include "lib/env.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "supervisor/script.h"
#include "lib/banned.h"

static char tmp[64];

static const char conda_lines[] =
        "if command -v conda >/dev/null 2>&1; then\n"
        "\t__skiff_conda=${CONDA_EXE%/bin/conda}\n"
        "\tif [ -z \"$CONDA_EXE\" ] || [ \"$__skiff_conda\" = \"$CONDA_EXE\" ]; then\n"
        "\t\t__skiff_conda=$(conda info --base 2>/dev/null)\n"
        "\tfi\n"
        "\tset -a\n"
        "\t. \"$__skiff_conda/etc/profile.d/conda.sh\" >/dev/null 2>&1\n"
        "\tset +a\n"
        "\tunset __skiff_conda\n"
        "fi\n";

static void test_text(void)
{
	struct env pins;
	struct step_script s = {"echo hi", 1, NULL, NULL, NULL, 1};
	char *t, *want;

	t = step_script_text(&s);
	want = xasprintf("if [ -f ~/.bashrc ]; then . ~/.bashrc; fi\n%s"
	                 "export PYTHONUNBUFFERED=1\necho hi\n",
	                 conda_lines);
	is_str(t, want, "bash: .bashrc, conda, PYTHONUNBUFFERED, the script");
	free(t);
	free(want);

	env_init(&pins, 0);
	env_set(&pins, "A", "it's $(x) `y`\nz");
	env_set(&pins, "B", "");
	env_put(&pins, "not-a-name=1");
	env_set(&pins, "UID", "7");
	s.pins = &pins;
	t = step_script_text(&s);
	want = xasprintf("__skiff_A=$A __skiff_B=$B\n"
	                 "if [ -f ~/.bashrc ]; then . ~/.bashrc; fi\n%s"
	                 "export PYTHONUNBUFFERED=1\n"
	                 "A=$__skiff_A B=$__skiff_B; export A B; unset __skiff_A __skiff_B\n"
	                 "echo hi\n",
	                 conda_lines);
	is_str(t, want,
	       "bash: the pins kept by name across the profile (a bad name, a read-only one "
	       "left out)");
	ok(!strstr(t, "$(x)"), "  no value in the text");
	free(t);
	free(want);

	s.bash = 0;
	s.cwd = "/w d/'x'";
	s.path_prefix = "/venv/bin";
	s.script = NULL;
	t = step_script_text(&s);
	want = xasprintf("__skiff_A=$A __skiff_B=$B\n"
	                 "if [ -f ~/.profile ]; then . ~/.profile; fi\n%s"
	                 "export PYTHONUNBUFFERED=1\n"
	                 "A=$__skiff_A B=$__skiff_B; export A B; unset __skiff_A __skiff_B\n"
	                 "PATH=/venv/bin${PATH:+:\"$PATH\"}; export PATH\n"
	                 "cd -- '/w d/'\\''x'\\''' || exit 1\n\n",
	                 conda_lines);
	is_str(t, want, "sh: .profile, the same pins, PATH prefix, quoted cd");
	free(t);
	free(want);
	env_release(&pins);
	/* Without the prelude (node submit's own jobs): the script alone, whatever else. */
	s.profile = 0;
	s.script = "echo hi";
	t = step_script_text(&s);
	is_str(t, "echo hi\n", "no profile: the script alone (no pins, PATH or cd around it)");
	free(t);
	s.script = NULL;
	t = step_script_text(&s);
	is_str(t, "\n", "no profile and no script: an empty line");
	free(t);
}

static void test_pins(void)
{
	struct env base, fin, pins;
	char *prefix = (char *)"x";

	env_init(&base, 0);
	env_init(&fin, 0);
	env_set(&base, "PATH", "/usr/bin:/bin");
	env_set(&base, "SAME", "1");
	env_set(&base, "CHANGED", "old");
	env_set(&fin, "SAME", "1");
	env_set(&fin, "CHANGED", "new");
	env_set(&fin, "NEW", "v");
	env_set(&fin, "PATH", "/venv/bin:/x/bin:/usr/bin:/bin");
	env_init(&pins, 0);
	step_env_pins(&base, &fin, &pins, &prefix);
	is_int(pins.n, 2, "two entries pinned");
	is_str(env_get(&pins, "CHANGED"), "new", "a changed value is pinned");
	is_str(env_get(&pins, "NEW"), "v", "a new one is pinned");
	ok(!env_get(&pins, "SAME") && !env_get(&pins, "PATH"), "the same value and PATH are not");
	is_str(prefix, "/venv/bin:/x/bin", "PATH with directories in front: the prefix");
	free(prefix);
	env_release(&pins);

	env_set(&fin, "PATH", "/usr/bin:/bin");
	env_init(&pins, 0);
	step_env_pins(&base, &fin, &pins, &prefix);
	ok(!prefix && !env_get(&pins, "PATH"), "the same PATH: nothing");
	env_release(&pins);

	env_set(&fin, "PATH", "/opt/bin");
	env_init(&pins, 0);
	step_env_pins(&base, &fin, &pins, &prefix);
	ok(!prefix && env_get(&pins, "PATH") && !strcmp(env_get(&pins, "PATH"), "/opt/bin"),
	   "another PATH is pinned whole");
	env_release(&pins);

	env_set(&fin, "PATH", "x/usr/bin:/bin");
	env_init(&pins, 0);
	step_env_pins(&base, &fin, &pins, &prefix);
	ok(!prefix && env_get(&pins, "PATH"), "a PATH that only ends like base's is not a prefix");
	env_release(&pins);
	env_release(&fin);
	env_release(&base);
}

static void write_file(const char *name, const char *text)
{
	char *p = xasprintf("%s/%s", tmp, name);
	FILE *f = fopen(p, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
	}
	free(p);
}

/* Runs the step's text with shell and HOME=tmp (as FILE, or with bash -c TEXT FILE when
 * inline); 1 if it prints want. */
static int runs(const char *shell, int bash, int inline_text, const char *want)
{
	struct env pins, e;
	struct step_script s = {
	        "echo \"$V $W $PYTHONUNBUFFERED $(pwd) $PATH\"", bash, NULL, NULL, "/pre", 1};
	struct buf out = BUF_INIT(1 << 20), err = BUF_INIT(1 << 20);
	char *text, *cwd = xasprintf("%s/work", tmp), *file = xasprintf("%s/step.sh", tmp);
	char *argv[] = {(char *)shell, file, NULL, NULL, NULL};
	int st = -1, pass;

	env_init(&pins, 0);
	env_set(&pins, "V", "pinned");
	s.pins = &pins;
	s.cwd = cwd;
	text = step_script_text(&s);
	write_file("step.sh", text);
	if (inline_text) {
		argv[1] = "-c";
		argv[2] = text;
		argv[3] = file;
	}
	env_init(&e, 0);
	env_set(&e, "HOME", tmp);
	env_set(&e, "PATH", "/usr/bin:/bin");
	env_set(&e, "V", "pinned"); /* the step's environment holds what is pinned */
	pass = !run_capture(argv, e.v, NULL, &out, &err, &st) && WIFEXITED(st) &&
	       WEXITSTATUS(st) == 0 && !strcmp(out.p ? out.p : "", want);
	if (!pass)
		printf("#   %s: status %d, out '%s', err '%s'\n", shell, st, out.p, err.p);
	free(text);
	free(cwd);
	free(file);
	env_release(&pins);
	env_release(&e);
	buf_release(&out);
	buf_release(&err);
	return pass;
}

static void test_runs(void)
{
	char *want, *dir;

	dir = xasprintf("%s/work", tmp);
	mkdir(dir, 0700);
	/* The profiles set V (pinned back), W (kept), PATH (kept behind the prefix), cd away. */
	write_file(".bashrc", "export V=bashrc W=bashrc PYTHONUNBUFFERED=0 PATH=/rc:$PATH\n"
	                      "cd /\ncase $- in *i*) ;; *) return ;; esac\nexport W=late\n");
	write_file(".profile", "export V=profile W=profile PATH=/pr:$PATH; cd /\n");
	want = xasprintf("pinned bashrc 1 %s /pre:/rc:/usr/bin:/bin\n", dir);
	ok(runs("/bin/bash", 1, 0, want), "bash: .bashrc read up to its early return, pins win");
	ok(runs("/bin/bash", 1, 1, want), "the same with bash -c TEXT FILE");
	free(want);
	want = xasprintf("pinned profile 1 %s /pre:/pr:/usr/bin:/bin\n", dir);
	if (!access("/bin/busybox", X_OK) || !access("/usr/bin/busybox", X_OK)) {
		/* busybox is sh when called sh: an image with no bash has this one */
		char *link = xasprintf("%s/sh", tmp);

		ok(!symlink(!access("/bin/busybox", X_OK) ? "/bin/busybox" : "/usr/bin/busybox",
		            link) &&
		           runs(link, 0, 0, want),
		   "busybox sh: .profile, pins win");
		free(link);
	} else {
		ok(runs("/bin/sh", 0, 0, want), "sh: .profile, pins win");
	}
	free(want);
	free(dir);
}

/* A hostile value survives the profile: kept by declare -p and eval, never written out. */
static void test_hostile(void)
{
	static const char hostile[] =
	        "it's $(touch pwned) `touch pwned2` \"q\" \\ \n\ttab $'x' \x01\xff!";
	struct env pins, e;
	struct step_script s = {"printf %s \"$H\"", 1, NULL, NULL, NULL, 1};
	struct buf out = BUF_INIT(1 << 20), err = BUF_INIT(1 << 20);
	char *text, *file = xasprintf("%s/h.sh", tmp);
	char *argv[] = {"/bin/bash", "-c", NULL, file, NULL};
	int st = -1;

	write_file(".bashrc", "export H=changed-by-bashrc\n");
	env_init(&pins, 0);
	env_set(&pins, "H", hostile);
	s.pins = &pins;
	text = step_script_text(&s);
	argv[2] = text;
	env_init(&e, 0);
	env_set(&e, "HOME", tmp);
	env_set(&e, "PATH", "/usr/bin:/bin");
	env_set(&e, "H", hostile);
	ok(!run_capture(argv, e.v, NULL, &out, &err, &st) && WIFEXITED(st) &&
	           WEXITSTATUS(st) == 0 && out.len == strlen(hostile) &&
	           !memcmp(out.p, hostile, out.len),
	   "a hostile value comes back byte for byte (err '%s')", err.p ? err.p : "");
	ok(!strstr(text, "pwned"), "  the text does not hold it");
	{
		/* the same under sh (busybox's where test_runs linked it), from the file */
		char *sh = xasprintf("%s/sh", tmp), *av[] = {NULL, file, NULL};
		struct step_script s2 = s;
		char *t2;

		av[0] = access(sh, X_OK) ? "/bin/sh" : sh;
		s2.bash = 0;
		t2 = step_script_text(&s2);
		write_file("h.sh", t2);
		write_file(".profile", "export H=changed-by-profile\n");
		buf_reset(&out);
		buf_reset(&err);
		ok(!run_capture(av, e.v, NULL, &out, &err, &st) && WIFEXITED(st) &&
		           WEXITSTATUS(st) == 0 && out.len == strlen(hostile) &&
		           !memcmp(out.p, hostile, out.len),
		   "  and under %s (err '%s')", av[0], err.p ? err.p : "");
		free(t2);
		free(sh);
	}
	ok(access("pwned", F_OK) && access("pwned2", F_OK), "  and runs nothing");
	free(text);
	free(file);
	env_release(&pins);
	env_release(&e);
	buf_release(&out);
	buf_release(&err);
}

/* The words, joined by '|', or "(shell)". */
static char *plain(const char *script)
{
	char **w = step_plain_words(script);
	struct buf b = BUF_INIT(0);
	size_t i;

	if (!w)
		return xstrdup("(shell)");
	for (i = 0; w[i]; i++)
		buf_addf(&b, "%s%s", i ? "|" : "", w[i]);
	step_words_free(w);
	return buf_detach(&b, NULL);
}

static void is_plain(const char *script, const char *want)
{
	struct buf shown = BUF_INIT(0);
	char *got = plain(script);
	const char *p;

	/* One TAP line: control bytes shown as \xNN. */
	for (p = script; *p; p++)
		if ((unsigned char)*p < ' ')
			buf_addf(&shown, "\\x%02x", (unsigned char)*p);
		else
			buf_addch(&shown, *p);
	is_str(got, want, "plain words of '%s'", shown.len ? shown.p : "");
	buf_release(&shown);
	free(got);
}

static void test_plain_words(void)
{
	static const char *const meta[] = {"$", "`", "'", "\"", "\\", "*",    "?",       "[", "]",
	                                   "{", "}", "~", "#",  "!",  "^",    ";",       "&", "|",
	                                   "<", ">", "(", ")",  "\r", "\x01", "\xc3\xa9"};
	struct buf all = BUF_INIT(0), want = BUF_INIT(0), out = BUF_INIT(1 << 20),
	           err = BUF_INIT(1 << 16);
	char *argv[] = {"/bin/bash", "-c", "compgen -k; compgen -b", NULL};
	unsigned seed = 12345;
	size_t i;
	int st = -1, n = 0;

	is_plain("true", "true");
	is_plain("false\n", "false");
	is_plain("  sleep\t10  \n\n", "sleep|10");
	is_plain("python3 train.py --lr=0.1 -n 2 a,b x:y +1 @h 50%",
	         "python3|train.py|--lr=0.1|-n|2|a,b|x:y|+1|@h|50%");
	is_plain("/usr/bin/env A=1 printenv A", "/usr/bin/env|A=1|printenv|A");
	is_plain("./run.sh", "./run.sh");
	is_plain("", "(shell)");
	is_plain(" \n", "(shell)");
	is_plain("A=1 printenv A", "(shell)");
	is_plain("=x", "(shell)");
	is_plain("true\nfalse", "(shell)");
	is_plain("\ntrue", "(shell)");
	ok(!step_plain_words(NULL), "NULL: the shell");
	{
		/* Up to STEP_ARGV_TEXT_MAX plain; a byte more, the shell's. */
		char *big = xmalloc(STEP_ARGV_TEXT_MAX + 3), **w;

		memset(big, 'a', STEP_ARGV_TEXT_MAX + 1);
		memcpy(big, "x ", 2);
		big[STEP_ARGV_TEXT_MAX] = '\n';
		big[STEP_ARGV_TEXT_MAX + 1] = 0;
		w = step_plain_words(big);
		ok(w && w[1] && strlen(w[1]) == STEP_ARGV_TEXT_MAX - 2 && !w[2],
		   "a plain script of STEP_ARGV_TEXT_MAX bytes: its words");
		step_words_free(w);
		big[STEP_ARGV_TEXT_MAX] = 'a';
		ok(!step_plain_words(big), "  one byte more: the shell");
		free(big);
	}
	for (i = 0; i < ARRAY_SIZE(meta); i++) {
		char *sc = xasprintf("echo2 a%sb", meta[i]);

		is_plain(sc, "(shell)");
		free(sc);
	}
	/* Every reserved word and builtin of the bash here needs the shell, true and false aside.
	 */
	if (!access("/bin/bash", X_OK) && !run_capture(argv, NULL, NULL, &out, &err, &st) &&
	    WIFEXITED(st) && !WEXITSTATUS(st)) {
		char *p = out.p, *nl;
		int bad = 0, seen = 0;

		for (; (nl = strchr(p, '\n')); p = nl + 1) {
			char *w = xstrndup(p, (size_t)(nl - p)), **words = step_plain_words(w);
			int want_plain = !strcmp(w, "true") || !strcmp(w, "false");

			seen++;
			if (!!words != want_plain) {
				printf("# '%s': %s\n", w,
				       words ? "taken as a program" : "left to the shell");
				bad++;
			}
			step_words_free(words);
			free(w);
		}
		ok(seen > 60 && !bad, "bash's %d reserved words and builtins: the shell's", seen);
	} else {
		ok(0, "bash -c 'compgen -k; compgen -b' ran (err '%s')", err.p ? err.p : "");
	}
	/*
	 * Random scripts over plain and special bytes: each one taken as plain is the words
	 * bash's own parse gives (printf's arguments, one script for all of them).
	 */
	for (i = 0; i < 3000; i++) {
		static const char alpha[] = "ab-=.%/ \t:~$*'\\;#x!{},@+";
		char sc[16], **w;
		size_t len, k;

		seed = seed * 1103515245 + 12345;
		len = 1 + (seed >> 16) % 12;
		for (k = 0; k < len; k++) {
			seed = seed * 1103515245 + 12345;
			sc[k] = alpha[(seed >> 16) % (sizeof(alpha) - 1)];
		}
		sc[len] = 0;
		w = step_plain_words(sc);
		if (w) {
			size_t j;

			buf_addf(&all, "printf -- \"<%%s>\" %s; echo\n", sc);
			for (j = 0; w[j]; j++)
				buf_addf(&want, "<%s>", w[j]);
			buf_addch(&want, '\n');
			n++;
		}
		step_words_free(w);
	}
	{
		char *bash[] = {"/bin/bash", "-c", all.p, NULL};

		buf_reset(&out);
		buf_reset(&err);
		ok(n > 100 && !run_capture(bash, NULL, NULL, &out, &err, &st) && WIFEXITED(st) &&
		           !WEXITSTATUS(st),
		   "%d random plain scripts ran under bash (err '%s')", n, err.p ? err.p : "");
		is_str(out.p, want.p, "  bash parsed each into the same words");
	}
	buf_release(&want);
	buf_release(&all);
	buf_release(&out);
	buf_release(&err);
}

static void test_env_shell_free(void)
{
	static const char *const shell[] = {"BASH_ENV=/x", "ENV=/y", "SHELLOPTS=xtrace",
	                                    "BASHOPTS=extglob", "BASH_FUNC_ls%%=() { :; }"};
	struct env e;
	size_t i;

	env_init(&e, 0);
	env_set(&e, "PATH", "/usr/bin:/bin");
	env_set(&e, "BASH_ENVX", "1");
	env_set(&e, "MY_ENV", "1");
	ok(step_env_shell_free(&e), "PATH, BASH_ENVX, MY_ENV: nothing a shell reads");
	for (i = 0; i < ARRAY_SIZE(shell); i++) {
		char *name = xstrndup(shell[i], strcspn(shell[i], "="));

		env_put(&e, shell[i]);
		ok(!step_env_shell_free(&e), "%s: the shell reads it", shell[i]);
		env_unset(&e, name);
		ok(step_env_shell_free(&e), "  and without it, nothing again");
		free(name);
	}
	env_release(&e);
}

int main(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/skiff-script.XXXXXX");
	if (!mkdtemp(tmp))
		return 1;
	plan_run(test_text);
	plan_run(test_pins);
	plan_run(test_runs);
	plan_run(test_hostile);
	plan_run(test_plain_words);
	plan_run(test_env_shell_free);
	{
		char *argv[] = {"rm", "-rf", tmp, NULL};
		struct buf o = BUF_INIT(4096), e = BUF_INIT(4096);
		int st;

		run_capture(argv, NULL, NULL, &o, &e, &st);
		buf_release(&o);
		buf_release(&e);
	}
	return done_testing();
}
