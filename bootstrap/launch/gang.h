#ifndef SKIFF_GANG_H
#define SKIFF_GANG_H

/*
 * A gang (a job on several ranks) as pure logic, tested over every combination in
 * tests/unit/test-gang.c: one status from its ranks' statuses, the exit code shown for
 * each rank, the ranks' node job ids as an array, and how many nodes bootstrap at once.
 */

#include <stddef.h>
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

/*
 * The launcher's descriptors for a gang's bootstrap. A node's install session holds
 * GANG_FDS_HELD from its start until the submit over it is done or its rank's follow has
 * ended (its stdin, its stdout, ssh's diag file), and GANG_FDS_STARTING more while it
 * starts (the child's pipe ends and spawn's report pipe, a file of its copy);
 * GANG_FDS_RESERVE is what the launcher holds besides (its database, lock and logs, the
 * pipes of followers of their own).
 */
#define GANG_FDS_HELD 3
#define GANG_FDS_STARTING 6
#define GANG_FDS_RESERVE 64

/*
 * How many of n nodes may bootstrap at once within nofile descriptors: every one of
 * them holds GANG_FDS_HELD to the end, those starting GANG_FDS_STARTING more. n when all
 * fit; 0 when the held ones alone do not, or leave no room for one to start (the launch
 * cannot hold the gang). Pure.
 */
size_t gang_boot_slots(uint64_t nofile, size_t n);

#endif
