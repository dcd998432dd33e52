/*
 * `skiff __runner-test`: INTERNAL, a test helper. It drives a runner and the self-copy
 * bootstrap from the command line so that the integration tests (tests/t/t0500-bootstrap.sh,
 * t0510-bootstrap-local.sh) exercise the real code against real nodes. Not for users: its
 * interface may change with the tests.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/launch/install.h"
#include "bootstrap/launch/selfimage.h"
#include "bootstrap/infra/runner.h"
#include "cmd/cmd.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "lib/proto.h"
#include "lib/quote.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "lib/banned.h"

#define RT_TIMEOUT_MS 120000

const char cmd___runner_test_usage[] =
        "usage: skiff __runner-test (--local HOME | --ssh HOST) [--name NAME] [--user USER]\n"
        "           [--port N] [--identity FILE] [--jump HOST] [--ssh-config FILE]\n"
        "           [--control-dir DIR] [--timeout MS] [--no-sha256sum] [--has-skiff] [--link]\n"
        "           ACTION [ARG]\n"
        "       skiff __runner-test [--no-sha256sum] [--send-ahead] script probe|copy|session\n"
        "\n"
        "Internal test helper: runs one runner or bootstrap operation on a node.\n"
        "  argv [SCRIPT]    print the command the runner builds, one quoted word a line\n"
        "  run SCRIPT       run it with our stdin, stdout and stderr\n"
        "  capture SCRIPT   run it with our stdin as its input, its output captured, then\n"
        "                   printed (stdout to stdout, stderr to stderr)\n"
        "  spawn SCRIPT     start it in the background, then wait for it\n"
        "  install [OP]     install this binary and bring the supervisor up; prints\n"
        "                   copied= linked= sent= sup_pid= sup_started= remote_exe=; with\n"
        "                   OP, then the request {op: OP} over the install session (its\n"
        "                   call), and\n"
        "                   the answer's fields, KEY=VALUE a line (via=spare, or via=channel\n"
        "                   when the session could not carry it)\n"
        "  --has-skiff      install as for a node known to have this binary (nothing ahead)\n"
        "  --link           install as a launch does: a node that is a directory here gets\n"
        "                   the binary as a hard link of $SKIFF_HOME/cache/self-SHA\n"
        "  --send-ahead     the session script for a launcher that sends bytes ahead\n"
        "  send FILE        the copy round trip alone, sending FILE as this binary\n"
        "  close            close the ssh ControlMaster\n"
        "  script probe|copy|session  print the bootstrap's node-side script for this binary\n"
        "Exit status: the script's; 4 if the node cannot be reached; 124 on a timeout;\n"
        "1 for other errors.\n";

static int rc_to_exit(int rc, int status)
{
	if (rc == -EHOSTUNREACH)
		return EXIT_UNAVAILABLE;
	if (rc == -ETIMEDOUT)
		return 124;
	if (rc)
		return EXIT_FAIL;
	return status;
}

static void print_install(const struct install_result *res)
{
	printf("copied=%d linked=%d sent=%zu sup_pid=%ld sup_started=%d remote_exe=%s\n",
	       res->copied, res->linked, res->sent, res->sup_pid, res->sup_started,
	       res->remote_exe);
}

static int do_script(const char *which, unsigned flags)
{
	struct buf b = BUF_INIT(0);
	const char *data, *sha;
	size_t len;
	int rc;

	if (boot_self_image(&data, &len, &sha))
		return EXIT_FAIL;
	rc = boot_install_script(&b,
	                         !strcmp(which, "copy")      ? BOOT_SCRIPT_COPY
	                         : !strcmp(which, "session") ? BOOT_SCRIPT_SESSION
	                                                     : BOOT_SCRIPT_PROBE,
	                         sha, len, flags, NULL);
	if (!rc)
		rc = print_out(b.p, b.len);
	buf_release(&b);
	return rc ? EXIT_FAIL : EXIT_OK;
}

/* The request {op: op} over res's spare (else a new channel); prints the answer's fields. */
static int spare_op(struct runner *r, struct install_result *res, const char *op, int timeout_ms,
                    int *status)
{
	struct buf in = BUF_INIT(0), out = BUF_INIT(1 << 20), err = BUF_INIT(1 << 20);
	struct msg req, rep;
	const char *via = "spare", *why;
	char *script;
	size_t body, k;
	int rc = -EAGAIN;

	msg_init(&req);
	msg_init(&rep);
	msg_add(&req, "op", op);
	proto_put(&in, &req);
	if (res->spare)
		rc = boot_spare_call(res->spare, in.p, in.len, &out, timeout_ms, status);
	res->spare = NULL;
	if (rc == -EAGAIN) {
		via = "channel";
		script = xasprintf("exec %s node call", res->remote_exe);
		rc = runner_capture(r, script, in.p, in.len, &out, &err, timeout_ms, status);
		free(script);
	}
	printf("via=%s\n", via);
	if (!rc && (out.len < PROTO_HDR || proto_parse_header((unsigned char *)out.p, &body) ||
	            out.len - PROTO_HDR < body || msg_decode(&rep, out.p + PROTO_HDR, body, &why)))
		rc = error("node %s: no answer to '%s' (exit status %d)", r->name, op, *status);
	for (k = 0; !rc && k < rep.n; k++)
		printf("%s=%s\n", rep.keys[k], rep.vals[k]);
	msg_release(&req);
	msg_release(&rep);
	buf_release(&in);
	buf_release(&out);
	buf_release(&err);
	return rc;
}

