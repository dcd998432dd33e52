/*
 * `skiff node ...`: the node-side commands (supervisor lifecycle, resources, autostop).
 * Job commands are in node_submit.c, node_queue.c and node_logs.c.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "bootstrap/launch/install.h"
#include "cmd/node.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/self.h"
#include "lib/spawn.h"
#include "lib/task.h"
#include "lib/util.h"
#include "supervisor/hold.h"
#include "supervisor/node.h"
#include "supervisor/supervisor.h"
#include "supervisor/templates.h"
#include "lib/banned.h"

static const char node_up_usage[] =
        "usage: skiff node up [--cpus N] [--memory GB] [--gpus N] [--cancel-grace SECONDS]\n"
        "                     [--max-bypass N]\n"
        "\n"
        "Starts the node supervisor for $SKIFF_HOME (default ~/.skiff) unless it runs\n"
        "already, and returns once it accepts requests. One supervisor runs per state dir.\n"
        "\n"
        "The options override what the node offers to jobs (detected: cores, memory, GPUs)\n"
        "and are kept in the node's database; an empty value goes back to the detected one.\n"
        "  --cpus N             CPUs jobs may reserve (fractions allowed)\n"
        "  --memory GB          memory in GiB jobs may reserve\n"
        "  --gpus N             accelerators jobs may reserve\n"
        "  --cancel-grace S     seconds between SIGTERM and SIGKILL on cancel (default 10)\n"
        "  --max-bypass N       how often a waiting job may be overtaken by smaller ones\n"
        "                       before nothing behind it starts (default 20; 0 = strict FIFO)\n"
        "  --frame              (the launcher's install scripts) say SKIFF-UP on a line, then\n"
        "                       the answer as one frame (pid, started, active, address,\n"
        "                       and a share's binary: exe)\n"
        "  --then-call SKIP     (the launcher's install session) as --frame, then skip SKIP\n"
        "                       bytes of stdin and answer one 'node call' request there\n"
        "  --hold CLUSTER --launcher ID [--from USER@HOST]\n"
        "                       (the launcher, on hosts that pools share) take this node for\n"
        "                       the cluster first: refused, naming the holder, when another\n"
        "                       cluster holds it ($SKIFF_HOME/holds): exit 5\n"
        "  --share              with --hold: a share of the node (--cpus, --memory, --gpus\n"
        "                       say how much), taken while it fits beside the other\n"
        "                       clusters' shares (exit 5 when not), with a home of its own,\n"
        "                       $SKIFF_HOME/c/CLUSTER-ID: this command goes on from there\n";

static const char node_down_usage[] =
        "usage: skiff node down [--all]\n"
        "\n"
        "Stops the node supervisor. Running jobs keep running under their shims and are\n"
        "re-adopted by the next 'skiff node up'.\n"
        "  --all   cancel every job first, and return only once nothing of this node\n"
        "          runs any more (supervisor, shims, their jobs, followers); what outlives\n"
        "          the jobs' cancel grace gets SIGTERM, then SIGKILL. Exits 1 naming what\n"
        "          is left (a process in D state survives SIGKILL). The launcher's down.\n";

static const char node_status_usage[] =
        "usage: skiff node status [--json]\n"
        "\n"
        "Shows the supervisor's version, pid and uptime, the node's resources (total and\n"
        "free) and how many jobs run and wait. Starts the supervisor if it is down.\n";

static const char node_autostop_usage[] =
        "usage: skiff node autostop IDLE_MINUTES [--down] [--wait-for jobs|jobs_and_ssh|none]\n"
        "       skiff node autostop --cancel\n"
        "\n"
        "After IDLE_MINUTES (fractions allowed; at most 5256000, ten years) without\n"
        "activity, the supervisor runs the infra's hook: $SKIFF_HOME/hooks/stop, or\n"
        "hooks/down with --down. Activity is a job that has not ended and, with\n"
        "jobs_and_ssh (the default), a login session.\n"
        "With none, the timer runs regardless of activity. The setting lasts until the\n"
        "node reboots.\n";

/*
 * How many jobs the node has that have not ended: a launcher booking the node for a new
 * cluster then knows whether anything is left from an earlier one (none: no round trip).
 * 0, or -1 when the supervisor does not say.
 */
