/*
 * lib/quote.h, round trip: what a POSIX shell reads back from sh_quote_mem() is the
 * input. The shell is modelled in process (a real /bin/sh is far too slow for a
 * fuzzer; tests/unit/test-quote.c runs the same property through /bin/sh): a word is
 * a run of bare bytes, '...' strings (no escapes inside) and \X escapes; anything a
 * shell would expand or split on, unquoted, is a failure. sh_quote_argv() gives the
 * same words separated by single spaces; sh_quote_env() gives NAME='...'.
 */
#include <errno.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "lib/quote.h"
#include "lib/banned.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	log_set_level(LOG_QUIET);
	return 0;
}

/* Bytes that mean nothing to sh inside an unquoted word (no expansion, no splitting). */
static int inert(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("_@%+=:,./-", c);
}

/*
 * Reads one shell word at s[*off..len) into out, stopping at an unquoted space or the
 * end. Returns 0, or -1 for text a shell would not read back literally.
 */
static int sh_word(const char *s, size_t len, size_t *off, struct buf *out)
{
	size_t i = *off;
	int any = 0;

	if (i < len && s[i] == '~')
		return -1; /* tilde expansion */
	while (i < len && s[i] != ' ') {
		unsigned char c = (unsigned char)s[i];

		if (c == '\'') {
			const char *q = memchr(s + i + 1, '\'', len - i - 1);

			if (!q)
				return -1; /* unterminated */
			buf_add(out, s + i + 1, (size_t)(q - s - i - 1));
			i = (size_t)(q - s) + 1;
		} else if (c == '\\') {
			if (i + 1 >= len || s[i + 1] == '\n')
				return -1; /* a line continuation, not a byte */
			buf_addch(out, s[i + 1]);
			i += 2;
		} else if (c && inert(c)) {
			buf_addch(out, (char)c);
			i++;
		} else {
			return -1;
		}
		any = 1;
	}
	*off = i;
	return any ? 0 : -1;
}

/* 1 if word, as the first word of a command, would be an assignment NAME=... */
static int assignment(const char *w, size_t len)
{
	const char *eq = memchr(w, '=', len);
	size_t i;

	if (!eq || eq == w)
		return 0;
	for (i = 0; w + i < eq; i++)
		if (!((w[i] >= 'a' && w[i] <= 'z') || (w[i] >= 'A' && w[i] <= 'Z') || w[i] == '_' ||
		      (i && w[i] >= '0' && w[i] <= '9')))
			return 0;
	return 1;
}

static void check_word(const char *data, size_t size)
{
	struct buf q = BUF_INIT(0), back = BUF_INIT(0);
	size_t off = 0;
	int r = sh_quote_mem(&q, data, size);

	if (memchr(data, '\0', size)) {
		if (r != -EINVAL || q.len)
			fuzz_fail("a NUL was not refused (%d)", r);
		goto out;
	}
	if (r)
		fuzz_fail("sh_quote_mem failed: %d", r);
	if (sh_word(q.p, q.len, &off, &back) || off != q.len)
		fuzz_fail("not one literal shell word: [%s]", q.p);
	if (back.len != size || memcmp(back.p, data, size))
		fuzz_fail("round trip differs: [%s]", q.p);
	/* Unquoted, a word must not be an assignment or zsh's =cmd. */
	if (q.p[0] != '\'' && (q.p[0] == '=' || assignment(q.p, q.len)))
		fuzz_fail("bare word reads as an assignment: [%s]", q.p);
out:
	buf_release(&q);
	buf_release(&back);
}

/* The input split at NUL bytes is an argv. */
static void check_argv(const char *data, size_t size)
{
	struct buf q = BUF_INIT(0), back = BUF_INIT(0);
	char *copy = malloc(size + 1), **argv;
	size_t n = 1, i, k = 0, off = 0;

	memcpy(copy, data, size);
	copy[size] = '\0';
	for (i = 0; i < size; i++)
		n += !data[i];
	argv = calloc(n + 1, sizeof(*argv));
	argv[k++] = copy;
	for (i = 0; i < size; i++)
		if (!copy[i])
			argv[k++] = copy + i + 1;
	if (sh_quote_argv(&q, argv))
		fuzz_fail("sh_quote_argv failed");
	for (i = 0; i < n; i++) {
		buf_reset(&back);
		if (i && (off >= q.len || q.p[off++] != ' '))
			fuzz_fail("argv words not separated by one space: [%s]", q.p);
		if (sh_word(q.p, q.len, &off, &back))
			fuzz_fail("argv word %zu is not literal: [%s]", i, q.p);
		if (back.len != strlen(argv[i]) || memcmp(back.p, argv[i], back.len))
			fuzz_fail("argv word %zu differs: [%s]", i, q.p);
	}
	if (off != q.len)
		fuzz_fail("trailing text after the argv: [%s]", q.p);
	/* The same as a NAME='value' assignment: value is everything after the first NUL. */
	buf_reset(&q);
	if (n > 1 && sh_valid_name(argv[0])) {
		size_t nl = strlen(argv[0]);

		if (sh_quote_env(&q, argv[0], argv[1]))
			fuzz_fail("sh_quote_env failed");
		if (q.len < nl + 1 || memcmp(q.p, argv[0], nl) || q.p[nl] != '=')
			fuzz_fail("env does not start with NAME=: [%s]", q.p);
		off = nl + 1;
		buf_reset(&back);
		if (q.p[off] != '\'' || sh_word(q.p, q.len, &off, &back) || off != q.len ||
		    strcmp(back.p ? back.p : "", argv[1]))
			fuzz_fail("env value does not round-trip: [%s]", q.p);
	} else if (n > 1 && !sh_quote_env(&q, argv[0], argv[1])) {
		fuzz_fail("sh_quote_env took a bad name '%s'", argv[0]);
	}
	free(argv);
	free(copy);
	buf_release(&q);
	buf_release(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_word((const char *)data, size);
	check_argv((const char *)data, size);
	return 0;
}
