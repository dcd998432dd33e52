#include "lib/quote.h"

#include <errno.h>
#include <string.h>

#include "lib/banned.h"

/* Bytes with no meaning to sh anywhere in a word (tilde only matters at the start). */
static int bare_byte(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return 1;
	switch (c) {
	case '_':
	case '@':
	case '%':
	case '+':
	case '=':
	case ':':
	case ',':
	case '.':
	case '/':
	case '-': return 1;
	default: return 0;
	}
}

static int name_byte(unsigned char c, int first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (!first && c >= '0' && c <= '9');
}

int sh_valid_name_n(const char *s, size_t len)
{
	size_t i;

	if (!len)
		return 0;
	for (i = 0; i < len; i++)
		if (!name_byte((unsigned char)s[i], i == 0))
			return 0;
	return 1;
}

int sh_valid_name(const char *s)
{
	return s && sh_valid_name_n(s, strlen(s));
}

static int can_be_bare(const char *s, size_t len)
{
	const char *eq;
	size_t i;

	if (!len)
		return 0;
	for (i = 0; i < len; i++)
		if (!bare_byte((unsigned char)s[i]))
			return 0;
	/* zsh expands a leading '=' (=ls is /bin/ls). */
	if (s[0] == '=')
		return 0;
	/* As a command's first word, NAME=x is an assignment, not a program. */
	eq = memchr(s, '=', len);
	if (eq && sh_valid_name_n(s, (size_t)(eq - s)))
		return 0;
	return 1;
}

/* 'text', each ' as '\'' (close, escaped quote, reopen). */
static int single_quote(struct buf *out, const char *s, size_t len)
{
	const char *q;
	int r = buf_addch(out, '\'');

	while (!r && len) {
		q = memchr(s, '\'', len);
		if (!q) {
			r = buf_add(out, s, len);
			break;
		}
		r = buf_add(out, s, (size_t)(q - s));
		if (!r)
			r = buf_add(out, "'\\''", 4);
		len -= (size_t)(q - s) + 1;
		s = q + 1;
	}
	if (!r)
		r = buf_addch(out, '\'');
	return r;
}

int sh_quote_mem(struct buf *out, const void *data, size_t len)
{
	size_t start = out->len;
	int r;

	if (len && memchr(data, '\0', len))
		return -EINVAL;
	if (can_be_bare(data, len))
		r = buf_add(out, data, len);
	else
		r = single_quote(out, data, len);
	if (r)
		buf_setlen(out, start);
	return r;
}

int sh_quote(struct buf *out, const char *s)
{
	if (!s)
		return -EINVAL;
	return sh_quote_mem(out, s, strlen(s));
}

int sh_quote_argv(struct buf *out, char *const *argv)
{
	size_t start = out->len;
	int r = 0, i;

	for (i = 0; !r && argv && argv[i]; i++) {
		if (i)
			r = buf_addch(out, ' ');
		if (!r)
			r = sh_quote(out, argv[i]);
	}
	if (r)
		buf_setlen(out, start);
	return r;
}

int sh_quote_env(struct buf *out, const char *name, const char *value)
{
	size_t start = out->len;
	int r;

	if (!sh_valid_name(name) || !value)
		return -EINVAL;
	r = buf_adds(out, name);
	if (!r)
		r = buf_addch(out, '=');
	if (!r)
		r = single_quote(out, value, strlen(value));
	if (r)
		buf_setlen(out, start);
	return r;
}
