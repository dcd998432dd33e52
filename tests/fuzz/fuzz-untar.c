/*
 * The node's sync-stream extractor (sync_unpack, bootstrap/sync/sync_unpack.c) on arbitrary
 * bytes. Each input is extracted into a fresh DST inside a private sandbox that also
 * holds a directory `outside` (with a canary file) and, inside DST, a symlink `evil`
 * to it, as a job could have left. After every input, whatever sync_unpack returned:
 *
 *   - the sandbox holds nothing but DST and `outside`, and `outside` only its canary,
 *     unchanged;
 *   - nothing in DST is a device, fifo or socket, setuid/setgid, or a hard link;
 *   - every symlink in DST (but `evil`) stays inside, read textually here and by
 *     sync_link_check().
 *
 * The input is a file-mode stream (DST is a file) when its HELLO says so (byte 20, the
 * mode of a stream that starts with an 'R' frame holding the HELLO record), else a
 * directory stream. The node's manifest lives in a SKIFF_HOME of the harness's own, and is
 * removed after every input: each input starts from the same state.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"
#include "bootstrap/sync/sync.h"
#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

#define CANARY "canary\n"

static char sandbox[PATH_MAX], dst[PATH_MAX + 8], outside[PATH_MAX + 16];
static char home[PATH_MAX], home_sync[PATH_MAX + 8];
static size_t dst_len;

static void sandbox_remove(void)
{
	rm_rf(sandbox);
	rm_rf(home);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");
	char canary[PATH_MAX + 32];
	int fd;

	(void)argc, (void)argv;
	log_set_level(LOG_QUIET);
	xsnprintf(sandbox, sizeof(sandbox), "%s/skiff-fuzz-untar.XXXXXX",
	          tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(sandbox))
		fuzz_fail("mkdtemp: %s", strerror(errno));
	xsnprintf(home, sizeof(home), "%s/skiff-fuzz-home.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(home))
		fuzz_fail("mkdtemp: %s", strerror(errno));
	xsnprintf(home_sync, sizeof(home_sync), "%s/sync", home);
	setenv("SKIFF_HOME", home, 1);
	atexit(sandbox_remove);
	xsnprintf(dst, sizeof(dst), "%s/dst", sandbox);
	dst_len = strlen(dst);
	xsnprintf(outside, sizeof(outside), "%s/outside", sandbox);
	xsnprintf(canary, sizeof(canary), "%s/canary", outside);
	if (mkdir(outside, 0755))
		fuzz_fail("mkdir: %s", strerror(errno));
	fd = open(canary, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0 || write_all(fd, CANARY, strlen(CANARY)) || close(fd))
		fuzz_fail("cannot write the canary");
	return 0;
}

static void check_outside(void)
{
	char buf[64], canary[PATH_MAX + 32];
	struct dirent *de;
	struct stat sb;
	DIR *d;
	ssize_t n;
	int fd;

	d = opendir(sandbox);
	if (!d)
		fuzz_fail("the sandbox is gone");
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    strcmp(de->d_name, "dst") && strcmp(de->d_name, "outside"))
			fuzz_fail("'%s' appeared next to DST", de->d_name);
	closedir(d);
	d = opendir(outside);
	if (!d)
		fuzz_fail("'outside' is gone");
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    strcmp(de->d_name, "canary"))
			fuzz_fail("'%s' appeared in 'outside'", de->d_name);
	closedir(d);
	xsnprintf(canary, sizeof(canary), "%s/canary", outside);
	if (lstat(canary, &sb) || !S_ISREG(sb.st_mode) || (sb.st_mode & 07777) != 0644)
		fuzz_fail("the canary changed type or mode");
	fd = open(canary, O_RDONLY | O_NOFOLLOW);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf));
	if (fd >= 0)
		close(fd);
	if (n != (ssize_t)strlen(CANARY) || memcmp(buf, CANARY, (size_t)n))
		fuzz_fail("the canary's content changed");
	if (lstat(outside, &sb) || !S_ISDIR(sb.st_mode) || (sb.st_mode & 07777) != 0755)
		fuzz_fail("'outside' changed type or mode");
}

/*
 * 1 if a symlink at rel (relative to DST) with this target resolves inside DST, read
 * textually and independently of sync_link_check(): absolute targets leave; each ".."
 * climbs one directory from the link's own.
 */
static int stays_inside(const char *rel, const char *target)
{
	long depth = 0;
	const char *c;

	if (target[0] == '/')
		return 0;
	for (c = rel; *c; c++)
		depth += *c == '/';
	for (c = target; *c;) {
		size_t n = strcspn(c, "/");

		if (n == 2 && c[0] == '.' && c[1] == '.') {
			if (--depth < 0)
				return 0;
		} else if (n && !(n == 1 && c[0] == '.')) {
			depth++;
		}
		c += n;
		c += *c == '/';
	}
	return 1;
}

static int check_one(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
	const char *rel = p + dst_len + 1;
	char target[PATH_MAX];
	const char *why;
	ssize_t n;

	(void)flag, (void)f;
	if (sb->st_mode & (S_ISUID | S_ISGID))
		fuzz_fail("'%s' is setuid or setgid", p);
	if (S_ISCHR(sb->st_mode) || S_ISBLK(sb->st_mode) || S_ISFIFO(sb->st_mode) ||
	    S_ISSOCK(sb->st_mode))
		fuzz_fail("'%s' is a special file", p);
	if (S_ISREG(sb->st_mode) && sb->st_nlink != 1)
		fuzz_fail("'%s' has %lu links", p, (unsigned long)sb->st_nlink);
	if (S_ISLNK(sb->st_mode) && strlen(p) > dst_len && strcmp(rel, "evil")) {
		n = readlink(p, target, sizeof(target) - 1);
		if (n < 0)
			fuzz_fail("readlink '%s': %s", p, strerror(errno));
		target[n] = '\0';
		why = "it climbs out";
		if (!stays_inside(rel, target) || sync_link_check(rel, target, &why))
			fuzz_fail("symlink '%s' -> '%s' leaves DST: %s", rel, target, why);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned flags = size > 20 && data[0] == 'R' && data[20] == 'f' ? SYNC_FILE : 0;
	struct sync_stats st;
	char evil[PATH_MAX + 16];
	int fd;

	fd = memfd_create("fuzz-untar", MFD_CLOEXEC);
	if (fd < 0 || write_all(fd, data, size) || lseek(fd, 0, SEEK_SET))
		fuzz_fail("memfd: %s", strerror(errno));
	if (!(flags & SYNC_FILE)) {
		xsnprintf(evil, sizeof(evil), "%s/evil", dst);
		if (mkdir(dst, 0755) || symlink("../outside", evil))
			fuzz_fail("cannot prepare DST: %s", strerror(errno));
	}
	sync_unpack(fd, dst, flags, 1 << 20, &st);
	close(fd);
	check_outside();
	nftw(dst, check_one, 16, FTW_PHYS);
	rm_rf(dst);
	rm_rf(home_sync);
	return 0;
}
