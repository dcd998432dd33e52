#ifndef SKIFF_CL_DIRECT_H
#define SKIFF_CL_DIRECT_H

/*
 * A node's supervisor reached on its own socket, with no process started on the node
 * (docs/bootstrap.md, "Straight to the supervisor"):
 *
 *   - a local node's socket, which is on this machine (its directory is here);
 *   - an ssh node's, through a Unix socket here that the node's ssh master forwards to
 *     the supervisor's (ssh_mux_forward(), `ssh -O forward -L`): each connection is a
 *     direct-streamlocal channel that the node's sshd connects itself, with no session,
 *     no shell and no skiff started there. The forward is set up after a call that went
 *     the long way, whose answer names the supervisor's socket (a submit's "sock"), and
 *     lasts as long as the master. Its socket here is named after the master's and the
 *     node's skiff home (a share of a host has a supervisor of its own).
 *
 * Whatever does not answer there goes through `node call` as before.
 */

struct cnode;
struct msg;

/*
 * The socket here that reaches nd's supervisor (malloc'd), or NULL when there is none;
 * *fwd set to 1 for an ssh forward, 0 for a local node's own socket.
 */
char *cl_direct_sock(const struct cnode *nd, int *fwd);
/*
 * Whether req may go through an ssh forward: there, a connection that closes unanswered
 * may have carried the request or not (sshd refused the channel, or the supervisor went
 * mid-request), and the caller sends it again through `node call`. So only what may be
 * asked twice goes: a submit with its key (the node keeps one job per key), a watch,
 * and the supervisor's requests that change nothing or set what they set again.
 */
int cl_direct_fwd_may(const struct msg *req);
/*
 * After an answer that came through `node call` (or the install session): when it names
 * the supervisor's socket ("sock") and nd is an ssh node whose master runs, the forward
 * to it is set up for the calls after this one. Nothing is printed but a debug line.
 */
void cl_direct_learn(const struct cnode *nd, const struct msg *rep);
/* An ssh node's forward here removed (its cluster is taken down); nothing printed. */
void cl_direct_forget(const struct cnode *nd);

#endif
