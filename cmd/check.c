/*
 * skiff check: validate task YAML files, optionally with the launch overrides applied,
 * and print the normalized tasks as JSON; without a FILE, say which infras can be used
 * from here (bootstrap/infra/infra_probe.c) and check the config.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/infra/infra.h"
#include "cmd/cmd.h"
#include "lib/buf.h"
#include "lib/config.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/task.h"
#include "lib/util.h"
#include "state/launcher.h"
#include "lib/banned.h"

const char cmd_check_usage[] =
        "usage: skiff check [--json] [--infra INFRA]... [OVERRIDES...] FILE...\n"
        "       skiff check [--json] [--infra INFRA]... [INFRA...] [--config FILE|KEY=VALUE]...\n"
        "\n"
        "Checks task YAML files (SkyPilot's format, see docs/task-yaml.md) without running\n"
        "anything. A file of several YAML documents is a pipeline, or a job group when its\n"
        "header says 'execution: parallel'. FILE - reads standard input.\n"
        "Each problem is one line on standard error: FILE:LINE:COL: message. A valid file\n"
        "prints \"FILE: ok\", or nothing with --json. What launch would warn about on the\n"
        "task's infra (fields it cannot honour, an infra it refuses) is a warning here.\n"
        "\n"
        "  --json                 print one JSON array on standard output, one object per\n"
        "                         FILE: {file, valid, errors, warnings, name, tasks}, each\n"
        "                         task normalized (all fields; secrets shown as <redacted>)\n"
        "  --infra INFRA          the infra to warn for, as launch's --infra (repeatable;\n"
        "                         default: each resource alternative's, else local)\n"
        "\n"
        "Without FILE, as `sky check [INFRA...]`: each infra (every one, or those named by\n"
        "--infra or as arguments: local, ssh[/POOL], podman[/POOL], docker[/POOL],\n"
        "k8s[/CONTEXT[/NAMESPACE]], slurm[/PARTITION], a cloud) is \"INFRA: enabled: WHY\" or\n"
        "\"INFRA: disabled: WHY\" on standard output: the ssh pool file parses (its errors\n"
        "on standard error, FILE:LINE:COL) and ssh is there; podman, docker answer `info`;\n"
        "kubectl reaches the context's API server, which allows pods/exec; sinfo answers.\n"
        "Infras are probed at once, each within 5 s. Under an enabled infra, what it has:\n"
        "ssh: its pools' hosts; podman, docker: the containers labelled skiff.pool; slurm:\n"
        "the partitions; k8s: kubeconfig's contexts and the pods labelled skiff.node; what\n"
        "clusters book shows the cluster that holds it, or 'free'. --json: [{infra,\n"
        "enabled, reason, inventory: [{of, error, rows: [{COLUMN: value, cluster}]}]}].\n"
        "An argument is an infra when it names one and is no file here.\n"
        "\n"
        "Overrides, applied as `skiff launch` applies them:\n" TASK_OVERRIDES_HELP "\n"
        "The config each task would run with is checked too: the config file in effect\n"
        "(" CONFIG_ENV ", $SKIFF_HOME/" CONFIG_FILE ", else ~/.sky/" CONFIG_FILE "), the task's\n"
        "config: and each --config (docs/config.md); keys skiff ignores are warnings. Without\n"
        "FILE, the config is checked after the infras, when there is one.\n"
        "\n"
        "An env or secret left null (`HF_TOKEN:` with no value) is reported as a warning: launch\n"
        "refuses it unless given with --env/--secret.\n"
        "\n"
        "The workdir and the local file_mounts sources must exist here, as launch reads them.\n"
        "\n"
        "Exit status: 0 every FILE is valid; 3 a FILE is not a valid task (bad YAML, bad field,\n"
        "not a task at all, a directory, too large, a missing workdir or file mount); 1 a FILE\n"
        "cannot be read (missing, permission denied) and none is invalid; 2 bad command line.\n"
        "Without FILE: 0 (a disabled infra is no error, as in SkyPilot), 3 an invalid config,\n"
        "2 an INFRA that is not an infra spec.\n";

_Static_assert(INFRA_PROBE_TIMEOUT_MS == 5000, "the usage text says each infra gets 5 s");

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

/*
 * Without a FILE: the config layers alone ("PATH: ok", not with --json), when there is a
 * config file or a --config. EXIT_* status.
 */
