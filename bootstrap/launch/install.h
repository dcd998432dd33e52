#ifndef SKIFF_INSTALL_H
#define SKIFF_INSTALL_H

/*
 * Self-copy bootstrap: puts this very executable on a node and starts its supervisor,
 * needing nothing on the node but a POSIX sh and a few tools busybox has.
 *
 *   ~/.skiff/bin/skiff-<sha256>   the binary, content-addressed, mode 0755
 *   ~/.skiff/bin/skiff            symlink to the current one (for humans)
 *
 * One session (docs/bootstrap.md): when the node has our sha already, the script starts
 * `node up` at once. Else it says so and the launcher sends (or has begun to send, for a
 * node it does not know to have the binary: BOOT_HAS_SKIFF), on the same stdin, a small
 * decompressing stub and then this binary packed (stub/pack.h: 41-45% of its size): the
 * script writes a tiny splitter (6 KB, with printf from the script's own text) that reads
 * exactly the stub from stdin, checks its sha256 and runs it on the rest; the stub reads
 * exactly the packed image, decompresses it into a temp file in the same dir and succeeds
 * only if the result has our size and sha256. Then the file is renamed into place, so a
 * truncated or altered copy is never executed and never left under the final name. Every
 * step is idempotent. A node running an older skiff's supervisor gets the new one started
 * in its place (running jobs keep running under their shims). `node up --then-call` ends
 * the session, and answers one more request on it: the launcher's next call to the node
 * (struct boot_spare). The two-round-trip plain copy (probe, then `cat` and sha256sum or
 * `__verify-self`) is kept for tests and tools: boot_install_send().
 */

#include <limits.h>

#include "bootstrap/infra/runner.h"

struct install_result {
	int copied; /* 1: the binary was sent (or linked); 0: it was there already */
	int linked; /* 1: it was put there as a hard link of the launcher's image */
	int packed; /* 1: it went compressed, through the stub */
	char remote_exe[PATH_MAX + 3]; /* shell word for the binary on the node:
	                                  "$HOME/.skiff/bin/skiff-SHA", or a share's in
	                                  its home ("/home/u/.skiff/c/KEY/bin/skiff-SHA",
	                                  as node up said: lib/util.h cluster_home_of()) */
	long sup_pid;                  /* the node's supervisor */
	int sup_started;               /* 1: this call started it */
	size_t sent;              /* bytes sent to the node for the copy (0 when copied == 0) */
	char address[64];         /* over ssh: the address the node was reached at; "" if unknown */
	long active;              /* the node's jobs that have not ended; -1 if it did not say */
	struct boot_spare *spare; /* BOOT_KEEP_CALL: the node's next call, waiting; or NULL */
};

/*
 * The shell word for the binary whose sha256 is sha on a node, as the install puts it
 * ("$HOME/.skiff/bin/skiff-SHA", quoted): the remote_exe of struct install_result.
 */
void boot_exe_word(const char *sha, char *out, size_t size);
/*
 * The other way, for a node that is a directory here: a "$HOME/..." word (a node's exe)
 * as a path under home (malloc'd); NULL for a word of another form.
 */
char *boot_exe_path_here(const char *word, const char *home);

enum boot_up_flags {
	/*
	 * The launcher's record says the node has this very binary (a cluster it bootstrapped
	 * before): nothing is sent before the node asks. Without it, the first BOOT_AHEAD_BYTES
	 * of the copy go at once, with the script.
	 */
	BOOT_HAS_SKIFF = 1 << 0,
	/* Keep the session open for the node's next call (res->spare): see boot_spare_call(). */
	BOOT_KEEP_CALL = 1 << 1,
	/*
	 * A node that is a directory of this machine (runner_ops.home_here) gets the binary as
	 * a hard link of $SKIFF_HOME/cache/self-SHA (res->linked), before the session, whose
	 * probe then finds it; where no link can be made, the session copies it as elsewhere.
	 */
	BOOT_LINK_HERE = 1 << 2,
};

/*
 * What `node up --then-call` (cmd/node.h) says on a line of its own once the supervisor is
 * up: then the rest of the session's stdin is one `node call` request.
 */