static int count_active(int64_t *n)
{
	static const char *const keys[] = {"running", "setting_up", "pending"};
	struct msg req, rep;
	int64_t v;
	size_t i;
	int r;

	*n = 0;
	msg_init(&req);
	msg_add(&req, "op", "status");
	r = sup_call(SUP_QUIET, &req, &rep) ? -1 : 0;
	for (i = 0; !r && i < ARRAY_SIZE(keys); i++)
		if (!msg_get_int(&rep, keys[i], &v) && v > 0)
			*n += v;
	msg_release(&req);
	msg_release(&rep);
	return r;
}

/*
 * Over ssh, the address this node was reached at, as sshd saw it (the third word of
 * SSH_CONNECTION): behind NAT or a jump host, or for a host named by an alias, the
 * address other nodes reach it at, which the launcher gives jobs in SKYPILOT_NODE_IPS.
 * 0 with it in a, or -1.
 */
static int ssh_address(char a[4][64])
{
	const char *c = getenv("SSH_CONNECTION");

	if (c && sscanf(c, "%63s %63s %63s %63s", a[0], a[1], a[2], a[3]) == 4 &&
	    strspn(a[2], "0123456789abcdefABCDEF.:") == strlen(a[2]))
		return 0;
	return -1;
}

/*
 * What `node up` says. For people: lines ("supervisor started (pid N)", "active N",
 * "address A", "home H" for a share's). For the launcher (--frame, --then-call):
 * BOOT_UP_MARK on a line of its own, after whatever the install script said, then one
 * frame {ok, started (1: by this call), pid, active (when known), address (over ssh), exe
 * (a share's binary, in its home)}: nothing of it is parsed as text.
 */
static int say_up(pid_t pid, int already, int have_cfg, int frame)
{
	char a[4][64];
	int64_t n;
	int have_n = !count_active(&n), have_a = !ssh_address(a);
	struct msg m;
	int r;

	if (!frame) {
		if (already)
			printf("supervisor already running (pid %ld)%s\n", (long)pid,
			       have_cfg ? "; settings updated" : "");
		else
			printf("supervisor started (pid %ld)\n", (long)pid);
		if (have_n)
			printf("active %lld\n", (long long)n);
		if (have_a)
			printf("address %s\n", a[2]);
		if (skiff_home_is_cluster())
			printf("home %s\n", skiff_home());
		return fflush(stdout) ? -1 : 0;
	}
	msg_init(&m);
	msg_add(&m, "ok", "1");
	msg_add(&m, "started", already ? "0" : "1");
	msg_add_int(&m, "pid", pid);
	if (have_n)
		msg_add_int(&m, "active", n);
	if (have_a)
		msg_add(&m, "address", a[2]);
	/* A share's own home (node up --share): the binary the launcher calls from now on. */
	if (skiff_home_is_cluster() && self_path(NULL))
		msg_add(&m, "exe", self_path(NULL));
	printf(BOOT_UP_MARK "\n");
	r = fflush(stdout) || proto_send(1, &m) ? -1 : 0;
	msg_release(&m);
	return r;
}

/* --hold, --launcher, --from into h (held: which were given, as bits); -1 when too long. */
static int hold_arg(struct hold *h, int *held, int c, const char *v)
{
	char *to = c == 'H' ? h->cluster : c == 'L' ? h->launcher : h->from;
	size_t size = c == 'H'   ? sizeof(h->cluster)
	              : c == 'L' ? sizeof(h->launcher)
	                         : sizeof(h->from);

	if (!*held)
		memset(h, 0, sizeof(*h));
	*held |= c == 'H' ? 1 : c == 'L' ? 2 : 4;
	if (strlen(v) >= size)
		return -1;
	memcpy(to, v, strlen(v) + 1);
	return 0;
}

/*
 * A share's home (lib/util.h cluster_home_of()): this binary linked into
 * HOME/c/CLUSTER-ID/bin (ID: the launcher's, its first 12 digits), and `node up` run
 * again from there with the same arguments. Returns only on failure (printed).
 */