static int check_config_only(const struct task_overrides *o, int json)
{
	struct yerrors errs = YERRORS_INIT;
	char *path = config_file_path();
	int r;

	if (!path && !o->nconfig)
		return EXIT_OK;
	r = check_config(o, NULL, &errs);
	fflush(stdout);
	yerr_print(&errs, stderr);
	yerr_release(&errs);
	if (!r && !json)
		printf("%s: ok\n", path ? path : CONFIG_CLI_NAME);
	free(path);
	return r ? EXIT_INVALID : EXIT_OK;
}

/*
 * Who books each row of an inventory table: holders[i] is the cluster holding row i, NULL
 * when it is free or not something clusters book. Free with free_holders().
 */
static char **inv_holders(struct st_db *ldb, const struct infra_inv *inv)
{
	char **holders = xcalloc(inv->nrows ? inv->nrows : 1, sizeof(*holders));
	size_t i;

	for (i = 0; ldb && i < inv->nrows; i++) {
		const struct infra_inv_row *row = &inv->rows[i];

		if (row->node_key &&
		    st_node_holder(ldb, row->node_key, row->ip, row->port, 0, &holders[i]))
			holders[i] = NULL;
	}
	return holders;
}

static void free_holders(char **holders, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(holders[i]);
	free(holders);
}

/* s as one cell of a text table (buf_add_col(): control bytes as '?'), nothing as "-". */
static void add_cell(struct buf *out, const char *s, int width)
{
	buf_add_col(out, *s ? s : "-", width > 0 ? (size_t)width : 0, SIZE_MAX);
}

/* One table under its infra's line: "  OF:" and aligned rows, or why there are none. */
static void inv_text(const struct infra_inv *inv, char *const *holders, struct buf *out)
{
	int *w = xcalloc(inv->ncols ? inv->ncols : 1, sizeof(*w));
	size_t i, c;
	int booked = 0;

	for (i = 0; i < inv->nrows; i++)
		booked |= inv->rows[i].node_key != NULL;
	buf_addf(out, "  %s:", inv->of);
	if (!inv->nrows) {
		buf_addf(out, " %s\n", inv->said.len ? inv->said.p : "none");
		free(w);
		return;
	}
	buf_addch(out, '\n');
	for (c = 0; c < inv->ncols; c++)
		w[c] = (int)strlen(inv->cols[c]);
	for (i = 0; i < inv->nrows; i++) {
		for (c = 0; c < inv->ncols; c++)
			if ((int)strlen(inv->rows[i].cells[c]) > w[c])
				w[c] = (int)strlen(inv->rows[i].cells[c]);
	}
	buf_adds(out, "   ");
	for (c = 0; c < inv->ncols; c++) {
		const char *col = inv->cols[c];
		int k, len = (int)strlen(col);

		buf_addch(out, ' ');
		for (k = 0; k < len || k < w[c]; k++)
			buf_addch(out, k < len ? (char)toupper((unsigned char)col[k]) : ' ');
	}
	if (booked)
		buf_adds(out, " CLUSTER");
	buf_rtrim(out);
	buf_addch(out, '\n');
	for (i = 0; i < inv->nrows; i++) {
		const struct infra_inv_row *row = &inv->rows[i];

		buf_adds(out, "   ");
		for (c = 0; c < inv->ncols; c++) {
			buf_addch(out, ' ');
			add_cell(out, row->cells[c], w[c]);
		}
		if (booked) {
			buf_addch(out, ' ');
			add_cell(out, row->node_key ? (holders[i] ? holders[i] : "free") : "", 0);
		}
		buf_rtrim(out);
		buf_addch(out, '\n');
	}
	if (inv->said.len)
		buf_addf(out, "    (%s)\n", inv->said.p);
	free(w);
}

