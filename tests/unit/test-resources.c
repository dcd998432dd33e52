/* A job's ask from a resource alternative, and whether it fits nodes: every case. */
#include <string.h>

#include "bootstrap/launch/resources.h"
#include "lib/util.h"
#include "tests/unit/harness.h"

static struct task_resources alt(const char *cpus, double c, const char *mem, double m,
                                 enum task_amount_mode mode, const char *acc, double a)
{
	struct task_resources r;

	memset(&r, 0, sizeof(r));
	r.cpus.text = (char *)cpus;
	r.cpus.value = c;
	r.memory.text = (char *)mem;
	r.memory.value = m;
	r.memory.mode = mode;
	r.accel.name = (char *)acc;
	r.accel.count = a;
	return r;
}

static void test_ask(void)
{
	struct task_resources r;
	struct eng_res a;

	a = eng_job_ask(NULL, ENG_DEFAULT_CPUS);
	ok(a.cpus == 0.5 && a.memory == 0 && a.gpus == 0, "nothing written: half a CPU");
	a = eng_job_ask(NULL, 0);
	ok(a.cpus == 0, "no default (managed jobs' controller tasks): nothing");
	r = alt("4", 4, NULL, 0, 0, NULL, 0);
	a = eng_job_ask(&r, ENG_DEFAULT_CPUS);
	ok(a.cpus == 4 && a.memory == 0, "cpus: 4");
	r = alt("2", 2, "4x", 4, TASK_PER_CPU, NULL, 0);
	a = eng_job_ask(&r, ENG_DEFAULT_CPUS);
	ok(a.memory == 8, "memory 4x per CPU on 2 CPUs: 8 GiB");
	r = alt(NULL, 0, "4x", 4, TASK_PER_CPU, NULL, 0);
	a = eng_job_ask(&r, ENG_DEFAULT_CPUS);
	ok(a.memory == 2, "memory 4x per CPU on the default half CPU: 2 GiB");
	r = alt(NULL, 0, "16", 16, 0, "H100", 0.5);
	a = eng_job_ask(&r, ENG_DEFAULT_CPUS);
	ok(a.memory == 16 && a.gpus == 1, "half a GPU asks for a whole one");
	r = alt(NULL, 0, NULL, 0, 0, "A100", 8);
	a = eng_job_ask(&r, ENG_DEFAULT_CPUS);
	ok(a.gpus == 8, "A100:8");
}

static void test_misfit(void)
{
	static const double cpus[] = {0, 0.5, 1, 2, 3};
	static const double mems[] = {0, 1, 1.5, 4};
	static const int gpus[] = {0, 1, 2};
	struct eng_res nodes[3] = {{2, 4, 1}, {2, 1.5, 2}, {3, 4, 0}};
	size_t c, m, g, n, i;

	/* Every ask against every prefix of the nodes, checked against the rule spelled out. */
	for (c = 0; c < ARRAY_SIZE(cpus); c++)
		for (m = 0; m < ARRAY_SIZE(mems); m++)
			for (g = 0; g < ARRAY_SIZE(gpus); g++)
				for (n = 0; n <= 3; n++) {
					struct eng_res ask = {cpus[c], mems[m], gpus[g]};
					int want = -1;

					for (i = 0; i < n && want < 0; i++)
						if (!(ask.cpus <= nodes[i].cpus &&
						      ask.memory <= nodes[i].memory &&
						      ask.gpus <= nodes[i].gpus))
							want = (int)i;
					is_int(eng_res_misfit(&ask, nodes, n), want,
					       "%g CPUs, %g GiB, %d GPUs on %zu node(s)", ask.cpus,
					       ask.memory, ask.gpus, n);
				}
	{
		struct eng_res ask = {2.0000000001, 0, 0}, one = {2, 0, 0};

		is_int(eng_res_misfit(&ask, &one, 1), -1, "a measuring hair is a fit");
	}
}

static void test_text(void)
{
	struct task_resources r = alt("4+", 4, "16", 16, 0, "H100", 1);
	char out[128];

	eng_resources_text(NULL, 1, out, sizeof(out));
	is_str(out, "1x[cpus=0.5]", "defaults");
	eng_resources_text(&r, 2, out, sizeof(out));
	is_str(out, "2x[cpus=4+, mem=16, H100:1]", "all fields");
	eng_resources_text(&r, 2, out, 8);
	is_str(out, "2x[cpus", "cut to the buffer");
}

int main(void)
{
	plan_run(test_ask);
	plan_run(test_misfit);
	plan_run(test_text);
	return done_testing();
}