static int share_home_exec(const struct hold *h, int argc, char **argv)
{
	const char *self = self_path(NULL), *name = self ? strrchr(self, '/') : NULL;
	const struct node_paths *p = node_paths();
	char *home, *bin, *exe, *tmp, *lnk;
	char **args;
	int i, r = -1;

	if (!p || !name || !starts_with(name, "/skiff-") || strlen(name) != 7 + 64)
		return error("node up --share: this skiff ('%s') is not an installed one "
		             "(skiff-SHA256)",
		             self ? self : "?");
	home = hold_share_home(p->host, h);
	bin = xasprintf("%s/bin", home);
	exe = xasprintf("%s%s", bin, name);
	tmp = xasprintf("%s.%ld.link", exe, (long)getpid());
	lnk = xasprintf("%s/.skiff.%ld.link", bin, (long)getpid());
	if (mkdir_p(bin, 0700) < 0) {
		error_errno("cannot create '%s'", bin);
		goto out;
	}
	if (access(exe, X_OK)) {
		unlink(tmp);
		if (link(self, tmp) < 0 || rename(tmp, exe) < 0) {
			error_errno("cannot link '%s' to '%s'", self, exe);
			unlink(tmp);
			goto out;
		}
	}
	/* As the host's: bin/skiff names the newest, for people. */
	unlink(lnk);
	free(tmp);
	tmp = xasprintf("%s/skiff", bin);
	if (symlink(name + 1, lnk) || rename(lnk, tmp))
		unlink(lnk);
	free(tmp);
	tmp = cluster_home_of(exe);
	if (!tmp) { /* the key's characters are made so: never */
		error("BUG: '%s' is not a cluster's home", exe);
		goto out;
	}
	args = xcalloc((size_t)argc + 3, sizeof(*args));
	args[0] = exe;
	args[1] = "node";
	for (i = 0; i < argc; i++)
		args[i + 2] = argv[i];
	errno = -spawn_replace(args);
	error_errno("cannot run '%s'", exe);
	free(args);
out:
	free(home);
	free(bin);
	free(exe);
	free(tmp);
	free(lnk);
	return r;
}

/*
 * A share, in its home: takes it on the node's record, then sets what its supervisor
 * offers: no more than the node has, and its own GPUs. 0, or the exit status (printed).
 */
static int share_take(const struct hold *h, struct msg *cfg)
{
	struct node_resources det;
	struct hold_cap cap;
	struct buf why = BUF_INIT(0);
	char ids[4 * HOLD_GPUS_MAX];
	uint64_t gpus;
	int r;

	node_detect_resources(&det);
	cap.cpus = det.cpus;
	cap.memory = det.memory;
	cap.gpus = det.gpus;
	r = hold_take(h, &cap, &gpus, &why);
	if (r)
		error("%s", why.p);
	buf_release(&why);
	/* A home made for a share the node refused, never up: it goes (its binary's link). */
	if (r && node_paths() && access(node_paths()->db, F_OK) && errno == ENOENT)
		rm_rf(skiff_home());
	if (r)
		return r == -EBUSY || r == -ENOSPC ? EXIT_HELD : EXIT_FAIL;
	hold_gpus_format(gpus, ids, sizeof(ids));
	msg_addf(cfg, "cpus", "%g", h->cpus < cap.cpus ? h->cpus : cap.cpus);
	msg_addf(cfg, "memory", "%g", h->memory < cap.memory ? h->memory : cap.memory);
	msg_add_int(cfg, "gpus", __builtin_popcountll(gpus));
	msg_add(cfg, "gpu_ids", ids);
	return 0;
}

/* The hold given is whole and well formed: 0, or the usage error's exit status. */
static int hold_given(const struct hold *h, int held, const char *cmd)
{
	struct buf why = BUF_INIT(0);
	int r = 0;

	if ((held & 3) != 3)
		r = usage_error(cmd, "--hold and --launcher go together (and --from with them)");
	else if (hold_check(h, &why))
		r = usage_error(cmd, "%s", why.p);
	buf_release(&why);
	return r;
}

