#include "supervisor/script.h"

#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/quote.h"
#include "lib/util.h"
#include "lib/banned.h"

/*
 * conda's profile defines `conda activate` for the script; set -a exports its functions
 * to the script's children as well (SkyPilot's #436). `conda info --base` starts Python
 * (about half a second): the base comes from CONDA_EXE when a profile already set it, and
 * nothing at all runs where conda is not installed.
 */
static const char conda_profile[] =
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

enum pin_form { KEEP, RESTORE, NAME, KEPT_NAME };

/* bash's read-only variables: an assignment to one would fail the whole line. */
static int shell_readonly(const char *name)
{
	static const char *const ro[] = {"UID",      "EUID",      "PPID",
	                                 "BASHOPTS", "SHELLOPTS", "BASH_VERSINFO"};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ro); i++)
		if (!strcmp(name, ro[i]))
			return 1;
	return 0;
}

/* Appends " FORM" for each pin N whose name a shell can hold; returns how many. */
static int each_pin(const struct env *pins, struct buf *b, enum pin_form form)
{
	size_t i;
	int n = 0;

	for (i = 0; pins && i < pins->n; i++) {
		const char *kv = pins->v[i];
		char *name = xstrndup(kv, strcspn(kv, "="));

		if (sh_valid_name(name) && !shell_readonly(name)) {
			switch (form) {
			case KEEP: buf_addf(b, " __skiff_%s=$%s", name, name); break;
			case RESTORE: buf_addf(b, " %s=$__skiff_%s", name, name); break;
			case NAME: buf_addf(b, " %s", name); break;
			case KEPT_NAME: buf_addf(b, " __skiff_%s", name); break;
			}
			n++;
		}
		free(name);
	}
	return n;
}

char *step_script_text(const struct step_script *s)
{
	struct buf b = BUF_INIT(0), keep = BUF_INIT(0);

	if (!s->profile) {
		buf_adds(&b, s->script ? s->script : "");
		buf_addch(&b, '\n');
		return buf_detach(&b, NULL);
	}

	/*
	 * The pins' values are kept from the shell's own environment in shell variables
	 * across the profile and put back after it (assignments: never split or globbed, every
	 * byte kept), so that the text holds their names and none of their values: it may go
	 * to bash as an argument (bash -c, which execs the script's last command), and no
	 * secret is written to a file.
	 */
	if (each_pin(s->pins, &keep, KEEP))
		buf_addf(&b, "%s\n", keep.p + 1);
	/* A profile that returns early for a non-interactive shell only ends its own part. */
	buf_addf(&b, "if [ -f ~/%s ]; then . ~/%s; fi\n", s->bash ? ".bashrc" : ".profile",
	         s->bash ? ".bashrc" : ".profile");
	buf_adds(&b, conda_profile);
	buf_adds(&b, "export PYTHONUNBUFFERED=1\n");
	if (keep.len) {
		struct buf names = BUF_INIT(0), vars = BUF_INIT(0);

		buf_reset(&keep);
		each_pin(s->pins, &keep, RESTORE);
		each_pin(s->pins, &names, NAME);
		each_pin(s->pins, &vars, KEPT_NAME);
		buf_addf(&b, "%s; export%s; unset%s\n", keep.p + 1, names.p, vars.p);
		buf_release(&names);
		buf_release(&vars);
	}
	buf_release(&keep);
	if (s->path_prefix && *s->path_prefix) {
		/* An assignment, never split, in every sh (dash splits `export` arguments). */
		buf_adds(&b, "PATH=");
		sh_quote(&b, s->path_prefix);
		buf_adds(&b, "${PATH:+:\"$PATH\"}; export PATH\n");
	}
	if (s->cwd) {
		buf_adds(&b, "cd -- ");
		sh_quote(&b, s->cwd);
		buf_adds(&b, " || exit 1\n");
	}
	buf_adds(&b, s->script ? s->script : "");
	buf_addch(&b, '\n');
	return buf_detach(&b, NULL);
}

