/*
 * skiff check: validate task YAML files, optionally with the launch overrides applied,
 * and print the normalized tasks as JSON.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "lib/buf.h"
#include "lib/config.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/task.h"
#include "lib/util.h"
#include "lib/banned.h"

const char cmd_check_usage[] =
        "usage: skiff check [--json] [OVERRIDES...] FILE...\n"
        "       skiff check [--config FILE|KEY=VALUE]...\n"
        "\n"
        "Checks task YAML files (SkyPilot's format, see docs/task-yaml.md) without running\n"
        "anything. A file of several YAML documents is a pipeline. FILE - reads standard input.\n"
        "Each problem is one line on standard error: FILE:LINE:COL: message. A valid file\n"
        "prints \"FILE: ok\", or nothing with --json.\n"
        "\n"
        "  --json                 print one JSON array on standard output, one object per\n"
        "                         FILE: {file, valid, errors, warnings, name, tasks}, each\n"
        "                         task normalized (all fields; secrets shown as <redacted>)\n"
        "\n"
        "Overrides, applied as `skiff launch` applies them:\n" TASK_OVERRIDES_HELP "\n"
        "The config each task would run with is checked too: the config file in effect\n"
        "(" CONFIG_ENV ", $SKIFF_HOME/" CONFIG_FILE ", else ~/.sky/" CONFIG_FILE "), the task's\n"
        "config: and each --config (docs/config.md); keys skiff ignores are warnings. Without\n"
        "FILE, only the config is checked.\n"
        "\n"
        "An env or secret left null (`HF_TOKEN:` with no value) is reported as a warning: launch\n"
        "refuses it unless given with --env/--secret.\n"
        "\n"
        "The workdir and the local file_mounts sources must exist here, as launch reads them.\n"
        "\n"
        "Exit status: 0 every FILE is valid; 3 a FILE is not a valid task (bad YAML, bad field,\n"
        "not a task at all, a directory, too large, a missing workdir or file mount); 1 a FILE\n"
        "cannot be read (missing, permission denied) and none is invalid; 2 bad command line.\n";

static void errors_json(struct json *j, const struct yerrors *errs, int warnings)
{
	size_t i;

	json_arr_begin(j);
	for (i = 0; i < errs->n; i++) {
		const struct yerror *e = &errs->v[i];

		if (e->warning != warnings)
			continue;
		json_obj_begin(j);
		json_key(j, "line");
		json_int(j, e->line);
		json_key(j, "col");
		json_int(j, e->col);
		json_key(j, "message");
		json_str(j, e->msg);
		json_obj_end(j);
	}
	json_arr_end(j);
}

/*
 * The config each task would run with (lib/config.h): the config file in effect, the
 * task's config: and --config, as launch layers them. 0 or -EINVAL (errors added).
 */
static int check_config(const struct task_overrides *o, const struct task_list *l,
                        struct yerrors *errs)
{
	struct config_layers L = CONFIG_LAYERS_INIT;
	struct cfg_node *c = NULL;
	size_t k;
	int r;

	r = config_layers_load(&L, o, errs) ? -EINVAL : 0;
	for (k = 0; !r && l && k < l->n; k++) {
		r = config_for_task(&L, l->tasks[k], l->file, &c, errs);
		cfg_free(c);
	}
	if (!r && !l)
		r = config_for_task(&L, NULL, NULL, &c, errs), cfg_free(c);
	config_layers_release(&L);
	return r;
}

/* Without a FILE: the config layers alone ("PATH: ok"). EXIT_* status. */
static int check_config_only(const struct task_overrides *o)
{
	struct yerrors errs = YERRORS_INIT;
	char *path = config_file_path();
	int r;

	if (!path && !o->nconfig) {
		return usage_error("check",
		                   "no FILE given (and no config file: %s, "
		                   "$SKIFF_HOME/" CONFIG_FILE " or ~/.sky/" CONFIG_FILE ")",
		                   CONFIG_ENV);
	}
	r = check_config(o, NULL, &errs);
	yerr_print(&errs, stderr);
	yerr_release(&errs);
	if (!r)
		printf("%s: ok\n", path ? path : CONFIG_CLI_NAME);
	free(path);
	return r ? EXIT_INVALID : EXIT_OK;
}

