/*
 * skiff: one static binary that is the launcher, the node bootstrapper, the node
 * supervisor and the managed-jobs controller. This file is only dispatch.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "lib/log.h"
#include "lib/self.h"
#include "lib/util.h"
#include "lib/banned.h"

/* Sorted by name (strcmp: tests/lint/cmdtables.py): `skiff help` lists them in this order. */
static const struct cmd commands[] = {
        {"__dash-watch", cmd___dash_watch, CMD_HIDDEN,
         "wait until one of a cluster's running jobs ends (internal)", cmd___dash_watch_usage},
        {"__fetch", cmd___fetch, CMD_HIDDEN, "download a URL into a cache (internal)",
         cmd___fetch_usage},
        {"__gang", cmd___gang, CMD_HIDDEN, "watch a multi-node job (internal)", cmd___gang_usage},
        {"__jobs-controller", cmd___jobs_controller, CMD_HIDDEN,
         "the managed-jobs controller (internal)", cmd___jobs_controller_usage},
        {"__jobs-keeper", cmd___jobs_keeper, CMD_HIDDEN,
         "keeps a jobs controller's host's controller (internal)", cmd___jobs_keeper_usage},
        {"__jobs-kept-tar", cmd___jobs_kept_tar, CMD_HIDDEN,
         "a managed job's kept logs as a tar stream (internal)", cmd___jobs_kept_tar_usage},
        {"__jobs-kept-untar", cmd___jobs_kept_untar, CMD_HIDDEN,
         "unpack a kept-logs tar stream (internal)", cmd___jobs_kept_untar_usage},
        {"__jobs-remote", cmd___jobs_remote, CMD_HIDDEN,
         "a launcher's request to a jobs controller's host (internal)", cmd___jobs_remote_usage},
        {"__jobs-worker", cmd___jobs_worker, CMD_HIDDEN, "a managed-jobs worker (internal)",
         cmd___jobs_worker_usage},
        {"__pack-self", cmd___pack_self, CMD_HIDDEN, "pack this binary smaller (internal)",
         cmd___pack_self_usage},
        {"__renv-build", cmd___renv_build, CMD_HIDDEN, "build a job's runtime env (internal)",
         cmd___renv_build_usage},
        {"__runner-test", cmd___runner_test, CMD_HIDDEN, "drive a runner (internal test helper)",
         cmd___runner_test_usage},
        {"__shim", cmd___shim, CMD_HIDDEN, "run one job (internal)", cmd___shim_usage},
        {"__ssh-mux", cmd___ssh_mux, CMD_HIDDEN, "a command over an ssh master (internal)",
         cmd___ssh_mux_usage},
        {"__supervisor", cmd___supervisor, CMD_HIDDEN, "the node supervisor (internal)",
         cmd___supervisor_usage},
        {"__sync-cluster", cmd___sync_cluster, CMD_HIDDEN, "sync to a cluster's nodes (internal)",
         cmd___sync_cluster_usage},
        {"__sync-manifest", cmd___sync_manifest, CMD_HIDDEN, "print a sync manifest (internal)",
         cmd___sync_manifest_usage},
        {"__sync-push", cmd___sync_push, CMD_HIDDEN, "sync to node commands (internal)",
         cmd___sync_push_usage},
        {"__sync-recv", cmd___sync_recv, CMD_HIDDEN, "apply a sync stream (internal)",
         cmd___sync_recv_usage},
        {"__sync-send", cmd___sync_send, CMD_HIDDEN, "write a sync stream (internal)",
         cmd___sync_send_usage},
        {"__sync-serve", cmd___sync_serve, CMD_HIDDEN, "a node's side of a sync (internal)",
         cmd___sync_serve_usage},
        {"__verify-self", cmd___verify_self, CMD_HIDDEN, "check this binary's sha256 (internal)",
         cmd___verify_self_usage},
        {"autostop", cmd_autostop, 0, "stop or tear down a cluster when idle", cmd_autostop_usage},
        {"cancel", cmd_cancel, 0, "cancel jobs on a cluster", cmd_cancel_usage},
        {"check", cmd_check, 0, "validate task YAML files", cmd_check_usage},
        {"config", cmd_config, 0, "the layered config in effect, key by key", cmd_config_usage},
        {"dashboard", cmd_dashboard, 0, "clusters, jobs and logs in a browser",
         cmd_dashboard_usage},
        {"down", cmd_down, 0, "tear clusters down", cmd_down_usage},
        {"exec", cmd_exec, 0, "run a task on an existing cluster (no setup)", cmd_exec_usage},
        {"help", cmd_help, 0, "show help for skiff or a command", cmd_help_usage},
        {"init", cmd_init, 0, "be a container's init: reap, forward signals, run the supervisor",
         cmd_init_usage},
        {"jobs", cmd_jobs, CMD_GROUP,
         "managed jobs: launch, queue, cancel, logs (recovered when nodes fail)", cmd_jobs_usage},
        {"launch", cmd_launch, 0, "launch a cluster and run a task on it", cmd_launch_usage},
        {"logs", cmd_logs, 0, "stream a cluster job's logs", cmd_logs_usage},
        {"node", cmd_node, CMD_GROUP,
         "node supervisor and its job queue (submit, queue, logs, ...)", cmd_node_usage},
        {"queue", cmd_queue, 0, "list a cluster's jobs", cmd_queue_usage},
        {"ssh", cmd_ssh, 0, "a shell on a cluster's head node", cmd_ssh_usage},
        {"start", cmd_start, 0, "start stopped clusters", cmd_start_usage},
        {"status", cmd_status, 0, "list clusters", cmd_status_usage},
        {"stop", cmd_stop, 0, "stop clusters (nodes stay booked)", cmd_stop_usage},
        {"version", cmd_version, 0, "show version, commit and bundled libraries",
         cmd_version_usage},
};

