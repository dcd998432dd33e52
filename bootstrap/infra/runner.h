#ifndef SKIFF_RUNNER_H
#define SKIFF_RUNNER_H

/*
 * Runners: how the launcher runs a command on a node. Every infra (local processes, SSH,
 * and later containers, Slurm, Kubernetes) implements the same small interface, whose
 * core is one operation: the argv that runs a POSIX sh script on the node. Everything
 * else (run and wait, capture output, stream, put a file tree through stdin) is built on
 * that argv here, once, so a new runner is one file that builds an argv.
 *
 * Scripts are always built with lib/quote.h and passed to the node as ONE quoted
 * argument of `sh -c`: nothing is ever pasted into a remote command line unquoted.
 * Data (binaries, tar streams) goes through stdin, never the command line.
 *
 * Transport failures (the node cannot be reached) are told apart from the script's own
 * exit status: runner_run() returns -EHOSTUNREACH (with the transport's message in
 * r->last_error) instead of an exit status. A dead node never hangs a caller: SSH runs
 * with ServerAliveInterval/ConnectTimeout, and every call takes a timeout.
 *
 * A runner is used by one thread at a time (calls set r->diag_path and r->last_error);
 * a forked child may use its copy. See docs/bootstrap.md.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/buf.h"

struct runner;

/* An argv under construction; owns its strings. */
struct argv {
	char **v; /* NULL-terminated */
	size_t n, cap;
};
void argv_init(struct argv *a);
void argv_push(struct argv *a, const char *s);
void argv_pushf(struct argv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void argv_release(struct argv *a);

struct runner_ops {
	const char *kind; /* "local", "ssh", ... */
	/*
	 * Appends to out the argv that runs `script` with /bin/sh on the node. interactive:
	 * allocate a terminal (skiff ssh), script may then be NULL for a login shell.
	 */
	int (*build_argv)(struct runner *r, const char *script, int interactive, struct argv *out);
	/*
	 * Appends to out the argv that runs cmd (a program and its arguments) on the node as
	 * it is, without a shell; NULL: this runner runs scripts only (runner_open_argv()).
	 */
	int (*build_exec)(struct runner *r, char *const *cmd, struct argv *out);
	/*
	 * Environment changes for the local process that runs the argv (may be NULL):
	 * appends "K=V" (set K) or "K" (remove K) to env_kv; the rest is ours.
	 */
	void (*build_env)(struct runner *r, struct argv *env_kv);
	/*
	 * Frees what the runner holds. Shared connections stay up: an ssh ControlMaster
	 * outlives the process (ControlPersist) so the next skiff command reuses it; close
	 * it with runner_ssh_close_master() when the node goes away.
	 */
	void (*release)(struct runner *r);
	/* Where the local process starts (may be NULL: our cwd). */
	const char *(*cwd)(struct runner *r);
	/*
	 * The node's home as a path on this machine, when the node is a directory here (the
	 * local runner): its skiff can then be a hard link of ours. NULL, or no op: it is not.
	 */
	const char *(*home_here)(struct runner *r);
	/*
	 * The exit status by which the transport itself says it failed (ssh: 255), 0 if
	 * none. It counts as a transport failure only when the transport also wrote a
	 * message to r->diag_path (see runner_run()).
	 */
	int transport_status;
};

struct runner {
	const struct runner_ops *ops;
	char *name;            /* node name for messages ("tn1", "local-2") */
	char *ip;              /* the node's address as other nodes see it */
	struct buf last_error; /* the transport's last complaint (ssh's own messages) */
	/*
	 * With a transport failure: whether the transport said the node is no longer there
	 * (a container or pod that is not running, an allocation that has ended), where
	 * other failures (ssh cut off, an API server that does not answer) leave that open.
	 * A wrapper says it with the line RUNNER_GONE_LINE in its diag file, which is not
	 * part of last_error.
	 */
	int last_gone;
	void *priv;
	/*
	 * Set by runner.c around build_argv() for runner_run() and runner_capture(): a
	 * fresh file (in diag_dir) where the transport writes its own messages (ssh -E),
	 * so they are told apart from the script's stderr. NULL: none (runner_spawn()).
	 */
	const char *diag_path;
	char *diag_dir; /* a private dir for those files, or NULL (owned) */
	int twin;       /* runner_twin(): ops, priv and diag_dir are another runner's */
};

/* A diag file's line by which a transport's wrapper says the node is gone (last_gone). */
#define RUNNER_GONE_LINE "skiff-transport: node gone"

/*
 * Whether a call on r that failed with rc failed because the node is gone: its transport
 * said so (rc -EHOSTUNREACH and last_gone), or the node is a directory here (home_here)
 * that no longer exists. 0 where it may only be away for a while.
 */
int runner_node_gone(struct runner *r, int rc);

/* What a local process gets for stdin/stdout/stderr: an fd, /dev/null, or ours. */
#define RUNNER_NULL (-1)
#define RUNNER_INHERIT (-2)

struct runner_io {
	int in_fd, out_fd, err_fd;
	pid_t *pid_out; /* runner_run(): the local process's pid while it runs (spawn_io) */
};

/*
 * Runs script on the node and waits (at most timeout_ms; < 0: no limit). Returns 0 and
 * the script's exit status (0..255, or 128+signal), -EHOSTUNREACH when the transport
 * failed (message in r->last_error and printed), -ETIMEDOUT (the local process is
 * killed), or another negative errno. Every error is printed, naming the node.
 *
 * io NULL: stdin /dev/null, stdout and stderr ours. The local process runs in its own
 * process group (a timeout kills the group) unless its stdin is our terminal, and gets
 * SIGTERM if we die (PR_SET_PDEATHSIG). The call returns when that process exits, even
 * if something it started in the background still holds its stdout or stderr.
 *
 * A script may exit 255 itself: with ssh, 255 is a transport failure only when ssh also
 * logged a message of its own (ssh -E, LogLevel INFO), which it does for every failure
 * to connect, authenticate or keep the connection, and never for a remote exit status.
 */
int runner_run(struct runner *r, const char *script, const struct runner_io *io, int timeout_ms,
               int *status);
/*
 * runner_run() with stdin from `in` (in_len bytes, may be NULL) and stdout/stderr
 * captured, each bounded by its buf's max (past it: what fit is kept, the pipe closed,
 * and -ENOBUFS returned after the process exited). out NULL: /dev/null; err NULL: ours.
 */
int runner_capture(struct runner *r, const char *script, const char *in, size_t in_len,
                   struct buf *out, struct buf *err, int timeout_ms, int *status);
/*
 * Starts script without waiting (streaming logs, interactive shells); the caller reaps
 * *pid with spawn_wait(). No timeout, no death signal, no diag file: ssh's messages go to
 * the given stderr. Interactive: stays in our process group (the terminal's).
 */
int runner_spawn(struct runner *r, const char *script, int interactive, const struct runner_io *io,
                 pid_t *pid);
/*
 * A process on the node that the caller talks with while it runs (a framed session:
 * bootstrap/infra/fcall.h): its stdin and stdout are pipes whose other ends are `to` and
 * `from`; its stderr is ours, or with RUNNER_PROC_ERR a third pipe, `err`. It runs in its
 * own process group (with no death signal: it may outlive the thread that opened it;
 * when we die, its next write to its stdout fails); ssh's own messages go to a diag file, so
 * that runner_close() tells a transport failure from the script's exit status as
 * runner_run() does. No timeout: the caller's reads have deadlines, and it kills the
 * process (runner_proc_kill()) when one passes.
 */
enum runner_proc_flags {
	RUNNER_PROC_ERR = 1 << 0,       /* the script's stderr on a pipe (else ours) */
	RUNNER_PROC_MERGE_ERR = 1 << 1, /* the script's stderr on `from` with its stdout */
};
struct runner_proc {
	/*
	 * Its own process group; -1 once reaped (stored atomically: a signal handler may
	 * read it with an atomic load, to signal the group).
	 */
	pid_t pid;
	int to;     /* its stdin (ours to close, for EOF; -1 once closed) */
	int from;   /* its stdout */
	int err;    /* its stderr with RUNNER_PROC_ERR, else -1 */
	int64_t t0; /* now_ms() at the start */
	int reaped; /* the caller reaped it (waitpid()): its raw wait status is in raw */
	int raw;
	struct runner_call *call; /* private: the argv and the transport's diag file */
};
/* 0, or -errno (printed); on failure nothing runs and no fd is open. */
int runner_open(struct runner *r, const char *script, unsigned flags, struct runner_proc *p);
/*
 * runner_open() of a program and its arguments, run on the node as they are, with no
 * shell between (runner_ops.build_exec): -ENOTSUP (printed) where the runner runs
 * scripts only.
 */
int runner_open_argv(struct runner *r, char *const *argv, unsigned flags, struct runner_proc *p);
/*
 * Closes the fds still open, waits for the process (unless p->reaped), and returns as
 * runner_run() does: 0 with its exit status in *status, -EHOSTUNREACH when the transport failed
 * (printed), or another -errno (printed).
 */
int runner_close(struct runner *r, struct runner_proc *p, int *status);
/*
 * runner_close() for a process that has said all it will (its output ended, or its
 * answer came): once our ends are closed it has ms to exit, then its group is killed
 * (with a warning) and reaped, so that one that hangs on cannot hang us.
 */
int runner_close_within(struct runner *r, struct runner_proc *p, int ms, int *status);
/* SIGKILL to its process group (a deadline passed); runner_close() then reaps it. */
void runner_proc_kill(struct runner_proc *p);
/*
 * Drops what runner_close() would have used to tell a transport failure: the caller
 * keeps p->pid and p->from and reaps the process itself (spawn_wait()), reading its
 * exit status alone (a follower of a job's logs).
 */
void runner_proc_forget(struct runner_proc *p);
void runner_free(struct runner *r);
/*
 * A runner for another thread to use alongside r: the same node and transport (r's ops,
 * priv and diag dir, borrowed) with its own messages (last_error). Freed with
 * runner_free(), which then releases nothing of r's; free it before r.
 */
struct runner *runner_twin(const struct runner *r);

/* For runner implementations: a zeroed runner with name and ip copied, last_error empty. */
struct runner *runner_new(const struct runner_ops *ops, const char *name, const char *ip);

/*
 * The local runner: the node is a directory on this machine. Scripts run with
 * /bin/sh -c, HOME set to node_home (so ~/.skiff and ~/sky_workdir are the node's own),
 * in node_home, in a clean login-like environment, as sshd would give them (below):
 * the node's supervisor, and so its jobs, never depend on which launcher started it.
 * node_home is the node: it is made where the node is made (the local infra's pick), never
 * here, and a node_home that is gone (an absolute path) gives a runner whose calls fail and
 * whose node is gone (runner_node_gone()). NULL (error printed) on failure.
 */
struct runner *runner_local_new(const char *name, const char *node_home);
/* The PATH a local node's commands get (a login's, as Debian's sshd and login set it). */
#define RUNNER_LOCAL_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
/*
 * Whether a launcher's environment entry ("K=V") reaches a local node: LANG, and skiff's
 * own settings (SKIFF_*, but SKIFF_HOME: the node's is its own ~/.skiff). HOME, PWD,
 * USER, LOGNAME, SHELL and PATH are set anew; everything else (TERM, the launcher's
 * shell variables) is left out.
 */
int runner_local_env_kept(const char *kv);

/*
 * What every skiff ssh connection sets, in one place: the runner's -o options and the
 * ssh_config a cluster on ssh infra gets (bootstrap/launch/ssh_config.h) both use these,
 * so that a master either of them starts serves the other as it would its own.
 */
#define SSH_CONNECT_TIMEOUT_S 10
#define SSH_ALIVE_INTERVAL_S 3
#define SSH_ALIVE_COUNT_MAX 3
#define SSH_CONTROL_PERSIST_S 300
#define SSH_KEX_ALGORITHMS "^curve25519-sha256"
/*
 * AES-GCM first, the rest of ssh's defaults after it: with the AES and carry-less
 * multiply instructions every x86-64 and arm64 server has, it costs a fraction of the
 * CPU of the default chacha20-poly1305 (whose poly1305 is OpenSSH's own C), on both ends
 * of every byte a sync or a self-copy sends.
 */
#define SSH_CIPHERS "^aes128-gcm@openssh.com"
#define SSH_HOST_KEY_CHECKING "accept-new"

struct ssh_target {
	const char *host;          /* IP or name */
	const char *user;          /* NULL: ssh's default */
	int port;                  /* 0: ssh's default (22 unless ssh_config says otherwise) */
	const char *identity_file; /* NULL: ssh's default */
	const char *proxy_jump;    /* NULL: none */
	const char *ssh_config;    /* an ssh_config file (-F), NULL: the user's */
	const char *control_dir;   /* where ControlMaster sockets live (short path) */
};

/*
 * The SSH runner: the system OpenSSH client with ControlMaster/ControlPersist,
 * ServerAliveInterval so a dead node fails in seconds, BatchMode, the given identity,
 * user, port and ProxyJump. The strings are copied. See docs/bootstrap.md for every
 * option and why.
 *
 * control_dir is created (0700); host keys are pinned on first use in
 * control_dir/known_hosts (StrictHostKeyChecking=accept-new; ~/.ssh is not touched).
 * A ControlPath must fit a Unix socket path: when control_dir is too long for that (or
 * holds characters ssh would expand: whitespace, quotes, backslash, '%'), the sockets go
 * to /tmp/skiff-ssh.UID (0700) instead, said in a debug line. NULL control_dir: that
 * fallback for both. Returns NULL (error printed) for a host, user or jump host that is
 * empty, starts with '-' or holds whitespace or control characters.
 */
struct runner *runner_ssh_new(const char *name, const struct ssh_target *t);
/* An ssh runner's ControlPath (where its master listens), or NULL for other runners. */
const char *runner_ssh_control(const struct runner *r);
/*
 * How an ssh runner reaches its node, borrowed from r (valid while r lives): NULL for
 * what ssh decides (user, identity, jump host), port 0 for ssh's default. 0, or -EINVAL
 * for another kind of runner.
 */
struct ssh_conn {
	const char *host, *user, *identity_file, *proxy_jump;
	int port;
	const char *control;     /* the ControlPath */
	const char *known_hosts; /* skiff's own known_hosts file */
};
int runner_ssh_conn(const struct runner *r, struct ssh_conn *out);
/* `ssh -O exit`: closes the node's ControlMaster, if one runs. 0, or -errno (printed). */
int runner_ssh_close_master(struct runner *r);

/*
 * The Slurm runner: `srun --jobid=JOB --overlap -N1 -n1 -w NODE /bin/sh -c SCRIPT` (one
 * job step per call; stdin reaches the script), with HOME set to home (absolute; created
 * 0700 on first use) and SKIFF_HOME removed on the node. A call that fails because the
 * allocation has ended returns -EHOSTUNREACH ("the Slurm allocation J has ended
 * (STATE)"). job: digits; node: a Slurm node name. NULL (printed) on a bad argument.
 * See bootstrap/infra/runner_slurm.c and docs/infra-slurm.md.
 */
struct runner *runner_slurm_new(const char *name, const char *ip, const char *job, const char *node,
                                const char *home);
/* The allocation a Slurm runner uses; NULL for another kind of runner. */
const char *runner_slurm_job(const struct runner *r);

/*
 * The container runner (runner_container.c): `ENGINE exec -i [--user USER] CONTAINER sh -c
 * SCRIPT` with ENGINE podman or docker, under the host-side wrapper of runner_exec_wrap()
 * that tells a container that is no longer running (a transport failure, exit 255) from
 * a script that failed. Interactive (skiff ssh): `exec -i -t`, no wrapper. The strings
 * are copied. NULL (printed) for an unknown engine, or a container or user that is
 * empty, starts with '-' or has characters a container name cannot have.
 */
struct container_target {
	const char *engine;    /* "podman" or "docker" (found in PATH) */
	const char *container; /* name or id */
	const char *user;      /* exec --user; NULL or "": the container's */
	const char *ip;        /* the node's address for other nodes; NULL: the container's name */
};
struct runner *runner_container_new(const char *name, const struct container_target *t);

/*
 * The Kubernetes runner (runner_k8s.c): `kubectl [--context CTX] [-n NS] exec -i POD
 * [-c CONTAINER] -- sh -c SCRIPT`, under the same wrapper (the probe is `kubectl get pod
 * POD --ignore-not-found -o jsonpath={.status.phase}`, Running; a probe that fails is no
 * answer). Same rules for the names as runner_container_new().
 */
struct k8s_target {
	const char *kubectl;   /* the command; NULL: "kubectl" */
	const char *context;   /* NULL or "": kubectl's current context */
	const char *ns;        /* NULL or "": the context's namespace */
	const char *pod;       /* required */
	const char *container; /* NULL or "": the pod's default container */
	const char *ip;        /* the pod's IP; NULL: the pod's name */
};
struct runner *runner_k8s_new(const char *name, const struct k8s_target *t);

/*
 * For runners over an exec CLI (container, kubernetes): appends to out the argv that runs
 * exec (the CLI's own argv) under a host /bin/sh wrapper. When exec ends with one of the
 * space-separated statuses in codes, the wrapper runs probe (an argv, quoted with
 * lib/quote.h) and, unless it printed exactly the text of `running`, writes "NAME is not
 * running (WHAT THE PROBE PRINTED)" after RUNNER_GONE_LINE to r->diag_path (stderr, the
 * message alone, when that is NULL) and exits 255, the transport's status. With
 * failed_probe_unsure, a probe that exits non-zero is no answer: "cannot tell whether
 * NAME is running (WHAT IT PRINTED)", exit 255, the node not said to be gone. Any other
 * status, and every status of a node that runs, passes through. 0, or -EINVAL when probe
 * cannot be quoted.
 */
int runner_exec_wrap(struct runner *r, struct argv *out, const struct argv *exec,
                     char *const *probe, const char *running, const char *codes,
                     int failed_probe_unsure);
/* A private directory for the wrapper's diag files ($SKIFF_HOME/exec, else /tmp); or NULL. */
char *runner_diag_dir_new(void);
/* 1 if s is a container, pod or namespace name: [A-Za-z0-9_.-], not starting with '-'. */
int runner_valid_object_name(const char *s);

#endif
