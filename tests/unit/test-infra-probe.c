/*
 * `skiff check`'s view of infras: what a probe's facts mean (infra_probe_judge()), how a
 * probe runs a command (missing, failing, hanging), the specs it is given, and the
 * warnings launch and check share (infra_ignored_fields(), infra_task_warnings()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/infra/infra.h"
#include "bootstrap/infra/infra_internal.h"
#include "lib/log.h"
#include "lib/task.h"
#include "lib/util.h"
#include "tests/unit/harness.h"

/* The judgement of a probe set up as given: enabled (1/0) and the reason, in *reason. */
static int judge(enum infra_probe_outcome outcome, const char *subject, int is_file, int code,
                 const char *said, char **reason)
{
	struct infra_probe p;
	struct buf b = BUF_INIT(0);
	int on;

	infra_probe_init(&p);
	infra_probe_set(&p, outcome, subject);
	p.is_file = is_file;
	p.code = code;
	p.timeout_ms = code;
	if (said)
		infra_probe_say(&p, "%s", said);
	if (outcome == INFRA_PROBE_INVALID) {
		yerr_add(&p.errs, subject, 2, 3, "bad");
		yerr_add(&p.errs, subject, 4, 1, "worse");
	}
	on = infra_probe_judge(&p, &b);
	*reason = buf_detach(&b, NULL);
	infra_probe_release(&p);
	return on;
}

static void test_judge(void)
{
	static const struct {
		enum infra_probe_outcome outcome;
		const char *subject;
		int is_file, code;
		const char *said;
		int want_on;
		const char *want;
	} cases[] = {
	        {INFRA_PROBE_OK, "podman info", 0, 0, "podman 4.3.1 answers", 1,
	         "podman 4.3.1 answers"},
	        {INFRA_PROBE_OK, NULL, 0, 0, NULL, 1, "nothing to check"},
	        {INFRA_PROBE_MISSING, "kubectl config current-context", 0, 0, NULL, 0,
	         "'kubectl' is not in PATH"},
	        {INFRA_PROBE_MISSING, "/p/pools.yaml", 1, 0, "write one", 0,
	         "no file '/p/pools.yaml'; write one"},
	        {INFRA_PROBE_CANNOT_RUN, "sinfo", 0, EACCES, NULL, 0,
	         "cannot run 'sinfo': Permission denied"},
	        {INFRA_PROBE_EXIT, "docker info", 0, 1, "Cannot connect to the Docker daemon", 0,
	         "'docker info' failed (exit 1): Cannot connect to the Docker daemon"},
	        {INFRA_PROBE_EXIT, "docker info", 0, 125, NULL, 0,
	         "'docker info' failed (exit 125)"},
	        {INFRA_PROBE_TIMEOUT, "kubectl version", 0, 5000, NULL, 0,
	         "'kubectl version' did not answer within 5 s"},
	        {INFRA_PROBE_TIMEOUT, "kubectl version", 0, 4001, NULL, 0,
	         "'kubectl version' did not answer within 5 s"},
	        {INFRA_PROBE_INVALID, "/p/pools.yaml", 1, 0, NULL, 0,
	         "'/p/pools.yaml' is not valid (2 errors)"},
	        {INFRA_PROBE_UNUSABLE, "sinfo", 0, 0, "no partition 'x'; sinfo lists debug", 0,
	         "no partition 'x'; sinfo lists debug"},
	        {INFRA_PROBE_UNUSABLE, NULL, 0, 0, NULL, 0, "not usable"},
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		char *reason = NULL;
		int on = judge(cases[i].outcome, cases[i].subject, cases[i].is_file, cases[i].code,
		               cases[i].said, &reason);

		is_int(on, cases[i].want_on, "case %zu: %s", i, on ? "enabled" : "disabled");
		is_str(reason, cases[i].want, "case %zu: the reason", i);
		free(reason);
	}
}