static int do_action(struct runner *r, int argc, char **argv, int timeout_ms, unsigned flags,
                     unsigned up)
{
	const char *act = argv[0], *arg = argc > 1 ? argv[1] : NULL;
	struct install_result res;
	int rc = 0, status = 0;

	if (!strcmp(act, "argv")) {
		struct argv av;
		struct buf q = BUF_INIT(0);
		size_t i;

		argv_init(&av);
		rc = r->ops->build_argv(r, arg, !arg, &av);
		for (i = 0; !rc && i < av.n; i++) {
			buf_reset(&q);
			sh_quote(&q, av.v[i]);
			printf("%s\n", q.p);
		}
		argv_release(&av);
		buf_release(&q);
		return rc ? EXIT_FAIL : EXIT_OK;
	}
	if (!strcmp(act, "install")) {
		rc = boot_install_and_up(r, up | (arg ? BOOT_KEEP_CALL : 0), NULL, &res);
		if (!rc)
			print_install(&res);
		if (!rc && arg)
			rc = spare_op(r, &res, arg, timeout_ms, &status);
		return rc_to_exit(rc, status);
	}
	if (!strcmp(act, "close"))
		return runner_ssh_close_master(r) ? EXIT_FAIL : EXIT_OK;
	if (!arg)
		return usage_error("__runner-test", "'%s' needs an argument", act);
	if (!strcmp(act, "run")) {
		struct runner_io io = {RUNNER_INHERIT, RUNNER_INHERIT, RUNNER_INHERIT};

		rc = runner_run(r, arg, &io, timeout_ms, &status);
		return rc_to_exit(rc, status);
	}
	if (!strcmp(act, "spawn")) {
		struct runner_io io = {RUNNER_INHERIT, RUNNER_INHERIT, RUNNER_INHERIT};
		pid_t pid;

		rc = runner_spawn(r, arg, 0, &io, &pid);
		if (!rc)
			rc = spawn_wait(pid, &status);
		return rc_to_exit(rc, status_to_code(status));
	}
	if (!strcmp(act, "capture")) {
		struct buf in = BUF_INIT((size_t)256 << 20), out = BUF_INIT(0), err = BUF_INIT(0);

		rc = buf_read_fd(&in, 0);
		if (rc)
			error("cannot read standard input: %s", strerror(-rc));
		else
			rc = runner_capture(r, arg, in.p, in.len, &out, &err, timeout_ms, &status);
		print_out(out.p, out.len);
		fflush(stdout);
		if (err.len)
			write_all(2, err.p, err.len);
		buf_release(&in);
		buf_release(&out);
		buf_release(&err);
		return rc_to_exit(rc, status);
	}
	if (!strcmp(act, "send")) {
		struct buf file = BUF_INIT((size_t)256 << 20);
		const char *data, *sha;
		size_t len;

		rc = buf_read_file(&file, arg);
		if (rc) {
			errno = -rc;
			error_errno("cannot read '%s'", arg);
		} else if (!(rc = boot_self_image(&data, &len, &sha))) {
			rc = boot_install_send(r, file.p, file.len, sha, len, flags, &res);
			if (!rc)
				print_install(&res);
		}
		buf_release(&file);
		return rc_to_exit(rc, 0);
	}
	return usage_error("__runner-test", "unknown action '%s'", act);
}