/* The same as JSON: {of, error, rows: [{COL: value, ..., cluster}]}, cluster where booked. */
static void inv_json(const struct infra_inv *inv, char *const *holders, struct json *j)
{
	size_t i, c;

	json_obj_begin(j);
	json_key(j, "of");
	json_str(j, inv->of);
	json_key(j, "error");
	json_str(j, inv->said.len ? inv->said.p : NULL);
	json_key(j, "rows");
	json_arr_begin(j);
	for (i = 0; i < inv->nrows; i++) {
		json_obj_begin(j);
		for (c = 0; c < inv->ncols; c++) {
			json_key(j, inv->cols[c]);
			json_str(j, inv->rows[i].cells[c]);
		}
		if (inv->rows[i].node_key) {
			json_key(j, "cluster");
			json_str(j, holders[i]);
		}
		json_obj_end(j);
	}
	json_arr_end(j);
	json_obj_end(j);
}

/* What a usable infra has (struct infra_inv), as JSON (j) or as lines (text). */
static void inventory(const struct infra_probe *p, struct st_db *ldb, struct json *j,
                      struct buf *text)
{
	size_t t;

	if (j) {
		json_key(j, "inventory");
		json_arr_begin(j);
	}
	for (t = 0; t < INFRA_INV_TABLES && p->inv[t].of; t++) {
		char **holders = inv_holders(ldb, &p->inv[t]);

		if (j)
			inv_json(&p->inv[t], holders, j);
		else
			inv_text(&p->inv[t], holders, text);
		free_holders(holders, p->inv[t].nrows);
	}
	if (j)
		json_arr_end(j);
}

/*
 * Without a FILE: each infra of specs[0..n) (none: every one skiff has) enabled or
 * disabled, with why, then the config. EXIT_* status.
 */
static int check_infras(const char **specs, size_t n, int json, const struct task_overrides *o)
{
	const char **all = NULL;
	struct st_db *ldb = NULL;
	struct infra_probe *v;
	struct buf reason = BUF_INIT(0), out = BUF_INIT(0);
	struct json j;
	size_t i;
	int status = EXIT_OK;

	if (!n) {
		while (infra_ops_at(n))
			n++;
		all = xcalloc(n, sizeof(*all));
		for (i = 0; i < n; i++)
			all[i] = infra_ops_at(i)->name;
		specs = all;
	}
	v = xcalloc(n, sizeof(*v));
	if (infra_probe_specs(specs, n, v)) {
		status = usage_error("check", "%s", v[0].said.p);
		goto out;
	}
	/* Who books what: none is booked before the launcher's db exists. */
	if (st_launcher_open(ST_READONLY, &ldb))
		ldb = NULL;
	json_init(&j, &out, 1);
	if (json)
		json_arr_begin(&j);
	for (i = 0; i < n; i++) {
		int on;

		buf_reset(&reason);
		on = infra_probe_judge(&v[i], &reason);
		if (json) {
			json_obj_begin(&j);
			json_key(&j, "infra");
			json_str(&j, v[i].spec);
			json_key(&j, "enabled");
			json_bool(&j, on);
			json_key(&j, "reason");
			json_str(&j, reason.p);
			if (on)
				inventory(&v[i], ldb, &j, NULL);
			json_obj_end(&j);
		} else {
			struct buf inv = BUF_INIT(0);

			if (on)
				inventory(&v[i], ldb, NULL, &inv);
			printf("%s: %s: %s\n%s", v[i].spec, on ? "enabled" : "disabled", reason.p,
			       inv.p);
			buf_release(&inv);
		}
		/* The pool file's problems, each at its FILE:LINE:COL. */
		fflush(stdout);
		yerr_print(&v[i].errs, stderr);
	}
	if (json) {
		json_arr_end(&j);
		json_finish(&j);
		if (print_out(out.p, out.len)) {
			status = EXIT_FAIL;
			goto out;
		}
	}
	fflush(stdout);
	status = check_config_only(o, json);
out:
	st_close(ldb);
	for (i = 0; i < n; i++)
		infra_probe_release(&v[i]);
	free(v);
	free(all);
	buf_release(&reason);
	buf_release(&out);
	return status;
}