/* What a command said becomes one printable line of bounded length. */
static void test_say(void)
{
	struct infra_probe p;
	char *big = xcalloc(INFRA_PROBE_LINE_MAX * 2 + 1, 1);

	infra_probe_init(&p);
	infra_probe_say(&p, "a\nb\tc\033[31m");
	is_str(p.said.p, "a b c [31m", "control bytes are spaces");
	memset(big, 'x', INFRA_PROBE_LINE_MAX * 2);
	infra_probe_say(&p, "%s", big);
	is_int(p.said.len, INFRA_PROBE_LINE_MAX + 3, "a long line is cut");
	ok(ends_with(p.said.p, "..."), "and says so");
	/* A cut never splits a UTF-8 character. */
	memset(big, 'x', INFRA_PROBE_LINE_MAX * 2);
	memcpy(big + INFRA_PROBE_LINE_MAX - 1, "\xc3\xa9", 2);
	infra_probe_say(&p, "%s", big);
	is_int(p.said.len, INFRA_PROBE_LINE_MAX - 1 + 3, "cut before the character");
	infra_probe_release(&p);
	free(big);
}

/* infra_probe_run(): how a command went, within the deadline. */
static void test_run(void)
{
	char *missing[] = {"skiff-no-such-command-here", NULL};
	char *fails[] = {"sh", "-c", "echo first >&2; echo 'it broke' >&2; exit 3", NULL};
	char *answers[] = {"sh", "-c", "echo 1.2.3", NULL};
	char *hangs[] = {"sh", "-c", "sleep 30", NULL};
	struct buf out = BUF_INIT(1024);
	struct infra_probe p;
	int64_t t0;

	infra_probe_init(&p);
	is_int(infra_probe_run(&p, "skiff-no-such-command-here info", missing,
	                       now_ms() + INFRA_PROBE_TIMEOUT_MS, NULL),
	       -1, "a missing command fails");
	is_int(p.outcome, INFRA_PROBE_MISSING, "as missing");
	is_str(p.subject, "skiff-no-such-command-here info", "named as given");

	is_int(infra_probe_run(&p, "sh fails", fails, now_ms() + INFRA_PROBE_TIMEOUT_MS, NULL), -1,
	       "a command that exits 3 fails");
	ok(p.outcome == INFRA_PROBE_EXIT && p.code == 3, "with its exit code");
	is_str(p.said.p, "it broke", "and the last line of its stderr");

	is_int(infra_probe_run(&p, "sh answers", answers, now_ms() + INFRA_PROBE_TIMEOUT_MS, &out),
	       0, "a command that answers succeeds");
	ok(p.outcome == INFRA_PROBE_OK && !p.said.len, "outcome OK, nothing said yet");
	buf_rtrim(&out);
	is_str(out.p, "1.2.3", "its stdout is the caller's");

	t0 = now_ms();
	is_int(infra_probe_run(&p, "sh hangs", hangs, now_ms() + 300, NULL), -1,
	       "a command that hangs fails");
	ok(now_ms() - t0 < 3000, "at the deadline, not when it ends (%lld ms)",
	   (long long)(now_ms() - t0));
	ok(p.outcome == INFRA_PROBE_TIMEOUT && p.timeout_ms > 0 && p.timeout_ms <= 300,
	   "as a timeout of what was left (%d ms)", p.timeout_ms);

	is_int(infra_probe_run(&p, "sh answers", answers, now_ms() - 1, NULL), -1,
	       "past the deadline nothing runs");
	is_int(p.outcome, INFRA_PROBE_TIMEOUT, "a timeout");
	infra_probe_release(&p);
	buf_release(&out);
}

