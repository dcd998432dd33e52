#ifndef SKIFF_SUP_SCHED_H
#define SKIFF_SUP_SCHED_H

/*
 * The node scheduler's decision, as pure logic (no I/O), so it can be tested exhaustively.
 *
 * Jobs are considered by priority (higher first), then submission order. A job that fits
 * in what is free starts. A job that does not fit waits, but later jobs that fit may start
 * ahead of it (backfill) - each such start counts as one bypass of every waiting job ahead
 * of it. A waiting job that has been bypassed max_bypass times is starving: from then on
 * nothing behind it starts until it has run, so a stream of small jobs cannot hold a large
 * one off forever. max_bypass 0 means strict order (no backfill).
 */

#include <stddef.h>
#include <stdint.h>

#define SCHED_MAX_GPUS 64

struct sched_res {
	double cpus;
	double memory; /* GiB */
	int gpus;
};

struct sched_job {
	int64_t id;
	int priority;
	struct sched_res req;
	int bypassed;
	/* outputs */
	int start;      /* 1: start it now */
	int bypass_add; /* bypasses to add to this waiting job */
};

/* Sorts jobs into scheduling order (priority desc, id asc). */
void sched_sort(struct sched_job *jobs, size_t n);
/*
 * Decides which of the (sorted) pending jobs start given what is free; updates *free for
 * the jobs it starts. Returns the number started.
 */
size_t sched_pick(struct sched_res *free, struct sched_job *jobs, size_t n, int max_bypass);
/* 1 if req can ever fit on a node of this capacity. */
int sched_fits(const struct sched_res *cap, const struct sched_res *req);

/* GPU index sets, as bitmasks. */
/* Takes n free GPUs from *free_mask; returns their mask (0 if n is 0 or not enough free). */
uint64_t sched_take_gpus(uint64_t *free_mask, int n);
/* "0,2,3" for a mask; out must hold at least 4 * SCHED_MAX_GPUS bytes. */
void sched_gpu_list(uint64_t mask, char *out, size_t size);
/* Parses "0,2,3" back into a mask; 0 on error or empty. */
uint64_t sched_gpu_parse(const char *s);

#endif