static int node_up(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"cpus", required_argument, NULL, 'c'},
	        {"memory", required_argument, NULL, 'm'},
	        {"gpus", required_argument, NULL, 'g'},
	        {"cancel-grace", required_argument, NULL, 'k'},
	        {"max-bypass", required_argument, NULL, 'b'},
	        {"then-call", required_argument, NULL, 't'},
	        {"frame", no_argument, NULL, 'f'},
	        {"hold", required_argument, NULL, 'H'},
	        {"launcher", required_argument, NULL, 'L'},
	        {"from", required_argument, NULL, 'F'},
	        {"share", no_argument, NULL, 'S'},
	        {NULL, 0, NULL, 0},
	};
	struct msg cfg, rep;
	struct hold hold;
	double ask[3] = {0, 0, 0}; /* --share: cpus, memory, gpus */
	long skip = -1;
	pid_t pid;
	int already, c, have_cfg = 0, frame = 0, r, holding = 0, share = 0;

	msg_init(&cfg);
	msg_add(&cfg, "op", "config");
	optind = 1;
	opterr = 0; /* our own message, not getopt's */
	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		const char *key = c == 'c'   ? "cpus"
		                  : c == 'm' ? "memory"
		                  : c == 'g' ? "gpus"
		                  : c == 'k' ? "cancel_grace"
		                  : c == 'b' ? "max_bypass"
		                             : NULL;
		double v;

		if (c == 'f' || c == 'S') {
			*(c == 'f' ? &frame : &share) = 1;
			continue;
		}
		if (c == 'H' || c == 'L' || c == 'F') {
			if (hold_arg(&hold, &holding, c, optarg)) {
				msg_release(&cfg);
				return usage_error("node up", "'%.80s' is too long for --%s",
				                   optarg,
				                   c == 'H'   ? "hold"
				                   : c == 'L' ? "launcher"
				                              : "from");
			}
			continue;
		}
		if (c == 't') {
			if (parse_long(optarg, 0, 1L << 30, &skip)) {
				msg_release(&cfg);
				return usage_error("node up", "bad byte count '%s' for --then-call",
				                   optarg);
			}
			continue;
		}
		if (!key) {
			msg_release(&cfg);
			return usage_error("node up", "unknown option '%s'", argv[optind - 1]);
		}
		if (*optarg && (parse_double(optarg, &v) || v < 0)) {
			msg_release(&cfg);
			return usage_error("node up",
			                   "bad value '%s' for --%s: expected a number "
			                   ">= 0",
			                   optarg, key);
		}
		if (c == 'c' || c == 'm' || c == 'g')
			ask[c == 'c' ? 0 : c == 'm' ? 1 : 2] = *optarg ? v : 0;
		if (share && (c == 'c' || c == 'm' || c == 'g'))
			continue; /* share_take() says what the supervisor offers */
		msg_add(&cfg, key, optarg);
		have_cfg = 1;
	}
	if (optind < argc) {
		msg_release(&cfg);
		return usage_error("node up", "unexpected argument '%s'", argv[optind]);
	}
	if (share && !holding) {
		msg_release(&cfg);
		return usage_error("node up", "--share goes with --hold");
	}
	if (holding && (r = hold_given(&hold, holding, "node up"))) {
		msg_release(&cfg);
		return r;
	}
	if (share && !skiff_home_is_cluster()) {
		msg_release(&cfg);
		share_home_exec(&hold, argc, argv);
		return EXIT_FAIL;
	}
	if (share) {
		hold.share = 1;
		hold.cpus = ask[0];
		hold.memory = ask[1];
		hold.gpus = ask[2] > HOLD_GPUS_MAX ? HOLD_GPUS_MAX : (int)ask[2];
		r = share_take(&hold, &cfg);
		if (r) {
			msg_release(&cfg);
			return r;
		}
		have_cfg = 1;
	} else if (holding) {
		struct hold_cap none = {0, 0, 0};
		struct buf why = BUF_INIT(0);
		uint64_t gpus;

		r = hold_take(&hold, &none, &gpus, &why);
		if (r)
			error("%s", why.p);
		buf_release(&why);
		if (r) {
			msg_release(&cfg);
			return r == -EBUSY ? EXIT_HELD : EXIT_FAIL;
		}
	}
	if (sup_start(&pid, &already)) {
		msg_release(&cfg);
		return EXIT_UNAVAILABLE;
	}
	/* SkyPilot's ~/sky_templates, on every node a launch bootstraps (never fatal). */
	if (node_paths())
		node_templates_install(user_home(), node_paths()->home);
	r = 0;
	if (have_cfg)
		r = sup_call(0, &cfg, &rep), msg_release(&rep);
	msg_release(&cfg);
	if (r)
		return EXIT_FAIL;
	if (say_up(pid, already, have_cfg, frame || skip >= 0))
		return EXIT_FAIL;
	if (skip < 0)
		return EXIT_OK;
	return node_call_then((size_t)skip);
}

