#include "lib/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <sys/resource.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/banned.h"

static void oom(size_t n)
{
	static const char msg[] = "skiff: fatal: out of memory\n";

	(void)n;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		abort();
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		oom(n);
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

	if (!p)
		oom(nmemb * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

void *xgrow(void *v, size_t n, size_t *alloc, size_t size)
{
	if (n < *alloc)
		return v;
	*alloc = *alloc ? *alloc * 2 : 8;
	return xrealloc(v, *alloc * size);
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		oom(strlen(s));
	return p;
}

char *xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);

	if (!p)
		oom(n);
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	struct buf b = BUF_INIT(0);
	va_list ap;

	va_start(ap, fmt);
	if (buf_vaddf(&b, fmt, ap))
		oom(0);
	va_end(ap);
	return buf_detach(&b, NULL);
}

void xsnprintf(char *dst, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(dst, size, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= size)
		die("BUG: xsnprintf: result does not fit in %zu bytes", size);
}

char *dec_digits(char *end, long long v)
{
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;

	do
		*--end = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--end = '-';
	return end;
}

int parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (!s || !*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_double(const char *s, double *out)
{
	char *end;
	double v;

	/* Decimal only: strtod's hex floats ("0x10") are no number a person writes here. */
	if (!s || !*s || isspace((unsigned char)*s) || strpbrk(s, "xX"))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (*end)
		return -EINVAL;
	/* Overflow is +-HUGE_VAL with ERANGE: out of range, not malformed. */
	if (errno == ERANGE)
		return -ERANGE;
	if (!isfinite(v))
		return -EINVAL;
	*out = v;
	return 0;
}

int starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

const char *str_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return s;
	return NULL;
}

int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !memcmp(s + a - b, suffix, b);
}

static struct account own;
static pthread_once_t own_once = PTHREAD_ONCE_INIT;

static void copy_field(char *dst, size_t size, const char *s)
{
	if (s && strlen(s) < size)
		memcpy(dst, s, strlen(s) + 1);
}

static void own_load(void)
{
	struct passwd pw, *res = NULL;
	size_t len = 1024;
	char *b = NULL;
	int rc;

	do {
		len *= 2;
		b = xrealloc(b, len);
		rc = getpwuid_r(getuid(), &pw, b, len, &res);
	} while (rc == ERANGE && len < (1 << 20));
	if (!rc && res) {
		copy_field(own.name, sizeof(own.name), pw.pw_name);
		copy_field(own.home, sizeof(own.home), pw.pw_dir);
		copy_field(own.shell, sizeof(own.shell), pw.pw_shell);
	}
	free(b);
}

const struct account *own_account(void)
{
	pthread_once(&own_once, own_load);
	return &own;
}

const char *user_home(void)
{
	const char *h = getenv("HOME");

	if (h && *h == '/')
		return h;
	h = own_account()->home;
	return *h == '/' ? h : NULL;
}

char *user_path(const char *p)
{
	const char *home = user_home();

	if (home && (!strcmp(p, "~") || starts_with(p, "~/")))
		return xasprintf("%s%s", home, p + 1);
	return xstrdup(p);
}

char *cluster_home_of(const char *exe)
{
	static const char bin[] = "/bin/skiff-", c[] = "/" CLUSTER_HOME_DIR "/";
	const char *b, *key, *p;
	size_t i;

	if (!exe || *exe != '/')
		return NULL;
	b = strrchr(exe, '/');
	if (!b || b - exe < (ptrdiff_t)strlen("/bin") || strncmp(b - 4, bin, strlen(bin)))
		return NULL;
	for (i = 0, p = b + strlen("/skiff-"); p[i]; i++)
		if (!strchr("0123456789abcdef", p[i]))
			return NULL;
	if (i != 64)
		return NULL;
	b -= 4; /* "/bin/skiff-..." */
	for (key = b; key > exe && key[-1] != '/'; key--)
		;
	if (key == b || (size_t)(b - key) > CLUSTER_HOME_KEY_MAX ||
	    strspn(key, CLUSTER_HOME_KEY_CHARS) < (size_t)(b - key))
		return NULL;
	/* key - 1 is the '/' before KEY: "/c/" ends there, with something before it. */
	if (key - exe < (ptrdiff_t)strlen(c) + 1 || strncmp(key - strlen(c), c, strlen(c)))
		return NULL;
	return xstrndup(exe, (size_t)(b - exe));
}

/* The cluster home this binary belongs to (cluster_home_of()), or NULL. */
static char *exe_cluster_home(void)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	/* Its directory removed (the cluster's release) while it runs: still its home. */
	if (ends_with(buf, " (deleted)"))
		buf[n - strlen(" (deleted)")] = '\0';
	return cluster_home_of(buf);
}

static int home_is_cluster;

