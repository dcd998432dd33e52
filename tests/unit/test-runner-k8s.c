/*
 * The exec-CLI runners (bootstrap/infra/runner_k8s.c, bootstrap/infra/runner_container.c): the
 * exact argv each builds, and the transport under runner_exec_wrap().
 *
 * No Kubernetes API server can run here, so the kubectl side is a stand-in: a `kubectl`
 * script first in PATH that runs `exec ... -- CMD...` as CMD locally (in a directory
 * per pod) and answers `get pod POD -o jsonpath={.status.phase}` from a file. That is a
 * transport test, not a Kubernetes test: it shows that the scripts (hostile bytes
 * included) and stdin (1 MiB of every byte value) arrive verbatim through the argv the
 * runner builds and the wrapper, that a script's exit status passes through, and that a
 * pod that is gone is told apart from a script that failed. Real podman is used by
 * tests/t/t0700-podman.sh.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/harness.h"
#include "bootstrap/infra/runner.h"
#include "lib/buf.h"
#include "lib/quote.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "lib/banned.h"

static char tmp[64];

/* The argv joined with '|' (the expected values hold no '|'). */
static char *argv_str(const struct argv *a, size_t from)
{
	struct buf b = BUF_INIT(0);
	size_t i;

	for (i = from; i < a->n; i++) {
		if (i > from)
			buf_addch(&b, '|');
		buf_adds(&b, a->v[i]);
	}
	return buf_detach(&b, NULL);
}

/*
 * The argv for script; wrapped: the wrapper's own words ("/bin/sh|-c|WRAPPER|skiff-exec|
 * PROBE|RUNNING|DIAG|NAME|CODES|UNSURE") are checked apart and left out of *exec.
 */
static int build(struct runner *r, const char *script, int interactive, char **exec, char **probe,
                 char **running, char **codes)
{
	struct argv a;
	int rc;

	argv_init(&a);
	rc = r->ops->build_argv(r, script, interactive, &a);
	*exec = *probe = *running = *codes = NULL;
	if (rc)
		goto out;
	if (a.n > 10 && !strcmp(a.v[0], "/bin/sh") && !strcmp(a.v[1], "-c") &&
	    !strcmp(a.v[3], "skiff-exec")) {
		*probe = xstrdup(a.v[4]);
		*running = xstrdup(a.v[5]);
		*codes = xasprintf("%s%s", a.v[8], *a.v[9] ? " (a failed probe: no answer)" : "");
		*exec = argv_str(&a, 10);
	} else {
		*exec = argv_str(&a, 0);
	}
out:
	argv_release(&a);
	return rc;
}

static void free4(char *a, char *b, char *c, char *d)
{
	free(a);
	free(b);
	free(c);
	free(d);
}

