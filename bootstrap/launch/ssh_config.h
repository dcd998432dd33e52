#ifndef SKIFF_SSH_CONFIG_H
#define SKIFF_SSH_CONFIG_H

/*
 * `ssh CLUSTER`, as SkyPilot has it: a cluster on ssh infra gets an OpenSSH config file
 * of its own, $SKIFF_HOME/generated/ssh/CLUSTER (0600), with `Host CLUSTER` for the head
 * and `Host CLUSTER-workerN` for rank N, each with the user, key, port, jump host, host
 * keys and ControlPath skiff itself connects with, so that `ssh`, `scp` and `rsync` share
 * skiff's master connection. One `Include` line at the top of ~/.ssh/config reads them
 * all. See docs/infra-ssh.md.
 *
 * The text is made by pure functions (ssh_config_text.c, tested in tests/unit/); the
 * files are written by ssh_config_file.c.
 */

#include <stddef.h>

#include "bootstrap/infra/runner.h"
#include "lib/buf.h"

struct clive;

/* Set to 1: skiff writes the cluster files but leaves ~/.ssh/config as it is. */
#define SSH_CONFIG_OPT_OUT_ENV "SKIFF_NO_SSH_CONFIG"
/* Under $SKIFF_HOME: one file per cluster. */
#define SSH_CONFIG_DIR "generated/ssh"

/*
 * Appends the Host blocks of cluster to out: hosts[0] is `Host CLUSTER`, hosts[i]
 * `Host CLUSTER-workerI`. 0, or -EINVAL (printed) for a value an ssh_config line cannot
 * hold (a control character, '"' or '\'; '%' in a user or jump host), out then unchanged.
 */
int ssh_config_text(struct buf *out, const char *cluster, const struct ssh_conn *hosts, size_t n);

/*
 * The Include line for every file in dir (absolute, no trailing '/'): "Include ~/REL/" and
 * '*' when dir lies under pw_home and home (the $HOME whose ~/.ssh/config is edited) is
 * pw_home, as ssh expands '~' to pw_home; else dir as it is. Quoted when it holds blanks.
 * NULL for a dir with control characters or '"'. Caller frees.
 */
char *ssh_config_include_line(const char *dir, const char *home, const char *pw_home);

/*
 * ~/.ssh/config's text (old, len; NULL: no file) with line at its top, exactly once (ssh
 * reads Include only before the first Host block): 0 when old has it so already (out
 * untouched), 1 with the new text in out: line, then old without any other copy of line,
 * the rest byte for byte.
 */
int ssh_config_with_include(const char *old, size_t len, const char *line, struct buf *out);

/*
 * Writes cl's file when cl is on ssh infra (else nothing: 0) and makes sure of the
 * Include line (unless $SKIFF_NO_SSH_CONFIG=1). A failure is a warning: the cluster works
 * without it. 0, or -errno.
 */
int eng_ssh_config_write(const struct clive *cl);
/* Removes cluster's file, if there is one. 0, or -errno (printed). */
int eng_ssh_config_remove(const char *cluster);

#endif
