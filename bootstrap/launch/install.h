#ifndef SKIFF_INSTALL_H
#define SKIFF_INSTALL_H

/*
 * Self-copy bootstrap: puts this very executable on a node and starts its supervisor,
 * needing nothing on the node but a POSIX sh and cat.
 *
 *   ~/.skiff/bin/skiff-<sha256>   the binary, content-addressed, mode 0755
 *   ~/.skiff/bin/skiff            symlink to the current one (for humans)
 *
 * One session: when the node has our sha already, the script starts `node up` at once.
 * Else it says so and the launcher sends, on the same stdin, a small decompressing stub
 * and then this binary zstd-compressed (47% of its size): the script writes a tiny
 * splitter (6 KB, with printf from the script's own text) that reads exactly the stub
 * from stdin, checks its sha256 and runs it on the rest; the stub decompresses into a temp
 * file in the same dir and succeeds only if the result has our size and sha256. Then the
 * file is renamed into place, so a truncated or altered copy is never executed and never
 * left under the final name. Every step is idempotent. A node running an older skiff's
 * supervisor gets the new one started in its place (running jobs keep running under their
 * shims). The two-round-trip plain copy (probe, then `cat` and sha256sum or
 * `__verify-self`) is kept for tests and tools: boot_install_send().
 */

#include "bootstrap/infra/runner.h"

struct install_result {
	int copied;           /* 1: the binary was sent; 0: it was there already */
	int packed;           /* 1: it went compressed, through the stub */
	char remote_exe[256]; /* shell word for the binary on the node: "$HOME/.skiff/bin/skiff-SHA"
	                       */
	long sup_pid;         /* the node's supervisor */
	int sup_started;      /* 1: this call started it */
	size_t sent;          /* bytes sent to the node for the copy (0 when copied == 0) */
	char address[64];     /* over ssh: the address the node was reached at; "" if unknown */
	long active;          /* the node's jobs that have not ended; -1 if it did not say */
};

/*
 * The shell word for the binary whose sha256 is sha on a node, as the install puts it
 * ("$HOME/.skiff/bin/skiff-SHA", quoted): the remote_exe of struct install_result.
 */
void boot_exe_word(const char *sha, char *out, size_t size);

/* Installs (if needed) and brings the supervisor up. 0 or a negative error (printed). */
int boot_install_and_up(struct runner *r, struct install_result *res);

/* --- the parts, for tests and tools (`skiff __runner-test`) --- */

enum boot_install_flags {
	BOOT_NO_SHA256SUM = 1 << 0, /* verify with `__verify-self` even where sha256sum exists */
};

enum boot_script {
	BOOT_SCRIPT_PROBE = 0,   /* run the binary if it is there, else say SKIFF-NEED-COPY */
	BOOT_SCRIPT_COPY = 1,    /* receive `size` bytes as they are, verify, rename, run */
	BOOT_SCRIPT_SESSION = 2, /* both in one: the probe, then the stub and the packed image */
};

/*
 * Appends the node-side script of kind (enum boot_script) for the binary whose sha256 is
 * sha (64 lowercase hex digits, else -EINVAL) and size is size. POSIX sh only: busybox
 * ash, dash and bash run them.
 */
int boot_install_script(struct buf *out, int kind, const char *sha, size_t size, unsigned flags);
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
/*
 * The same, zstd-compressed: made once per binary (about 0.1 s) and kept in
 * $SKIFF_HOME/cache/self-SHA.zst, read back (and checked) by later launches. Thread-safe.
 */
int boot_self_packed(const char **data, size_t *len);

#endif
