/*
 * sync_unpack() against hostile and broken streams, built here with libarchive's writer.
 * Each must be refused with a clear message (or sanitised, for setuid bits) and leave
 * nothing outside DST: after every case the sandbox that holds DST is listed.
 *
 * Escapes aim at a directory inside the sandbox, never at /etc: if a check were broken,
 * the test must fail, not damage the machine running it.
 */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/harness.h"
#include "bootstrap/sync/sync.h"
#include "lib/log.h"
#include "lib/sha256.h"
#include "lib/util.h"
#include "lib/banned.h"

static char tmpdir[PATH_MAX], sandbox[PATH_MAX + 16], dst[PATH_MAX + 32];
static char outside[PATH_MAX + 32], src[PATH_MAX + 16], stream[PATH_MAX + 16];
static char logpath[PATH_MAX + 16];
static struct buf logtext = BUF_INIT(1 << 20);

static const char *at(const char *root, const char *rel)
{
	static char buf[4][PATH_MAX * 2];
	static int k;

	k = (k + 1) % 4;
	xsnprintf(buf[k], sizeof(buf[k]), "%s/%s", root, rel);
	return buf[k];
}

static void put(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

	if (fd < 0 || write_all(fd, text, strlen(text)) || close(fd))
		printf("# cannot write %s: %s\n", path, strerror(errno));
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb, (void)flag, (void)f;
	return remove(p);
}

static void rm_rf(const char *dir)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* --- building streams --------------------------------------------------------------- */

static struct archive *hb_open(int gzip)
{
	struct archive *a = archive_write_new();

	archive_write_set_format_pax(a);
	if (gzip)
		archive_write_add_filter_gzip(a);
	archive_write_open_filename(a, stream);
	return a;
}

static void hb_add(struct archive *a, const char *name, unsigned type, unsigned perm,
                   const char *data, const char *symlink, const char *hardlink)
{
	struct archive_entry *e = archive_entry_new();
	size_t len = data ? strlen(data) : 0;

	archive_entry_copy_pathname(e, name);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, perm);
	archive_entry_set_size(e, (la_int64_t)len);
	archive_entry_set_mtime(e, 1600000000, 0);
	if (symlink)
		archive_entry_copy_symlink(e, symlink);
	if (hardlink)
		archive_entry_copy_hardlink(e, hardlink);
	if (type == AE_IFCHR || type == AE_IFBLK)
		archive_entry_set_rdev(e, 0x0103);
	if (archive_write_header(a, e) < ARCHIVE_WARN)
		printf("# header %s: %s\n", name, archive_error_string(a));
	if (len)
		archive_write_data(a, data, len);
	archive_entry_free(e);
}

static void hb_file(struct archive *a, const char *name, const char *data)
{
	hb_add(a, name, AE_IFREG, 0644, data, NULL, NULL);
}

static void hb_control(struct archive *a, const char *text)
{
	hb_add(a, ".skiff-sync-control", AE_IFREG, 0600, text, NULL, NULL);
}

static void hb_end(struct archive *a, int n)
{
	char text[64];

	xsnprintf(text, sizeof(text), "entries %d\n", n);
	hb_add(a, ".skiff-sync-end", AE_IFREG, 0600, text, NULL, NULL);
}

static void hb_close(struct archive *a)
{
	archive_write_close(a);
	archive_write_free(a);
}

#define CONTROL_DIR "skiff-sync 1\nmode dir\nend\n"

/* A stream of: the control entry, one member, the end entry. */
static void one(unsigned type, const char *name, unsigned perm, const char *data,
                const char *symlink, const char *hardlink)
{
	struct archive *a = hb_open(0);

	hb_control(a, CONTROL_DIR);
	hb_add(a, name, type, perm, data, symlink, hardlink);
	hb_end(a, 1);
	hb_close(a);
}

static void raw_stream(const void *data, size_t len)
{
	int fd = open(stream, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || write_all(fd, data, len) || close(fd))
		printf("# cannot write the stream: %s\n", strerror(errno));
}

/* --- running them ------------------------------------------------------------------- */

static int unpack_to(const char *to, unsigned flags, uint64_t max, struct sync_stats *st)
{
	int in = open(stream, O_RDONLY), logfd, r;

	logfd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	log_set_fd(logfd, 0);
	r = sync_unpack(in, to, flags, max, st);
	log_set_fd(2, 0);
	close(logfd);
	close(in);
	buf_reset(&logtext);
	buf_read_file(&logtext, logpath);
	return r;
}

