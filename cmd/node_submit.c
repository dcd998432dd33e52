/*
 * `skiff node submit`: put one job (a task YAML, or a shell command as its run) into the
 * node's queue and print its id.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/renv/renv.h"
#include "cmd/cmd.h"
#include "cmd/node.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/task.h"
#include "lib/util.h"
#include "state/db.h"
#include "supervisor/node.h"
#include "supervisor/supervisor.h"
#include "lib/banned.h"

const char node_submit_usage[] =
        "usage: skiff node submit [-n NAME] [--cpus N] [--memory GB] [--gpus N]\n"
        "                         [--env K=V]... [--env-file FILE] [--secret K=V]...\n"
        "                         [--priority P] [--setup SCRIPT] [--cwd DIR]\n"
        "                         [--log-dir DIR] [--key KEY] [--profile] [--json]\n"
        "                         [--follow] YAML|COMMAND...\n"
        "       skiff node submit [--json] [--follow] --spec -\n"
        "\n"
        "Submits one job to this node's supervisor (started if needed) and prints its id.\n"
        "The job is a task YAML (its setup, run, envs, secrets, resources and runtime_env),\n"
        "or a shell command that becomes its run. Flags override the YAML.\n"
        "\n"
        "  -n, --name NAME      job name\n"
        "  --cpus N             CPUs to reserve (fractional; 0 reserves none; default 0.5,\n"
        "                       or the task's resources.cpus)\n"
        "  --memory GB          memory to reserve in GiB (default 0, or resources.memory)\n"
        "  --gpus N             accelerators to reserve; the job sees them in\n"
        "                       CUDA_VISIBLE_DEVICES (default: resources.accelerators)\n"
        "  --env K=V, --env K   set an environment variable (K alone: from this shell)\n"
        "  --env-file FILE      dotenv file of variables\n"
        "  --secret K=V         like --env, but never shown by skiff\n"
        "  --priority P         -1000..1000, higher first (default 0)\n"
        "  --setup SCRIPT       a setup script to run before the job (SETTING_UP)\n"
        "  --cwd DIR            working directory (default: the task's workdir, else $HOME)\n"
        "  --log-dir DIR        where setup.log and run.log go (default\n"
        "                       $SKIFF_HOME/logs/ID)\n"
        "  --key KEY            an idempotency key: a second submit with the same key\n"
        "                       submits nothing and prints the first one's id\n"
        "  --profile            run the job in SkyPilot's shell, as a task's job: source\n"
        "                       ~/.bashrc (~/.profile under a plain sh) and conda's profile\n"
        "                       first (default: the command alone, in the environment\n"
        "                       given: no profile's cost per job)\n"
        "  --json               print {\"id\": N, \"log_dir\": ...} instead of the id\n"
        "  --follow             after the id line, follow the job's logs as `node logs`\n"
        "                       does, and exit with its status (one call, one round trip)\n"
        "  --spec -             read the whole job from stdin as one control-socket\n"
        "                       message (what the launcher sends: secrets stay out of\n"
        "                       command lines)\n";

struct submit {
	const char *name, *setup, *cwd, *log_dir, *priority, *key;
	const char *cpus, *memory, *gpus;
	int as_json, follow, profile;
};

/* Reservation from the task's first resource alternative: "4+" reserves 4. */
static void task_reservation(const struct task *t, double *cpus, double *mem, int *gpus)
{
	const struct task_resources *r = t->nres ? &t->res[0] : NULL;

	if (!r)
		return;
	if (r->cpus.text)
		*cpus = r->cpus.value;
	if (r->memory.text)
		*mem = r->memory.mode == TASK_PER_CPU ? r->memory.value * *cpus : r->memory.value;
	if (r->accel.name)
		*gpus = (int)ceil(r->accel.count);
}

static int add_kvs(struct msg *m, const struct task_kvs *kvs)
{
	size_t i;

	for (i = 0; i < kvs->n; i++) {
		if (!kvs->v[i].value)
			continue;
		if (msg_addf(m, "env", "%s=%s", kvs->v[i].key, kvs->v[i].value))
			return error("env '%s' cannot be passed to the job", kvs->v[i].key);
	}
	return 0;
}

