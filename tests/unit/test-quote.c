/*
 * sh_quote() and friends. Besides the exact forms, every value makes a round trip
 * through a real shell: `/bin/sh -c "printf '%s' QUOTED"` must print the value back
 * byte for byte. Hostile values, every byte 1..255, and a fixed-seed batch of random
 * byte strings all go through it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/unit/harness.h"
#include "lib/buf.h"
#include "lib/quote.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "lib/banned.h"

/* Runs script with /bin/sh -c; 1 if it exits 0, prints nothing on stderr and out == want. */
static int sh_prints(const char *script, const char *want, size_t want_len)
{
	char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
	struct buf out = BUF_INIT(1 << 20), err = BUF_INIT(1 << 20);
	int st = -1, pass;

	pass = !run_capture(argv, NULL, NULL, &out, &err, &st) && WIFEXITED(st) &&
	       WEXITSTATUS(st) == 0 && !err.len && out.len == want_len &&
	       !memcmp(out.p, want, want_len);
	if (!pass)
		printf("#   script: %s\n#   status %d, stdout %zu bytes, stderr: %s\n", script, st,
		       out.len, err.p);
	buf_release(&out);
	buf_release(&err);
	return pass;
}

/* sh_prints() with the script on sh's stdin (past the kernel's limit on one argument). */
static int sh_stdin_prints(const char *script, const char *want, size_t want_len)
{
	char *argv[] = {"/bin/sh", "-s", NULL};
	struct buf out = BUF_INIT(16 << 20), err = BUF_INIT(1 << 20);
	int st = -1, pass;

	pass = !run_capture(argv, NULL, script, &out, &err, &st) && WIFEXITED(st) &&
	       WEXITSTATUS(st) == 0 && !err.len && out.len == want_len &&
	       !memcmp(out.p, want, want_len);
	if (!pass)
		printf("#   status %d, stdout %zu of %zu bytes, stderr: %.300s\n", st, out.len,
		       want_len, err.p);
	buf_release(&out);
	buf_release(&err);
	return pass;
}

/* 1 if data survives quoting and a round trip through sh. */
static int round_trip(const char *data, size_t len)
{
	struct buf cmd = BUF_INIT(0);
	int pass;

	buf_adds(&cmd, "printf '%s' ");
	pass = !sh_quote_mem(&cmd, data, len) && sh_prints(cmd.p, data, len);
	buf_release(&cmd);
	return pass;
}

static char *quoted(const char *s)
{
	struct buf b = BUF_INIT(0);

	if (sh_quote(&b, s))
		return xstrdup("(error)");
	return buf_detach(&b, NULL);
}

static void test_forms(void)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
	        {"", "''"},
	        {"abc", "abc"},
	        {"/usr/bin/python3.11", "/usr/bin/python3.11"},
	        {"--opt=1,2:3@host%x+y", "--opt=1,2:3@host%x+y"},
	        {"-rf", "-rf"},
	        {"a b", "'a b'"},
	        {"it's", "'it'\\''s'"},
	        {"'", "''\\'''"},
	        {"''", "''\\'''\\'''"},
	        {"$HOME", "'$HOME'"},
	        {"~", "'~'"},
	        {"~/x", "'~/x'"},
	        {"a\nb", "'a\nb'"},
	        {"FOO=bar", "'FOO=bar'"},
	        {"_x1=", "'_x1='"},
	        {"=cmd", "'=cmd'"},
	        {"1A=b", "1A=b"},
	        {"a.b=c", "a.b=c"},
	        {"\\", "'\\'"},
	        {"\xff", "'\xff'"},
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		char *q = quoted(cases[i].in);

		is_str(q, cases[i].want, "quote form #%zu", i);
		free(q);
	}
}