static void test_k8s_argv(void)
{
	struct k8s_target t = {.context = "kind-dev",
	                       .ns = "ml",
	                       .pod = "train-0",
	                       .container = "main",
	                       .ip = "10.4.0.7"};
	const char *hostile = "echo 'it''s' \"$HOME\" $(id) `x`\n;|&";
	struct runner *r = runner_k8s_new("train-0", &t);
	char *ex = NULL, *pr = NULL, *run = NULL, *codes = NULL, *want;

	ok(r != NULL, "k8s runner");
	ok(r && !strcmp(r->ip, "10.4.0.7") && !strcmp(r->ops->kind, "kubernetes") &&
	           r->ops->transport_status == 255,
	   "kind kubernetes, the pod's IP, transport status 255");
	ok(!build(r, "echo hi", 0, &ex, &pr, &run, &codes), "builds");
	is_str(ex, "kubectl|--context|kind-dev|-n|ml|exec|-i|train-0|-c|main|--|sh|-c|echo hi",
	       "kubectl --context CTX -n NS exec -i POD -c CONTAINER -- sh -c SCRIPT");
	is_str(pr,
	       "kubectl --context kind-dev -n ml get pod train-0 --ignore-not-found -o "
	       "'jsonpath={.status.phase}'",
	       "the probe asks for the pod's phase, quoted for sh; none for a pod not found");
	is_str(run, "Running", "a Running pod is reachable");
	is_str(codes, "1 126 127 137 255 (a failed probe: no answer)",
	       "kubectl's own failures are probed; a probe that fails says nothing of the pod");
	free4(ex, pr, run, codes);

	ok(!build(r, hostile, 0, &ex, &pr, &run, &codes), "hostile script builds");
	want = xasprintf("kubectl|--context|kind-dev|-n|ml|exec|-i|train-0|-c|main|--|sh|-c|%s",
	                 hostile);
	is_str(ex, want, "a hostile script is one argv word, unquoted (no shell parses it)");
	free(want);
	free4(ex, pr, run, codes);

	ok(!build(r, NULL, 1, &ex, &pr, &run, &codes), "interactive builds");
	is_str(ex, "kubectl|--context|kind-dev|-n|ml|exec|-i|-t|train-0|-c|main|--|sh",
	       "interactive: exec -i -t, a shell, no wrapper");
	ok(!pr, "no probe for a terminal session");
	free4(ex, pr, run, codes);
	ok(build(r, NULL, 0, &ex, &pr, &run, &codes) == -EINVAL,
	   "no script, not interactive: EINVAL");
	free4(ex, pr, run, codes);
	runner_free(r);

	memset(&t, 0, sizeof(t));
	t.pod = "p";
	r = runner_k8s_new("p", &t);
	ok(r && !strcmp(r->ip, "p"), "no IP: the pod's name stands for it");
	ok(r && !build(r, "true", 0, &ex, &pr, &run, &codes), "defaults build");
	is_str(ex, "kubectl|exec|-i|p|--|sh|-c|true",
	       "no context, namespace or container: kubectl's defaults");
	is_str(pr, "kubectl get pod p --ignore-not-found -o 'jsonpath={.status.phase}'",
	       "the probe too");
	free4(ex, pr, run, codes);
	runner_free(r);

	{
		static const struct k8s_target bad[] = {
		        {.pod = "-rm"},
		        {.pod = "a b"},
		        {.pod = ""},
		        {.pod = "p", .ns = "--all"},
		        {.pod = "p", .container = "c;x"},
		        {.pod = "p", .context = "-x"},
		        {.pod = "p", .context = "a b"},
		        {.pod = "p/../q"},
		};
		size_t i;
		int fails = 0;

		for (i = 0; i < ARRAY_SIZE(bad); i++) {
			r = runner_k8s_new("bad", &bad[i]);
			if (r) {
				fails++;
				printf("# target %zu accepted\n", i);
				runner_free(r);
			}
		}
		ok(!fails, "targets that would read as options or hold blanks are refused");
	}
}

static void test_container_argv(void)
{
	struct container_target t = {.engine = "podman", .container = "skiff-c-0", .ip = NULL};
	struct runner *r = runner_container_new("skiff-c-0", &t);
	char *ex = NULL, *pr = NULL, *run = NULL, *codes = NULL;

	ok(r && !strcmp(r->ip, "skiff-c-0") && !strcmp(r->ops->kind, "container"),
	   "container runner; no IP: the container's name");
	ok(r && !build(r, "echo hi", 0, &ex, &pr, &run, &codes), "builds");
	is_str(ex, "podman|exec|-i|skiff-c-0|sh|-c|echo hi", "podman exec -i CTR sh -c SCRIPT");
	is_str(pr, "podman container inspect --format '{{.State.Status}}' skiff-c-0",
	       "the probe asks for the container's state");
	is_str(run, "running", "a running container is reachable");
	is_str(codes, "125 126 127 137 255",
	       "podman's own failures are probed, not exit 1; its probe's answer is the state");
	free4(ex, pr, run, codes);
	ok(r && !build(r, NULL, 1, &ex, &pr, &run, &codes), "interactive builds");
	is_str(ex, "podman|exec|-i|-t|skiff-c-0|sh", "interactive: exec -i -t, no wrapper");
	free4(ex, pr, run, codes);
	runner_free(r);

	t.engine = "docker";
	t.user = "1000:1000";
	t.ip = "172.17.0.2";
	r = runner_container_new("n", &t);
	ok(r && !strcmp(r->ip, "172.17.0.2"), "docker runner with its IP");
	ok(r && !build(r, "true", 0, &ex, &pr, &run, &codes), "builds");
	is_str(ex, "docker|exec|-i|--user|1000:1000|skiff-c-0|sh|-c|true",
	       "docker exec -i --user U CTR sh -c SCRIPT");
	is_str(codes, "1 125 126 127 137 255", "docker says 1 for its own errors: probed");
	free4(ex, pr, run, codes);
	runner_free(r);

	t.engine = "lxc";
	ok(!runner_container_new("n", &t), "an unknown engine is refused");
	t.engine = "podman";
	t.user = NULL;
	t.container = "--privileged";
	ok(!runner_container_new("n", &t), "a container that reads as an option is refused");
	t.container = "c";
	t.user = "root;id";
	ok(!runner_container_new("n", &t), "a user with ';' is refused");
}