const struct cmd *cmd_table(size_t *n)
{
	*n = ARRAY_SIZE(commands);
	return commands;
}

static const struct cmd *find_in(const struct cmd *t, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(t[i].name, name))
			return &t[i];
	return NULL;
}

const struct cmd *cmd_find(const char *name)
{
	return find_in(commands, ARRAY_SIZE(commands), name);
}

int wants_help(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			return 0;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
	}
	return 0;
}

int usage_error(const char *cmdname, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	error("%s (see 'skiff %s --help')", msg, cmdname);
	return EXIT_USAGE;
}

int print_out(const char *s, size_t len)
{
	if (write_all(1, s, len) < 0) {
		if (errno == EPIPE)
			return 0;
		return error_errno("cannot write to standard output");
	}
	return 0;
}

/* Appends v in decimal at t[*n] (t has room: the callers' sizes are computed). */
static void put_long(char *t, size_t *n, long v)
{
	char d[DEC_DIGITS_MAX], *p = dec_digits(d + sizeof(d), v);

	memcpy(t + *n, p, (size_t)(d + sizeof(d) - p));
	*n += (size_t)(d + sizeof(d) - p);
}

/*
 * "A" ua, and with ub " B" ub, into out[size] (cut to fit): what the two below write,
 * without printf, which was most of a long listing's time (`jobs queue`, a row each).
 */
static void fmt_two(char *out, size_t size, long a, const char *ua, long b, const char *ub)
{
	char t[2 * DEC_DIGITS_MAX + 2 * 8 + 2];
	size_t n = 0, m;

	put_long(t, &n, a);
	m = strlen(ua);
	memcpy(t + n, ua, m), n += m;
	if (ub) {
		t[n++] = ' ';
		put_long(t, &n, b);
		m = strlen(ub);
		memcpy(t + n, ub, m), n += m;
	}
	m = n < size - 1 ? n : size - 1;
	memcpy(out, t, m);
	out[m] = '\0';
}

void cmd_fmt_span(double from, double to, char *out, size_t size)
{
	double d = to - from;

	if (from <= 0 || d < 0)
		xsnprintf(out, size, "-");
	else if (d < 60)
		fmt_two(out, size, (int)d, "s", 0, NULL);
	else if (d < 3600)
		fmt_two(out, size, (int)d / 60, "m", (int)d % 60, "s");
	else if (d < 86400)
		fmt_two(out, size, (int)d / 3600, "h", ((int)d % 3600) / 60, "m");
	else
		fmt_two(out, size, (int)(d / 86400), "d", ((int)d % 86400) / 3600, "h");
}

