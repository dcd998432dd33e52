/*
 * `skiff init [-- CMD...]`: a container's PID 1, in the manner of tini. It reaps every
 * zombie (orphans are re-parented to PID 1, or to us as a subreaper when we are not PID
 * 1), forwards the usual signals to CMD's process group, starts the node supervisor, and
 * exits with CMD's status. Without CMD it runs until SIGTERM/SIGINT, then stops the
 * supervisor and exits 0.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "supervisor/supervisor.h"
#include "lib/banned.h"

static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

static void stop_supervisor(void)
{
	struct msg req, rep;

	msg_init(&req);
	msg_add(&req, "op", "shutdown");
	sup_call(SUP_QUIET, &req, &rep);
	msg_release(&req);
	msg_release(&rep);
}

int init_main(int argc, char **argv)
{
	struct spawn_opts o = SPAWN_OPTS_INIT;
	sigset_t set;
	pid_t cmd_pid = -1, sup_pid;
	int sfd, already, code = 0, done = 0, stop = 0;
	size_t i;

	log_set_prog("skiff-init");
	if (getpid() != 1 && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		warning("cannot become a subreaper: %s", strerror(errno));
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	for (i = 0; i < ARRAY_SIZE(forwarded); i++)
		sigaddset(&set, forwarded[i]);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return error_errno("sigprocmask"), 1;
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0)
		return error_errno("signalfd"), 1;
	/* A supervisor that cannot start is reported, but CMD still runs. */
	if (sup_start(&sup_pid, &already))
		warning("continuing without a node supervisor");
	if (argc > 0) {
		o.argv = argv;
		o.fd_in = 0;
		o.fd_out = 1;
		o.fd_err = 2;
		o.pgrp = SPAWN_PGRP_NEW;
		if (spawn(&o, &cmd_pid) < 0) {
			error_errno("cannot run '%s'", argv[0]);
			stop_supervisor();
			return 127;
		}
	}
	while (!done) {
		struct signalfd_siginfo si;
		ssize_t n = read(sfd, &si, sizeof(si));

		if (n != sizeof(si)) {
			if (n < 0 && errno == EINTR)
				continue;
			error_errno("signalfd read");
			break;
		}
		if (si.ssi_signo != SIGCHLD) {
			if (cmd_pid > 0) {
				kill(-cmd_pid, (int)si.ssi_signo);
			} else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
				stop = 1;
				done = 1;
			}
			continue;
		}
		for (;;) {
			int status;
			pid_t pid = waitpid(-1, &status, WNOHANG);

			if (pid <= 0)
				break;
			if (pid == cmd_pid) {
				code = status_to_code(status);
				done = 1;
			}
		}
	}
	if (cmd_pid > 0 || stop)
		stop_supervisor();
	close(sfd);
	return code;
}