#define BOOT_UP_MARK "SKIFF-UP"

/*
 * The install session kept open (BOOT_KEEP_CALL): `node call` on the node waits there for
 * one request, so that the launcher's next call to the node needs no channel of its own.
 * boot_spare_call() sends in[0..in_len) (one framed request) and reads the answer into out
 * (bounded by its max) until the node ends, at most timeout_ms: then 0 and the exit status
 * in *status, or a negative error (printed) as runner_capture() gives them. -EAGAIN (not
 * printed) when the spare cannot carry the call (the node said something more, or went,
 * before the request reached it): make the call on a new channel. Either way the spare is
 * used up (freed). boot_spare_close() ends one that no call needs (NULL: no-op).
 *
 * The session's process has no time limit of its own once `node up` has answered (a call
 * may follow a job for as long as it runs): each call bounds its own wait.
 */
struct boot_spare;
int boot_spare_call(struct boot_spare *sp, const char *in, size_t in_len, struct buf *out,
                    int timeout_ms, int *status);
/*
 * A call whose answer goes on (a submit with "follow": the job's logs after its frame),
 * handed over as it runs: sends in[0..in_len) and gives the node's output in *from, which
 * the caller reads (the answer's frame first) and closes; the spare is then the call's
 * handle: boot_spare_kill() signals its local process group (async-signal-safe; nothing
 * once it has ended), boot_spare_end() waits for its end, which follows the end of its
 * output (at most a few seconds, then it is killed), and frees it (runner_close()'s
 * result, the exit status in *status). -EAGAIN (not printed, spare freed) as for
 * boot_spare_call(); another error is printed, the spare freed.
 */
int boot_spare_open(struct boot_spare *sp, const char *in, size_t in_len, int *from);
void boot_spare_kill(struct boot_spare *sp, int sig);
int boot_spare_end(struct boot_spare *sp, int *status);
void boot_spare_close(struct boot_spare *sp);
/* boot_spare_close() of v[0..n) (NULL ones skipped), all at once; each v[i] becomes NULL. */
void boot_spares_close(struct boot_spare **v, size_t n);

/*
 * Installs (if needed) and brings the supervisor up; flags: enum boot_up_flags. up_args
 * (NULL: none): more of `node up`'s options, as shell words each after a space (the hold
 * of a host that pools share: cl_hold_args()). 0 or a negative error (printed);
 * -EADDRINUSE (a warning) when another launcher's cluster holds the host (node up's
 * EXIT_HELD): nothing of ours started there, and another host may do.
 */
int boot_install_and_up(struct runner *r, unsigned flags, const char *up_args,
                        struct install_result *res);

/* --- the parts, for tests and tools (`skiff __runner-test`) --- */

enum boot_install_flags {
	BOOT_NO_SHA256SUM = 1 << 0, /* verify with `__verify-self` even where sha256sum exists */
	BOOT_SEND_AHEAD = 1 << 1,   /* session: BOOT_AHEAD_BYTES come before the node asks */
};

/*
 * What the session sends to a node not known to have our binary before the node says it
 * lacks it: about what a 100 Mbit/s link with a 20 ms round trip carries while the
 * script's first answer is on its way, and all that a node which had the binary after all
 * wastes of the link (a sixth of the packed image).
 */
#define BOOT_AHEAD_BYTES ((size_t)256 << 10)

enum boot_script {
	BOOT_SCRIPT_PROBE = 0,   /* run the binary if it is there, else say SKIFF-NEED-COPY */
	BOOT_SCRIPT_COPY = 1,    /* receive `size` bytes as they are, verify, rename, run */
	BOOT_SCRIPT_SESSION = 2, /* both in one: the probe, then the stub and the packed image */
};

/*
 * Appends the node-side script of kind (enum boot_script) for the binary whose sha256 is
 * sha (64 lowercase hex digits, else -EINVAL) and size is size. POSIX sh only: busybox
 * ash, dash and bash run them. up_args: as boot_install_and_up()'s (the session's alone).
 */
int boot_install_script(struct buf *out, int kind, const char *sha, size_t size, unsigned flags,
                        const char *up_args);
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

#endif