/* runtime_env: local files go straight into this node's package store. */
static int add_renv(struct msg *m, const struct task *t)
{
	const struct node_paths *p = node_paths();
	struct renv_strv ship = {0};
	struct renv_spec spec;
	char *store;
	int r;

	if (!p)
		return -ENOENT;
	store = xasprintf("%s/pkgs", p->home);
	r = renv_spec_from_task(t, store, &spec, &ship);
	if (!r)
		r = renv_spec_to_msg(&spec, m);
	renv_spec_release(&spec);
	renv_strv_release(&ship);
	free(store);
	return r;
}

static int print_errors(const struct yerrors *errs)
{
	yerr_print(errs, stderr);
	return EXIT_INVALID;
}

int node_submit(int argc, char **argv)
{
	struct task_overrides ov = TASK_OVERRIDES_INIT;
	struct task_list tl = TASK_LIST_INIT;
	struct yerrors errs = YERRORS_INIT;
	struct submit s = {0};
	struct msg req, rep;
	struct buf cmd = BUF_INIT(0);
	double cpus = 0.5, mem = 0;
	int gpus = 0, i, r, rc = EXIT_FAIL, fd = -1;
	const struct task *t;

	msg_init(&req);
	msg_init(&rep);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **slot = NULL;

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-')
			break;
		if (!strcmp(a, "--json")) {
			s.as_json = 1;
			continue;
		}
		if (!strcmp(a, "--follow")) {
			s.follow = 1;
			continue;
		}
		if (!strcmp(a, "--profile")) {
			s.profile = 1;
			continue;
		}
		if (!strcmp(a, "--spec")) {
			/* The launcher's form: the whole job as one message on stdin. */
			if (i + 2 != argc || strcmp(argv[i + 1], "-")) {
				rc = usage_error("node submit",
				                 "--spec takes '-' and nothing after it");
				goto out;
			}
			if (proto_recv(0, &req, 60000) || !msg_get(&req, "op") ||
			    strcmp(msg_get(&req, "op"), "submit")) {
				error("node submit --spec: expected a submit message on stdin");
				rc = EXIT_USAGE;
				goto out;
			}
			goto send;
		}
		if (!strcmp(a, "--cpus"))
			slot = &s.cpus;
		else if (!strcmp(a, "--memory"))
			slot = &s.memory;
		else if (!strcmp(a, "--gpus"))
			slot = &s.gpus;
		else if (!strcmp(a, "--priority"))
			slot = &s.priority;
		else if (!strcmp(a, "--setup"))
			slot = &s.setup;
		else if (!strcmp(a, "--cwd"))
			slot = &s.cwd;
		else if (!strcmp(a, "--log-dir"))
			slot = &s.log_dir;
		else if (!strcmp(a, "--key"))
			slot = &s.key;
		if (slot) {
			if (i + 1 >= argc) {
				rc = usage_error("node submit", "%s needs a value", a);
				goto out;
			}
			*slot = argv[++i];
			continue;
		}
		r = task_overrides_arg(&ov, argc, argv, &i);
		if (r < 0) {
			rc = EXIT_USAGE;
			goto out;
		}
		if (r == 0) {
			rc = usage_error("node submit", "unknown option '%s'", a);
			goto out;
		}
		i--; /* task_overrides_arg() left i past the flag's value */
	}
	if (i >= argc) {
		rc = usage_error("node submit", "expected a task YAML or a command");
		goto out;
	}
	if (i == argc - 1 && task_entrypoint_is_yaml(argv[i])) {
		r = task_parse_file(&tl, argv[i], &errs);
		if (r) {
			rc = r == -EINVAL ? print_errors(&errs) : (print_errors(&errs), EXIT_FAIL);
			goto out;
		}
	} else {
		for (; i < argc; i++) {
			if (cmd.len)
				buf_addch(&cmd, ' ');
			buf_adds(&cmd, argv[i]);
		}
		task_from_command(&tl, cmd.p);
	}
	if (tl.n != 1) {
		rc = usage_error("node submit",
		                 "'%s' holds a pipeline of %zu tasks; a node job "
		                 "is one task",
		                 tl.file ? tl.file : "", tl.n);
		goto out;
	}
	if (task_list_apply_overrides(&tl, &ov, &errs) || task_list_check_required(&tl, &errs, 0)) {
		rc = print_errors(&errs);
		goto out;
	}
	t = tl.tasks[0];
	task_reservation(t, &cpus, &mem, &gpus);
	msg_add(&req, "op", "submit");
	if (ov.name || s.name || t->name)
		msg_add(&req, "name", ov.name ? ov.name : s.name ? s.name : t->name);
	if (s.cpus)
		msg_add(&req, "cpus", s.cpus);
	else
		msg_addf(&req, "cpus", "%g", cpus);
	if (s.memory)
		msg_add(&req, "memory", s.memory);
	else
		msg_addf(&req, "memory", "%g", mem);
	if (s.gpus)
		msg_add(&req, "gpus", s.gpus);
	else
		msg_add_int(&req, "gpus", gpus);
	if (s.priority)
		msg_add(&req, "priority", s.priority);
	else if (t->nres && (t->res[0].set & TR_PRIORITY))
		msg_add_int(&req, "priority", t->res[0].priority);
	if (s.setup || t->setup)
		msg_add(&req, "setup", s.setup ? s.setup : t->setup);
	if (t->run)
		msg_add(&req, "run", t->run);
	if (s.cwd)
		msg_add(&req, "cwd", s.cwd);
	else if (t->workdir.kind == TASK_WORKDIR_PATH)
		msg_add(&req, "cwd", t->workdir.path);
	if (s.log_dir)
		msg_add(&req, "log_dir", s.log_dir);
	if (s.profile)
		msg_add(&req, "profile", "1");
	if (s.key && msg_add(&req, "submit_key", s.key)) {
		rc = usage_error("node submit", "bad --key");
		goto out;
	}
	if (add_kvs(&req, &t->envs) || add_kvs(&req, &t->secrets))
		goto out;
	if (t->runtime_env.set && add_renv(&req, t))
		goto out;