/* The inventory: a table's rows, fields split from a command's line, and the cut. */
static void test_inventory(void)
{
	static const char *const cols[] = {"pool", "container", "status"};
	char line[] = "lab\tc1\tUp 3 seconds ago\textra", empty[] = "", *f[3];
	char *fail[] = {"sh", "-c", "echo no engine >&2; exit 125", NULL};
	const char *cells[] = {"lab", NULL, "Exited (0)"};
	struct infra_inv *inv;
	struct infra_probe p;
	int i, r = 0;

	is_int(infra_inv_fields(line, '\t', f, 3), 3, "three fields");
	ok(!strcmp(f[0], "lab") && !strcmp(f[1], "c1") && !strcmp(f[2], "Up 3 seconds ago\textra"),
	   "the last holds the rest");
	is_int(infra_inv_fields(empty, '\t', f, 3), 1, "an empty line is one empty field");
	ok(!*f[0] && !*f[1] && !*f[2], "the fields not there are empty");

	infra_probe_init(&p);
	inv = infra_inv_table(&p, "containers", cols, 3);
	ok(inv == &p.inv[0] && p.inv[0].of && !p.inv[1].of, "the first table is taken");
	is_int(infra_inv_add(inv, "podman/c1", NULL, 0, cells), 0, "a row");
	ok(!strcmp(inv->rows[0].cells[1], "") && !strcmp(inv->rows[0].node_key, "podman/c1") &&
	           !inv->rows[0].ip,
	   "a NULL cell is empty; the node key kept");
	for (i = 1; i <= INFRA_INV_ROWS_MAX && !r; i++)
		r = infra_inv_add(inv, NULL, NULL, 0, cells);
	is_int(r, -ENOBUFS, "rows past the bound are refused");
	is_int((int)inv->nrows, INFRA_INV_ROWS_MAX, "after %d rows", INFRA_INV_ROWS_MAX);
	ok(strstr(inv->said.p, "the list is cut") != NULL, "and the table says so: %s",
	   inv->said.p);

	inv = infra_inv_table(&p, "pods", cols, 2);
	p.outcome = INFRA_PROBE_OK;
	is_int(infra_inv_run(inv, "podman ps", fail, now_ms() + INFRA_PROBE_TIMEOUT_MS, NULL), -1,
	       "a listing that fails");
	is_str(inv->said.p, "'podman ps' failed (exit 125): no engine", "says why in its table");
	is_int(p.outcome, INFRA_PROBE_OK, "and leaves the infra usable");
	infra_probe_release(&p);
	ok(!p.inv[0].of && !p.inv[0].nrows, "released");
}

/* infra_probe_specs(): every infra by name, a cloud, a bad spec. */
static void test_specs(void)
{
	const char *specs[] = {"local", "AWS", "ssh"};
	const char *bad[] = {"local", "k8s/-x"};
	struct infra_probe v[3];
	struct buf reason = BUF_INIT(0);
	char *pools = xasprintf("/tmp/skiff-unit-infra-probe-%d.yaml", (int)getpid());
	size_t i;

	setenv(INFRA_POOLS_ENV, pools, 1);
	is_int(infra_probe_specs(specs, 3, v), 0, "local, a cloud and ssh are probed");
	is_str(v[0].spec, "local", "local");
	is_int(infra_probe_judge(&v[0], &reason), 1, "local is enabled");
	ok(strstr(reason.p, "/local"), "under the state directory: %s", reason.p);
	is_str(v[1].spec, "AWS", "a cloud keeps its name as given");
	buf_reset(&reason);
	is_int(infra_probe_judge(&v[1], &reason), 0, "a cloud is disabled");
	ok(strstr(reason.p, "does not provision cloud VMs"), "saying why: %s", reason.p);
	buf_reset(&reason);
	is_int(infra_probe_judge(&v[2], &reason), 0, "ssh without a pool file is disabled");
	ok(starts_with(reason.p, "no file '") && strstr(reason.p, pools) &&
	           strstr(reason.p, INFRA_POOLS_ENV),
	   "naming the file and how to give one: %s", reason.p);
	for (i = 0; i < 3; i++)
		infra_probe_release(&v[i]);

	is_int(infra_probe_specs(bad, 2, v), -EINVAL, "a spec that is not one is refused");
	ok(strstr(v[0].said.p, "k8s/-x"), "naming it: %s", v[0].said.p);
	for (i = 0; i < 2; i++)
		infra_probe_release(&v[i]);

	ok(infra_is_named("k8s/ctx") && infra_is_named("Kubernetes") && infra_is_named("aws") &&
	           infra_is_named("ssh/pool") && infra_is_named("slurm"),
	   "infras and clouds are named as such");
	ok(!infra_is_named("task.yaml") && !infra_is_named("-") && !infra_is_named(""),
	   "files are not");
	unsetenv(INFRA_POOLS_ENV);
	buf_release(&reason);
	free(pools);
}

static struct task_list parse(const char *text)
{
	struct task_list l = TASK_LIST_INIT;
	struct yerrors errs = YERRORS_INIT;

