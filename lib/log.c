#include "lib/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/banned.h"

static enum log_level level = LOG_INFO;
static int log_fd = 2;
static int log_stamps;
static const char *log_prog = "skiff";
static unsigned long errors;
static pthread_mutex_t last_lock = PTHREAD_MUTEX_INITIALIZER;
static char last_error[512];

void log_set_level(enum log_level lvl)
{
	level = lvl;
}

enum log_level log_get_level(void)
{
	return level;
}

unsigned long log_error_count(void)
{
	return errors;
}

void log_last_error(char *out, size_t size)
{
	if (!size)
		return;
	pthread_mutex_lock(&last_lock);
	snprintf(out, size, "%s", last_error);
	pthread_mutex_unlock(&last_lock);
}

void log_count_error(const char *text)
{
	errors++;
	pthread_mutex_lock(&last_lock);
	snprintf(last_error, sizeof(last_error), "%s", text ? text : "");
	pthread_mutex_unlock(&last_lock);
}

void log_set_fd(int fd, int timestamps)
{
	log_fd = fd;
	log_stamps = timestamps;
}

void log_set_prog(const char *prog)
{
	log_prog = prog;
}

/*
 * Format the whole line first and write it with one write(2), so that lines from
 * several processes sharing a log file never interleave mid-line.
 */
static void emit(enum log_level lvl, const char *fmt, va_list ap, const char *suffix)
{
	static const char *const tag[] = {"", "error: ", "warning: ", "", "debug: "};
	char line[4096];
	size_t n = 0;
	int r;

	if (lvl == LOG_ERROR)
		errors++;
	/* An error is still the last one (log_last_error()) when it is not printed. */
	if (lvl > level && lvl != LOG_ERROR)
		return;
	if (log_stamps) {
		struct timespec ts;
		struct tm tm;

		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
		r = snprintf(line + n, sizeof(line) - n, ".%03ldZ [%ld] ", ts.tv_nsec / 1000000,
		             (long)getpid());
		if (r > 0)
			n += (size_t)r;
	}
	r = snprintf(line + n, sizeof(line) - n, "%s: %s", log_prog, tag[lvl]);
	if (r > 0)
		n += (size_t)r;
	if (n < sizeof(line)) {
		r = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
		if (r > 0)
			n += (size_t)r;
	}
	if (suffix && n < sizeof(line)) {
		r = snprintf(line + n, sizeof(line) - n, ": %s", suffix);
		if (r > 0)
			n += (size_t)r;
	}
	if (n >= sizeof(line) - 1) {
		n = sizeof(line) - 5;
		memcpy(line + n, "...", 3);
		n += 3;
	}
	if (lvl == LOG_ERROR) {
		const char *text = strstr(line, tag[LOG_ERROR]);

		text = text ? text + strlen(tag[LOG_ERROR]) : line;
		pthread_mutex_lock(&last_lock);
		snprintf(last_error, sizeof(last_error), "%.*s", (int)(line + n - text), text);
		pthread_mutex_unlock(&last_lock);
	}
	if (lvl > level)
		return;
	line[n++] = '\n';
	while (n) {
		ssize_t w = write(log_fd, line, n);

		if (w < 0 && errno == EINTR)
			continue;
		break;
	}
}

void vlog_msg(enum log_level lvl, const char *fmt, va_list ap)
{
	emit(lvl, fmt, ap, NULL);
}

int error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(LOG_ERROR, fmt, ap, NULL);
	va_end(ap);
	return -1;
}

int error_errno(const char *fmt, ...)
{
	int e = errno;
	va_list ap;

	va_start(ap, fmt);
	emit(LOG_ERROR, fmt, ap, strerror(e));
	va_end(ap);
	errno = e;
	return e ? -e : -1;
}

void warning(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(LOG_WARN, fmt, ap, NULL);
	va_end(ap);
}

void info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(LOG_INFO, fmt, ap, NULL);
	va_end(ap);
}

void debug(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(LOG_DEBUG, fmt, ap, NULL);
	va_end(ap);
}

void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(LOG_ERROR, fmt, ap, NULL);
	va_end(ap);
	exit(1);
}

void die_code(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(LOG_ERROR, fmt, ap, NULL);
	va_end(ap);
	exit(code);
}

void die_errno(const char *fmt, ...)
{
	int e = errno;
	va_list ap;

	va_start(ap, fmt);
	emit(LOG_ERROR, fmt, ap, strerror(e));
	va_end(ap);
	exit(1);
}

void warning_ratelimited(struct ratelimit *rl, const char *fmt, ...)
{
	struct timespec ts;
	int64_t now;
	char held[64];
	va_list ap;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	if (rl->next_ms && now < rl->next_ms) {
		rl->held++;
		return;
	}
	rl->next_ms = now + LOG_RATELIMIT_MS;
	held[0] = '\0';
	if (rl->held)
		snprintf(held, sizeof(held), "%lu more like it in the last %d s", rl->held,
		         LOG_RATELIMIT_MS / 1000);
	rl->held = 0;
	va_start(ap, fmt);
	emit(LOG_WARN, fmt, ap, held[0] ? held : NULL);
	va_end(ap);
}
