#ifndef SKIFF_SELF_H
#define SKIFF_SELF_H

/*
 * Facts about this executable: its path and sha256 (the content address under which a
 * node installs it), version and commit. Works without /proc (an empty chroot): falls
 * back to argv[0], then to a $PATH search. Each lookup is safe from any thread.
 */

#include "lib/sha256.h"

extern const char skiff_version[];
extern const char skiff_commit[];

/* main() records argv[0] here: used to find the executable where /proc is missing. */
extern const char *skiff_argv0;

/*
 * Path of the running executable (static string), or NULL if it cannot be found.
 * argv0 NULL means skiff_argv0.
 */
const char *self_path(const char *argv0);
/*
 * What to exec to run this very binary again (a shim, a helper): SKIFF_EXE when set to an
 * executable file (under valgrind or a debugger /proc/self/exe is the tool; another value
 * is said once, and ignored), else /proc/self/exe (our
 * own image even if an upgrade replaced the file), else self_path(). NULL: none found.
 */
const char *self_exec_path(void);
/* sha256 of the running executable (computed once), or NULL. */
const char *self_sha256(const char *argv0);

/*
 * The same, cheaply, for hot paths (every exec, every ping): an installed copy's name
 * (skiff-<sha256>, verified when it was installed), else a cache in $SKIFF_HOME/cache
 * keyed by the file's device, inode, size and mtime, else computed (and cached). `skiff
 * version` and `__verify-self` always hash for real.
 */
const char *self_sha256_cached(void);

#endif