/* 1 if every argument names an infra (`skiff check k8s slurm`) and none is a file here. */
static int all_infras(char **args, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(args[i], "-") || !access(args[i], F_OK) || !infra_is_named(args[i]))
			return 0;
	return n > 0;
}

/*
 * Checks one file, and what launch would warn about on infras[0..ninfras) (none: each
 * task's own); returns 0, -EINVAL (invalid) or another negative errno (unreadable).
 */
static int check_one(const char *file, const struct task_overrides *o, const char **infras,
                     size_t ninfras, struct json *j)
{
	struct yerrors errs = YERRORS_INIT;
	struct task_list l;
	size_t k, i;
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
	/* What launch warns about when it runs the task: fields its infra cannot honour. */
	for (k = 0; !r && k < l.n; k++) {
		if (!ninfras)
			infra_task_warnings(l.tasks[k], NULL, l.file, &errs);
		for (i = 0; i < ninfras; i++)
			infra_task_warnings(l.tasks[k], infras[i], l.file, &errs);
	}
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
	} else if (!r && l.parallel) {
		printf("%s: ok (job group %s of %zu tasks, run at once by 'skiff jobs launch')\n",
		       file, l.name, l.n);
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
	const char **infras = xcalloc((size_t)argc + 1, sizeof(*infras));
	struct buf why = BUF_INIT(0);
	struct infra inf;
	size_t ninfras = 0;
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
		if (!strcmp(a, "--infra") || starts_with(a, "--infra=")) {
			const char *spec = a[7] == '=' ? a + 8 : i + 1 < argc ? argv[++i] : NULL;

			if (!spec) {
				status = usage_error("check",
				                     "--infra needs a value (local, ssh/POOL)");
				goto out;
			}
			/* A cloud is said to be unusable where it matters; a typo is an error. */
			buf_reset(&why);
			r = infra_parse_quiet(spec, &inf, &why);
			if (!r)
				infra_release(&inf);
			else if (r != -ENOTSUP) {
				status = usage_error("check", "%s", why.p);
				goto out;
			}
			infras[ninfras++] = spec;
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
	/* `skiff check k8s slurm`: infras named as `sky check` takes them. */
	if (all_infras(files, nfiles)) {
		for (i = 0; i < nfiles; i++)
			infras[ninfras++] = files[i];
		nfiles = 0;
	}
	if (!nfiles) {
		status = check_infras(infras, ninfras, json, &o);
		goto out;
	}
	/*
	 * A task checked for an infra: the infra's own file (a pool), where there is one, must
	 * be valid too. Without one the task is still checked for the infra (its warnings).
	 */
	for (i = 0; i < (int)ninfras; i++) {
		char *pools = infra_pools_path();
		int have = pools && !access(pools, F_OK);

		free(pools);
		buf_reset(&why);
		if (!have || infra_parse_quiet(infras[i], &inf, &why))
			continue; /* no pool file, or a cloud: said with the task */
		r = infra_resolve(&inf);
		infra_release(&inf);
		if (r) {
			status = EXIT_INVALID;
			goto out;
		}
	}
	json_init(&j, &out, 1);
	if (json)
		json_arr_begin(&j);
	for (i = 0; i < nfiles; i++) {
		r = check_one(files[i], &o, infras, ninfras, json ? &j : NULL);
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
	free(infras);
	buf_release(&why);
	buf_release(&out);
	task_overrides_release(&o);
	return status;
}
