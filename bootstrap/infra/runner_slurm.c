/*
 * The Slurm runner: a node of a Slurm allocation, reached with a job step that overlaps
 * the allocation's other steps:
 *
 *   srun -QQQ -u --jobid=JOB --overlap -N1 -n1 -w NODE --input=0 --chdir=/ /bin/sh -c SCRIPT
 *
 * srun execs the command on the node as it is given (no shell parses it before the
 * node's /bin/sh), so SCRIPT is one argv element and needs no quoting here. stdin goes to
 * task 0, the only one, byte for byte until EOF (binaries and tar streams go through
 * it). -QQQ silences srun's own lines ("task 0: Exited with exit code 1"), so the
 * script's stderr is the script's. -u (--unbuffered) makes slurmstepd pass the task's
 * output on as it comes: by default it holds what follows the last newline until more
 * comes or the task ends, which stalls a two-way session (a sync's answer that does not
 * end in '\n' never reaches us while the node waits for our next record). It is still a
 * pipe, byte for byte; only --pty makes a terminal.
 *
 * Each node gets its own HOME (the node row's home, e.g. /tmp/skiff-slurm-UID/JOB/NODE):
 * the nodes of a cluster often share a file system (an NFS home; on a test machine, the
 * whole host), and ~/.skiff, the supervisor's socket and ~/sky_workdir must be the node's
 * own. SKIFF_HOME, which srun would carry over from the launcher's environment, is
 * removed, as on local nodes.
 *
 * Transport failures: srun runs under a small local sh that asks squeue, only when srun
 * exits non-zero, whether the allocation still runs. If it ended (scancel, time limit,
 * preemption, a failed node), the sh writes "the Slurm allocation J has ended (STATE)" to
 * the diag file (stderr for runner_spawn()), after RUNNER_GONE_LINE (the node is gone:
 * runner.h's last_gone), and exits 255, which runner.c reports as -EHOSTUNREACH, as it
 * does for ssh; a squeue that cannot answer is a transport failure too, the node not
 * said to be gone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/infra/runner.h"
#include "lib/buf.h"
#include "lib/log.h"
#include "lib/quote.h"
#include "lib/util.h"
#include "lib/banned.h"

struct slurm {
	char *job;  /* allocation (job) id: digits */
	char *node; /* Slurm node name */
	char *home; /* the node's HOME */
};

/*
 * The local side. $1.. is the srun argv. JOB is digits; DIAG and the node name are
 * quoted. Slurm states in which the allocation still holds its nodes: RUNNING,
 * CONFIGURING (nodes booting), SUSPENDED, RESIZING.
 */
static const char wrap_fmt[] =
        "\"$@\"\n"
        "rc=$?\n"
        "[ \"$rc\" -eq 0 ] && exit 0\n"
        "st=$(squeue -h -t all -j %1$s -o %%T 2>&1)\n"
        "q=$?\n"
        "g='" RUNNER_GONE_LINE "'\n"
        "case $q:$st in\n"
        "0:RUNNING | 0:CONFIGURING | 0:SUSPENDED | 0:RESIZING) exit \"$rc\" ;;\n"
        "0:?*) m=\"the Slurm allocation %1$s has ended ($st)\" ;;\n"
        "0:* | *'Invalid job id'*) m='the Slurm allocation %1$s has ended (Slurm no longer "
        "knows it)' ;;\n"
        "*) m=\"cannot ask Slurm about allocation %1$s: $st\" g= ;;\n"
        "esac\n"
        "d=%2$s\n"
        "if [ -n \"$d\" ]; then\n"
        "\t{ [ -z \"$g\" ] || printf '%%s\\n' \"$g\"; printf '%%s\\n' \"$m\"; } >>\"$d\"\n"
        "else\n"
        "\tprintf 'skiff: error: node %%s: %%s\\n' %3$s \"$m\" >&2\n"
        "fi\n"
        "exit 255\n";

