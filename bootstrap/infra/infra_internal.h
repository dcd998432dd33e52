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

#endif
