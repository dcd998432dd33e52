#ifndef SKIFF_EXIT_H
#define SKIFF_EXIT_H

/*
 * Exit codes, one table for every skiff command (docs/exit-codes.md is the same table;
 * keep both in step). cmd/ returns them; the engine returns the `logs` ones as answers.
 */

#define EXIT_OK 0
#define EXIT_FAIL 1        /* the operation failed */
#define EXIT_USAGE 2       /* bad command line */
#define EXIT_INVALID 3     /* bad input file: task YAML, config, pool file */
#define EXIT_UNAVAILABLE 4 /* a needed service (supervisor, node) cannot be reached */
#define EXIT_HELD                                                                                  \
	5 /* node up --hold: another cluster holds this host, or its shares leave no room */
/* `logs` / `logs --status`, as in SkyPilot */
#define EXIT_JOB_FAILED 100
#define EXIT_JOB_NOT_FINISHED 101
#define EXIT_JOB_NOT_FOUND 102
#define EXIT_JOB_CANCELLED 103

#endif