static void test_hostile(void)
{
	static const char *const values[] = {
	        "",
	        " ",
	        "  two  spaces  ",
	        "\t",
	        "tab\there",
	        "\n",
	        "line1\nline2\n",
	        "\r\n",
	        "'",
	        "''",
	        "'''",
	        "it's",
	        "\"",
	        "\"double\" 'single'",
	        "\\",
	        "\\\\",
	        "back\\slash\\n",
	        "$HOME",
	        "${HOME}",
	        "$(echo pwned)",
	        "`echo pwned`",
	        "$((1+1))",
	        "'$(echo pwned)'",
	        "'; echo pwned; '",
	        "\"; echo pwned; \"",
	        "a; rm -rf /tmp/nonexistent-skiff",
	        "a && b || c | d & e",
	        "!",
	        "!!",
	        "!$",
	        "*",
	        "?",
	        "[a-z]*",
	        "{a,b}",
	        "~",
	        "~root",
	        "a~b",
	        "-",
	        "-n",
	        "-e",
	        "--",
	        "--help",
	        "#comment",
	        "a #b",
	        "<in >out 2>&1",
	        "(subshell)",
	        "%s%n%x",
	        "FOO=bar",
	        "IFS=x",
	        "=x",
	        "\x7f",
	        "\x01\x02\x1b[31m",
	        "caf\xc3\xa9",
	        "\xe2\x80\x8f rtl",
	        "\x80",
	        "\xc3\x28",
	        "\xfe\xff",
	        "\x80\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x8b\x8c\x8d\x8e\x8f",
	        "\xf0\x9f\x92\xa9",
	};
	struct buf cmd = BUF_INIT(0), want = BUF_INIT(0);
	int bad_bytes = 0, c;
	char one[2] = {0, 0};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(values); i++)
		ok(round_trip(values[i], strlen(values[i])), "round trip of hostile value #%zu", i);

	/* Each byte alone, one shell each. */
	for (c = 1; c < 256; c++) {
		one[0] = (char)c;
		if (!round_trip(one, 1)) {
			printf("#   byte 0x%02x does not survive\n", c);
			bad_bytes++;
		}
	}
	is_int(bad_bytes, 0, "every byte 1..255 survives the round trip alone");

	/* Each byte inside a word, all in one shell: printf '%s' 'a\001b' 'a\002b' ... */
	buf_adds(&cmd, "printf '%s'");
	for (c = 1; c < 256; c++) {
		char word[3] = {'a', (char)c, 'b'};

		buf_addch(&cmd, ' ');
		sh_quote_mem(&cmd, word, 3);
		buf_add(&want, word, 3);
	}
	ok(sh_prints(cmd.p, want.p, want.len), "every byte 1..255 survives inside a word");
	buf_release(&cmd);
	buf_release(&want);
}

static uint64_t rng_state = 0x5eedf00dcafe1234ULL;

static uint64_t rng(void)
{
	/* xorshift64*: fixed seed, the same strings on every run. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static void test_random(void)
{
	static const char nasty[] = "'\"\\$`!*?[]{}~#&;|<>() \t\n=%-:@,./";
	char s[96];
	int i, failed = 0;

	for (i = 0; i < 300; i++) {
		size_t len = (size_t)(rng() % 64), k;

		for (k = 0; k < len; k++) {
			/* Half the strings mostly shell syntax, half any byte but NUL. */
			if (i % 2 && rng() % 4)
				s[k] = nasty[rng() % (sizeof(nasty) - 1)];
			else
				s[k] = (char)(1 + rng() % 255);
		}
		s[len] = '\0';
		if (!round_trip(s, len)) {
			printf("#   random string #%d does not survive\n", i);
			failed++;
		}
	}
	is_int(failed, 0, "300 random byte strings survive the round trip");
}

/*
 * The fuzzer's property (tests/fuzz/fuzz-quote.c checks it against a model of sh) against
 * the real /bin/sh, in bulk: 3000 random strings in one script, each printed back with
 * a NUL after it, half as plain words and half as an argv of three.
 */
static void test_random_batch(void)
{
	static const char nasty[] = "'\"\\$`!*?[]{}~#&;|<>() \t\n=%-:@,./";
	struct buf script = BUF_INIT(0), want = BUF_INIT(0);
	char s[3][80], *argv[4];
	int i, k, bad = 0;

	for (i = 0; i < 3000 && !bad; i++) {
		int words = i % 2 ? 3 : 1;

		for (k = 0; k < words; k++) {
			size_t len = (size_t)(rng() % 72), j;

			for (j = 0; j < len; j++)
				s[k][j] = rng() % 3 ? nasty[rng() % (sizeof(nasty) - 1)]
				                    : (char)(1 + rng() % 255);
			s[k][len] = '\0';
			argv[k] = s[k];
			buf_add(&want, s[k], len + 1);
		}
		argv[words] = NULL;
		buf_adds(&script, "printf '%s\\0' ");
		bad = sh_quote_argv(&script, argv) || buf_addch(&script, '\n');
	}
	ok(!bad, "3000 random argvs quoted");
	ok(sh_stdin_prints(script.p, want.p, want.len), "and /bin/sh reads every one back");
	buf_release(&script);
	buf_release(&want);
}

