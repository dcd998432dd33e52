#ifndef SKIFF_FCALL_H
#define SKIFF_FCALL_H

/*
 * The launcher's one client of skiff's frames (lib/proto.h) to a skiff process on a node
 * or a controller's host: a request frame on the process's stdin, its answers as frames
 * on its stdout, over a runner session (runner_open()); or, for a node that is a
 * directory here, the supervisor's own connection (fcall_start_fd()). Every exchange between skiff
 * processes on two machines goes through it: `node call` (bootstrap/launch/cluster.c),
 * a submit that follows its job's logs, the gang watcher's watches, and a jobs
 * controller's `__jobs-remote` (supervisor/jobs/remote.c).
 *
 *   struct fcall c;
 *   fcall_start(&c, r, script, &req, 0);
 *   while ((n = fcall_recv(&c, &m, deadline)) > 0) ... one answer in m ...
 *   rc = fcall_end(&c, &status);
 *
 * An answer that follows with a byte stream (a job's logs after the submit's answer)
 * leaves those bytes in c.rx, and the rest comes on c.p.from. A caller that waits on many
 * calls at once polls fcall_fd() and calls fcall_read(), then fcall_take().
 */

#include <stdint.h>

#include "bootstrap/infra/runner.h"
#include "lib/buf.h"
#include "lib/proto.h"

/* Bytes of a process's stderr kept for the message when it gives no answer. */
#define FCALL_ERR_MAX ((size_t)64 << 10)
/* How long a call's process has to exit once fcall_end() begins; then it is killed. */
#define FCALL_CLOSE_MS 5000

enum fcall_flags {
	FCALL_KEEP_IN = 1 << 0,  /* stdin stays open until fcall_end() (else EOF at once) */
	FCALL_ERR_KEEP = 1 << 1, /* its stderr kept in c.err (bounded; else ours) */
};

struct fcall {
	struct runner *r;
	struct runner_proc p;
	struct buf rx;  /* bytes read and not taken yet */
	struct buf err; /* with FCALL_ERR_KEEP: its stderr */
	int eof;        /* its stdout has ended */
	struct buf tx;  /* the request, while the process has not read it all */
	size_t tx_off;
	int keep_in;
	int direct; /* fcall_start_fd(): a connection, no process */
};

/*
 * Starts script and sends req (NULL: none). 0, or -errno (printed) with nothing running;
 * a process that ends before reading the request is no error here (its exit status and
 * the absence of an answer tell it).
 */
int fcall_start(struct fcall *c, struct runner *r, const char *script, const struct msg *req,
                unsigned flags);
/*
 * A call already under way on a connection of the caller's own (a node's supervisor's
 * socket, for a node that is a directory here; the output of a node's install session,
 * whose process its spare holds: install.h): its answers come on fd, which c now owns,
 * and first, when not NULL, is one already read, taken first. No process runs:
 * fcall_end() closes fd and gives status 0, fcall_kill() does nothing, fcall_detach()
 * gives pid -1.
 */
void fcall_start_fd(struct fcall *c, struct runner *r, int fd, const struct msg *first);
/*
 * The next answer into m (initialised by the caller; released first): 1, 0 at the end
 * of the answers (EOF), -ETIMEDOUT at deadline (now_ms() based; < 0: none), -EPROTO
 * (not a frame: the caller says what came instead), or another -errno.
 */
int fcall_recv(struct fcall *c, struct msg *m, int64_t deadline);
/* For callers that poll many calls: the fd to wait on, and one read into c.rx (1, 0: EOF). */
int fcall_fd(const struct fcall *c);
int fcall_read(struct fcall *c);
/* A whole frame already read into m: 1, 0 when none yet, -EPROTO. */
int fcall_take(struct fcall *c, struct msg *m);
/*
 * Ends the call: closes our ends (its stdin and stdout first), keeps what it writes to
 * stderr until it exits, and waits for it, FCALL_CLOSE_MS at most in all, then kills its
 * group (runner_close_within()). runner_close()'s result, with the process's exit status
 * in *status. c.rx and c.err stay readable until fcall_release().
 */
int fcall_end(struct fcall *c, int *status);
/*
 * Hands the running process over to the caller, who reaps it (spawn_wait()) and reads
 * the rest of its stdout: its pid into *pid, our end of its stdout into *fd, what was
 * read and not taken appended to rest. Its stdin goes to *in (FCALL_KEEP_IN: our end,
 * still open; else -1), or is closed when in is NULL; c is released. 0, or the error of
 * appending to rest (then nothing is handed over: fcall_end() still ends it).
 */
int fcall_detach(struct fcall *c, pid_t *pid, int *fd, int *in, struct buf *rest);
/* Kills the process (a deadline passed); fcall_end() still reaps it. */
void fcall_kill(struct fcall *c);
void fcall_release(struct fcall *c);

/*
 * The whole exchange for a request with answers: every frame until EOF into *replies (free
 * with fcall_replies_free()), and how many (>= 1); or -errno, printed and naming `who`:
 * -ENOEXEC (not printed) when the script exits 127 (skiff is gone from the node),
 * -EHOSTUNREACH, -ETIMEDOUT, -EPROTO (no frame, or what came instead, quoted).
 */
int fcall_many(struct runner *r, const char *who, const char *script, const struct msg *req,
               struct msg **replies, int timeout_ms);
void fcall_replies_free(struct msg *v, int n);

#endif