	if (task_parse_buf(&l, "t.yaml", text, strlen(text), &errs))
		yerr_print(&errs, stdout);
	yerr_release(&errs);
	return l;
}

/* The one decision launch and check share: what an infra ignores of a task. */
static void test_ignored(void)
{
	struct task_list l = parse("resources:\n  use_spot: true\n  disk_size: 100\n"
	                           "  image_id: docker:ubuntu\nservice: {readiness_probe: /}\n"
	                           "run: x\n");
	struct buf msg[INFRA_IGNORED_N] = {BUF_INIT(0), BUF_INIT(0)};
	struct yerrors errs = YERRORS_INIT;
	size_t k;

	if (!ok(l.n == 1, "the task parses"))
		return;
	is_int(infra_ignored_fields(l.tasks[0], infra_ops_find("ssh"), "ssh/a", msg), 2,
	       "ssh: two warnings");
	is_str(msg[INFRA_IGNORED_RES].p,
	       "ignored on ssh/a infra (only a cloud can honour them): "
	       "use_spot, disk_size, image_id",
	       "the resource fields");
	ok(starts_with(msg[INFRA_IGNORED_TASK].p, "ignored on ssh/a infra: service ("),
	   "the task fields: %s", msg[INFRA_IGNORED_TASK].p);
	for (k = 0; k < INFRA_IGNORED_N; k++)
		buf_reset(&msg[k]);
	infra_ignored_fields(l.tasks[0], infra_ops_find("podman"), "podman", msg);
	ok(!strstr(msg[INFRA_IGNORED_RES].p, "image_id"), "podman honours a docker: image");

	/* check: the task's own infra (local), at the resources' position and the task's. */
	is_int(infra_task_warnings(l.tasks[0], NULL, "t.yaml", &errs), 2, "check: two warnings");
	ok(errs.n == 2 && errs.v[0].warning && errs.v[0].line == 2 &&
	           strstr(errs.v[0].msg, "ignored on local infra (only a cloud"),
	   "resource fields at the resources (line %d)", errs.n ? errs.v[0].line : 0);
	ok(errs.n == 2 && errs.v[1].line == 1 && strstr(errs.v[1].msg, "service"),
	   "task fields at the task");
	is_int(errs.nerrors, 0, "warnings, not errors");
	yerr_release(&errs);
	/* --infra over the task's; a cloud is one warning saying why. */
	is_int(infra_task_warnings(l.tasks[0], "aws", "t.yaml", &errs), 1, "--infra aws: one");
	ok(errs.n == 1 && strstr(errs.v[0].msg, "infra 'aws': skiff does not provision"),
	   "launch refuses it, and why");
	yerr_release(&errs);
	for (k = 0; k < INFRA_IGNORED_N; k++)
		buf_release(&msg[k]);
	task_list_release(&l);

	/* Alternatives on one infra warn once; each other infra warns for itself. */
	l = parse("resources:\n  use_spot: true\n  any_of:\n    - infra: ssh/a\n"
	          "    - infra: ssh/a\n      cpus: 2\n    - infra: k8s\nrun: x\n");
	if (!ok(l.n == 1, "a task of three alternatives parses"))
		return;
	is_int(infra_task_warnings(l.tasks[0], NULL, "t.yaml", &errs), 2,
	       "two infras, two warnings");
	ok(errs.n == 2 && strstr(errs.v[0].msg, "on ssh/a infra") &&
	           strstr(errs.v[1].msg, "on k8s infra"),
	   "each names its infra");
	yerr_release(&errs);
	task_list_release(&l);

	l = parse("resources:\n  cpus: 2\nrun: x\n");
	if (ok(l.n == 1, "a plain task parses"))
		is_int(infra_task_warnings(l.tasks[0], NULL, "t.yaml", &errs), 0,
		       "nothing to warn about on local");
	yerr_release(&errs);
	task_list_release(&l);
}

int main(void)
{
	log_set_level(LOG_QUIET);
	plan_run(test_judge);
	plan_run(test_say);
	plan_run(test_run);
	plan_run(test_inventory);
	plan_run(test_specs);
	plan_run(test_ignored);
	return done_testing();
}
