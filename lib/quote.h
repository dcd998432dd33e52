#ifndef SKIFF_QUOTE_H
#define SKIFF_QUOTE_H

/*
 * The one audited shell-quoting function. Anything that becomes part of a shell command
 * line (a remote command over ssh, a job's script) goes through these; nothing is ever
 * pasted into a command line unquoted. See docs/internals-spawn.md for the rule.
 *
 * The output is for POSIX sh (run it with `sh -c`): a word made only of
 * [A-Za-z0-9_@%+=:,./-] is left bare (unless it would read as an assignment NAME=...
 * or a zsh =cmd expansion); anything else is single-quoted, with ' written as '\''.
 * Every byte 1..255 survives; NUL cannot be represented in a shell word and is refused.
 *
 * All functions append to out. On error (-EINVAL, or -ENOBUFS / -ENOMEM from the buf) out
 * is left as it was.
 */

#include <stddef.h>

#include "lib/buf.h"

int sh_quote(struct buf *out, const char *s);
/* Quotes len bytes; -EINVAL if they contain a NUL. */
int sh_quote_mem(struct buf *out, const void *data, size_t len);
/* Each argument quoted, separated by single spaces. NULL or empty argv appends nothing. */
int sh_quote_argv(struct buf *out, char *const *argv);
/* NAME='value' (always quoted); -EINVAL unless name matches ^[A-Za-z_][A-Za-z0-9_]*$. */
int sh_quote_env(struct buf *out, const char *name, const char *value);
/* 1 if s is a valid shell variable name. */
int sh_valid_name(const char *s);
/* The same for the len bytes at s. */
int sh_valid_name_n(const char *s, size_t len);

#endif