/* ---- the transport, through a stand-in kubectl --------------------------------------- */

static const char fake_kubectl[] =
        "#!/bin/sh\n"
        "# stand-in kubectl for tests/unit/test-runner-k8s.c: exec runs CMD locally\n"
        "while :; do\n"
        "\tcase $1 in\n"
        "\t--context|-n) shift 2 ;;\n"
        "\t*) break ;;\n"
        "\tesac\n"
        "done\n"
        "verb=$1; shift\n"
        "down='The connection to the server 127.0.0.1:6443 was refused'\n"
        "case $verb in\n"
        "exec)\n"
        "\t[ \"$1\" = -i ] && shift\n"
        "\tpod=$1; shift\n"
        "\t[ \"$1\" = -c ] && shift 2\n"
        "\t[ \"$1\" = -- ] && shift\n"
        "\td=$FAKE_K8S/$pod\n"
        "\t[ -e \"$FAKE_K8S/down\" ] && { echo \"$down\" >&2; exit 1; }\n"
        "\t[ -d \"$d\" ] && [ ! -e \"$d.gone\" ] ||\n"
        "\t\t{ echo \"Error from server (NotFound): pods \\\"$pod\\\" not found\" >&2; exit 1; }\n"
        "\tcd \"$d\" && HOME=$d exec \"$@\" ;;\n"
        "get)\n"
        "\t[ -e \"$FAKE_K8S/down\" ] && { echo \"$down\" >&2; exit 1; }\n"
        "\tcase \" $* \" in\n"
        "\t*\" --ignore-not-found \"*) [ -e \"$FAKE_K8S/$2.gone\" ] && exit 0 ;;\n"
        "\tesac\n"
        "\t[ -e \"$FAKE_K8S/$2.gone\" ] &&\n"
        "\t\t{ echo \"Error from server (NotFound): pods \\\"$2\\\" not found\" >&2; exit 1; }\n"
        "\tprintf Running ;;\n"
        "*) echo \"fake kubectl: $verb?\" >&2; exit 2 ;;\n"
        "esac\n";

