/* The node scheduler's decisions: fit, order, backfill, starvation, GPUs. */
#include <string.h>

#include "supervisor/sched.h"
#include "tests/unit/harness.h"

static struct sched_job J(int64_t id, int prio, double cpus, double mem, int gpus, int bypassed) {
	struct sched_job j = {0};

	j.id = id;
	j.priority = prio;
	j.req.cpus = cpus;
	j.req.memory = mem;
	j.req.gpus = gpus;
	j.bypassed = bypassed;
	return j;
}

static void
test_order(void)
{
	struct sched_job js[] = {J(3, 0, 1, 0, 0, 0), J(1, 0, 1, 0, 0, 0), J(2, 5, 1, 0, 0, 0),
	                         J(4, -1, 1, 0, 0, 0)};

	sched_sort(js, 4);
	is_int(js[0].id, 2, "highest priority first");
	is_int(js[1].id, 1, "then submission order");
	is_int(js[2].id, 3, "then submission order (2)");
	is_int(js[3].id, 4, "lowest priority last");
}

static void test_fit_and_fractions(void)
{
	struct sched_res free = {1.0, 4, 0};
	struct sched_job js[] = {J(1, 0, 0.1, 0, 0, 0), J(2, 0, 0.2, 0, 0, 0),
	                         J(3, 0, 0.7, 0, 0, 0), J(4, 0, 0, 0, 0, 0),
	                         J(5, 0, 0.01, 0, 0, 0)};

	is_int(sched_pick(&free, js, 5, 20), 4, "0.1+0.2+0.7 fit in 1 CPU, and a 0-CPU job too");
	ok(js[0].start && js[1].start && js[2].start && js[3].start, "the four start");
	ok(!js[4].start, "0.01 more does not fit");
	struct sched_res cap = {2, 8, 1}, big = {2, 8, 2};
	ok(!sched_fits(&cap, &big), "2 GPUs never fit a 1-GPU node");
}

static void test_backfill(void)
{
	/* 2 CPUs free; a 4-CPU job waits, small ones behind it run. */
	struct sched_res free = {2, 100, 0};
	struct sched_job js[] = {J(1, 0, 4, 0, 0, 0), J(2, 0, 1, 0, 0, 0), J(3, 0, 1, 0, 0, 0),
	                         J(4, 0, 1, 0, 0, 0)};

	is_int(sched_pick(&free, js, 4, 20), 2, "two small jobs backfill");
	ok(!js[0].start && js[1].start && js[2].start && !js[3].start, "jobs 2 and 3 start");
	is_int(js[0].bypass_add, 2, "the big job was bypassed twice");
	is_int(js[1].bypass_add + js[2].bypass_add + js[3].bypass_add, 0, "no one else counts");
}

static void test_starvation(void)
{
	struct sched_res free = {2, 100, 0};
	struct sched_job js[] = {J(1, 0, 4, 0, 0, 19), J(2, 0, 1, 0, 0, 0), J(3, 0, 1, 0, 0, 0)};

	is_int(sched_pick(&free, js, 3, 20), 1, "one more bypass allowed, then none");
	ok(js[1].start && !js[2].start, "only job 2 starts");
	is_int(js[0].bypass_add, 1, "the big job reaches its limit");

	struct sched_res free2 = {2, 100, 0};
	struct sched_job ks[] = {J(1, 0, 4, 0, 0, 20), J(2, 0, 1, 0, 0, 0)};
	is_int(sched_pick(&free2, ks, 2, 20), 0, "a starving job blocks everything behind it");

	struct sched_res free3 = {2, 100, 0};
	struct sched_job ls[] = {J(1, 0, 4, 0, 0, 0), J(2, 0, 1, 0, 0, 0)};
	is_int(sched_pick(&free3, ls, 2, 0), 0, "max_bypass 0 is strict FIFO");
}

static void test_priority_not_blocked_by_lower(void)
{
	/* A high-priority small job starts even when a lower-priority big one waits. */
	struct sched_res free = {1, 100, 0};
	struct sched_job js[] = {J(5, 0, 4, 0, 0, 0), J(6, 9, 1, 0, 0, 0)};

	sched_sort(js, 2);
	is_int(sched_pick(&free, js, 2, 20), 1, "the high-priority job starts");
	is_int(js[0].id, 6, "it comes first");
	ok(js[0].start, "and starts");
	is_int(js[1].bypass_add, 0, "nobody was bypassed");
}

static void test_memory_and_gpus(void)
{
	struct sched_res free = {8, 16, 2};
	struct sched_job js[] = {J(1, 0, 1, 12, 0, 0), J(2, 0, 1, 8, 0, 0), J(3, 0, 1, 4, 1, 0),
	                         J(4, 0, 1, 0, 2, 0)};

	is_int(sched_pick(&free, js, 4, 20), 2, "memory and GPUs are packed too");
	ok(js[0].start && !js[1].start && js[2].start && !js[3].start, "12+4 GiB, 1 GPU");
}

static void test_gpu_sets(void)
{
	uint64_t free = 0xf; /* 4 GPUs */
	char s[256];
	uint64_t a = sched_take_gpus(&free, 2), b, c;

	is_int(a, 0x3, "first two GPUs");
	b = sched_take_gpus(&free, 3);
	is_int(b, 0, "three are not free");
	is_int(free, 0xc, "a failed take takes nothing");
	c = sched_take_gpus(&free, 2);
	sched_gpu_list(c, s, sizeof(s));
	is_str(s, "2,3", "listed as 2,3");
	is_int(sched_gpu_parse("2,3"), 0xc, "parsed back");
	is_int(sched_gpu_parse(""), 0, "empty");
	is_int(sched_gpu_parse("1,x"), 0, "junk");
	is_int(sched_gpu_parse("64"), 0, "out of range");
	is_int(sched_take_gpus(&free, 0), 0, "zero GPUs");
}

int main(void)
{
	plan_run(test_order);
	plan_run(test_fit_and_fractions);
	plan_run(test_backfill);
	plan_run(test_starvation);
	plan_run(test_priority_not_blocked_by_lower);
	plan_run(test_memory_and_gpus);
	plan_run(test_gpu_sets);
	return done_testing();
}