static int slurm_build_argv(struct runner *r, const char *script, int interactive, struct argv *out)
{
	const struct slurm *s = r->priv;
	struct buf wrap = BUF_INIT(0), diag = BUF_INIT(0), node = BUF_INIT(0), remote = BUF_INIT(0);
	int rc;

	if (!script && !interactive)
		return -EINVAL;
	rc = sh_quote(&diag, r->diag_path ? r->diag_path : "");
	if (!rc)
		rc = sh_quote(&node, s->node);
	/* The node's HOME, made private on first use, is the working directory. */
	if (!rc)
		rc = sh_quote_env(&remote, "HOME", s->home);
	if (rc)
		goto out;
	buf_adds(&remote, "\nexport HOME\n"
	                  "unset SKIFF_HOME\n"
	                  "(umask 077 && mkdir -p \"$HOME\") && cd \"$HOME\" || exit 1\n");
	if (script)
		buf_adds(&remote, script);
	else
		buf_adds(&remote, "exec /bin/sh -i");
	buf_addf(&wrap, wrap_fmt, s->job, diag.p, node.p);

	argv_push(out, "/bin/sh");
	argv_push(out, "-c");
	argv_push(out, wrap.p);
	argv_push(out, "skiff-srun"); /* $0 */
	argv_push(out, "srun");
	if (!interactive) {
		argv_push(out, "-QQQ");
		argv_push(out, "-u");
	}
	argv_pushf(out, "--jobid=%s", s->job);
	argv_push(out, "--overlap");
	argv_push(out, "-N1");
	argv_push(out, "-n1");
	argv_push(out, "-w");
	argv_push(out, s->node);
	argv_push(out, interactive ? "--pty" : "--input=0");
	argv_push(out, "--chdir=/");
	argv_push(out, "/bin/sh");
	argv_push(out, "-c");
	argv_push(out, remote.p);
out:
	buf_release(&wrap);
	buf_release(&diag);
	buf_release(&node);
	buf_release(&remote);
	return rc;
}

static void slurm_release(struct runner *r)
{
	struct slurm *s = r->priv;

	if (s) {
		free(s->job);
		free(s->node);
		free(s->home);
		free(s);
	}
	r->priv = NULL;
}

static const struct runner_ops slurm_ops = {
        .kind = "slurm",
        .build_argv = slurm_build_argv,
        .build_env = NULL,
        .release = slurm_release,
        .cwd = NULL,
        .transport_status = 255,
};

/* A Slurm node name or job id as srun's argv takes it: no option, no blanks. */
static int word_ok(const char *s, const char *extra)
{
	if (!s || !*s || *s == '-' || strlen(s) > 255)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr(extra, *s)))
			return 0;
	return 1;
}

struct runner *runner_slurm_new(const char *name, const char *ip, const char *job, const char *node,
                                const char *home)
{
	struct runner *r;
	struct slurm *s;
	const char *sh = skiff_home();

	if (!word_ok(job, "") || strspn(job, "0123456789") != strlen(job) ||
	    !word_ok(node, "._-") || !home || home[0] != '/') {
		error("node %s: bad Slurm target (job '%s', node '%s', home '%s')", name,
		      job ? job : "", node ? node : "", home ? home : "");
		return NULL;
	}
	s = xcalloc(1, sizeof(*s));
	s->job = xstrdup(job);
	s->node = xstrdup(node);
	s->home = xstrdup(home);
	r = runner_new(&slurm_ops, name, ip);
	r->priv = s;
	/* The diag files (the wrapper's "allocation ended" notes) go to $SKIFF_HOME/slurm. */
	if (sh) {
		char *d = xasprintf("%s/slurm", sh);

		if (!mkdir_p(sh, 0700) && !ensure_private_dir(d))
			r->diag_dir = d;
		else
			free(d);
	}
	return r;
}

const char *runner_slurm_job(const struct runner *r)
{
	return r && r->ops == &slurm_ops ? ((const struct slurm *)r->priv)->job : NULL;
}
