#ifndef SKIFF_LOG_H
#define SKIFF_LOG_H

/*
 * Diagnostics. Every message is one line on stderr (or the log file set with
 * log_set_file()), prefixed "skiff: error: ", "skiff: warning: " or "skiff: ".
 *
 * error() returns -1 so that a caller can write `return error("...")`.
 * die() exits with status 1 (die_code() with another); it is for cmd/ and for
 * start-up code before the daemon loop, never for the daemon's request paths.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define SKIFF_PRINTF(a, b) __attribute__((format(printf, a, b)))

enum log_level { LOG_QUIET = 0, LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

void log_set_level(enum log_level lvl);
enum log_level log_get_level(void);
/* How many error messages this process has produced (printed or not): see cmd/main.c. */
unsigned long log_error_count(void);
/*
 * The text of the last error message (without "skiff: error: "), from any thread, into
 * out (size bytes, always terminated; "" when there was none), printed or not (LOG_QUIET):
 * for a summary of several attempts that each printed their own error as it came.
 */
void log_last_error(char *out, size_t size);
/*
 * Counts an error printed in a form of its own ("FILE:LINE:COL: message"): text, that
 * form without its newline, is then the last error (log_last_error()).
 */
void log_count_error(const char *text);
/* Messages go to fd (default 2). With timestamps set, each line starts with an ISO time
 * and the pid: daemons use that for their log file. The fd is not owned. */
void log_set_fd(int fd, int timestamps);
/* Prefix used instead of "skiff" (e.g. "skiff-supervisor"). The string is not copied. */
void log_set_prog(const char *prog);

int error(const char *fmt, ...) SKIFF_PRINTF(1, 2);
/* error() with ": strerror(errno)" appended; returns -errno (or -1 if errno is 0). */
int error_errno(const char *fmt, ...) SKIFF_PRINTF(1, 2);
void warning(const char *fmt, ...) SKIFF_PRINTF(1, 2);
void info(const char *fmt, ...) SKIFF_PRINTF(1, 2);
void debug(const char *fmt, ...) SKIFF_PRINTF(1, 2);
_Noreturn void die(const char *fmt, ...) SKIFF_PRINTF(1, 2);
_Noreturn void die_code(int code, const char *fmt, ...) SKIFF_PRINTF(2, 3);
_Noreturn void die_errno(const char *fmt, ...) SKIFF_PRINTF(1, 2);

void vlog_msg(enum log_level lvl, const char *fmt, va_list ap);

/*
 * A message that can repeat in a loop (a daemon out of fds, a failing disk) is written at
 * most once per LOG_RATELIMIT_MS per call site; the next one that goes out says how many
 * were held back. Zero-initialise the state (one per call site).
 */
#define LOG_RATELIMIT_MS 10000

struct ratelimit {
	int64_t next_ms;
	unsigned long held;
};

void warning_ratelimited(struct ratelimit *rl, const char *fmt, ...) SKIFF_PRINTF(2, 3);

#endif
