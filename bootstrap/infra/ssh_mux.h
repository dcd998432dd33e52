#ifndef SKIFF_SSH_MUX_H
#define SKIFF_SSH_MUX_H

/*
 * A passenger client of OpenSSH's connection multiplexing (PROTOCOL.mux in OpenSSH,
 * version 4): runs a command over a running ControlMaster without starting an ssh
 * client. Starting ssh (a dynamically linked binary that reads its configuration and
 * keys) is most of what a call over a warm master costs; this is a connect, three
 * small packets and three passed file descriptors.
 *
 * `skiff __ssh-mux [-E FILE] SOCKET COMMAND -- SSH-ARGV...` (what the ssh runner runs
 * once a master is up): asks the master at SOCKET for a session running COMMAND with
 * our stdin, stdout and stderr, and exits with the command's exit status. If no
 * session could be started (no master, a stale socket, a refusal), it execs SSH-ARGV,
 * the very ssh command it stands for, so the result is never worse than plain ssh. A
 * master that goes away mid-session (a dead node: ServerAliveInterval) ends it with
 * 255 and a line in FILE, as ssh -E would.
 */

#include "lib/buf.h"

/* ssh_mux_run(): no session was started; nothing has run on the node. */
#define SSH_MUX_NO_SESSION 1

/*
 * Runs command on the master at sock with our fds 0, 1 and 2. Returns 0 and the exit
 * status in *status, SSH_MUX_NO_SESSION (why in *why), or -EPIPE when the master
 * closed the session without an exit status, or went away after waiting a second or
 * more for the node to open it: it lost the node (why in *why).
 */
int ssh_mux_run(const char *sock, const char *command, int *status, struct buf *why);

/*
 * Asks the master at sock to listen on the Unix socket local (which must not exist) and
 * to pass every connection made there to the Unix socket remote on the node
 * (`ssh -O forward -L LOCAL:REMOTE`: a direct-streamlocal channel per connection, no
 * process on the node). The forward lasts as long as the master. 0, or -errno with why
 * said in *why. The node's sshd may still refuse each channel (AllowStreamLocalForwarding
 * no): a connection made at local is then closed at once, unanswered.
 */
int ssh_mux_forward(const char *sock, const char *local, const char *remote, struct buf *why);

#endif
