#include "lib/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/self.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "lib/banned.h"

int daemon_spawn(char *const *argv, const char *log, int keep_fd, pid_t *pid)
{
	struct spawn_opts o = SPAWN_OPTS_INIT;
	const char *self = self_path(NULL);
	char **av;
	int fd = -1, r, n;

	for (n = 0; argv[n]; n++)
		;
	if (!self)
		return error("cannot find skiff's own executable to start '%s'",
		             n > 1 ? argv[1] : argv[0]),
		       -ENOENT;
	/* A daemon whose log cannot be written would fail unseen: not started. */
	if (log && (fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)) < 0) {
		r = -errno;
		error_errno("cannot open '%s' to start '%s'", log, n > 1 ? argv[1] : argv[0]);
		return r;
	}
	av = xcalloc((size_t)n + 1, sizeof(*av));
	av[0] = (char *)self;
	memcpy(av + 1, argv + 1, (size_t)(n - 1) * sizeof(*av));
	o.argv = av;
	o.fd_out = fd;
	o.err_to_out = 1;
	o.pgrp = SPAWN_SESSION_NEW;
	if (keep_fd >= 0) {
		o.keep_fds = &keep_fd;
		o.n_keep_fds = 1;
	}
	r = spawn(&o, pid);
	if (r) {
		errno = -r;
		error_errno("cannot start '%s %s'", self, n > 1 ? argv[1] : "");
	}
	if (fd >= 0)
		close(fd);
	free(av);
	return r;
}

int daemon_lock(const char *path)
{
	char pidtxt[32];
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0)
		return error_errno("cannot open '%s'", path);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;

		close(fd);
		if (e == EWOULDBLOCK)
			return -EEXIST;
		errno = e;
		return error_errno("cannot lock '%s'", path);
	}
	xsnprintf(pidtxt, sizeof(pidtxt), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pidtxt, strlen(pidtxt), 0) < 0)
		warning("cannot write our pid to '%s': %s", path, strerror(errno));
	return fd;
}

int daemon_lock_held(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), r = 0;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	while (flock(fd, LOCK_SH | LOCK_NB) < 0) {
		if (errno == EINTR)
			continue;
		r = errno == EWOULDBLOCK ? 1 : -errno;
		break;
	}
	/* Closing drops our shared lock at once. */
	close(fd);
	return r;
}

int daemon_signals(const sigset_t *set)
{
	int fd;

	signal(SIGPIPE, SIG_IGN);
	if (sigprocmask(SIG_BLOCK, set, NULL) < 0)
		return error_errno("sigprocmask");
	fd = signalfd(-1, set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0)
		return error_errno("signalfd");
	return fd;
}

int daemon_wait(struct daemon_fd *fds, int n, int64_t deadline)
{
	struct pollfd *pf = xcalloc((size_t)(n ? n : 1), sizeof(*pf));
	int i, r, timeout = -1;

	if (deadline >= 0) {
		int64_t left = deadline - now_ms();

		timeout = left <= 0 ? 0 : left > 3600000 ? 3600000 : (int)left;
	}
	for (i = 0; i < n; i++) {
		pf[i].fd = fds[i].fd;
		pf[i].events = POLLIN;
		fds[i].revents = 0;
	}
	r = poll(pf, (nfds_t)n, timeout);
	if (r < 0) {
		r = errno == EINTR ? 0 : -errno;
	} else {
		for (i = 0; i < n; i++)
			fds[i].revents = pf[i].revents;
	}
	free(pf);
	return r;
}
