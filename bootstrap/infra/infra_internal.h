#ifndef SKIFF_INFRA_INTERNAL_H
#define SKIFF_INFRA_INTERNAL_H

/* What the infras' own files (bootstrap/infra/infra_*.c) share. Nothing else includes it. */

#include "bootstrap/infra/infra.h"

extern const struct infra_ops infra_local_ops, infra_ssh_ops, infra_podman_ops, infra_docker_ops,
        infra_k8s_ops, infra_slurm_ops;

/* An empty node row for rank of cluster: every string "" (never NULL). */
void infra_node_init(struct cluster_node *n, const char *cluster, int rank);

#endif
