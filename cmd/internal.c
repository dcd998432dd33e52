/*
 * Hidden commands the binary runs on itself: the daemons (the node supervisor, the job
 * shim, the managed-jobs controller and its workers, the gang watcher). They are in the
 * command table (marked hidden) so that `ps` shows what they are; their code is below
 * cmd/ (supervisor/, supervisor/jobs/).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "lib/exit.h"
#include "lib/log.h"
#include "lib/util.h"
#include "supervisor/jobs/jobs.h"
#include "supervisor/supervisor.h"
#include "lib/banned.h"

const char cmd___supervisor_usage[] =
        "usage: skiff __supervisor [--ready-fd N]\n"
        "\n"
        "Internal: the node supervisor daemon. Started by 'skiff node up', which waits for\n"
        "a line on fd N (closed then) that says it listens.\n";

const char cmd___shim_usage[] =
        "usage: skiff __shim JOB_ID\n"
        "\n"
        "Internal: runs one job under supervision. Started by the supervisor.\n";

int cmd___supervisor(int argc, char **argv)
{
	long fd = -1;

	if (argc == 3 && !strcmp(argv[1], "--ready-fd")) {
		if (parse_long(argv[2], 3, INT_MAX, &fd))
			return usage_error("__supervisor",
			                   "--ready-fd: expected an fd number >= 3");
	} else if (argc != 1) {
		return usage_error("__supervisor", "expected no argument or --ready-fd N");
	}
	return sup_main((int)fd);
}

int cmd___shim(int argc, char **argv)
{
	long id;

	if (argc != 2 || parse_long(argv[1], 1, INT64_MAX, &id))
		return usage_error("__shim", "expected a job id");
	return shim_main(id);
}

const char cmd___jobs_controller_usage[] =
        "usage: skiff __jobs-controller\n"
        "\n"
        "The managed-jobs controller (internal; started by 'skiff jobs launch'). Limits:\n"
        "SKIFF_JOBS_MAX_LAUNCHING, SKIFF_JOBS_MAX_RUNNING; probe interval\n"
        "SKIFF_JOBS_POLL_MS; first launch backoff SKIFF_JOBS_BACKOFF_S; launch attempts\n"
        "SKIFF_JOBS_LAUNCH_ATTEMPTS; idle exit SKIFF_JOBS_IDLE_S.\n";

const char cmd___jobs_worker_usage[] =
        "usage: skiff __jobs-worker launch|watch|cleanup|keep|keep-gc ID GOFD\n"
        "\n"
        "A managed-jobs controller worker (internal).\n";

const char cmd___jobs_kept_tar_usage[] =
        "usage: skiff __jobs-kept-tar ID\n"
        "\n"
        "Internal: writes the task logs this home's controller keeps of managed job ID\n"
        "($SKIFF_HOME/jobs/kept/ID) to stdout as a tar stream.\n";

const char cmd___jobs_kept_untar_usage[] =
        "usage: skiff __jobs-kept-untar DIR\n"
        "\n"
        "Internal: unpacks a stream from '__jobs-kept-tar' on stdin into DIR (files and\n"
        "directories only, nothing outside DIR).\n";

const char cmd___gang_usage[] =
        "usage: skiff __gang CLUSTER JOB KEY\n"
        "\n"
        "Internal: watches a multi-node job, the one submitted with KEY; when one rank\n"
        "fails (or its node becomes unreachable), cancels the others, as SkyPilot's gang\n"
        "semantics require.\n";

int cmd___jobs_controller(int argc, char **argv)
{
	return jobs_controller_main(argc, argv);
}

const char cmd___jobs_remote_usage[] =
        "usage: skiff __jobs-remote < REQUEST\n"
        "\n"
        "Internal, on a managed-jobs controller's host: answers one framed request from a\n"
        "launcher (submit, or the arguments of 'skiff jobs queue|logs|cancel').\n";

const char cmd___jobs_keeper_usage[] =
        "usage: skiff __jobs-keeper\n"
        "\n"
        "Internal, on a managed-jobs controller's host: starts the controller again\n"
        "whenever it has work and none runs.\n";

int cmd___jobs_keeper(int argc, char **argv)
{
	return jobs_keeper_main(argc, argv);
}

int cmd___jobs_worker(int argc, char **argv)
{
	return jobs_worker_main(argc, argv);
}

int cmd___gang(int argc, char **argv)
{
	return gang_main(argc, argv);
}

int cmd___jobs_kept_tar(int argc, char **argv)
{
	long id;

	if (argc != 2 || parse_long(argv[1], 1, INT64_MAX, &id))
		return usage_error("__jobs-kept-tar", "expected a managed job id");
	return jobs_kept_tar(id, 1) ? EXIT_FAIL : EXIT_OK;
}

int cmd___jobs_kept_untar(int argc, char **argv)
{
	if (argc != 2 || !*argv[1])
		return usage_error("__jobs-kept-untar", "expected a directory");
	return jobs_kept_untar(0, argv[1]) ? EXIT_FAIL : EXIT_OK;
}