void cmd_fmt_ago(double when, double now, char *out, size_t size)
{
	long ago = (long)(now - when);

	if (when <= 0)
		xsnprintf(out, size, "-");
	else if (ago < 60)
		fmt_two(out, size, ago < 0 ? 0 : ago, "s ago", 0, NULL);
	else if (ago < 3600)
		fmt_two(out, size, ago / 60, "m ago", 0, NULL);
	else if (ago < 86400)
		fmt_two(out, size, ago / 3600, "h ago", 0, NULL);
	else
		fmt_two(out, size, ago / 86400, "d ago", 0, NULL);
}

static void suggest(const char *group, const struct cmd *t, size_t n, const char *name)
{
	const char *names[128];
	const char *best;
	size_t i, k = 0;

	for (i = 0; i < n && k < ARRAY_SIZE(names); i++)
		if (!(t[i].flags & CMD_HIDDEN))
			names[k++] = t[i].name;
	best = nearest_word(name, names, k);
	if (best)
		error("'%s' is not a skiff%s%s command; did you mean '%s'?", name, group ? " " : "",
		      group ? group : "", best);
	else
		error("'%s' is not a skiff%s%s command (see 'skiff %s%shelp')", name,
		      group ? " " : "", group ? group : "", group ? group : "", group ? " " : "");
}

int cmd_dispatch(const char *group, const struct cmd *t, size_t n, int argc, char **argv)
{
	const struct cmd *c;

	if (argc < 1)
		return EXIT_USAGE;
	c = find_in(t, n, argv[0]);
	if (!c) {
		suggest(group, t, n, argv[0]);
		return EXIT_USAGE;
	}
	if ((c->flags & CMD_GROUP)
	            ? argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
	            : wants_help(argc, argv)) {
		fputs(c->usage, stdout);
		return fflush(stdout) ? EXIT_FAIL : EXIT_OK;
	}
	return c->fn(argc, argv);
}

/*
 * 1 unless the command's exit status is another program's (ssh CMD, init CMD), or the
 * command answers a program in frames (node call: its errors are in the answer).
 */
static int passes_status(int argc, char **argv)
{
	const struct cmd *c = cmd_find(argv[0]);

	if (!c || (c->flags & CMD_HIDDEN) || !strcmp(argv[0], "ssh") || !strcmp(argv[0], "init"))
		return 0;
	return !(argc > 1 && !strcmp(argv[0], "node") && !strcmp(argv[1], "call"));
}

int main(int argc, char **argv)
{
	int r;

	if (argc > 0 && argv[0])
		skiff_argv0 = argv[0];
	/* A closed stdout (`skiff queue | head`) must give EPIPE, not kill us mid-write. */
	signal(SIGPIPE, SIG_IGN);
	/*
	 * A launcher holds a descriptor or more per node it asks or follows at once (a
	 * 1,000-node gang's followers, their pipes), past the 1,024 many systems give by
	 * default; a node's supervisor raises it again for itself (fd_budget()).
	 */
	nofile_raise();
	if (getenv("SKIFF_DEBUG"))
		log_set_level(LOG_DEBUG);

	argc--, argv++;
	while (argc > 0 && argv[0][0] == '-') {
		if (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
			argv[0] = "help";
			break;
		}
		if (!strcmp(argv[0], "--version")) {
			argv[0] = "version";
			break;
		}
		if (!strcmp(argv[0], "-q") || !strcmp(argv[0], "--quiet")) {
			log_set_level(LOG_ERROR);
			argc--, argv++;
			continue;
		}
		error("unknown option '%s' (see 'skiff help')", argv[0]);
		return EXIT_USAGE;
	}
	if (argc == 0) {
		static char *help[] = {"help", NULL};

		cmd_help(1, help);
		return EXIT_USAGE;
	}
	r = cmd_dispatch(NULL, commands, ARRAY_SIZE(commands), argc, argv);
	if (fflush(stdout) && r == EXIT_OK && errno != EPIPE) {
		error_errno("cannot write to standard output");
		r = EXIT_FAIL;
	}
	/*
	 * A failure always says so: one error line at least. The job-status codes (100-103)
	 * and the exit statuses that ssh, init and internal commands pass on are answers,
	 * not failures of skiff.
	 */
	if (r >= EXIT_FAIL && r <= EXIT_UNAVAILABLE && !log_error_count() &&
	    passes_status(argc, argv))
		error("%s failed (exit status %d), and said nothing more: this is a bug, please "
		      "report it",
		      argv[0], r);
	return r;
}
