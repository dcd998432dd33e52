/*
 * The config layers a command runs with (lib/config.h): the config file, the task's
 * config:, and --config, or a managed job's frozen copy of the first and the last.
 */
#include "lib/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/task.h"
#include "lib/util.h"
#include "lib/banned.h"

int config_layers_load(struct config_layers *L, const struct task_overrides *o,
                       struct yerrors *errs)
{
	char *path;
	size_t i;
	int r = 0;

	if (o && o->config_file) {
		r = config_from_json(o->config_file, "the job's config file", &L->file, errs);
		if (!r && o->config_cli)
			r = config_from_json(o->config_cli, "the job's --config", &L->cli, errs);
		return r ? -EINVAL : 0;
	}
	path = config_file_path();
	if (path) {
		r = config_load_file(path, &L->file, errs);
		free(path);
	}
	for (i = 0; o && i < o->nconfig; i++)
		if (config_add_cli(&L->cli, o->config[i], errs))
			r = r ? r : -EINVAL;
	return r;
}

int config_for_task(struct config_layers *L, const struct task *t, const char *file,
                    struct cfg_node **out, struct yerrors *errs)
{
	struct cfg_node *merged = NULL, *mine;

	*out = NULL;
	if (L->file)
		merged = cfg_dup(L->file);
	if (t && t->config) {
		mine = cfg_from_ynode(t->config, file ? file : "task");
		cfg_merge(&merged, mine);
	}
	if (L->cli)
		cfg_merge(&merged, cfg_dup(L->cli));
	config_warn_ignored(merged, &L->seen, errs);
	*out = merged;
	return 0;
}

void config_layers_freeze(const struct config_layers *L, struct task_overrides *o)
{
	free(o->config_file);
	free(o->config_cli);
	o->config_file = config_to_json(L->file);
	o->config_cli = config_to_json(L->cli);
}

void config_layers_release(struct config_layers *L)
{
	cfg_free(L->file);
	cfg_free(L->cli);
	config_seen_free(L->seen);
	memset(L, 0, sizeof(*L));
}

int config_resolve(struct task_overrides *o, const struct task_list *tl, size_t i, int freeze,
                   struct cfg_node **out)
{
	struct config_layers L = CONFIG_LAYERS_INIT;
	struct yerrors errs = YERRORS_INIT;
	struct cfg_node *c = NULL;
	size_t k;
	int r;

	if (out)
		*out = NULL;
	r = config_layers_load(&L, o, &errs);
	for (k = 0; !r && (k == 0 || (i == CONFIG_ALL_TASKS && tl && k < tl->n)); k++) {
		size_t at = i == CONFIG_ALL_TASKS ? k : i;

		r = config_for_task(&L, tl && at < tl->n ? tl->tasks[at] : NULL,
		                    tl ? tl->file : NULL, &c, &errs);
		if (!r && out && !*out)
			*out = c;
		else
			cfg_free(c);
		c = NULL;
	}
	if (!r && freeze && o)
		config_layers_freeze(&L, o);
	yerr_print(&errs, stderr);
	yerr_release(&errs);
	config_layers_release(&L);
	return r ? -EINVAL : 0;
}
