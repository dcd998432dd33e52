/*
 * The Slurm runner (bootstrap/infra/runner_slurm.c) and the Slurm infra's pure parts: the exact
 * argv it builds, infra specs and node keys, and its transport through stand-ins for
 * srun and squeue (scripts first in PATH: srun runs its command locally, squeue answers
 * from a file). That shows the script (hostile bytes included) and stdin (every byte
 * value) arrive verbatim, a script's exit status passes through, and an allocation that
 * ended is told apart from a script that failed. Real Slurm is in tests/t/t0710-slurm.sh.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/harness.h"
#include "bootstrap/infra/infra.h"
#include "bootstrap/infra/infra_slurm.h"
#include "bootstrap/infra/runner.h"
#include "lib/buf.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "lib/banned.h"

static char tmp[64];

static void test_argv(void)
{
	struct runner *r = runner_slurm_new("tn1", "10.0.0.1", "42", "tn1", "/n/42/tn1");
	struct argv a;
	struct buf want = BUF_INIT(0);
	static const char *const words[] = {"srun",      "-QQQ",    "-u", "--jobid=42", "--overlap",
	                                    "-N1",       "-n1",     "-w", "tn1",        "--input=0",
	                                    "--chdir=/", "/bin/sh", "-c"};
	const char *script = "echo 'it''s' \"$HOME\" $(id) `x` \\\n\t\x01\xff; exit 7";
	size_t i;

	ok(r != NULL, "a runner for job 42 on tn1");
	if (!r)
		return;
	is_str(r->ops->kind, "slurm", "kind");
	argv_init(&a);
	is_int(r->ops->build_argv(r, script, 0, &a), 0, "builds");
	ok(a.n == 5 + ARRAY_SIZE(words), "argv has %zu words", a.n);
	if (a.n == 5 + ARRAY_SIZE(words)) {
		is_str(a.v[0], "/bin/sh", "a local sh wraps srun");
		is_str(a.v[1], "-c", "-c");
		ok(strstr(a.v[2], "squeue -h -t all -j 42 -o %T") != NULL,
		   "the wrapper asks squeue");
		is_str(a.v[3], "skiff-srun", "$0");
		for (i = 0; i < ARRAY_SIZE(words); i++)
			is_str(a.v[4 + i], words[i], "word %zu", i);
		buf_adds(&want, "HOME='/n/42/tn1'\nexport HOME\nunset SKIFF_HOME\n");
		ok(starts_with(a.v[a.n - 1], want.p), "the node's HOME first: %s", a.v[a.n - 1]);
		ok(strlen(a.v[a.n - 1]) > strlen(script) &&
		           !strcmp(a.v[a.n - 1] + strlen(a.v[a.n - 1]) - strlen(script), script),
		   "the script last, verbatim");
	}
	argv_release(&a);
	argv_init(&a);
	is_int(r->ops->build_argv(r, NULL, 1, &a), 0, "interactive builds");
	for (i = 0; i < a.n && strcmp(a.v[i], "--pty"); i++)
		;
	ok(i < a.n, "interactive: --pty");
	for (i = 0; i < a.n && strcmp(a.v[i], "-QQQ"); i++)
		;
	ok(i == a.n, "interactive: srun not silenced");
	for (i = 0; i < a.n && strcmp(a.v[i], "-u"); i++)
		;
	ok(i == a.n, "interactive: no -u (the pty passes output on)");
	argv_release(&a);
	argv_init(&a);
	ok(r->ops->build_argv(r, NULL, 0, &a) == -EINVAL, "no script, not interactive: -EINVAL");
	argv_release(&a);
	is_str(runner_slurm_job(r), "42", "runner_slurm_job");
	runner_free(r);
	buf_release(&want);

	ok(!runner_slurm_new("x", "ip", "4a", "tn1", "/h"), "job id not digits: refused");
	ok(!runner_slurm_new("x", "ip", "42", "-w", "/h"), "node starting with '-': refused");
	ok(!runner_slurm_new("x", "ip", "42", "a b", "/h"), "node with a blank: refused");
	ok(!runner_slurm_new("x", "ip", "42", "tn1", "h"), "relative home: refused");
}

static void test_specs(void)
{
	struct infra inf;
	char *job, *node;

	is_int(infra_parse("slurm/debug", &inf), 0, "slurm/debug parses");
	ok(inf.kind == INFRA_SLURM, "kind slurm");
	is_str(inf.spec, "slurm/debug", "spec");
	is_str(inf.pool, "debug", "partition");
	infra_release(&inf);
	is_int(infra_parse("SLURM", &inf), 0, "bare slurm parses");
	is_str(inf.spec, "slurm", "spec slurm");
	ok(inf.pool == NULL, "no partition: Slurm's default");
	infra_release(&inf);
	ok(infra_parse("slurm/", &inf) < 0, "slurm/ refused");
	ok(infra_parse("slurm/a/b", &inf) < 0, "slurm/a/b refused");
	ok(infra_parse("slurm/-p", &inf) < 0, "a partition that looks like an option refused");

	is_int(infra_slurm_key_parse("slurm/4711/node-017.a", &job, &node), 0, "key parses");
	is_str(job, "4711", "job");
	is_str(node, "node-017.a", "node");
	free(job);
	free(node);
	ok(infra_slurm_key_parse("ssh/1.2.3.4:22", &job, &node) < 0, "ssh key: not slurm");
	ok(infra_slurm_key_parse("slurm/47x/n", &job, &node) < 0, "bad job id");
	ok(infra_slurm_key_parse("slurm/47/", &job, &node) < 0, "no node");
	ok(infra_slurm_key_parse("slurm/47/a b", &job, &node) < 0, "node with a blank");
}

static int write_exe(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	fclose(f);
	return chmod(path, 0755);
}

/* srun: skip its options up to the command (/bin/sh), fail like srun when told to. */
static const char fake_srun[] = "#!/bin/sh\n"
                                "[ -e \"$FAKE/srun-fails\" ] && exit 1\n"
                                "while [ \"$1\" != /bin/sh ]; do shift; done\n"
                                "exec \"$@\"\n";