void step_env_pins(const struct env *base, const struct env *final, struct env *pins,
                   char **path_prefix)
{
	const char *bpath = env_get(base, "PATH"), *fpath = env_get(final, "PATH");
	size_t i;

	*path_prefix = NULL;
	for (i = 0; i < final->n; i++) {
		const char *kv = final->v[i], *eq = strchr(kv, '=');
		char *name = xstrndup(kv, (size_t)(eq - kv));
		const char *was = env_get(base, name);

		if (strcmp(name, "PATH") && (!was || strcmp(was, eq + 1)))
			env_put(pins, kv);
		free(name);
	}
	if (!fpath || (bpath && !strcmp(bpath, fpath)))
		return;
	if (bpath && *bpath) {
		size_t fl = strlen(fpath), bl = strlen(bpath);

		if (fl > bl + 1 && fpath[fl - bl - 1] == ':' && !strcmp(fpath + fl - bl, bpath)) {
			*path_prefix = xstrndup(fpath, fl - bl - 1);
			return;
		}
	}
	env_set(pins, "PATH", fpath);
}

/*
 * What the first word of a plain command may not be: bash's reserved words and builtins
 * (bash 5.2's `compgen -k` and `compgen -b`; tests/unit/test-script.c compares them with
 * the bash it finds), the POSIX special builtins among them. Each is the shell's own, or
 * changes the shell: run as a program of the same name it would do something else, or
 * nothing. `true` and `false` are not here.
 */
static const char *const shell_words[] = {
        /* reserved words */
        "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for", "function", "if", "in",
        "select", "then", "time", "until", "while",
        /* builtins */
        ".", ":", "alias", "bg", "bind", "break", "builtin", "caller", "cd", "command", "compgen",
        "complete", "compopt", "continue", "declare", "dirs", "disown", "echo", "enable", "eval",
        "exec", "exit", "export", "fc", "fg", "getopts", "hash", "help", "history", "jobs", "kill",
        "let", "local", "logout", "mapfile", "popd", "printf", "pushd", "pwd", "read", "readarray",
        "readonly", "return", "set", "shift", "shopt", "source", "suspend", "test", "times", "trap",
        "type", "typeset", "ulimit", "umask", "unalias", "unset", "wait"};

static int plain_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("_-./,:+@%=", c);
}

char **step_plain_words(const char *script)
{
	const char *s = script, *end;
	char **words;
	size_t n = 0, i;

	if (!s)
		return NULL;
	/* Newlines at the end only; then every byte is plain or a space or a tab. */
	end = s + strlen(s);
	while (end > s && end[-1] == '\n')
		end--;
	if ((size_t)(end - s) > STEP_ARGV_TEXT_MAX) /* what bash is given as one argument */
		return NULL;
	for (; s < end; s++) {
		if (*s == ' ' || *s == '\t')
			continue;
		if (!plain_byte((unsigned char)*s))
			return NULL;
		if (s == script || s[-1] == ' ' || s[-1] == '\t')
			n++;
	}
	if (!n)
		return NULL;
	words = xcalloc(n + 1, sizeof(*words));
	for (s = script, n = 0; s < end;) {
		size_t len;

		s += strspn(s, " \t");
		if (s >= end)
			break;
		len = strcspn(s, " \t\n");
		words[n++] = xstrndup(s, len);
		s += len;
	}
	if (strchr(words[0], '='))
		goto shell;
	for (i = 0; i < ARRAY_SIZE(shell_words); i++)
		if (!strcmp(words[0], shell_words[i]))
			goto shell;
	return words;
shell:
	step_words_free(words);
	return NULL;
}

void step_words_free(char **words)
{
	size_t i;

	for (i = 0; words && words[i]; i++)
		free(words[i]);
	free(words);
}

int step_env_shell_free(const struct env *env)
{
	static const char *const read[] = {
	        "BASH_ENV=", "ENV=", "SHELLOPTS=", "BASHOPTS=", "BASH_FUNC_"};
	size_t i, k;

	for (i = 0; i < env->n; i++)
		for (k = 0; k < ARRAY_SIZE(read); k++)
			if (starts_with(env->v[i], read[k]))
				return 0;
	return 1;
}