static int unpack(struct sync_stats *st)
{
	return unpack_to(dst, 0, 0, st);
}

static int no_tmp_files(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb, (void)flag;
	return starts_with(p + f->base, SYNC_TMP_PREFIX) ? 1 : 0;
}

static int names_are(const char *dir, const char *const *want, size_t n)
{
	struct dirent *d;
	size_t seen = 0, i;
	int good = 1;
	DIR *dp = opendir(dir);

	if (!dp)
		return 0;
	while ((d = readdir(dp))) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		for (i = 0; i < n && strcmp(want[i], d->d_name); i++)
			;
		if (i == n) {
			printf("#   unexpected '%s' in %s\n", d->d_name, dir);
			good = 0;
		}
		seen++;
	}
	closedir(dp);
	return good && seen == n;
}

/* Nothing outside DST changed, DST holds no temp file, the old file is intact. */
static int sandbox_clean(void)
{
	static const char *const top[] = {"dst", "outside"}, *const out[] = {"secret"};
	struct buf b = BUF_INIT(0);
	struct stat st;
	int good;

	good = names_are(sandbox, top, 2) && names_are(outside, out, 1);
	good = good && !buf_read_file(&b, at(outside, "secret")) && !strcmp(b.p, "secret\n") &&
	       !stat(at(outside, "secret"), &st) && (st.st_mode & 07777) == 0600 &&
	       st.st_nlink == 1;
	buf_reset(&b);
	good = good && !buf_read_file(&b, at(dst, "keep.txt")) && !strcmp(b.p, "old\n");
	good = good && nftw(dst, no_tmp_files, 16, FTW_PHYS) == 0;
	buf_release(&b);
	return good;
}

/* Refused with msg in the log, and nothing escaped. */
static void refused(int r, const char *msg, const char *what)
{
	const char *p, *nl;

	ok(r < 0 && strstr(logtext.p, msg), "%s: refused", what);
	for (p = logtext.p; *p; p = nl + 1) {
		nl = strchrnul(p, '\n');
		printf("#   %.*s\n", (int)(nl - p), p);
		if (!*nl)
			break;
	}
	if (!strstr(logtext.p, msg))
		printf("#   want: %s\n", msg);
	ok(sandbox_clean(), "%s: nothing outside DST", what);
}

static void test_paths(void)
{
	struct sync_stats st;
	char name[400];

	one(AE_IFREG, "../escape", 0644, "x", NULL, NULL);
	refused(unpack(&st), "refusing '../escape' in the sync stream: '.' or '..'", "../escape");
	one(AE_IFREG, at(outside, "abs"), 0644, "x", NULL, NULL);
	refused(unpack(&st), "absolute path", "/abs/path");
	one(AE_IFREG, "a/../../x", 0644, "x", NULL, NULL);
	refused(unpack(&st), "'.' or '..'", "a/../../x");
	one(AE_IFREG, "./x", 0644, "x", NULL, NULL);
	refused(unpack(&st), "'.' or '..'", "./x");
	one(AE_IFREG, "a//x", 0644, "x", NULL, NULL);
	refused(unpack(&st), "empty path component", "a//x");
	one(AE_IFREG, "\\x2e\\x2e/x", 0644, "x", NULL, NULL);
	refused(unpack(&st), "'.' or '..'", "an escaped ../x");
	one(AE_IFREG, "bad\nname", 0644, "x", NULL, NULL);
	refused(unpack(&st), "badly escaped name", "an unescaped newline");
	memset(name, 'a', sizeof(name));
	memcpy(name, "../", 3);
	name[sizeof(name) - 1] = '\0';
	one(AE_IFREG, name, 0644, "x", NULL, NULL);
	refused(unpack(&st), "in the sync stream", "a long pax name ../aaa...");
	one(AE_IFREG, ".skiff-sync-manifest", 0644, "x", NULL, NULL);
	refused(unpack(&st), "a name the sync uses for itself", "the manifest's name");
	one(AE_IFREG, "d/.skiff-sync-tmp.1.1", 0644, "x", NULL, NULL);
	refused(unpack(&st), "a name the sync uses for itself", "a temp file's name");
}