static const char fake_squeue[] = "#!/bin/sh\n"
                                  "if [ -e \"$FAKE/down\" ]; then\n"
                                  "\techo 'slurm_load_jobs error: Unable to contact slurm "
                                  "controller (connect failure)' >&2\n"
                                  "\texit 1\n"
                                  "fi\n"
                                  "if [ -e \"$FAKE/gone\" ]; then\n"
                                  "\techo 'slurm_load_jobs error: Invalid job id specified' >&2\n"
                                  "\texit 1\n"
                                  "fi\n"
                                  "cat \"$FAKE/state\"\n";

static void set_state(const char *state)
{
	char path[128];
	FILE *f;

	xsnprintf(path, sizeof(path), "%s/state", tmp);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "%s\n", state);
		fclose(f);
	}
}

static void test_transport(void)
{
	struct buf out = BUF_INIT(4 << 20), err = BUF_INIT(1 << 20), in = BUF_INIT(0);
	struct runner *r;
	char path[256], home[128], fails[128], gone[128];
	const char *old = getenv("PATH");
	char *newpath;
	int status = -1, rc, i;

	xsnprintf(path, sizeof(path), "%s/srun", tmp);
	ok(!write_exe(path, fake_srun), "fake srun");
	xsnprintf(path, sizeof(path), "%s/squeue", tmp);
	ok(!write_exe(path, fake_squeue), "fake squeue");
	newpath = xasprintf("%s:%s", tmp, old ? old : "/usr/bin:/bin");
	setenv("PATH", newpath, 1);
	setenv("FAKE", tmp, 1);
	xsnprintf(home, sizeof(home), "%s/nodes/42/tn1", tmp);
	xsnprintf(fails, sizeof(fails), "%s/srun-fails", tmp);
	xsnprintf(gone, sizeof(gone), "%s/gone", tmp);
	set_state("RUNNING");
	r = runner_slurm_new("tn1", "10.0.0.1", "42", "tn1", home);
	ok(r != NULL, "runner");
	if (!r)
		goto out;

	for (i = 0; i < (1 << 20); i++)
		buf_addch(&in, (char)(i * 7 + i / 256));
	rc = runner_capture(r, "echo \"$HOME|$(pwd)|${SKIFF_HOME-unset}\"", in.p, in.len, &out,
	                    &err, 10000, &status);
	is_int(rc, 0, "capture runs");
	is_int(status, 0, "exit 0");
	{
		char want[512];

		xsnprintf(want, sizeof(want), "%s|%s|unset\n", home, home);
		ok(starts_with(out.p, want), "HOME and cwd are the node's, SKIFF_HOME unset: %s",
		   out.p);
	}
	{
		struct stat st;

		ok(!stat(home, &st) && (st.st_mode & 0777) == 0700, "the node's home made 0700");
	}

	buf_reset(&out);
	rc = runner_capture(r, "cat", in.p, in.len, &out, &err, 10000, &status);
	ok(!rc && !status && out.len == in.len && !memcmp(out.p, in.p, in.len),
	   "1 MiB of every byte value through stdin and back, verbatim");

	rc = runner_run(r, "exit 3", NULL, 10000, &status);
	is_int(rc, 0, "a failing script is no transport error");
	is_int(status, 3, "its status passes through (allocation RUNNING)");
	rc = runner_run(r, "exit 255", NULL, 10000, &status);
	is_int(rc, 0, "a script's own 255 while the allocation runs");
	is_int(status, 255, "passes through");

	write_exe(fails, "");
	set_state("CANCELLED");
	rc = runner_run(r, "true", NULL, 10000, &status);
	is_int(rc, -EHOSTUNREACH, "srun fails, allocation CANCELLED: transport failure");
	is_str(r->last_error.p, "the Slurm allocation 42 has ended (CANCELLED)", "says so");
	ok(r->last_gone, "the node is gone");
	write_exe(gone, "");
	rc = runner_run(r, "true", NULL, 10000, &status);
	is_int(rc, -EHOSTUNREACH, "Slurm forgot the job: transport failure");
	ok(strstr(r->last_error.p, "42 has ended (Slurm no longer knows it)") != NULL, "%s",
	   r->last_error.p);
	ok(r->last_gone, "gone too");
	{
		char down[128];

		xsnprintf(down, sizeof(down), "%s/down", tmp);
		write_exe(down, "");
		rc = runner_run(r, "true", NULL, 10000, &status);
		is_int(rc, -EHOSTUNREACH,
		       "srun fails, squeue cannot reach slurmctld: transport failure");
		ok(strstr(r->last_error.p, "cannot ask Slurm about allocation 42: slurm_load_jobs "
		                           "error: Unable to contact slurm controller") != NULL,
		   "%s", r->last_error.p);
		ok(!r->last_gone, "the node not said to be gone");
		unlink(down);
	}
	unlink(fails);
	unlink(gone);
	set_state("RUNNING");
	rc = runner_run(r, "exit 0", NULL, 10000, &status);
	is_int(rc, 0, "back to a running allocation");
	runner_free(r);
out:
	setenv("PATH", old ? old : "/usr/bin:/bin", 1);
	free(newpath);
	buf_release(&out);
	buf_release(&err);
	buf_release(&in);
}

int main(void)
{
	char *home;

	xsnprintf(tmp, sizeof(tmp), "/tmp/skiff-test-slurm.XXXXXX");
	if (!mkdtemp(tmp))
		return 1;
	home = xasprintf("%s/skiff", tmp);
	setenv("SKIFF_HOME", home, 1);
	plan_run(test_argv);
	plan_run(test_specs);
	plan_run(test_transport);
	{
		char *rm[] = {"rm", "-rf", tmp, NULL};
		int st = 0;

		if (run_capture(rm, NULL, NULL, NULL, NULL, &st) || st)
			fprintf(stderr, "# cannot remove %s\n", tmp);
	}
	free(home);
	return done_testing();
}