int cmd___runner_test(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"local", required_argument, NULL, 'L'},
	        {"ssh", required_argument, NULL, 'S'},
	        {"name", required_argument, NULL, 'n'},
	        {"user", required_argument, NULL, 'u'},
	        {"port", required_argument, NULL, 'p'},
	        {"identity", required_argument, NULL, 'i'},
	        {"jump", required_argument, NULL, 'J'},
	        {"ssh-config", required_argument, NULL, 'F'},
	        {"control-dir", required_argument, NULL, 'C'},
	        {"timeout", required_argument, NULL, 't'},
	        {"no-sha256sum", no_argument, NULL, 'N'},
	        {"has-skiff", no_argument, NULL, 'H'},
	        {"link", no_argument, NULL, 'K'},
	        {"send-ahead", no_argument, NULL, 'A'},
	        {NULL, 0, NULL, 0},
	};
	struct ssh_target t = {0};
	const char *local = NULL, *name = NULL;
	struct runner *r = NULL;
	unsigned flags = 0, up = 0; /* enum boot_script_flags; enum boot_up_flags */
	long v, timeout_ms = RT_TIMEOUT_MS;
	int c, rc;

	optind = 1;
	opterr = 0; /* our own message, not getopt's */
	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (c) {
		case 'L': local = optarg; break;
		case 'S': t.host = optarg; break;
		case 'n': name = optarg; break;
		case 'u': t.user = optarg; break;
		case 'i': t.identity_file = optarg; break;
		case 'J': t.proxy_jump = optarg; break;
		case 'F': t.ssh_config = optarg; break;
		case 'C': t.control_dir = optarg; break;
		case 'N': flags |= BOOT_NO_SHA256SUM; break;
		case 'H': up |= BOOT_HAS_SKIFF; break;
		case 'K': up |= BOOT_LINK_HERE; break;
		case 'A': flags |= BOOT_SEND_AHEAD; break;
		case 'p':
			if (parse_long(optarg, 1, 65535, &v))
				return usage_error("__runner-test", "bad port '%s'", optarg);
			t.port = (int)v;
			break;
		case 't':
			if (parse_long(optarg, -1, 86400000, &timeout_ms))
				return usage_error("__runner-test", "bad timeout '%s'", optarg);
			break;
		default:
			return usage_error("__runner-test", "unknown option '%s'",
			                   argv[optind - 1]);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		return usage_error("__runner-test", "no action");
	if (!strcmp(argv[0], "script")) {
		if (argc != 2 || (strcmp(argv[1], "probe") && strcmp(argv[1], "copy") &&
		                  strcmp(argv[1], "session")))
			return usage_error("__runner-test", "expected 'script probe|copy|session'");
		return do_script(argv[1], flags);
	}
	if (!local == !t.host)
		return usage_error("__runner-test", "give one of --local HOME or --ssh HOST");
	if (local) {
		/* The harness makes the node, as the local infra's pick does for a cluster. */
		int mr = mkdir_p(local, 0700);

		if (mr) {
			errno = -mr;
			error_errno("cannot create '%s'", local);
			return EXIT_FAIL;
		}
		r = runner_local_new(name ? name : "local", local);
	} else
		r = runner_ssh_new(name ? name : t.host, &t);
	if (!r)
		return EXIT_FAIL;
	rc = do_action(r, argc, argv, (int)timeout_ms, flags, up);
	runner_free(r);
	return rc;
}
