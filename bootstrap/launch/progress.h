#ifndef SKIFF_LAUNCH_PROGRESS_H
#define SKIFF_LAUNCH_PROGRESS_H

/*
 * The launcher's step lines: "  bootstrap  3 nodes: copied to 2, already on 1  0.41s".
 * On a terminal a step shows a live line while it runs and is rewritten when it ends;
 * otherwise only the final line is printed. No colour (and none under NO_COLOR). Steps
 * go to stderr so that stdout carries only the job's output.
 */

#include <stdint.h>

struct step {
	int64_t t0;
	char what[64];
	int live;
};

void step_begin(struct step *s, const char *what);
void step_done(struct step *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void step_fail(struct step *s);

#endif
