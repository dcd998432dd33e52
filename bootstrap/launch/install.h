#ifndef SKIFF_INSTALL_H
#define SKIFF_INSTALL_H

/*
 * Self-copy bootstrap: puts this very executable on a node and starts its supervisor,
 * needing nothing on the node but a POSIX sh and cat.
 *
 *   ~/.skiff/bin/skiff-<sha256>   the binary, content-addressed, mode 0755
 *   ~/.skiff/bin/skiff            symlink to the current one (for humans)
 *
 * One round trip when the node has our sha already (check and `node up` in one script);
 * two when it must be copied: the bytes go through stdin to a temp file in the same dir,
 * are checked (size, and sha256 with sha256sum where the node has it, else by the
 * binary's own `__verify-self SHA` before anything else runs) and renamed into place, so
 * a truncated copy is never executed and never left under the final name. Every step is
 * idempotent. A node running an older skiff's supervisor gets the new one started in its
 * place (running jobs keep running under their shims).
 */

#include "bootstrap/infra/runner.h"

struct install_result {
	int copied;           /* 1: the binary was sent; 0: it was there already */
	char remote_exe[256]; /* shell word for the binary on the node: "$HOME/.skiff/bin/skiff-SHA"
	                       */
	long sup_pid;         /* the node's supervisor */
	int sup_started;      /* 1: this call started it */
	size_t sent;          /* bytes of the binary sent to the node (0 when copied == 0) */
	char address[64];     /* over ssh: the address the node was reached at; "" if unknown */
	long active;          /* the node's jobs that have not ended; -1 if it did not say */
};

/* Installs (if needed) and brings the supervisor up. 0 or a negative error (printed). */
int boot_install_and_up(struct runner *r, struct install_result *res);

/* --- the parts, for tests and tools (`skiff __runner-test`) --- */

enum boot_install_flags {
	BOOT_NO_SHA256SUM = 1 << 0, /* verify with `__verify-self` even where sha256sum exists */
};

/*
 * Appends the node-side script of the first round trip (copy 0: run the binary if it is
 * there, else say SKIFF-NEED-COPY) or of the second (copy 1: receive `size` bytes on
 * stdin, verify them against `sha`, rename into place, run). sha: 64 lowercase hex
 * digits, else -EINVAL. POSIX sh only: busybox ash, dash and bash run it.
 */
int boot_install_script(struct buf *out, int copy, const char *sha, size_t size, unsigned flags);
/*
 * The second round trip alone: sends len bytes of data as the binary whose sha256 is sha
 * and size is size (a test sends a truncated or altered copy this way). 0 or a negative
 * error (printed).
 */
int boot_install_send(struct runner *r, const char *data, size_t len, const char *sha, size_t size,
                      unsigned flags, struct install_result *res);
/* The self-copy's stubs, embedded in this binary (bootstrap/launch/install_stub.c). */
struct boot_stub {
	const unsigned char *data;
	size_t len;
};
void boot_stubs(struct boot_stub *split, struct boot_stub *unzstd);

/* This executable's bytes (read once) and their sha256; 0 or -errno (printed). */
int boot_self_image(const char **data, size_t *len, const char **sha);

#endif