/* The answer is one line on stdout (the launcher's down shows it as it is). */
static int node_down_all(void)
{
	struct buf what = BUF_INIT(1 << 16), line = BUF_INIT(0);
	int r = sup_down_all(&what);

	sup_down_say(r, &what, &line);
	printf("%s\n", line.p);
	buf_release(&line);
	if (r)
		error("not everything of this node could be stopped");
	buf_release(&what);
	return r ? EXIT_FAIL : EXIT_OK;
}

static int node_down(int argc, char **argv)
{
	struct msg req, rep;
	int64_t pid = 0, running = 0;
	uint64_t start;
	int fd, r;

	if (argc == 2 && !strcmp(argv[1], "--all"))
		return node_down_all();
	if (argc > 1)
		return usage_error("node down", "unexpected argument '%s'", argv[1]);
	fd = sup_connect(SUP_QUIET);
	if (fd < 0) {
		printf("supervisor is not running\n");
		return EXIT_OK;
	}
	close(fd);
	msg_init(&req);
	msg_add(&req, "op", "shutdown");
	r = sup_call(0, &req, &rep);
	msg_get_int(&rep, "pid", &pid);
	msg_get_int(&rep, "running", &running);
	msg_release(&req);
	msg_release(&rep);
	if (r)
		return EXIT_FAIL;
	/*
	 * Wait until it has exited so that a following `node up` starts a new one. A zombie
	 * has (proc_alive): whoever reaps it, maybe a slow init, need not be waited for.
	 */
	start = pid > 0 ? proc_start_time((pid_t)pid) : 0;
	for (int i = 0; i < 1000 && start && proc_alive((pid_t)pid, start) == 1; i++)
		poll_ms(5);
	printf("supervisor stopped (pid %lld); %lld job(s) keep running\n", (long long)pid,
	       (long long)running);
	return EXIT_OK;
}

static const char *fmt_uptime(double s, char *out, size_t size)
{
	long t = (long)s;

	if (t < 60)
		xsnprintf(out, size, "%lds", t);
	else if (t < 3600)
		xsnprintf(out, size, "%ldm %lds", t / 60, t % 60);
	else if (t < 86400)
		xsnprintf(out, size, "%ldh %ldm", t / 3600, (t % 3600) / 60);
	else
		xsnprintf(out, size, "%ldd %ldh", t / 86400, (t % 86400) / 3600);
	return out;
}

static int node_status(int argc, char **argv)
{
	struct msg req, rep;
	int as_json = 0, i, r;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			as_json = 1;
		else
			return usage_error("node status", "unexpected argument '%s'", argv[i]);
	}
	msg_init(&req);
	msg_add(&req, "op", "status");
	r = sup_call(SUP_AUTOSTART, &req, &rep);
	msg_release(&req);
	if (r) {
		msg_release(&rep);
		return EXIT_UNAVAILABLE;
	}
	if (as_json) {
		static const char *const nums[] = {
		        "pid",       "uptime",      "cpus",         "memory",  "gpus",
		        "cpus_free", "memory_free", "gpus_free",    "running", "setting_up",
		        "pending",   "max_bypass",  "cancel_grace",
		};
		struct buf b = BUF_INIT(0);
		struct json j;
		double v;

		json_init(&j, &b, 1);
		json_obj_begin(&j);
		json_key(&j, "version");
		json_str(&j, msg_get(&rep, "version"));
		json_key(&j, "commit");
		json_str(&j, msg_get(&rep, "commit"));
		json_key(&j, "home");
		json_str(&j, node_paths()->home);
		for (size_t k = 0; k < ARRAY_SIZE(nums); k++) {
			json_key(&j, nums[k]);
			if (msg_get_double(&rep, nums[k], &v))
				json_null(&j);
			else
				json_double(&j, v);
		}
		json_key(&j, "autostop");
		if (msg_get_double(&rep, "autostop_idle_minutes", &v) || v < 0) {
			json_null(&j);
		} else {
			json_obj_begin(&j);
			json_key(&j, "idle_minutes");
			json_double(&j, v);
			json_key(&j, "down");
			json_bool(&j, msg_get(&rep, "autostop_down") &&
			                      !strcmp(msg_get(&rep, "autostop_down"), "1"));
			json_key(&j, "wait_for");
			json_str(&j, msg_get(&rep, "autostop_wait_for"));
			json_obj_end(&j);
		}
		json_obj_end(&j);
		r = json_finish(&j) || print_out(b.p, b.len);
		buf_release(&b);
	} else {
		char up[32];
		double uptime = 0, idle = -1;

		msg_get_double(&rep, "uptime", &uptime);
		msg_get_double(&rep, "autostop_idle_minutes", &idle);
		printf("supervisor:  running (pid %s, up %s)\n", msg_get(&rep, "pid"),
		       fmt_uptime(uptime, up, sizeof(up)));
		printf("version:     %s (%s)\n", msg_get(&rep, "version"), msg_get(&rep, "commit"));
		printf("home:        %s\n", node_paths()->home);
		printf("cpus:        %s free of %s\n", msg_get(&rep, "cpus_free"),
		       msg_get(&rep, "cpus"));
		printf("memory:      %.1f GiB free of %.1f GiB\n",
		       strtod(msg_get(&rep, "memory_free"), NULL),
		       strtod(msg_get(&rep, "memory"), NULL));
		printf("gpus:        %s free of %s\n", msg_get(&rep, "gpus_free"),
		       msg_get(&rep, "gpus"));
		printf("jobs:        %s running, %s setting up, %s pending\n",
		       msg_get(&rep, "running"), msg_get(&rep, "setting_up"),
		       msg_get(&rep, "pending"));
		if (idle >= 0)
			printf("autostop:    %.15g min%s (wait for %s)\n", idle,
			       !strcmp(msg_get(&rep, "autostop_down"), "1") ? " (down)" : "",
			       msg_get(&rep, "autostop_wait_for"));
		else
			printf("autostop:    off\n");
	}
	msg_release(&rep);
	return r ? EXIT_FAIL : EXIT_OK;
}

