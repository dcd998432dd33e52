/*
 * The task YAML parser (lib/yaml.c, lib/task*.c) on arbitrary bytes: never a crash, a
 * leak or a hang; an error iff parsing fails; on success the normalized JSON (what
 * `skiff check --json` prints) is produced and valid UTF-8, and every amount is within
 * the bounds that its users' conversions rely on (num_nodes, cpus, memory and
 * accelerator counts: (int)ceil() of them, MiB in a long).
 */
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/task.h"
#include "lib/yaml.h"
#include "lib/banned.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	log_set_level(LOG_QUIET);
	return 0;
}

static void check_bounds(const struct task *t)
{
	size_t i;

	if (t->num_nodes < 1 || t->num_nodes > TASK_MAX_NODES)
		fuzz_fail("num_nodes %ld", t->num_nodes);
	if (!t->nres || t->nres > TASK_MAX_ALTERNATIVES)
		fuzz_fail("%zu resource alternatives", t->nres);
	for (i = 0; i < t->nres; i++) {
		const struct task_resources *r = &t->res[i];
		const struct task_amount *a[] = {&r->cpus, &r->memory};
		size_t k;

		for (k = 0; k < 2; k++)
			if (a[k]->text && !(a[k]->value > 0 && a[k]->value <= TASK_AMOUNT_MAX))
				fuzz_fail("resources[%zu]: amount '%s' is %g", i, a[k]->text,
				          a[k]->value);
		if (r->accel.name &&
		    !(r->accel.count > 0 && r->accel.count <= TASK_ACCEL_COUNT_MAX))
			fuzz_fail("resources[%zu]: %s count %g", i, r->accel.name, r->accel.count);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct task_list l = TASK_LIST_INIT;
	struct yerrors errs = YERRORS_INIT;
	int r = task_parse_buf(&l, "fuzz.yaml", (const char *)data, size, &errs);
	size_t i;

	if ((r == 0) != (errs.nerrors == 0))
		fuzz_fail("task_parse_buf returned %d with %zu errors", r, errs.nerrors);
	if (r && (l.n || l.tasks))
		fuzz_fail("a failed parse left %zu tasks", l.n);
	if (!r) {
		struct buf out = BUF_INIT(0);
		struct json j;

		json_init(&j, &out, 1);
		task_list_json(&l, &j);
		if (!json_finish(&j) && !utf8_valid(out.p, out.len))
			fuzz_fail("task JSON is not valid UTF-8");
		buf_release(&out);
		for (i = 0; i < l.n; i++)
			check_bounds(l.tasks[i]);
	}
	task_list_release(&l);
	yerr_release(&errs);
	return 0;
}