static void test_links(void)
{
	struct sync_stats st;
	struct archive *a;
	struct stat sb;

	a = hb_open(0);
	hb_control(a, CONTROL_DIR);
	hb_add(a, "link", AE_IFLNK, 0777, NULL, outside, NULL);
	hb_file(a, "link/secret", "owned\n");
	hb_end(a, 2);
	hb_close(a);
	refused(unpack(&st), "absolute symlink target", "link -> /abs then link/secret");
	one(AE_IFLNK, "etc", 0777, NULL, "/etc", NULL);
	refused(unpack(&st), "absolute symlink target", "link -> /etc");

	a = hb_open(0);
	hb_control(a, CONTROL_DIR);
	hb_add(a, "up", AE_IFLNK, 0777, NULL, "..", NULL);
	hb_file(a, "up/outside/secret", "owned\n");
	hb_end(a, 2);
	hb_close(a);
	refused(unpack(&st), "points outside the tree", "up -> .. then up/x");
	one(AE_IFLNK, "a/b/up", 0777, NULL, "../../..", NULL);
	refused(unpack(&st), "points outside the tree", "a/b/up -> ../../..");

	/* Each link alone stays inside; the second would climb out through the first. */
	a = hb_open(0);
	hb_control(a, CONTROL_DIR);
	hb_add(a, "a/b/l2", AE_IFLNK, 0777, NULL, "../..", NULL);
	hb_add(a, "l1", AE_IFLNK, 0777, NULL, "a/b/l2/..", NULL);
	hb_end(a, 2);
	hb_close(a);
	refused(unpack(&st), "'..' after a name", "l1 -> a/b/l2/.. (a chain)");
	ok(!lstat(at(dst, "a/b/l2"), &sb) && S_ISLNK(sb.st_mode), "the harmless l2 was written");

	/* A symlink already on the node (a job made it): never written through. */
	if (symlink("../outside", at(dst, "evil")))
		printf("# symlink: %s\n", strerror(errno));
	one(AE_IFREG, "evil/secret", 0644, "owned\n", NULL, NULL);
	refused(unpack(&st), "'evil' is not a directory on the node", "a file under a symlink");
	one(AE_IFDIR, "evil", 0755, NULL, NULL, NULL);
	refused(unpack(&st), "exists on the node and is not a directory", "a dir over a symlink");
	one(AE_IFDIR, "evil/sub", 0755, NULL, NULL, NULL);
	refused(unpack(&st), "not a directory on the node", "a dir under a symlink");
	one(AE_IFREG, "evil", 0644, "replaced\n", NULL, NULL);
	ok(!unpack(&st) && !lstat(at(dst, "evil"), &sb) && S_ISREG(sb.st_mode) && sandbox_clean(),
	   "a file over an existing symlink replaces the link, not its target");
	unlink(at(dst, "evil"));

	one(AE_IFREG, "hl", 0644, NULL, NULL, at(outside, "secret"));
	refused(unpack(&st), "hardlinks are not synced", "a hardlink to an outside file");
	one(AE_IFREG, "hl", 0644, NULL, NULL, "keep.txt");
	refused(unpack(&st), "hardlinks are not synced", "a hardlink inside");
	one(AE_IFLNK, "badtarget", 0777, NULL, "a\x01z", NULL);
	refused(unpack(&st), "badly escaped target", "an unescaped symlink target");
}

static void test_types(void)
{
	struct sync_stats st;
	struct stat sb;
	struct archive *a;

	one(AE_IFCHR, "null", 0666, NULL, NULL, NULL);
	refused(unpack(&st), "a character device", "a char device");
	one(AE_IFBLK, "sda", 0660, NULL, NULL, NULL);
	refused(unpack(&st), "a block device", "a block device");
	one(AE_IFIFO, "fifo", 0644, NULL, NULL, NULL);
	refused(unpack(&st), "a fifo", "a fifo");

	a = hb_open(0);
	hb_control(a, CONTROL_DIR);
	hb_add(a, "suid", AE_IFREG, 04755, "#!/bin/sh\n", NULL, NULL);
	hb_add(a, "sgid-dir", AE_IFDIR, 02775, NULL, NULL, NULL);
	hb_add(a, "sticky", AE_IFREG, 01777, "x", NULL, NULL);
	hb_end(a, 3);
	hb_close(a);
	ok(!unpack(&st) && sandbox_clean(), "setuid, setgid and sticky entries are extracted");
	ok(!stat(at(dst, "suid"), &sb) && (sb.st_mode & 07777) == 0755, "without setuid");
	ok(!stat(at(dst, "sgid-dir"), &sb) && (sb.st_mode & 07777) == 0775, "without setgid");
	ok(!stat(at(dst, "sticky"), &sb) && (sb.st_mode & 07777) == 0777, "without sticky");
}

