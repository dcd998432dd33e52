#ifndef SKIFF_UTIL_H
#define SKIFF_UTIL_H

/* Small helpers: allocation that cannot fail, numbers, paths, files, time. */

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/buf.h"
/* proc_start_time() and the rest of what tells processes apart moved there. */
#include "lib/proc.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Abort with a message when memory runs out: there is no sane recovery in a CLI. */
void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
/*
 * For an array of n elements of size bytes with room for *alloc: returns v, or v grown
 * (doubled, at least 8) when it is full, *alloc updated. Dies on out of memory.
 */
void *xgrow(void *v, size_t n, size_t *alloc, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) SKIFF_PRINTF(1, 2);
/* snprintf that aborts if the result does not fit: for sizes that are known to fit. */
void xsnprintf(char *dst, size_t size, const char *fmt, ...) SKIFF_PRINTF(3, 4);

/*
 * v in decimal, written backwards so that it ends just before end (no NUL): returns where
 * it begins. The space before end holds DEC_DIGITS_MAX bytes at least. printf's "%lld"
 * without printf, for the long listings and JSON.
 */
#define DEC_DIGITS_MAX 20 /* "-9223372036854775808" */
char *dec_digits(char *end, long long v);

/* Whole-string number parsing; 0 or -EINVAL / -ERANGE. No leading/trailing junk. */
int parse_long(const char *s, long min, long max, long *out);
int parse_double(const char *s, double *out);

int starts_with(const char *s, const char *prefix);
int ends_with(const char *s, const char *suffix);
/* The first control byte of s (below 0x20, or 0x7f), or NULL: user text that must stay
 * one printable line (a path on a node, a key file's name). */
const char *str_control(const char *s);

/*
 * The state directory: $SKIFF_HOME; else a cluster's own on a host that clusters share
 * (this binary runs as H/c/KEY/bin/skiff-SHA: H/c/KEY, cluster_home_of()); else
 * $HOME/.skiff, else the passwd entry's home. Returns a static string, or NULL with an
 * error printed when no home can be found.
 */
const char *skiff_home(void);
/* skiff_home() under the user's home when neither SKIFF_HOME nor the binary's place names one. */
#define SKIFF_HOME_DIR ".skiff"
/*
 * A cluster's own state directory on a host that clusters share by resources (supervisor/
 * hold.h): the binary at H/c/KEY/bin/skiff-SHA (SHA: 64 hex digits, KEY: CLUSTER_HOME_KEY_CHARS)
 * belongs to H/c/KEY, where the cluster's supervisor, jobs and ~/sky_workdir live, apart
 * from the host's H and its other clusters. Pure: H/c/KEY, or NULL when exe is not so.
 */
#define CLUSTER_HOME_DIR "c"
#define CLUSTER_HOME_KEY_CHARS "abcdefghijklmnopqrstuvwxyz0123456789-"
#define CLUSTER_HOME_KEY_MAX 96
char *cluster_home_of(const char *exe);
/* 1 when skiff_home() is a cluster's own (cluster_home_of()). */
int skiff_home_is_cluster(void);
/*
 * "~/rest" on this node: under the user's home, but ~/sky_workdir (and below), which is
 * the cluster's own in a cluster home (SKIFF_HOME/sky_workdir). NULL when there is no home.
 */
char *node_tilde_path(const char *rest);
/*
 * This process's account (its real uid), looked up once and safe from any thread: libc's
 * getpwuid() returns a static entry that a second thread's lookup frees under the first
 * (lib/banned.h bans it). Each field is "" when unknown (no entry: musl has no NSS).
 */
struct account {
	char name[256];
	char home[4096];
	char shell[4096];
};
const struct account *own_account(void);
/* The user's home: $HOME, then own_account(); NULL if neither. */
const char *user_home(void);
/* p with a leading "~" or "~/" made the user's home (user_home()); a new string. */
char *user_path(const char *p);

/* mkdir -p with mode for every created component; existing dirs are left as they are. */
int mkdir_p(const char *path, mode_t mode);
/* Creates dir with mode (or chmods an existing one we own to it); refuses a symlink. */
int ensure_private_dir(const char *path);
/*
 * Writes data to path atomically: temp file in the same dir, fsync, rename, fsync dir.
 * Returns 0 or -errno.
 */
int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);
/* rm -rf PATH (no symlink followed, no mount crossed); 0 (also when absent) or -errno. */
int rm_rf(const char *path);
/*
 * Raises this process's soft limit of open files to its hard one (children inherit it):
 * the limit then, what there is to share out (1 << 20 for no limit).
 */
uint64_t nofile_raise(void);
/*
 * The same without the fsyncs, for what may be lost in a crash (a cache, a manifest that
 * reads as none when torn): a temp file beside path, then a rename, so a reader sees the
 * old file or the new one. 0 or -errno (the temp file removed).
 */
int write_file_quick(const char *path, const void *data, size_t len, mode_t mode);
int write_all(int fd, const void *data, size_t len);
int set_cloexec(int fd);
int set_nonblock(int fd);

/*
 * Whether out's reader is gone, seen in poll()'s revents for out (asked with events 0):
 * a pipe's last reader closed (POLLERR), a socket or a tty hung up (POLLHUP). A file
 * never is; a closed fd (POLLNVAL) is not called gone. For a follower whose log may
 * write nothing for hours: EPIPE would never come.
 */
#define OUT_GONE(revents) (((revents) & (POLLERR | POLLHUP)) != 0)
/*
 * Waits until fd is readable: 1; 0 when out's reader went first (OUT_GONE); -errno on
 * an error.
 */
int wait_readable_or_gone(int fd, int out);

/* Milliseconds on CLOCK_MONOTONIC and seconds (fractional) since the epoch. */
int64_t now_ms(void);
double now_wall(void);
/* Waits ms milliseconds (poll-based; for client-side waits, never in the daemon loop). */
void poll_ms(int ms);
/* Current boot id (/proc/sys/kernel/random/boot_id) into out[37]; "" if unknown. */
void boot_id(char out[37]);

/* pidfd_open(2) (no libc wrapper in musl): a CLOEXEC fd, or -errno (-ENOSYS on old kernels). */
int pidfd_open_pid(pid_t pid);

/*
 * n random bytes as 2n lowercase hex digits into out (2n + 1 bytes): for names and keys
 * that must not collide, from getrandom(); without entropy yet (early boot), from the
 * clock and the pid, which still differ between two callers.
 */
void random_hex(char *out, size_t n);

/* Levenshtein distance, capped: for did-you-mean suggestions. */
int edit_distance(const char *a, const char *b);
/* The candidate closest to s, or NULL if none is close enough to suggest. */
const char *nearest_word(const char *s, const char *const *cands, size_t n);

/*
 * Unix sockets at any path: one longer than a sockaddr_un holds (107 bytes: a long $HOME,
 * a long cluster name) is reached through an O_PATH fd of its directory, as
 * /proc/self/fd/N/NAME. -ENAMETOOLONG only when even that does not fit (a NAME of more
 * than ~80 bytes).
 * unix_connect(): a connected SOCK_STREAM socket (CLOEXEC) to path: the fd, or -errno.
 * unix_bind(): binds fd (a fresh AF_UNIX socket) to path. 0, or -errno.
 */
int unix_connect(const char *path);
int unix_bind(int fd, const char *path);

/* For an enum with names[0..n): names[v], or "UNKNOWN" out of range. */
const char *enum_name(const char *const *names, int n, int v);
/* The value whose name is name, or -1. */
int enum_parse(const char *const *names, int n, const char *name);

#endif
