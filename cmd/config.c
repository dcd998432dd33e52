/*
 * `skiff config`: the layered config in effect (lib/config.h, docs/config.md): each key
 * set, its value and where it was written (the config file's line, or --config), and each
 * key skiff reads but ignores, with why. For people, and as JSON for the dashboard.
 */
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
#include "lib/yaml.h"
#include "lib/banned.h"

const char cmd_config_usage[] =
        "usage: skiff config [--json] [--config FILE|KEY=VALUE]...\n"
        "\n"
        "Shows the config in effect (docs/config.md): the config file (SKIFF_CONFIG, else\n"
        "$SKIFF_HOME/config.yaml, else ~/.sky/config.yaml), then each --config, merged as\n"
        "launch merges them (a task's own config: goes between them). Each key set is a\n"
        "line KEY = VALUE with where it was written (FILE:LINE:COL, or --config); each key\n"
        "skiff reads but does not act on is listed after, with why.\n"
        "\n"
        "  --json   {\"file\": PATH or null, \"keys\": [{key, value, file, line, col}],\n"
        "            \"ignored\": [{file, line, col, why}], \"errors\": [...]}\n"
        "\n"
        "Exit status: 0, or 3 when a layer is not a valid config (its errors are listed).\n";

struct leaf {
	char *key;
	const struct cfg_node *n;
};

/* The value of a leaf as text: a scalar's, else its JSON (a list, an empty map). */
static char *leaf_text(const struct cfg_node *n)
{
	return n->kind == CFG_SCALAR ? xstrdup(n->value ? n->value : "") : config_to_json(n);
}

/* Every key whose value is not a map (lists are leaves), in the file's order. */
static void leaves(const struct cfg_node *n, const char *path, struct leaf **v, size_t *len,
                   size_t *alloc)
{
	size_t i;

	if (n->kind != CFG_MAP || (!n->n && *path)) {
		*v = xgrow(*v, *len, alloc, sizeof(**v));
		(*v)[*len].key = xstrdup(path);
		(*v)[(*len)++].n = n;
		return;
	}
	for (i = 0; i + 1 < n->n; i += 2) {
		const struct cfg_node *k = n->items[i];
		char *sub;

		if (k->kind != CFG_SCALAR)
			continue;
		sub = *path ? xasprintf("%s.%s", path, k->value) : xstrdup(k->value);
		leaves(n->items[i + 1], sub, v, len, alloc);
		free(sub);
	}
}

static void where_json(struct json *js, const char *file, int line, int col)
{
	json_key(js, "file");
	json_str(js, file && *file ? file : NULL);
	json_key(js, "line");
	if (line > 0)
		json_int(js, line);
	else
		json_null(js);
	json_key(js, "col");
	if (col > 0)
		json_int(js, col);
	else
		json_null(js);
}

int cmd_config(int argc, char **argv)
{
	struct task_overrides ov = TASK_OVERRIDES_INIT;
	struct config_layers L = CONFIG_LAYERS_INIT;
	struct yerrors errs = YERRORS_INIT;
	struct cfg_node *c = NULL;
	struct leaf *v = NULL;
	struct buf out = BUF_INIT(0);
	size_t n = 0, alloc = 0, k;
	char *path = config_file_path();
	int i, as_json = 0, bad, rc;

	if (wants_help(argc, argv)) {
		fputs(cmd_config_usage, stdout);
		free(path);
		return EXIT_OK;
	}
	for (i = 1; i < argc;) {
		int r;

		if (!strcmp(argv[i], "--json")) {
			as_json = 1;
			i++;
			continue;
		}
		if (strcmp(argv[i], "--config") && strncmp(argv[i], "--config=", 9)) {
			free(path);
			task_overrides_release(&ov);
			return usage_error("config", "unexpected '%s'", argv[i]);
		}
		r = task_overrides_arg(&ov, argc, argv, &i);
		if (r <= 0) {
			free(path);
			task_overrides_release(&ov);
			return EXIT_USAGE;
		}
	}
	bad = config_layers_load(&L, &ov, &errs) || config_for_task(&L, NULL, NULL, &c, &errs);
	if (c)
		leaves(c, "", &v, &n, &alloc);
	if (as_json) {
		struct json js;
		int pass;

		json_init(&js, &out, 1);
		json_obj_begin(&js);
		json_key(&js, "file");
		json_str(&js, path);
		json_key(&js, "keys");
		json_arr_begin(&js);
		for (k = 0; k < n; k++) {
			char *t = leaf_text(v[k].n);

			json_obj_begin(&js);
			json_key(&js, "key");
			json_str(&js, v[k].key);
			json_key(&js, "value");
			json_str(&js, t);
			where_json(&js, v[k].n->file, v[k].n->line, v[k].n->col);
			json_obj_end(&js);
			free(t);
		}
		json_arr_end(&js);
		/* The warnings are the ignored keys; the rest are the layers' errors. */
		for (pass = 0; pass < 2; pass++) {
			json_key(&js, pass ? "errors" : "ignored");
			json_arr_begin(&js);
			for (k = 0; k < errs.n; k++) {
				if (errs.v[k].warning != !pass)
					continue;
				json_obj_begin(&js);
				where_json(&js, errs.v[k].file, errs.v[k].line, errs.v[k].col);
				json_key(&js, "why");
				json_str(&js, errs.v[k].msg);
				json_obj_end(&js);
			}
			json_arr_end(&js);
		}
		json_obj_end(&js);
		json_finish(&js);
		buf_addch(&out, '\n');
	} else {
		buf_addf(&out, "config file: %s\n", path ? path : "(none)");
		for (k = 0; k < n; k++) {
			char *t = leaf_text(v[k].n);

			buf_addf(&out, "%s = %s", v[k].key, t);
			if (v[k].n->file && *v[k].n->file)
				buf_addf(&out, "    (%s:%d:%d)", v[k].n->file, v[k].n->line,
				         v[k].n->col);
			buf_addch(&out, '\n');
			free(t);
		}
		if (!n)
			buf_adds(&out, "(no key set)\n");
		for (k = 0; k < errs.n; k++)
			if (errs.v[k].warning)
				buf_addf(&out, "ignored: %s:%d:%d: %s\n", errs.v[k].file,
				         errs.v[k].line, errs.v[k].col, errs.v[k].msg);
		for (k = 0; k < errs.n; k++) {
			char *line;

			if (errs.v[k].warning)
				continue;
			line = xasprintf("%s:%d:%d: %s", errs.v[k].file, errs.v[k].line,
			                 errs.v[k].col, errs.v[k].msg);
			fprintf(stderr, "%s\n", line);
			/* Printed in a form of its own: counted, so no "said nothing" line. */
			log_count_error(line);
			free(line);
		}
	}
	rc = print_out(out.p, out.len) ? EXIT_FAIL : bad ? EXIT_INVALID : EXIT_OK;
	for (k = 0; k < n; k++)
		free(v[k].key);
	free(v);
	buf_release(&out);
	cfg_free(c);
	config_layers_release(&L);
	yerr_release(&errs);
	task_overrides_release(&ov);
	free(path);
	return rc;
}