static void test_broken(void)
{
	struct sync_stats st;
	struct archive *a;
	char junk[65536];
	uint32_t x = 99;
	size_t i;

	raw_stream("", 0);
	refused(unpack(&st), "empty sync stream", "a 0-byte stream");
	for (i = 0; i < sizeof(junk); i++) {
		x = x * 1103515245 + 12345;
		junk[i] = (char)(x >> 16);
	}
	raw_stream(junk, sizeof(junk));
	refused(unpack(&st), "cannot read the sync stream: Unrecognized archive format",
	        "random bytes");
	junk[0] = 0x1f, junk[1] = (char)0x8b, junk[2] = 8, junk[3] = 0;
	raw_stream(junk, sizeof(junk));
	refused(unpack(&st), "sync stream", "a gzip header and garbage");

	a = hb_open(0);
	hb_file(a, "x", "x");
	hb_close(a);
	refused(unpack(&st), "does not start with", "a plain tar");
	a = hb_open(0);
	hb_control(a, "skiff-sync 2\nmode dir\nend\n");
	hb_end(a, 0);
	hb_close(a);
	refused(unpack(&st), "unsupported protocol version", "protocol version 2");
	a = hb_open(0);
	hb_control(a, "skiff-sync 1\nmode file\nend\n");
	hb_end(a, 0);
	hb_close(a);
	refused(unpack(&st), "a file sync sent to a directory", "a file sync to a dir");
	a = hb_open(0);
	hb_control(a, "skiff-sync 1\nmode dir\n");
	hb_end(a, 0);
	hb_close(a);
	refused(unpack(&st), "control entry", "a control entry without its end");
	a = hb_open(0);
	hb_control(a, CONTROL_DIR);
	hb_file(a, "x", "x");
	hb_close(a);
	refused(unpack(&st), "truncated sync stream", "no end entry");
	unlink(at(dst, "x"));
	a = hb_open(0);
	hb_control(a, CONTROL_DIR);
	hb_end(a, 5);
	hb_close(a);
	refused(unpack(&st), "not what its end says", "a wrong count in the end entry");
	a = hb_open(0);
	hb_control(a, CONTROL_DIR);
	hb_end(a, 0);
	hb_file(a, "late", "x");
	hb_close(a);
	refused(unpack(&st), "data after", "an entry after the end");

	one(AE_IFREG, "big", 0644, "0123456789abcdef", NULL, NULL);
	refused(unpack_to(dst, 0, 10, &st), "larger than the limit of 10 bytes", "over the limit");
	ok(access(at(dst, "big"), F_OK) < 0, "nothing of it written");

	a = hb_open(0);
	hb_control(a, "skiff-sync 1\nmode file\nend\n");
	hb_file(a, ".", "one\n");
	hb_file(a, ".", "two\n");
	hb_end(a, 2);
	hb_close(a);
	refused(unpack_to(at(dst, "single"), SYNC_FILE, 0, &st), "holds one file",
	        "two files in a single-file sync");
	unlink(at(dst, "single"));
	a = hb_open(0);
	hb_control(a, "skiff-sync 1\nmode file\nend\n");
	hb_file(a, "../x", "one\n");
	hb_end(a, 1);
	hb_close(a);
	refused(unpack_to(at(dst, "single"), SYNC_FILE, 0, &st), "holds one file",
	        "another name in a single-file sync");
}

static void test_deletes(void)
{
	struct sync_stats st;
	struct archive *a;

	a = hb_open(0);
	hb_control(a, "skiff-sync 1\nmode dir\ndelete ../outside/secret\nend\n");
	hb_end(a, 0);
	hb_close(a);
	refused(unpack(&st), "'.' or '..'", "delete ../outside/secret");
	a = hb_open(0);
	hb_control(a, "skiff-sync 1\nmode dir\ndelete /x\nend\n");
	hb_end(a, 0);
	hb_close(a);
	refused(unpack(&st), "absolute path", "delete /x");

	put(at(dst, "jobfile"), "job\n", 0644);
	a = hb_open(0);
	hb_control(a, "skiff-sync 1\nmode dir\ndelete jobfile\nend\n");
	hb_end(a, 0);
	hb_close(a);
	ok(!unpack(&st) && st.skipped == 1 && !access(at(dst, "jobfile"), F_OK) &&
	           strstr(logtext.p, "not deleting"),
	   "a path no sync wrote is not deleted");
	unlink(at(dst, "jobfile"));
}

