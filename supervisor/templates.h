#ifndef SKIFF_SUP_TEMPLATES_H
#define SKIFF_SUP_TEMPLATES_H

/*
 * SkyPilot's templates on a node: ~/sky_templates/ray/start_cluster and stop_cluster,
 * which SkyPilot copies to every node it provisions and its distributed Ray recipe runs
 * on every rank. skiff's own versions (POSIX sh, supervisor/templates/) are embedded in
 * the binary, and `node up` writes them, so they are on every node of every infra
 * (docs/task-yaml.md, "Ray").
 *
 * A file is written (temp file, rename; mode 0755) when it is missing or empty, or when
 * it holds what a skiff wrote there before: STATE_DIR/sky_templates.sha256 records the
 * sha256 of what skiff last wrote to each path (sha256sum's format). Anything else there
 * (an edit, a file_mounts, a symlink) is the user's and is left as it is. A file that
 * holds these very bytes costs one read; nothing is written then. No fsync: at 6-8 ms
 * each here, three per node would hold up a large local launch, and what a crash loses
 * (an empty file, a record a step behind) is made good by the next `node up`.
 */

#include <stddef.h>

struct node_template {
	const char *path; /* under ~/sky_templates */
	const unsigned char *data;
	size_t len;
};

#define NODE_TEMPLATES 2
/* The embedded templates, into t (their bytes are static data). */
void node_templates(struct node_template t[NODE_TEMPLATES]);

/*
 * Brings HOME/sky_templates up to date as above. Returns how many files it wrote, or a
 * negative errno with a warning printed (it never fails a caller: the templates are a
 * convenience). Only local file system calls.
 */
int node_templates_install(const char *home, const char *state_dir);

#endif