static const char *find_skiff_home(void)
{
	static char *dir;
	const char *h;

	if (dir)
		return dir;
	h = getenv("SKIFF_HOME");
	if (h && *h) {
		if (*h != '/') {
			char cwd[PATH_MAX];

			if (!getcwd(cwd, sizeof(cwd))) {
				error_errno("cannot resolve SKIFF_HOME '%s'", h);
				return NULL;
			}
			return dir = xasprintf("%s/%s", cwd, h);
		}
		return dir = xstrdup(h);
	}
	dir = exe_cluster_home();
	if (dir) {
		home_is_cluster = 1;
		return dir;
	}
	h = user_home();
	if (!h) {
		error("cannot find a home directory: set HOME or SKIFF_HOME");
		return NULL;
	}
	return dir = xasprintf("%s/" SKIFF_HOME_DIR, h);
}

const char *skiff_home(void)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	const char *dir;

	/* Found once, by whichever thread asks first. */
	pthread_mutex_lock(&lock);
	dir = find_skiff_home();
	pthread_mutex_unlock(&lock);
	return dir;
}

int skiff_home_is_cluster(void)
{
	return skiff_home() && home_is_cluster;
}

char *node_tilde_path(const char *rest)
{
	static const char wd[] = "sky_workdir";
	const char *home;

	while (*rest == '/')
		rest++;
	if (starts_with(rest, wd) && (!rest[strlen(wd)] || rest[strlen(wd)] == '/') &&
	    skiff_home_is_cluster())
		return xasprintf("%s/%s", skiff_home(), rest);
	home = user_home();
	if (!home)
		return NULL;
	return *rest ? xasprintf("%s/%s", home, rest) : xstrdup(home);
}

/*
 * mkdir p, and its missing parents first: the deepest one that exists is found from the
 * end, so that no name that exists is given to mkdir() (each such call takes its
 * parent's lock for writing: a thousand nodes' processes starting at once all took the
 * lock of /tmp, and of every folder above theirs). p is the caller's copy, restored.
 */
static int mkdir_up(char *p, mode_t mode)
{
	char *slash;
	int r;

	if (!mkdir(p, mode) || errno == EEXIST)
		return 0;
	if (errno != ENOENT)
		return -errno;
	slash = strrchr(p, '/');
	while (slash && slash > p && slash[-1] == '/')
		slash--;
	if (!slash || slash == p)
		return -ENOENT;
	*slash = '\0';
	r = mkdir_up(p, mode);
	*slash = '/';
	if (r)
		return r;
	return !mkdir(p, mode) || errno == EEXIST ? 0 : -errno;
}

int mkdir_p(const char *path, mode_t mode)
{
	struct stat st;
	char *p;
	int r;

	if (!*path)
		return -ENOENT;
	/* Nearly always there already: a stat takes no lock. */
	if (!stat(path, &st))
		return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
	p = xstrdup(path);
	r = mkdir_up(p, mode);
	free(p);
	/* EEXIST does not say what exists: the path must end up a directory. */
	if (!r && stat(path, &st) < 0)
		r = -errno;
	else if (!r && !S_ISDIR(st.st_mode))
		r = -ENOTDIR;
	return r;
}

int ensure_private_dir(const char *path)
{
	struct stat st;
	int r = mkdir_p(path, 0700);

	if (r)
		return r;
	if (lstat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (st.st_uid != geteuid())
		return -EPERM;
	if ((st.st_mode & 07777) != 0700 && chmod(path, 0700) < 0)
		return -errno;
	return 0;
}

int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int write_file_quick(const char *path, const void *data, size_t len, mode_t mode)
{
	char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
	int fd, r;

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	r = fd < 0 ? -errno : write_all(fd, data, len);
	if (fd >= 0 && close(fd) < 0 && !r)
		r = -errno;
	if (!r && rename(tmp, path) < 0)
		r = -errno;
	if (r && fd >= 0)
		unlink(tmp);
	free(tmp);
	return r;
}

static int rm_entry(const char *p, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)f;
	if (type == FTW_DP)
		rmdir(p);
	else
		unlink(p);
	return 0;
}

int rm_rf(const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlink(path) ? -errno : 0;
	nftw(path, rm_entry, 32, FTW_PHYS | FTW_MOUNT | FTW_DEPTH);
	return access(path, F_OK) ? 0 : -ENOTEMPTY;
}

int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
	char *dir = xstrdup(path), *slash;
	int fd, r;

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	r = write_all(fd, data, len);
	if (!r && fchmod(fd, mode) < 0)
		r = -errno;
	if (!r && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && !r)
		r = -errno;
	if (!r && rename(tmp, path) < 0)
		r = -errno;
	if (r) {
		unlink(tmp);
		goto out;
	}
	/* The rename is durable once the directory is synced: ".", for a bare file name. */
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	fd = open(!slash ? "." : *dir ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
out:
	free(tmp);
	free(dir);
	return r;
}

int set_cloexec(int fd)
{
	int f = fcntl(fd, F_GETFD);

	if (f < 0 || fcntl(fd, F_SETFD, f | FD_CLOEXEC) < 0)
		return -errno;
	return 0;
}

