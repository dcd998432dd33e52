#ifndef SKIFF_JOBS_POLICY_H
#define SKIFF_JOBS_POLICY_H

/*
 * The decisions of the launcher's daemons (the gang watcher, the managed-jobs controller
 * and its workers), as pure functions with unit tests (tests/unit/test-jobs-policy.c).
 */

#include <stdint.h>

/* ---- the gang watcher (supervisor/jobs/gang.c) --------------------------------------- */

/* A rank's end that stops the gang: not SUCCEEDED nor CANCELLED, or none known (lost). */
int gang_end_stops_others(const char *status);

/*
 * When to try again to stop a rank on a node that could not be reached: after 5 s, then
 * 10, 20 and every 30 s (a try on a node still away fails within ssh's timeouts).
 */
int64_t gang_retry_delay_ms(int tries);
/* The watcher gives up on a lost node after this long (the cluster's down ends it). */
#define GANG_RETRY_MAX_MS ((int64_t)24 * 3600 * 1000)
/* How long the watcher lets the job start before it looks. */
#define GANG_START_DELAY_MS 100

#endif
