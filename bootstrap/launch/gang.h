#ifndef SKIFF_GANG_H
#define SKIFF_GANG_H

/*
 * A gang (a job on several ranks) as pure logic, tested over every combination in
 * tests/unit/test-gang.c: one status from its ranks' statuses, the exit code shown for
 * each rank, and the ranks' node job ids as an array.
 */

#include <stdint.h>

/*
 * The gang's status (enum job_status) from its ranks' (-1: the rank's node could not be
 * asked): the first failure (FAILED_SETUP, FAILED, FAILED_DRIVER, in that order) decides
 * at once, the others are then stopped; while a known rank has not ended, the gang has not
 * (the least advanced rank's status: a cancel under way is still RUNNING until every rank
 * is CANCELLED); once every known rank has ended, a CANCELLED one makes the gang
 * CANCELLED, or FAILED_DRIVER when a rank is unknown (it cannot end whole without it); all
 * SUCCEEDED is SUCCEEDED; otherwise, with a rank unknown, so is the gang (-1). No rank at
 * all: -1, never judged.
 */
int gang_status(const int *status, int n);

/*
 * The exit code shown for a rank whose status and own code are these, in a gang whose
 * status is gang: a rank stopped because another failed shows 137 (SIGKILL's, as
 * SkyPilot's), a rank with no code yet -1.
 */
int gang_rank_code(int gang, int status, int code);

/*
 * "17,3,5" (the node job id of rank 0, 1, 2; an empty entry: never submitted, 0) into a
 * malloc'd array; returns the number of ranks (0 for ""), or -EINVAL for anything else.
 */
int gang_parse_ids(const char *text, int64_t **ids);

#endif
