/*
 * The task YAML parser (lib/yaml.c, lib/task*.c) on arbitrary bytes: never a crash, a
 * leak or a hang; an error iff parsing fails; on success the normalized JSON (what
 * `skiff check --json` prints) is produced and valid UTF-8.
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct task_list l = TASK_LIST_INIT;
	struct yerrors errs = YERRORS_INIT;
	int r = task_parse_buf(&l, "fuzz.yaml", (const char *)data, size, &errs);

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
	}
	task_list_release(&l);
	yerr_release(&errs);
	return 0;
}