int set_nonblock(int fd)
{
	int f = fcntl(fd, F_GETFL);

	if (f < 0 || fcntl(fd, F_SETFL, f | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

double now_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int wait_readable_or_gone(int fd, int out)
{
	struct pollfd pfd[2] = {{fd, POLLIN, 0}, {out, 0, 0}};

	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pfd[0].revents)
			return 1; /* data, its end or an error: the reader of fd says which */
		if (OUT_GONE(pfd[1].revents))
			return 0;
		if (pfd[1].revents & POLLNVAL)
			pfd[1].fd = -1; /* no out to watch */
	}
}

void poll_ms(int ms)
{
	poll(NULL, 0, ms);
}

void boot_id(char out[37])
{
	const char *fake = getenv("SKIFF_TEST_BOOT_ID");
	int fd;
	ssize_t n;

	out[0] = '\0';
	if (fake) {
		xsnprintf(out, 37, "%.36s", fake);
		return;
	}
	fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, out, 36);
	close(fd);
	out[n == 36 ? 36 : 0] = '\0';
}

void random_hex(char *out, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char b[64];
	size_t i, got = 0;

	if (n > sizeof(b))
		n = sizeof(b);
	while (got < n) {
		ssize_t r = getrandom(b + got, n - got, GRND_NONBLOCK);

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	for (i = got; i < n; i++) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		b[i] = (unsigned char)((uint64_t)ts.tv_nsec * 2654435761u >> (8 * (i % 4))) ^
		       (unsigned char)(getpid() >> (i % 3) * 8);
	}
	for (i = 0; i < n; i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[2 * n] = '\0';
}

int pidfd_open_pid(pid_t pid)
{
#ifdef SYS_pidfd_open
	long fd = syscall(SYS_pidfd_open, pid, 0);

	return fd < 0 ? -errno : (int)fd;
#else
	(void)pid;
	return -ENOSYS;
#endif
}

int edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	int row[65], prev, tmp;

	if (la > 64 || lb > 64)
		return 99;
	for (j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = (int)i;
		for (j = 1; j <= lb; j++) {
			int cost = tolower((unsigned char)a[i - 1]) !=
			           tolower((unsigned char)b[j - 1]);
			int best = prev + cost;

			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			tmp = row[j];
			row[j] = best;
			prev = tmp;
		}
	}
	return row[lb];
}

const char *nearest_word(const char *s, const char *const *cands, size_t n)
{
	const char *best = NULL;
	int bestd = 99;
	size_t i;
	int limit = strlen(s) <= 4 ? 1 : strlen(s) <= 8 ? 2 : 3;

	for (i = 0; i < n; i++) {
		int d = edit_distance(s, cands[i]);

		if (d < bestd) {
			bestd = d;
			best = cands[i];
		}
	}
	/* A prefix ("sta" for "status") is also a good hint. */
	if (bestd > limit) {
		for (i = 0; i < n; i++)
			if (strlen(s) >= 2 && starts_with(cands[i], s))
				return cands[i];
		return NULL;
	}
	return best;
}

/*
 * addr for path. A path longer than sun_path holds is reached through its directory: an
 * O_PATH fd of it (*dirfd, which the caller closes after the bind or connect), named
 * /proc/self/fd/N/BASE, which the kernel resolves as it would the path itself.
 */
static int unix_addr(const char *path, struct sockaddr_un *addr, int *dirfd)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int n;

	*dirfd = -1;
	memset(addr, 0, sizeof(*addr));
	addr->sun_family = AF_UNIX;
	if (strlen(path) < sizeof(addr->sun_path)) {
		memcpy(addr->sun_path, path, strlen(path) + 1);
		return 0;
	}
	if (!slash || !slash[1])
		return -ENAMETOOLONG;
	dir = slash == path ? xstrdup("/") : xstrndup(path, (size_t)(slash - path));
	*dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (*dirfd < 0)
		return -errno;
	n = snprintf(addr->sun_path, sizeof(addr->sun_path), "/proc/self/fd/%d/%s", *dirfd,
	             slash + 1);
	if (n < 0 || (size_t)n >= sizeof(addr->sun_path)) {
		close(*dirfd);
		*dirfd = -1;
		return -ENAMETOOLONG;
	}
	return 0;
}

int unix_connect(const char *path)
{
	struct sockaddr_un addr;
	int fd, dirfd, r;

	r = unix_addr(path, &addr, &dirfd);
	if (r)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = -errno;
	} else if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		r = -errno;
		close(fd);
	}
	if (dirfd >= 0)
		close(dirfd);
	return r ? r : fd;
}

int unix_bind(int fd, const char *path)
{
	struct sockaddr_un addr;
	int dirfd, r;

	r = unix_addr(path, &addr, &dirfd);
	if (r)
		return r;
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		r = -errno;
	if (dirfd >= 0)
		close(dirfd);
	return r;
}

const char *enum_name(const char *const *names, int n, int v)
{
	return v >= 0 && v < n ? names[v] : "UNKNOWN";
}

int enum_parse(const char *const *names, int n, const char *name)
{
	int i;

	for (i = 0; name && i < n; i++)
		if (!strcmp(names[i], name))
			return i;
	return -1;
}

uint64_t nofile_raise(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 1024;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			getrlimit(RLIMIT_NOFILE, &rl);
	}
	return rl.rlim_cur == RLIM_INFINITY ? (uint64_t)1 << 20 : (uint64_t)rl.rlim_cur;
}
