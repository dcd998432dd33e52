#ifndef SKIFF_SUPERVISOR_H
#define SKIFF_SUPERVISOR_H

/*
 * The node supervisor (what SkyPilot calls the skylet) and its per-job shim.
 *
 * One supervisor runs per state dir. It owns the control socket, the scheduler and the
 * dispatch of jobs; each dispatched job runs under its own shim process (the same binary,
 * `skiff __shim ID`), which starts the job in a new session, writes its logs, waits for
 * it and records its exit status in the node db itself. The supervisor can therefore
 * die (even kill -9) without losing a job: on restart it re-adopts every live shim (pid
 * plus process start time) and marks the jobs of dead shims FAILED_DRIVER.
 *
 * Flow of data: cmd/ -> supervisor/client.c -> socket -> supervisor/daemon.c -> state/.
 */

#include <sys/types.h>

#include "lib/proto.h"

/* Exit status of a supervisor that found another one already running for the state dir. */
#define SUP_EXIT_ALREADY_RUNNING 3

/*
 * The daemon's main loop (`skiff __supervisor [--ready-fd N]`); returns the process exit
 * status. ready_fd (-1: none), the write end of its starter's pipe, gets a line and is
 * closed once the supervisor listens (supervisor/client.c waits on it).
 */
int sup_main(int ready_fd);
/* A job's shim (`skiff __shim ID`); returns the process exit status. */
int shim_main(int64_t job_id);
/* `skiff init`: PID 1 duties in a container; argv is CMD (may be empty). */
int init_main(int argc, char **argv);

/* --- client side (supervisor/client.c) --- */

enum sup_connect_flags {
	SUP_AUTOSTART = 1 << 0, /* start the supervisor if it is not running */
	SUP_QUIET = 1 << 1,     /* no error message when it is not running */
	/* sup_call_open(): its error answer is not printed (the caller passes it on) */
	SUP_ANSWER_QUIET = 1 << 2,
};

/*
 * Connects to the control socket; returns the fd or a negative error (printed). With
 * SUP_AUTOSTART, a node taken down (`node down --all`: the launcher's down or stop) is
 * not started again: -ESHUTDOWN, said as SUP_TAKEN_DOWN, until an explicit sup_start()
 * (`node up`, the launcher's launch and start). A request that comes late, from a watcher
 * or a follower of the cluster that was going, never brings its supervisor back.
 */
#define SUP_TAKEN_DOWN                                                                             \
	"this node was taken down (skiff down or stop); 'skiff node up' starts it again"

int sup_connect(unsigned flags);
/*
 * Sends req and reads the reply. A reply with an "error" field is printed and gives -1;
 * the reply is left in *reply either way (the caller releases it).
 */
int sup_call(unsigned flags, const struct msg *req, struct msg *reply);
/* How long a request waits for the supervisor's reply. */
#define SUP_CALL_TIMEOUT_MS 120000
/*
 * One request, one reply, whatever the reply says: an "error" in it is not printed (the
 * caller passes it on); a busy supervisor is asked again for a moment. 0, or -errno when
 * no reply came (printed).
 */
int sup_request(unsigned flags, const struct msg *req, struct msg *reply);
/*
 * sup_request() to the supervisor listening on sock, from anywhere on its machine (the
 * launcher, for a node that is a directory here): never starts one. 0 with its reply; 1
 * when none listens there (nothing was sent: the caller goes through `node call`); or
 * -errno when the request went and no reply came (printed).
 */
int sup_request_at(const char *sock, const struct msg *req, struct msg *reply, int timeout_ms);
/*
 * 1 if `node call` passes req to the supervisor as it is (cancel, status, submit without
 * follow, ...); 0 for what it answers itself or streams (queue, autostop_state, watch,
 * submit with follow).
 */
int sup_forwarded_op(const struct msg *req);
/*
 * sup_call() that keeps the connection: returns its fd (the caller closes it) for
 * requests the supervisor answers again later (submit with follow, watch).
 */
int sup_call_open(unsigned flags, const struct msg *req, struct msg *reply);
/*
 * sup_call_open() to the supervisor listening on sock (as sup_request_at()): the fd, still
 * open, with the first reply in *reply whatever it says (an "error" one too: the caller
 * passes it on); or -errno, not printed: none listens there (nothing was sent), or the
 * request went and no reply came within timeout_ms (-ETIMEDOUT) or the line broke.
 */
int sup_call_open_at(const char *sock, const struct msg *req, struct msg *reply, int timeout_ms);
/*
 * Starts the supervisor unless one answers already. *pid receives its pid and
 * *already whether it was running. Returns 0 when it accepts requests.
 * A running supervisor of another skiff binary (its ping's sha256 differs from ours,
 * or it has none) is stopped and ours started: an upgrade in place; its jobs keep
 * running under their shims and are re-adopted. A node taken down is up again: its
 * taken-down mark goes (supervisor/node.h).
 */
int sup_start(pid_t *pid, int *already);
/*
 * `node down --all` (supervisor/down.c): marks the node taken down (no request starts a
 * supervisor there any more: sup_connect()), cancels every job, stops the supervisor, and
 * waits until no process of this node is left (its skiff processes, its jobs', and
 * whatever holds the supervisor's lock: daemon_lock_held()), with
 * SIGTERM and then SIGKILL to what outlives the jobs' cancel grace (supervisor/policy.h).
 * 0 when nothing is left; -EBUSY with what is left described in *what (pids and command
 * lines); -ENOTSUP when this /proc cannot tell (why in *what). May block about a minute.
 */
int sup_down_all(struct buf *what);
/* One node of sup_down_nodes(): its state dir in; r and what as sup_down_all()'s out. */
struct sup_down {
	const char *home;
	int r;
	struct buf what; /* the caller's (initialized), released by the caller */
};
/*
 * sup_down_all() of n nodes of this machine at once (a local cluster's, from its
 * launcher), each as its own `node down --all` would: their supervisors are asked a few
 * at a time (DOWN_STOP_THREADS), and what is left of them all is found in one reading of
 * /proc a look, not one a node. Returns how many of them did not stop (r != 0).
 */
size_t sup_down_nodes(struct sup_down *v, size_t n);
/* The one line `node down --all` answers with (the launcher's down shows it), into line. */
void sup_down_say(int r, const struct buf *what, struct buf *line);
/*
 * The node's autostop setting and what it last did are forgotten (supervisor/autostop.c),
 * with no supervisor running: `node down --all` ends the cluster's hold on the node, and
 * the next cluster there starts with none. 0, or a negative errno.
 */
int sup_autostop_forget(const char *db_path);
/* The same in a node db open for writing; nothing is written when nothing was set. */
struct st_db;
int sup_autostop_forget_in(struct st_db *db);
/*
 * The supervisor's part of `node down --all`, as it stops (a shutdown that asks for
 * "rows"): the jobs whose shims may still run, into its answer, and its autostop
 * forgotten (supervisor/down.c).
 */
void sup_down_rows(struct st_db *db, struct msg *m);
/*
 * `node release` (supervisor/down.c), after `node down --all`, when a cluster lets go of
 * a node that stays (an SSH host, a container of a pool): what the cluster put there goes,
 * so that the next cluster starts clean. $HOME/sky_workdir (the workdir, and the
 * file_mounts under it) and the node's job queue, logs and hooks; not skiff's binary
 * and runtime-env caches, nor anything else of the user's home. -EBUSY (said in *what)
 * while a supervisor runs; 0 or -errno.
 */
int sup_release(struct buf *what);

#endif
