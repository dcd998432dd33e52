#ifndef SKIFF_INFRA_INTERNAL_H
#define SKIFF_INFRA_INTERNAL_H

/* What the infras' own files (bootstrap/infra/infra_*.c) share. Nothing else includes it. */

#include "bootstrap/infra/infra.h"

extern const struct infra_ops infra_local_ops, infra_ssh_ops, infra_podman_ops, infra_docker_ops,
        infra_k8s_ops, infra_slurm_ops;

/* An empty node row for rank of cluster: every string "" (never NULL). */
void infra_node_init(struct cluster_node *n, const char *cluster, int rank);

/* ---- for the ops' probes (infra_probe.c) --------------------------------------------- */

/* Sets p's outcome and what it is about (subject copied; NULL: none). */
void infra_probe_set(struct infra_probe *p, enum infra_probe_outcome outcome, const char *subject);
/* Replaces p->said with the text, made one printable line of INFRA_PROBE_LINE_MAX at most. */
void infra_probe_say(struct infra_probe *p, const char *fmt, ...) SKIFF_PRINTF(2, 3);
/*
 * Runs argv (stdin /dev/null, its own process group) until deadline (now_ms() time), its
 * stdout into out (NULL: dropped). 0 when it exited 0 (p's outcome left OK, subject
 * set); else -1 with p saying how it went: MISSING, CANNOT_RUN, EXIT (said: the last
 * line of its stderr, else of its stdout) or TIMEOUT (it and its group killed). subject
 * names the command in messages ("kubectl version").
 */
int infra_probe_run(struct infra_probe *p, const char *subject, char *const *argv, int64_t deadline,
                    struct buf *out);

/*
 * The next unused table of p's inventory, of rows called of with ncols columns cols
 * (both static); NULL when all INFRA_INV_TABLES are used (a bug: BUG() says so).
 */
struct infra_inv *infra_inv_table(struct infra_probe *p, const char *of, const char *const *cols,
                                  size_t ncols);
/*
 * Adds a row of inv->ncols cells (copied; NULL as ""), booked as node_key (NULL: not
 * booked; ip, port: an ssh host's). 0, or -ENOBUFS past INFRA_INV_ROWS_MAX (inv->said
 * says the list is cut).
 */
int infra_inv_add(struct infra_inv *inv, const char *node_key, const char *ip, int port,
                  const char *const *cells);
/*
 * Splits one line of a command's table in place at each sep into f[0..max), the last
 * field holding the rest; fields not there are "". Returns how many the line had.
 */
size_t infra_inv_fields(char *line, char sep, char **f, size_t max);
/*
 * infra_probe_run() for an inventory: the table's said gets what went wrong, and the
 * probe's own outcome (the infra is usable) is left as it is.
 */
int infra_inv_run(struct infra_inv *inv, const char *subject, char *const *argv, int64_t deadline,
                  struct buf *out);

#endif