send:
	if (s.follow)
		msg_add(&req, "follow", "1");
	fd = sup_call_open(SUP_AUTOSTART, &req, &rep);
	if (fd < 0)
		goto out;
	if (s.as_json) {
		struct buf b = BUF_INIT(0);
		struct json j;

		json_init(&j, &b, 0);
		json_obj_begin(&j);
		json_key(&j, "id");
		json_raw(&j, msg_get(&rep, "id"));
		json_key(&j, "log_dir");
		json_str(&j, msg_get(&rep, "log_dir"));
		json_obj_end(&j);
		buf_addch(&b, '\n');
		print_out(b.p, b.len);
		buf_release(&b);
	} else
		printf("%s\n", msg_get(&rep, "id"));
	rc = EXIT_OK;
	if (s.follow) {
		/* The id line first, on its own: the launcher records it before the logs. */
		long id;

		fflush(stdout);
		if (parse_long(msg_get(&rep, "id"), 1, INT64_MAX, &id)) {
			error("the supervisor answered a bad job id");
			rc = EXIT_FAIL;
			goto out;
		}
		if (msg_get(&rep, "follow")) {
			rc = node_follow_submitted(fd, id, msg_get(&rep, "log_dir"), NULL, 0);
			fd = -1;
		} else {
			/* An older supervisor: follow through the db. */
			struct st_db *db = node_open_db();

			if (!db) {
				rc = EXIT_UNAVAILABLE;
				goto out;
			}
			rc = node_logs_job(db, id, 1, -1, 0, 0, NULL, 0);
			st_close(db);
		}
	}
out:
	if (fd >= 0)
		close(fd);
	buf_release(&cmd);
	msg_release(&req);
	msg_release(&rep);
	task_list_release(&tl);
	task_overrides_release(&ov);
	yerr_release(&errs);
	return rc;
}