static void test_assignment_words(void)
{
	static const char *const words[] = {"FOO=bar", "_x=1", "PATH=/x"};
	size_t i;

	/* As the first word of a command, a quoted NAME=x is a (missing) program: 127. */
	for (i = 0; i < ARRAY_SIZE(words); i++) {
		struct buf cmd = BUF_INIT(0);

		sh_quote(&cmd, words[i]);
		buf_adds(&cmd, " 2>/dev/null; printf %s $?");
		ok(sh_prints(cmd.p, "127", 3), "'%s' as a command word is not an assignment",
		   words[i]);
		buf_release(&cmd);
	}
}

static void test_argv(void)
{
	char *argv[] = {"printf", "%s|", "a b", "", "it's", "$(x)", "\n", NULL};
	char *none[] = {NULL};
	struct buf b = BUF_INIT(0);

	is_int(sh_quote_argv(&b, argv), 0, "sh_quote_argv");
	is_str(b.p, "printf '%s|' 'a b' '' 'it'\\''s' '$(x)' '\n'", "the quoted command line");
	ok(sh_prints(b.p, "a b||it's|$(x)|\n|", 17), "runs as the original argv");
	buf_reset(&b);
	is_int(sh_quote_argv(&b, none), 0, "empty argv");
	is_int(sh_quote_argv(&b, NULL), 0, "NULL argv");
	is_int(b.len, 0, "appends nothing");
	buf_release(&b);
}

static void test_env(void)
{
	static const char *const bad[] = {"",    "1A",          "A-B", "A B",
	                                  "A=B", "caf\xc3\xa9", "$A",  "A\n"};
	static const char *const values[] = {"", "plain", "it's $(x) `y` \"z\"", "a\nb", "\xff"};
	struct buf b = BUF_INIT(0);
	size_t i;

	is_int(sh_quote_env(&b, "FOO_1", "bar"), 0, "sh_quote_env");
	is_str(b.p, "FOO_1='bar'", "NAME='value'");
	buf_reset(&b);
	is_int(sh_quote_env(&b, "_", ""), 0, "sh_quote_env with an empty value");
	is_str(b.p, "_=''", "NAME=''");

	buf_reset(&b);
	buf_adds(&b, "keep");
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		is_int(sh_quote_env(&b, bad[i], "x"), -EINVAL, "bad name #%zu is -EINVAL", i);
	is_int(sh_quote_env(&b, NULL, "x"), -EINVAL, "NULL name is -EINVAL");
	is_int(sh_quote_env(&b, "A", NULL), -EINVAL, "NULL value is -EINVAL");
	is_str(b.p, "keep", "errors leave the buffer as it was");

	for (i = 0; i < ARRAY_SIZE(values); i++) {
		buf_reset(&b);
		sh_quote_env(&b, "V", values[i]);
		buf_adds(&b, "; printf %s \"$V\"");
		ok(sh_prints(b.p, values[i], strlen(values[i])), "env value #%zu round trip", i);
	}
	buf_release(&b);
}

static void test_errors(void)
{
	struct buf b = BUF_INIT(0), small = BUF_INIT(8);

	buf_adds(&b, "x");
	is_int(sh_quote_mem(&b, "a\0b", 3), -EINVAL, "a NUL cannot be quoted");
	is_int(sh_quote_mem(&b, "\0", 1), -EINVAL, "a lone NUL cannot be quoted");
	is_str(b.p, "x", "the buffer is left as it was");
	is_int(sh_quote_mem(&b, NULL, 0), 0, "zero bytes");
	is_str(b.p, "x''", "are the empty word");
	is_int(sh_quote(&b, NULL), -EINVAL, "NULL string is -EINVAL");

	buf_adds(&small, "ab");
	is_int(sh_quote(&small, "it's long"), -ENOBUFS, "past the buffer limit is -ENOBUFS");
	is_str(small.p, "ab", "and leaves the buffer as it was");
	buf_release(&b);
	buf_release(&small);
}

int main(void)
{
	plan_run(test_forms);
	plan_run(test_hostile);
	plan_run(test_random);
	plan_run(test_random_batch);
	plan_run(test_assignment_words);
	plan_run(test_argv);
	plan_run(test_env);
	plan_run(test_errors);
	return done_testing();
}