static int node_autostop(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"down", no_argument, NULL, 'd'},
	        {"wait-for", required_argument, NULL, 'w'},
	        {"cancel", no_argument, NULL, 'x'},
	        {NULL, 0, NULL, 0},
	};
	const char *wait_for = NULL;
	struct msg req, rep;
	int c, down = 0, cancel = 0, r;
	double idle;

	optind = 1;
	opterr = 0; /* our own message, not getopt's */
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'd')
			down = 1;
		else if (c == 'w')
			wait_for = optarg;
		else if (c == 'x')
			cancel = 1;
		else
			return usage_error("node autostop", "unknown option '%s'",
			                   argv[optind - 1]);
	}
	if (cancel && optind < argc)
		return usage_error("node autostop", "--cancel takes no IDLE_MINUTES");
	if (!cancel && optind != argc - 1)
		return usage_error("node autostop", "expected IDLE_MINUTES");
	if (!cancel && (parse_double(argv[optind], &idle) || !task_autostop_minutes_valid(idle)))
		return usage_error("node autostop",
		                   "bad IDLE_MINUTES '%s': expected a number of minutes, 0..%d "
		                   "(ten years)",
		                   argv[optind], TASK_AUTOSTOP_MINUTES_MAX);
	if (wait_for && strcmp(wait_for, "jobs") && strcmp(wait_for, "jobs_and_ssh") &&
	    strcmp(wait_for, "none"))
		return usage_error("node autostop",
		                   "bad --wait-for '%s': expected jobs, jobs_and_ssh or none",
		                   wait_for);
	msg_init(&req);
	msg_add(&req, "op", "autostop");
	if (cancel) {
		msg_add(&req, "cancel", "1");
	} else {
		msg_add(&req, "idle_minutes", argv[optind]);
		msg_add(&req, "down", down ? "1" : "0");
		if (wait_for)
			msg_add(&req, "wait_for", wait_for);
	}
	r = sup_call(SUP_AUTOSTART, &req, &rep);
	msg_release(&req);
	msg_release(&rep);
	if (r)
		return EXIT_FAIL;
	if (cancel)
		printf("autostop cancelled\n");
	else
		printf("autostop set: %s after %.15g idle minute(s) (wait for %s)\n",
		       down ? "down" : "stop", idle, wait_for ? wait_for : "jobs_and_ssh");
	return EXIT_OK;
}