static void test_k8s_transport(void)
{
	static const char *const hostile[] = {
	        "plain",
	        "it's \"quoted\"",
	        "$(touch /tmp/skiff-test-k8s-pwned) `touch /tmp/skiff-test-k8s-pwned`",
	        "${HOME} $HOME \\ \\\\ ; | & > < * ? [ ] ~ #",
	        "line one\nline two\n\n",
	        "-n -e --",
	        "\xff\xfe non-UTF-8 \x80",
	};
	struct k8s_target t = {.context = "fake", .ns = "ns", .pod = "pod-a", .container = "main"};
	char *bin = xasprintf("%s/bin", tmp), *kc = xasprintf("%s/kubectl", bin);
	char *pods = xasprintf("%s/pods", tmp), *pod = xasprintf("%s/pod-a", pods);
	char *path = xasprintf("%s:%s", bin, getenv("PATH") ? getenv("PATH") : "/bin:/usr/bin");
	char *gone = xasprintf("%s.gone", pod), *home_out;
	struct buf out = BUF_INIT(0), err = BUF_INIT(0);
	struct runner *r;
	size_t n = 1 << 20, i;
	char *in = xmalloc(n);
	int st = -1, rc, fails = 0;

	ok(!mkdir_p(bin, 0700) && !mkdir_p(pod, 0700), "dirs");
	ok(!write_file_atomic(kc, fake_kubectl, strlen(fake_kubectl), 0755), "stand-in kubectl");
	setenv("PATH", path, 1);
	setenv("FAKE_K8S", pods, 1);
	setenv("SKIFF_HOME", tmp, 1);
	r = runner_k8s_new("pod-a", &t);
	ok(r && r->diag_dir, "runner, with a private dir for its diag files");

	for (i = 0; r && i < ARRAY_SIZE(hostile); i++) {
		struct buf script = BUF_INIT(0);

		buf_adds(&script, "printf %s ");
		sh_quote(&script, hostile[i]);
		buf_reset(&out);
		rc = runner_capture(r, script.p, NULL, 0, &out, &err, 10000, &st);
		if (rc || st || out.len != strlen(hostile[i]) ||
		    memcmp(out.p, hostile[i], out.len)) {
			fails++;
			printf("# value %zu came back as '%s' (rc %d, status %d)\n", i, out.p, rc,
			       st);
		}
		buf_release(&script);
	}
	ok(!fails, "%zu hostile values reach the pod's sh byte for byte", ARRAY_SIZE(hostile));
	ok(access("/tmp/skiff-test-k8s-pwned", F_OK), "nothing was executed from a value");

	for (i = 0; i < n; i++)
		in[i] = (char)(i * 7 + i / 256);
	buf_reset(&out);
	rc = runner_capture(r, "cat >data.bin && cat data.bin", in, n, &out, &err, 20000, &st);
	ok(!rc && !st && out.len == n && !memcmp(out.p, in, n),
	   "1 MiB of every byte value (NUL too) goes through exec -i stdin to a file and back");
	buf_reset(&out);
	rc = runner_capture(r, "pwd", NULL, 0, &out, &err, 10000, &st);
	home_out = xasprintf("%s\n", pod);
	is_str(out.p, home_out, "the command ran in the pod (its home)");
	free(home_out);

	rc = runner_capture(r, "echo out; echo err >&2; exit 1", NULL, 0, &out, &err, 10000, &st);
	ok(!rc && st == 1, "a script's exit 1 on a Running pod is its own status (probed)");
	rc = runner_capture(r, "exit 255", NULL, 0, &out, &err, 10000, &st);
	ok(!rc && st == 255, "a script's exit 255 on a Running pod is its own too");
	rc = runner_capture(r, "exit 7", NULL, 0, &out, &err, 10000, &st);
	ok(!rc && st == 7, "exit 7 passes through");

	ok(!write_file_atomic(gone, "", 0, 0600), "the pod goes away");
	st = -1;
	rc = runner_capture(r, "echo never", NULL, 0, &out, &err, 10000, &st);
	is_int(rc, -EHOSTUNREACH, "a gone pod is a transport failure");
	ok(strstr(r->last_error.p, "pod-a is not running (not found)"), "naming the pod: %s",
	   r->last_error.p);
	ok(r->last_gone, "and the node is said to be gone");
	ok(!strstr(r->last_error.p, RUNNER_GONE_LINE),
	   "the wrapper's gone line is not in the message");
	{
		char *down = xasprintf("%s/down", pods);

		ok(!write_file_atomic(down, "", 0, 0600), "the API server goes away");
		rc = runner_capture(r, "echo never", NULL, 0, &out, &err, 10000, &st);
		is_int(rc, -EHOSTUNREACH, "a pod that cannot be asked about: a transport failure");
		ok(strstr(r->last_error.p,
		          "cannot tell whether pod-a is running (The connection to "
		          "the server 127.0.0.1:6443 was refused)"),
		   "saying so, with kubectl's words: %s", r->last_error.p);
		ok(!r->last_gone, "the pod not said to be gone");
		unlink(down);
		free(down);
	}
	{
		pid_t pid;
		int pfd[2], wst = 0;
		struct runner_io io = {RUNNER_NULL, RUNNER_NULL, -1};
		struct buf e = BUF_INIT(0);

		ok(!pipe(pfd), "pipe");
		io.err_fd = pfd[1];
		rc = runner_spawn(r, "echo never", 0, &io, &pid);
		close(pfd[1]);
		buf_read_fd(&e, pfd[0]);
		close(pfd[0]);
		spawn_wait(pid, &wst);
		ok(!rc && status_to_code(wst) == 255 &&
		           strstr(e.p, "skiff: error: pod-a is not running"),
		   "runner_spawn: exit 255 and the message on stderr (%s)", e.p);
		buf_release(&e);
	}
	runner_free(r);
	buf_release(&out);
	buf_release(&err);
	free(in);
	free(bin);
	free(kc);
	free(pods);
	free(pod);
	free(path);
	free(gone);
}

int main(void)
{
	alarm(120);
	signal(SIGPIPE, SIG_DFL);
	xsnprintf(tmp, sizeof(tmp), "/tmp/skk8s.XXXXXX");
	if (!mkdtemp(tmp))
		return 1;
	unlink("/tmp/skiff-test-k8s-pwned");
	plan_run(test_k8s_argv);
	plan_run(test_container_argv);
	plan_run(test_k8s_transport);
	{
		char *rm[] = {"rm", "-rf", tmp, NULL};
		int st = -1;

		if (run_capture(rm, NULL, NULL, NULL, NULL, &st) || st)
			printf("# could not remove %s\n", tmp);
	}
	return done_testing();
}
