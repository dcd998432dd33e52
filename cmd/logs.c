/* `skiff logs`: a cluster job's logs, followed or not, its status, or synced down. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/launch/engine.h"
#include "cmd/cmd.h"
#include "lib/util.h"
#include "state/node.h"
#include "lib/banned.h"

const char cmd_logs_usage[] =
        "usage: skiff logs CLUSTER [JOB] [-f|--follow|--no-follow] [--tail[=]N] [--status]\n"
        "       skiff logs CLUSTER [JOB...] -s|--sync-down\n"
        "\n"
        "Streams a job's logs (the latest job by default). A job on several nodes has\n"
        "SkyPilot's prefixes: (head, rank=0, pid=N) and (workerK, rank=K, pid=N, ip=IP).\n"
        "Ctrl-C stops following; the job runs on.\n"
        "--sync-down copies every rank's setup.log and run.log of the job to\n"
        "~/sky_logs/CLUSTER/JOB/rank-N/ over the runner's own channel (each JOB named).\n"
        "--status prints 'Job N: STATUS' (SkyPilot's form).\n"
        "Exit status: 0 succeeded, 100 failed, 101 not finished, 102 not found,\n"
        "103 cancelled.\n";

int cmd_logs(int argc, char **argv)
{
	struct st_db *ldb;
	const char *name = NULL;
	int64_t *ids = xcalloc((size_t)argc, sizeof(*ids));
	size_t nids = 0, i;
	long tail = -1, jid;
	int follow = 1, only_status = 0, sync_down = 0, a, rc = EXIT_OK, status;

	for (a = 1; a < argc; a++) {
		const char *arg = argv[a];

		if (!strcmp(arg, "-s") || !strcmp(arg, "--sync-down")) {
			sync_down = 1;
		} else if (!strcmp(arg, "--follow") || !strcmp(arg, "-f")) {
			follow = 1;
		} else if (!strcmp(arg, "--no-follow")) {
			follow = 0;
		} else if (!strcmp(arg, "--status")) {
			only_status = 1;
		} else if (!strcmp(arg, "--tail") || !strncmp(arg, "--tail=", 7)) {
			const char *v = arg[6] == '=' ? arg + 7 : a + 1 < argc ? argv[++a] : "";

			if (parse_long(v, 0, 1L << 40, &tail))
				return free(ids), usage_error("logs",
				                              "--tail needs a number of lines, "
				                              "not '%s'",
				                              v);
		} else if (arg[0] == '-') {
			return free(ids), usage_error("logs", "unknown option '%s'", arg);
		} else if (!name) {
			name = arg;
		} else if (!parse_long(arg, 1, INT64_MAX, &jid)) {
			ids[nids++] = jid;
		} else {
			return free(ids), usage_error("logs", "'%s' is not a job id", arg);
		}
	}
	if (!name)
		return free(ids), usage_error("logs", "expected a cluster name");
	if (cmd_cluster_arg(name))
		return free(ids), EXIT_USAGE;
	if (nids > 1 && !sync_down)
		return free(ids), usage_error("logs", "one job at a time (several with "
		                                      "--sync-down)");
	if (cmd_open_ldb(&ldb))
		return free(ids), EXIT_FAIL;
	if (sync_down) {
		for (i = 0; i < (nids ? nids : 1); i++) {
			struct buf where = BUF_INIT(0);

			if (eng_sync_down(ldb, name, nids ? ids[i] : 0, &where))
				rc = EXIT_FAIL;
			else
				printf("logs synced to %s\n", where.p);
			buf_release(&where);
		}
	} else if (only_status) {
		int64_t job = nids ? ids[0] : eng_latest_job(ldb, name);

		fflush(stdout);
		rc = eng_logs(ldb, name, job, ENG_LOGS_STATUS, 0, 1, &status);
		/* SkyPilot's form: scripts parse it. */
		if (rc != EXIT_JOB_NOT_FOUND && rc != EXIT_FAIL)
			printf("Job %lld: %s\n", (long long)job, job_status_name(status));
	} else {
		fflush(stdout);
		rc = eng_logs(ldb, name, nids ? ids[0] : 0,
		              follow ? ENG_LOGS_FOLLOW : ENG_LOGS_PRINT, tail, 1, NULL);
	}
	free(ids);
	st_close(ldb);
	return rc;
}