static const char node_release_usage[] =
        "usage: skiff node release [--hold CLUSTER --launcher ID | --all-holds]\n"
        "\n"
        "After 'skiff node down --all': removes what a cluster put on this node, for the\n"
        "next cluster to start clean: ~/sky_workdir, the job queue, its logs and the\n"
        "autostop hooks (skiff's binary and runtime-env caches stay). The launcher's down\n"
        "on machines that stay (SSH hosts, pool containers). Refused while the supervisor\n"
        "runs. A share's own home (node up --share) goes whole.\n"
        "  --hold CLUSTER --launcher ID   and lets go of that cluster's hold (node up --hold)\n"
        "  --all-holds                    and of every hold: by hand, when the launcher of\n"
        "                                 the cluster that held the node is gone\n";

static int node_release(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"hold", required_argument, NULL, 'H'},
	        {"launcher", required_argument, NULL, 'L'},
	        {"all-holds", no_argument, NULL, 'A'},
	        {NULL, 0, NULL, 0},
	};
	struct buf what = BUF_INIT(0);
	struct hold hold;
	int c, r, holding = 0, all = 0;

	optind = 1;
	opterr = 0; /* our own message, not getopt's */
	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		if (c == 'A') {
			all = 1;
		} else if (c == 'H' || c == 'L') {
			if (hold_arg(&hold, &holding, c, optarg))
				return usage_error("node release", "'%.80s' is too long for --%s",
				                   optarg, c == 'H' ? "hold" : "launcher");
		} else {
			return usage_error("node release", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("node release", "unexpected argument '%s'", argv[optind]);
	if (all && holding)
		return usage_error("node release", "--all-holds or --hold, not both");
	if (holding && (r = hold_given(&hold, holding | 4, "node release")))
		return r;
	r = sup_release(&what);
	if (!r && (all || holding))
		r = hold_drop(all ? NULL : &hold, &what);
	/* A share's home goes whole: the next share of the node starts clean. */
	if (!r && skiff_home_is_cluster() && (r = rm_rf(skiff_home())))
		buf_addf(&what, "cannot remove %s: %s", skiff_home(), strerror(-r));
	if (r)
		error("cannot release this node: %s", what.len ? what.p : strerror(-r));
	buf_release(&what);
	return r ? EXIT_FAIL : EXIT_OK;
}

static const struct cmd node_cmds[] = {
        {"autostop", node_autostop, 0, "stop or tear down the node when idle", node_autostop_usage},
        {"call", node_call, CMD_HIDDEN, "one framed request (the launcher's protocol)",
         node_call_usage},
        {"cancel", node_cancel, 0, "cancel jobs", node_cancel_usage},
        {"down", node_down, 0, "stop the supervisor (jobs keep running)", node_down_usage},
        {"logs", node_logs, 0, "show or follow a job's logs", node_logs_usage},
        {"queue", node_queue, 0, "list the node's jobs", node_queue_usage},
        {"release", node_release, CMD_HIDDEN, "remove what a cluster left (launcher's down)",
         node_release_usage},
        {"status", node_status, 0, "show the supervisor and the node's resources",
         node_status_usage},
        {"stream", node_stream, CMD_HIDDEN, "a followed submit's logs (the supervisor's)",
         node_stream_usage},
        {"submit", node_submit, 0, "submit a job (task YAML or command)", node_submit_usage},
        {"up", node_up, 0, "start the supervisor", node_up_usage},
};

const char cmd_node_usage[] =
        "usage: skiff node COMMAND [ARGS]\n"
        "\n"
        "The node side of skiff: a supervisor per state dir ($SKIFF_HOME, default ~/.skiff)\n"
        "with a durable job queue, a resource-aware scheduler and per-job supervision.\n"
        "The launcher drives these on every node; they also work by hand.\n"
        "\n"
        "Commands:\n"
        "  up         start the supervisor\n"
        "  down       stop the supervisor (jobs keep running)\n"
        "  status     show the supervisor and the node's resources\n"
        "  submit     submit a job (task YAML or command)\n"
        "  queue      list the node's jobs\n"
        "  logs       show or follow a job's logs\n"
        "  cancel     cancel jobs\n"
        "  autostop   stop or tear down the node when idle\n"
        "\n"
        "See 'skiff node COMMAND --help'.\n";

int cmd_node(int argc, char **argv)
{
	if (argc < 2) {
		fputs(cmd_node_usage, stderr);
		return usage_error("node", "expected a command");
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		fputs(cmd_node_usage, stdout);
		return EXIT_OK;
	}
	return cmd_dispatch("node", node_cmds, ARRAY_SIZE(node_cmds), argc - 1, argv + 1);
}
