#include "lib/lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

/* "PID WHAT" of the holder, as it wrote it (may be empty: it is between open and write). */
static void holder(int fd, char *out, size_t size)
{
	ssize_t n = pread(fd, out, size - 1, 0);

	out[n > 0 ? n : 0] = '\0';
	out[strcspn(out, "\n")] = '\0';
}

int lock_take(const char *path, const char *subject, const char *what, unsigned flags)
{
	char *dir = xstrdup(path), *slash = strrchr(dir, '/'), line[256], who[256];
	int fd;

	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir_p(dir, 0700)) {
			fd = error_errno("cannot create '%s'", dir);
			free(dir);
			return fd;
		}
	}
	free(dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return error_errno("cannot open '%s'", path);
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK) {
			int r = error_errno("cannot lock '%s'", path);

			close(fd);
			return r;
		}
		if (!(flags & LOCK_TAKE_WAIT)) {
			close(fd);
			return -EBUSY;
		}
		holder(fd, who, sizeof(who));
		info("waiting for another skiff command on %s%s%s%s", subject, *who ? " (pid " : "",
		     who, *who ? ")" : "");
		while (flock(fd, LOCK_EX) < 0)
			if (errno != EINTR) {
				int r = error_errno("cannot lock '%s'", path);

				close(fd);
				return r;
			}
		break;
	}
	xsnprintf(line, sizeof(line), "%ld: %.200s\n", (long)getpid(), what);
	if (ftruncate(fd, 0) < 0 || pwrite(fd, line, strlen(line), 0) < 0)
		debug("cannot write the holder into '%s': %s", path, strerror(errno));
	return fd;
}

void lock_release(int fd)
{
	if (fd < 0)
		return;
	/* A waiter reads no stale holder; the lock itself goes with the close. */
	if (ftruncate(fd, 0) < 0)
		debug("cannot clear a lock file: %s", strerror(errno));
	close(fd);
}
