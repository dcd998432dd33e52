#ifndef SKIFF_SUP_SCRIPT_H
#define SKIFF_SUP_SCRIPT_H

/*
 * The text a job's step runs: SkyPilot's task script (make_task_bash_script in
 * sky/skylet/log_lib.py), so that a task behaves as it does under SkyPilot. Under bash:
 * ~/.bashrc when present, conda's profile when conda is installed, PYTHONUNBUFFERED=1,
 * then what skiff gives the job (its envs, the runtime env's PATH) put back so that a
 * profile cannot take it away, `cd` to the job's directory, and the task's script.
 * Under a plain sh (busybox images): ~/.profile instead of ~/.bashrc. Rationale and the
 * differences from SkyPilot: docs/node.md, "The job's shell". A job that does not ask
 * for the prelude (`node submit` without --profile: skiff's own primitive) runs its
 * script alone, in the environment and directory the shim gives it.
 *
 * Pure functions: no I/O, nothing printed.
 */

#include "lib/env.h"

struct step_script {
	const char *script;      /* the task's setup or run, as written */
	int bash;                /* 1: bash runs it; 0: a POSIX sh */
	const char *cwd;         /* absolute directory to cd to; NULL: none */
	const struct env *pins;  /* exported after the profiles, in order; may be NULL */
	const char *path_prefix; /* put before the profile's PATH ("D" or "D1:D2"); NULL: none */
	int profile;             /* 1: SkyPilot's prelude first; 0: the script alone */
};

/*
 * The script text (the caller frees it). The pins' values are taken from the shell's own
 * environment (which must hold them, as the step's does) before the profile and put back
 * after it, so the text names them and holds none of their values. Pins whose name is not
 * a shell variable name, or is one of bash's read-only ones, are left to the environment.
 */
char *step_script_text(const struct step_script *s);
/*
 * Under bash a text up to this size is given as `bash -c TEXT FILE` (bash then execs the
 * script's last command: no shell stays behind a one-command job); a longer one is run
 * from its file. Below the kernel's limit on one argument (MAX_ARG_STRLEN, 128 KiB).
 */
#define STEP_ARGV_TEXT_MAX ((size_t)64 << 10)

/*
 * What the profiles may not take back: every entry of final (the step's environment)
 * that base (the supervisor's own) lacks or holds with another value goes to pins
 * (initialised by the caller), except PATH. When final's PATH is base's with directories
 * put in front, *path_prefix is set to those (the caller frees it), so that the profile's
 * own PATH changes stay behind them; a PATH that is otherwise different is pinned whole.
 */
void step_env_pins(const struct env *base, const struct env *final, struct env *pins,
                   char **path_prefix);

/*
 * The words of a script that is one plain command, or NULL when a shell must run it. The
 * shim execs a plain command's words itself, a shell being the fallback when that exec
 * fails (docs/node.md, "The job's shell"): a job of `node submit` without --profile then
 * costs one program's start, not bash's and the program's.
 *
 * Plain: words of ASCII letters, digits and _ - . / , : + @ % =, parted by spaces and
 * tabs, with newlines at the end only: no quoting, expansion, globbing, redirection or
 * operator, so that the words are what bash's own parse gives. The first word holds no
 * '=' (an assignment) and is none of bash's reserved words or builtins,
 * `true` and `false` aside: their programs do what the builtins do. A script longer than
 * STEP_ARGV_TEXT_MAX is the shell's too (its words would be as many allocations, for an
 * exec the kernel's argument limits would likely refuse). The caller frees the result
 * with step_words_free().
 */
char **step_plain_words(const char *script);
void step_words_free(char **words);
/*
 * 0 when env holds what a shell reads before it runs a script (BASH_ENV, ENV, SHELLOPTS,
 * BASHOPTS, an exported function BASH_FUNC_*), so that a plain command exec'd without it
 * would run otherwise; 1 otherwise.
 */
int step_env_shell_free(const struct env *env);

#endif
