#ifndef SKIFF_CMD_NODE_H
#define SKIFF_CMD_NODE_H

/* The `skiff node` subcommands that live in their own files. */

#include <stdint.h>

int node_submit(int argc, char **argv);
int node_queue(int argc, char **argv);
int node_logs(int argc, char **argv);
int node_cancel(int argc, char **argv);
int node_call(int argc, char **argv);
/* `node stream`: a followed submit's logs on the connection the supervisor handed over. */
int node_stream(int argc, char **argv);
/*
 * `node up --then-call SKIP`: the install session's last step (bootstrap/launch/install.h).
 * After its lines, node up says BOOT_UP_MARK on a line of its own; then this skips SKIP
 * bytes of stdin (what the launcher sent ahead to a node that had the binary) and answers
 * one request there as `node call` does, waiting for it as long as the launcher keeps
 * stdin open; EOF before one is a quiet exit 0. stderr goes to /dev/null: it is the same
 * channel as the answer's frames.
 */
int node_call_then(size_t skip);
extern const char node_submit_usage[];
extern const char node_queue_usage[];
extern const char node_logs_usage[];
extern const char node_cancel_usage[];
extern const char node_call_usage[];
extern const char node_stream_usage[];

struct st_db;
/*
 * Opens the node db read-only for a query, making sure a supervisor has reconciled it
 * first (starting one if needed). NULL on error (printed).
 */
struct st_db *node_open_db(void);
/* A gang rank whose log lines get SkyPilot's prefix (supervisor/logprefix.h). */
struct node_log_rank {
	int rank;
	const char *ip; /* said on ranks other than 0; may be NULL */
};
/*
 * The body of `node logs` for job id on an open node db: prints the logs (follow: until
 * the job ends; tail >= 0: only the last lines; only_status: the status, after the end
 * with wait; rank: each line prefixed, NULL: not) and returns the exit code `node logs`
 * would. A follower ends early, EXIT_FAIL, when stdout's reader is gone (OUT_GONE), or
 * with stdin_held when our stdin (held open by the reader) reaches EOF, and so does
 * node_follow_submitted().
 */
int node_logs_job(struct st_db *db, int64_t id, int follow, long tail, int only_status, int wait,
                  const struct node_log_rank *rank, int stdin_held);
/*
 * Follows a job just submitted with "follow" on connection fd (closed here), whose logs
 * are in log_dir: the logs (prefixed as rank's, when not NULL) until the job ends, then
 * the `node logs` exit status. stdin_held: our stdin is the reader's channel, which it
 * holds open while it reads (`node call`'s "stdin_held"): EOF on it ends the follow early,
 * EXIT_FAIL, as stdout's reader gone does (the job runs on).
 */
int node_follow_submitted(int fd, int64_t id, const char *log_dir, const struct node_log_rank *rank,
                          int stdin_held);
/* Parses a job id argument; -1 (with an error printed) if it is not one. */
int64_t node_parse_job_id(const char *cmdname, const char *s);

#endif