/* A real stream cut short anywhere: an error, and every file old or new, never half. */
static void test_truncated(void)
{
	struct sync_manifest remote, stored;
	struct buf whole = BUF_INIT(64 << 20), b = BUF_INIT(0);
	char hex[SHA256_HEX_LEN + 1];
	struct sync_stats st;
	size_t cut, i, bad = 0, partial = 0, ncut = 0;
	char *big = xmalloc(300000);
	int fd, r;

	mkdir(src, 0755);
	put(at(src, "keep.txt"), "new\n", 0644);
	memset(big, 'b', 300000);
	big[299999] = '\0';
	put(at(src, "big"), big, 0644);
	put(at(src, "f1"), "small\n", 0644);
	put(at(src, "f2"), "small\n", 0644);
	sync_manifest_init(&remote);
	sync_remote_manifest(dst, 0, &remote);
	fd = open(stream, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	r = sync_pack(src, &remote, fd, 0, &st);
	close(fd);
	ok(!r && !buf_read_file(&whole, stream), "a real stream to cut");
	for (cut = 0; cut + 2048 < whole.len; cut += cut < 4096 ? 97 : 4099) {
		raw_stream(whole.p, cut);
		ncut++;
		if (!unpack(&st))
			bad++;
		buf_reset(&b);
		if (buf_read_file(&b, at(dst, "keep.txt")) ||
		    (strcmp(b.p, "old\n") && strcmp(b.p, "new\n")))
			partial++;
		buf_reset(&b);
		if (!buf_read_file(&b, at(dst, "big")) && b.len != 299999)
			partial++;
		if (nftw(dst, no_tmp_files, 16, FTW_PHYS))
			partial++;
	}
	printf("# %zu cuts of a %zu-byte stream\n", ncut, whole.len);
	is_int(bad, 0, "every cut-off stream is an error");
	is_int(partial, 0, "no half-written file, no temp file left");
	sync_manifest_init(&stored);
	buf_reset(&b);
	buf_read_file(&b, at(dst, SYNC_MANIFEST_NAME));
	ok(!sync_manifest_parse(&stored, b.p, b.len, "stored"), "the manifest is readable");
	/* (The test itself removed some files behind the sync's back: skip those.) */
	for (i = 0, bad = 0; i < stored.n; i++)
		if (stored.v[i].type == SYNC_T_FILE &&
		    sha256_file(at(dst, stored.v[i].path), hex) != -ENOENT &&
		    strcmp(hex, stored.v[i].sha256))
			bad++;
	is_int(bad, 0, "it only records what was fully written");

	raw_stream(whole.p, whole.len);
	ok(!unpack(&st), "the whole stream applies");
	buf_reset(&b);
	ok(!buf_read_file(&b, at(dst, "keep.txt")) && !strcmp(b.p, "new\n"), "new content");

	sync_manifest_release(&remote);
	sync_manifest_release(&stored);
	buf_release(&whole);
	buf_release(&b);
	free(big);
}

int main(void)
{
	const char *t = getenv("TMPDIR");
	struct sync_stats st;

	xsnprintf(tmpdir, sizeof(tmpdir), "%s/skiff-test-hostile.XXXXXX", t ? t : "/tmp");
	if (!mkdtemp(tmpdir)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	xsnprintf(sandbox, sizeof(sandbox), "%s/sandbox", tmpdir);
	xsnprintf(dst, sizeof(dst), "%s/dst", sandbox);
	xsnprintf(outside, sizeof(outside), "%s/outside", sandbox);
	xsnprintf(src, sizeof(src), "%s/src", tmpdir);
	xsnprintf(stream, sizeof(stream), "%s/stream", tmpdir);
	xsnprintf(logpath, sizeof(logpath), "%s/log", tmpdir);
	mkdir(sandbox, 0755);
	mkdir(outside, 0755);
	put(at(outside, "secret"), "secret\n", 0600);

	/* The baseline: a sync wrote keep.txt. */
	one(AE_IFREG, "keep.txt", 0644, "old\n", NULL, NULL);
	ok(!unpack(&st) && st.files == 1 && sandbox_clean(), "baseline sync");

	plan_run(test_paths);
	plan_run(test_links);
	plan_run(test_types);
	plan_run(test_broken);
	plan_run(test_deletes);
	plan_run(test_truncated);
	rm_rf(tmpdir);
	buf_release(&logtext);
	return done_testing();
}
