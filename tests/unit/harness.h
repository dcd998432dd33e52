#ifndef SKIFF_TEST_HARNESS_H
#define SKIFF_TEST_HARNESS_H

/*
 * A tiny TAP harness for unit tests. Each test file is one program:
 *
 *   static void test_quote(void) { ok(strcmp(a, b) == 0, "quotes a space"); ... }
 *   int main(void) { plan_run(test_quote); plan_run(test_other); return done_testing(); }
 *
 * ok() prints one TAP line; failures also print the file and line. prove(1) reads it.
 */

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_count, tap_failed;

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define is_str(got, want, ...) tap_is_str((got), (want), __FILE__, __LINE__, __VA_ARGS__)
#define is_int(got, want, ...)                                                                     \
	tap_is_int((long long)(got), (long long)(want), __FILE__, __LINE__, __VA_ARGS__)
#define plan_run(fn) (printf("# %s\n", #fn), fn())

__attribute__((format(printf, 4, 5), unused)) static int tap_ok(int pass, const char *file,
                                                                int line, const char *fmt, ...)
{
	va_list ap;

	tap_count++;
	printf("%sok %d - ", pass ? "" : "not ", tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!pass) {
		tap_failed++;
		printf("#   failed at %s:%d\n", file, line);
	}
	fflush(stdout);
	return pass;
}

__attribute__((format(printf, 5, 6), unused)) static int
tap_is_str(const char *got, const char *want, const char *file, int line, const char *fmt, ...)
{
	int pass = (!got && !want) || (got && want && !strcmp(got, want));
	va_list ap;

	tap_count++;
	printf("%sok %d - ", pass ? "" : "not ", tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!pass) {
		tap_failed++;
		printf("#   failed at %s:%d\n#     got: '%s'\n#    want: '%s'\n", file, line,
		       got ? got : "(null)", want ? want : "(null)");
	}
	fflush(stdout);
	return pass;
}

__attribute__((format(printf, 5, 6), unused)) static int
tap_is_int(long long got, long long want, const char *file, int line, const char *fmt, ...)
{
	int pass = got == want;
	va_list ap;

	tap_count++;
	printf("%sok %d - ", pass ? "" : "not ", tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!pass) {
		tap_failed++;
		printf("#   failed at %s:%d\n#     got: %lld\n#    want: %lld\n", file, line, got,
		       want);
	}
	fflush(stdout);
	return pass;
}

__attribute__((unused)) static int done_testing(void)
{
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}

#endif
