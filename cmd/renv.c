/*
 * `skiff __renv-build JOB_ID`: the build step of a job's runtime env, started by its shim
 * (bootstrap/renv/renv_build.c does the work; this file finds the job).
 */
#include <stdio.h>
#include <stdlib.h>

#include "bootstrap/renv/renv.h"
#include "cmd/cmd.h"
#include "lib/log.h"
#include "lib/util.h"
#include "state/node.h"
#include "supervisor/node.h"
#include "lib/banned.h"

const char cmd___renv_build_usage[] =
        "usage: skiff __renv-build JOB_ID\n"
        "\n"
        "Internal: builds the runtime env of a job (its venv, working_dir and py_modules),\n"
        "its output going to the job's setup log. Started by the job's shim.\n";

int cmd___renv_build(int argc, char **argv)
{
	const struct node_paths *p = node_paths();
	struct renv_spec spec;
	struct st_db *db = NULL;
	struct job j = {0};
	long id;
	int r;

	if (argc != 2 || parse_long(argv[1], 1, INT64_MAX, &id))
		return usage_error("__renv-build", "expected a job id");
	if (!p || st_open(p->db, &st_node_schema, 0, &db))
		return error("cannot open the node database"), 1;
	r = st_job_get(db, id, &j);
	st_close(db);
	if (r)
		return error("job %ld: cannot load it", id), 1;
	setvbuf(stdout, NULL, _IONBF, 0);
	r = renv_spec_from_blob(&spec, j.renv, j.renv_len);
	if (!r)
		r = renv_build_main(id, p->home, j.log_dir, &spec);
	else
		r = 1;
	renv_spec_release(&spec);
	job_free(&j);
	return r;
}
