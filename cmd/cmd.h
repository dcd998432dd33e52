#ifndef SKIFF_CMD_H
#define SKIFF_CMD_H

/*
 * The command table and what every command shares. A file per command (or per family:
 * lifecycle.c is down, stop, start and autostop; launch.c launch and exec), each defining
 * `int cmd_NAME(int argc, char **argv)` and `const char cmd_NAME_usage[]`; cmd/main.c
 * holds the sorted table. argv[0] is the command's own name.
 *
 * Exit codes: lib/exit.h (docs/exit-codes.md is the same table).
 */

#include <stddef.h>

#include "lib/exit.h"

enum cmd_flags {
	CMD_HIDDEN = 1 << 0, /* internal: not in `skiff help` */
	CMD_GROUP = 1 << 1,  /* has subcommands: only `skiff NAME --help` shows its help */
};

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	unsigned flags;
	const char *summary;
	const char *usage; /* full help text, printed by `skiff NAME --help` */
};

/* The table, sorted by name; *n receives its length. */
const struct cmd *cmd_table(size_t *n);
const struct cmd *cmd_find(const char *name);
/* Finds and runs a command in a sub-table (e.g. `skiff node submit`). */
int cmd_dispatch(const char *group, const struct cmd *table, size_t n, int argc, char **argv);

/* Prints "skiff: error: MSG" and a pointer to --help; returns EXIT_USAGE. */
int usage_error(const char *cmdname, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 1 if argv has --help or -h before any "--" (the caller prints its usage). */
int wants_help(int argc, char **argv);
/* Writes the buf-sized string to stdout and checks for write errors (EPIPE, ENOSPC). */
int print_out(const char *s, size_t len);
/* A duration from..to as tables show it ("42s", "3m 5s", "2h 10m", "1d 4h"); "-" if unknown. */
void cmd_fmt_span(double from, double to, char *out, size_t size);
/* How long ago `when` was ("5s ago", "3m ago", "2h ago", "4d ago"); "-" if unknown. */
void cmd_fmt_ago(double when, double now, char *out, size_t size);

/* The cluster commands' (cmd/clusters.c): the launcher db, opened; 0, or -1 (printed). */
struct st_db;
struct eng_cluster;
int cmd_open_ldb(struct st_db **ldb);
/* The longest cluster argument (a name or a glob) a command takes. */
#define CMD_CLUSTER_ARG_MAX 256
/*
 * Whether name may name clusters (a name or a glob): no control or non-ASCII byte, at
 * most CMD_CLUSTER_ARG_MAX long. 0, or -1 with the error printed (cut, nothing raw).
 */
int cmd_cluster_arg(const char *name);
/*
 * infra as a command's --infra names it: parsed (EXIT_USAGE, printed), its pool file read
 * where it has one (an invalid file: EXIT_INVALID; none, or no such pool in it: EXIT_FAIL;
 * printed). EXIT_OK.
 */
int cmd_infra_arg(const char *infra);
/*
 * The clusters names[0..n) stand for (names or globs; n 0: all), as eng_status() gives
 * them with flags, into *v and *nv; each name that matches none is said. 0; 1 when a
 * name matched none (the others are in *v); -1 on an error (printed).
 */
int cmd_find_clusters(struct st_db *ldb, char **names, size_t n, unsigned flags,
                      struct eng_cluster **v, size_t *nv);

#define DECLARE_CMD(n)                                                                             \
	int cmd_##n(int argc, char **argv);                                                        \
	extern const char cmd_##n##_usage[]

DECLARE_CMD(__dash_watch);
DECLARE_CMD(__fetch);
DECLARE_CMD(__gang);
DECLARE_CMD(__renv_build);
DECLARE_CMD(__jobs_controller);
DECLARE_CMD(__jobs_kept_tar);
DECLARE_CMD(__jobs_kept_untar);
DECLARE_CMD(__jobs_worker);
DECLARE_CMD(__jobs_remote);
DECLARE_CMD(__jobs_keeper);
DECLARE_CMD(__runner_test);
DECLARE_CMD(__shim);
DECLARE_CMD(__ssh_mux);
DECLARE_CMD(__supervisor);
DECLARE_CMD(__sync_cluster);
DECLARE_CMD(__sync_manifest);
DECLARE_CMD(__sync_push);
DECLARE_CMD(__sync_recv);
DECLARE_CMD(__sync_send);
DECLARE_CMD(__sync_serve);
DECLARE_CMD(__pack_self);
DECLARE_CMD(__verify_self);
DECLARE_CMD(autostop);
DECLARE_CMD(cancel);
DECLARE_CMD(check);
DECLARE_CMD(config);
DECLARE_CMD(dashboard);
DECLARE_CMD(down);
DECLARE_CMD(exec);
DECLARE_CMD(help);
DECLARE_CMD(init);
DECLARE_CMD(jobs);
DECLARE_CMD(launch);
DECLARE_CMD(logs);
DECLARE_CMD(node);
DECLARE_CMD(queue);
DECLARE_CMD(ssh);
DECLARE_CMD(start);
DECLARE_CMD(status);
DECLARE_CMD(stop);
DECLARE_CMD(version);

#endif