/* Checks one file; returns 0, -EINVAL (invalid) or another negative errno (unreadable). */
static int check_one(const char *file, const struct task_overrides *o, struct json *j)
{
	struct yerrors errs = YERRORS_INIT;
	struct task_list l;
	int r;

	r = task_parse_file(&l, file, &errs);
	if (!r)
		r = task_list_apply_overrides(&l, o, &errs);
	if (!r)
		task_list_check_required(&l, &errs, 1);
	/* The config is checked even when the task is not: its errors are as much news. */
	if (check_config(o, r ? NULL : &l, &errs) && !r)
		r = -EINVAL;
	/* What launch will read from this machine: the workdir, local file_mounts sources. */
	if (!r && task_list_check_paths(&l, &errs))
		r = -EINVAL;
	fflush(stdout);
	yerr_print(&errs, stderr);
	if (j) {
		json_obj_begin(j);
		json_key(j, "file");
		json_str(j, file);
		json_key(j, "valid");
		json_bool(j, !r);
		json_key(j, "errors");
		errors_json(j, &errs, 0);
		json_key(j, "warnings");
		errors_json(j, &errs, 1);
		if (!r) {
			task_list_json(&l, j);
		} else {
			json_key(j, "name");
			json_null(j);
			json_key(j, "tasks");
			json_arr_begin(j);
			json_arr_end(j);
		}
		json_obj_end(j);
	} else if (!r && l.n > 1) {
		printf("%s: ok (a pipeline of %zu tasks)\n", file, l.n);
	} else if (!r) {
		printf("%s: ok\n", file);
	}
	task_list_release(&l);
	yerr_release(&errs);
	return r;
}

int cmd_check(int argc, char **argv)
{
	struct task_overrides o = TASK_OVERRIDES_INIT;
	struct buf out = BUF_INIT(0);
	struct json j;
	char **files = xcalloc((size_t)argc + 1, sizeof(*files));
	int i, r, nfiles = 0, dashdash = 0, json = 0, invalid = 0, unreadable = 0;
	int status = EXIT_OK;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (dashdash || a[0] != '-' || !a[1]) {
			files[nfiles++] = argv[i];
			continue;
		}
		if (!strcmp(a, "--")) {
			dashdash = 1;
			continue;
		}
		if (!strcmp(a, "--json")) {
			json = 1;
			continue;
		}
		r = task_overrides_arg(&o, argc, argv, &i);
		if (r < 0) {
			status = EXIT_USAGE;
			goto out;
		}
		if (!r) {
			status = usage_error("check", "unknown option '%s'", a);
			goto out;
		}
		i--; /* task_overrides_arg() left i past the flag's value */
	}
	if (!nfiles) {
		status = check_config_only(&o);
		goto out;
	}
	json_init(&j, &out, 1);
	if (json)
		json_arr_begin(&j);
	for (i = 0; i < nfiles; i++) {
		r = check_one(files[i], &o, json ? &j : NULL);
		if (r == -EINVAL)
			invalid = 1;
		else if (r)
			unreadable = 1;
		if (i + 1 == nfiles && json) {
			json_arr_end(&j);
			json_finish(&j);
		}
		/* One file's JSON at a time: the output never has to fit in memory whole. */
		if (json && j.err) {
			error("the JSON output of %s is too large", files[i]);
			status = EXIT_FAIL;
			goto out;
		}
		if (json && print_out(out.p, out.len)) {
			status = EXIT_FAIL;
			goto out;
		}
		buf_reset(&out);
	}
	if (invalid)
		status = EXIT_INVALID;
	else if (unreadable)
		status = EXIT_FAIL;
out:
	free(files);
	buf_release(&out);
	task_overrides_release(&o);
	return status;
}
