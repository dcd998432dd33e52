/*
 * sync_unpack() against hostile and broken streams, built here record by record with the
 * protocol's own writer (bootstrap/sync/sync_wire.h).
 * Each must be refused with a clear message (or sanitised, for setuid bits) and leave
 * nothing outside DST: after every case the sandbox that holds DST is listed.
 *
 * Escapes aim at a directory inside the sandbox, never at /etc: if a check were broken,
 * the test must fail, not damage the machine running it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/harness.h"
#include "bootstrap/sync/sync.h"
#include "bootstrap/sync/sync_internal.h"
#include "bootstrap/sync/sync_wire.h"
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

/* --- building streams ------------------------------------------------------------ */

/* A stream in the file `stream`, built record by record with the real writer. */
static struct sync_wire_out hw;
static int hfd = -1;

static void hb_open(int level)
{
	hfd = open(stream, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	sync_wire_out_init(&hw, "test stream", &hfd, 1, level);
}

static void hb_close(void)
{
	sync_wire_flush(&hw);
	sync_wire_out_release(&hw);
	close(hfd);
	hfd = -1;
}

static void hb_rec(int type, const void *body, size_t len)
{
	sync_wire_rec(&hw, type, body, len, 1);
}

static void hb_hello_v(unsigned version, int mode, unsigned flags)
{
	struct buf b = BUF_INIT(0);

	buf_adds(&b, SYNC_HELLO_MAGIC);
	sync_put_u8(&b, version);
	sync_put_u8(&b, (unsigned)mode);
	sync_put_u8(&b, flags);
	sync_put_u8(&b, 0);
	buf_add(&b, (char[32]){0}, 32);
	hb_rec(REC_HELLO, b.p, b.len);
	buf_release(&b);
}

static void hb_hello(int mode)
{
	hb_hello_v(SYNC_WIRE_VERSION, mode, 0);
}

/* A file record with its data and hash; name_len lets a name hold a NUL. */
static void hb_file_n(const char *name, size_t name_len, unsigned perm, const char *data)
{
	struct buf b = BUF_INIT(0);
	size_t len = data ? strlen(data) : 0;
	unsigned char d[SYNC_HASH_LEN];
	struct sync_hash c;

	sync_put_u32(&b, perm);
	sync_put_u64(&b, (uint64_t)1600000000 * 1000000000);
	sync_put_u64(&b, len);
	buf_add(&b, name, name_len);
	hb_rec(REC_FILE, b.p, b.len);
	if (len)
		hb_rec(REC_DATA, data, len);
	sync_hash_init(&c);
	sync_hash_update(&c, data ? data : "", len);
	sync_hash_final(&c, d);
	hb_rec(REC_HASH, d, SYNC_HASH_LEN);
	buf_release(&b);
}

static void hb_file(const char *name, const char *data)
{
	hb_file_n(name, strlen(name), 0644, data);
}

static void hb_link(const char *name, const char *target)
{
	struct buf b = BUF_INIT(0);

	sync_put_u64(&b, 0);
	sync_put_u32(&b, (uint32_t)strlen(target));
	buf_adds(&b, target);
	buf_adds(&b, name);
	hb_rec(REC_LINK, b.p, b.len);
	buf_release(&b);
}

static void hb_dir(const char *name, unsigned perm)
{
	struct buf b = BUF_INIT(0);

	sync_put_u32(&b, perm);
	buf_adds(&b, name);
	hb_rec(REC_DIR, b.p, b.len);
	buf_release(&b);
}

static void hb_end(uint64_t n)
{
	struct buf b = BUF_INIT(0);

	sync_put_u64(&b, n);
	hb_rec(REC_END, b.p, b.len);
	buf_release(&b);
}

/* A stream of: the hello, one file, the end. */
static void one_file(const char *name, const char *data)
{
	hb_open(0);
	hb_hello('d');
	hb_file(name, data);
	hb_end(1);
	hb_close();
}

static void one_link(const char *name, const char *target)
{
	hb_open(0);
	hb_hello('d');
	hb_link(name, target);
	hb_end(1);
	hb_close();
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
	/* As on a node: what comes from a launcher may be compressed. */
	return unpack_to(dst, SYNC_COMPRESS, 0, st);
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

	one_file("../escape", "x");
	refused(unpack(&st), "refusing '../escape' in the sync stream: '.' or '..'", "../escape");
	one_file(at(outside, "abs"), "x");
	refused(unpack(&st), "absolute path", "/abs/path");
	one_file("a/../../x", "x");
	refused(unpack(&st), "'.' or '..'", "a/../../x");
	one_file("./x", "x");
	refused(unpack(&st), "'.' or '..'", "./x");
	one_file("a//x", "x");
	refused(unpack(&st), "empty path component", "a//x");
	hb_open(0);
	hb_hello('d');
	hb_file_n("ok\0../../x", 11, 0644, "x");
	hb_end(1);
	hb_close();
	refused(unpack(&st), "a record with a bad path", "a NUL in a name");
	memset(name, 'a', sizeof(name));
	memcpy(name, "../", 3);
	name[sizeof(name) - 1] = '\0';
	one_file(name, "x");
	refused(unpack(&st), "in the sync stream", "a long name ../aaa...");
	memset(name, 'a', sizeof(name));
	name[sizeof(name) - 1] = '\0';
	one_file(name, "x");
	refused(unpack(&st), "path component too long", "a component over 255 bytes");
	one_file(".skiff-sync-manifest", "x");
	refused(unpack(&st), "a name the sync uses for itself", "the old manifest's name");
	one_file("d/.skiff-sync-tmp.1.1", "x");
	refused(unpack(&st), "a name the sync uses for itself", "a temp file's name");
}

static void test_links(void)
{
	struct sync_stats st;
	struct stat sb;

	hb_open(0);
	hb_hello('d');
	hb_link("link", outside);
	hb_file("link/secret", "owned\n");
	hb_end(2);
	hb_close();
	refused(unpack(&st), "absolute symlink target", "link -> /abs then link/secret");
	one_link("etc", "/etc");
	refused(unpack(&st), "absolute symlink target", "link -> /etc");

	hb_open(0);
	hb_hello('d');
	hb_link("up", "..");
	hb_file("up/outside/secret", "owned\n");
	hb_end(2);
	hb_close();
	refused(unpack(&st), "points outside the tree", "up -> .. then up/x");
	one_link("a/b/up", "../../..");
	refused(unpack(&st), "points outside the tree", "a/b/up -> ../../..");

	/* Each link alone stays inside; the second would climb out through the first. */
	hb_open(0);
	hb_hello('d');
	hb_link("a/b/l2", "../..");
	hb_link("l1", "a/b/l2/..");
	hb_end(2);
	hb_close();
	refused(unpack(&st), "'..' after a name", "l1 -> a/b/l2/.. (a chain)");
	ok(!lstat(at(dst, "a/b/l2"), &sb) && S_ISLNK(sb.st_mode), "the harmless l2 was written");

	/* A symlink already on the node (a job made it): never written through. */
	if (symlink("../outside", at(dst, "evil")))
		printf("# symlink: %s\n", strerror(errno));
	one_file("evil/secret", "owned\n");
	refused(unpack(&st), "'evil' is not a directory on the node", "a file under a symlink");
	hb_open(0);
	hb_hello('d');
	hb_dir("evil", 0755);
	hb_end(1);
	hb_close();
	refused(unpack(&st), "exists on the node and is not a directory", "a dir over a symlink");
	hb_open(0);
	hb_hello('d');
	hb_dir("evil/sub", 0755);
	hb_end(1);
	hb_close();
	refused(unpack(&st), "not a directory on the node", "a dir under a symlink");
	one_file("evil", "replaced\n");
	ok(!unpack(&st) && !lstat(at(dst, "evil"), &sb) && S_ISREG(sb.st_mode) && sandbox_clean(),
	   "a file over an existing symlink replaces the link, not its target");
	unlink(at(dst, "evil"));

	hb_open(0);
	hb_hello('d');
	{
		struct buf b = BUF_INIT(0);

		sync_put_u64(&b, 0);
		sync_put_u32(&b, 3);
		buf_add(&b, "a\0z", 3);
		buf_adds(&b, "badtarget");
		hb_rec(REC_LINK, b.p, b.len);
		buf_release(&b);
	}
	hb_end(1);
	hb_close();
	refused(unpack(&st), "a symlink with a bad target", "a NUL in a symlink target");
	hb_open(0);
	hb_hello('d');
	{
		struct buf b = BUF_INIT(0);

		sync_put_u64(&b, 0);
		sync_put_u32(&b, 1000); /* longer than the record */
		buf_adds(&b, "x");
		hb_rec(REC_LINK, b.p, b.len);
		buf_release(&b);
	}
	hb_end(1);
	hb_close();
	refused(unpack(&st), "a symlink with a bad target", "a target length past the record");
}

static void test_types(void)
{
	struct sync_stats st;
	struct stat sb;
	static const char kinds[] = "LNqY\x01\xff";
	size_t i;

	/* Hardlinks, devices, fifos: no record says them; any unknown one is refused. */
	for (i = 0; i < sizeof(kinds) - 1; i++) {
		hb_open(0);
		hb_hello('d');
		hb_rec((unsigned char)kinds[i], "hl", 2);
		hb_end(1);
		hb_close();
		refused(unpack(&st), "an unknown record", "an unknown record type");
	}
	hb_open(0);
	hb_hello('d');
	hb_rec(REC_DATA, "xyz", 3);
	hb_end(0);
	hb_close();
	refused(unpack(&st), "file data outside a file", "data with no file");

	hb_open(0);
	hb_hello('d');
	hb_file_n("suid", 4, 04755, "#!/bin/sh\n");
	hb_dir("sgid-dir", 02775);
	hb_file_n("sticky", 6, 01777, "x");
	hb_end(3);
	hb_close();
	ok(!unpack(&st) && sandbox_clean(), "setuid, setgid and sticky entries are written");
	ok(!stat(at(dst, "suid"), &sb) && (sb.st_mode & 07777) == 0755, "without setuid");
	ok(!stat(at(dst, "sgid-dir"), &sb) && (sb.st_mode & 07777) == 0775, "without setgid");
	ok(!stat(at(dst, "sticky"), &sb) && (sb.st_mode & 07777) == 0777, "without sticky");
}

/* A file record with data and an end as given, for lies about sizes and hashes. */
static void lying_file(const char *name, uint64_t size, const char *data, int hash_ok)
{
	struct buf b = BUF_INIT(0);
	unsigned char d[SYNC_HASH_LEN];

	sync_put_u32(&b, 0644);
	sync_put_u64(&b, 0);
	sync_put_u64(&b, size);
	buf_adds(&b, name);
	hb_rec(REC_FILE, b.p, b.len);
	if (*data)
		hb_rec(REC_DATA, data, strlen(data));
	{
		struct sync_hash c;

		sync_hash_init(&c);
		sync_hash_update(&c, data, strlen(data));
		sync_hash_final(&c, d);
	}
	if (!hash_ok)
		d[0] ^= 1;
	hb_rec(REC_HASH, d, SYNC_HASH_LEN);
	buf_release(&b);
}

static void test_broken(void)
{
	struct sync_stats st;
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
	refused(unpack(&st), "corrupt sync stream", "random bytes");
	junk[0] = 'Z', junk[1] = 100, junk[2] = 0, junk[3] = 0;
	raw_stream(junk, sizeof(junk));
	refused(unpack(&st), "corrupt sync stream", "a zstd frame of garbage");
	junk[0] = 'R', junk[1] = 0, junk[2] = 0, junk[3] = 0;
	raw_stream(junk, 8);
	refused(unpack(&st), "a bad frame", "a frame of 0 bytes");
	junk[0] = 'R', junk[1] = (char)0xff, junk[2] = (char)0xff, junk[3] = (char)0x7f;
	raw_stream(junk, 8);
	refused(unpack(&st), "a bad frame", "a frame over the limit");

	hb_open(0);
	hb_file("x", "x");
	hb_close();
	refused(unpack(&st), "not a sync stream", "a stream without its hello");
	hb_open(0);
	hb_rec(REC_HELLO,
	       "skiff-sunk\2d\0\0"
	       "0123456789abcdef0123456789abcdef",
	       46);
	hb_close();
	refused(unpack(&st), "not a sync stream", "another magic");
	hb_open(0);
	hb_hello_v(3, 'd', 0);
	hb_end(0);
	hb_close();
	refused(unpack(&st), "unsupported protocol version", "protocol version 3");
	hb_open(0);
	hb_hello('f');
	hb_end(0);
	hb_close();
	refused(unpack(&st), "a file sync sent to a directory", "a file sync to a dir");
	hb_open(0);
	hb_hello_v(SYNC_WIRE_VERSION, 'd', 1);
	hb_end(0);
	hb_close();
	refused(unpack(&st), "a session's stream sent one way", "a session's hello, one way");
	hb_open(0);
	hb_hello('d');
	hb_rec(REC_SIGREQ, "\0\0\0\0x", 5);
	hb_end(0);
	hb_close();
	refused(unpack(&st), "a session's record in a one-way stream", "a signature request");
	hb_open(0);
	hb_hello('d');
	hb_rec(REC_QUIET, NULL, 0);
	hb_end(0);
	hb_close();
	refused(unpack(&st), "a session's record in a one-way stream", "a quiet record");

	hb_open(0);
	hb_hello('d');
	hb_file("x", "x");
	hb_close();
	refused(unpack(&st), "truncated sync stream", "no end record");
	unlink(at(dst, "x"));
	hb_open(0);
	hb_hello('d');
	hb_end(5);
	hb_close();
	refused(unpack(&st), "not what its end says", "a wrong count in the end record");
	hb_open(0);
	hb_hello('d');
	hb_end(0);
	hb_file("late", "x");
	hb_close();
	refused(unpack(&st), "data after its end record", "a record after the end");

	one_file("big", "0123456789abcdef");
	refused(unpack_to(dst, SYNC_COMPRESS, 10, &st), "larger than the limit of 10 bytes",
	        "over the limit");
	ok(access(at(dst, "big"), F_OK) < 0, "nothing of it written");

	/* Lies about a file's size and content: refused, the old copy stays. */
	hb_open(0);
	hb_hello('d');
	lying_file("keep.txt", 3, "more than three", 1);
	hb_end(1);
	hb_close();
	refused(unpack(&st), "more data than its size", "more data than the size says");
	hb_open(0);
	hb_hello('d');
	lying_file("keep.txt", 30, "short", 1);
	hb_end(1);
	hb_close();
	refused(unpack(&st), "is incomplete", "less data than the size says");
	hb_open(0);
	hb_hello('d');
	lying_file("keep.txt", 4, "new\n", 0);
	hb_end(1);
	hb_close();
	refused(unpack(&st), "does not match its hash", "data that does not match its hash");
	hb_open(0);
	hb_hello('d');
	lying_file("other.txt", 4, "new\n", 1);
	hb_rec(REC_DATA, "x", 1);
	hb_end(1);
	hb_close();
	refused(unpack(&st), "file data outside a file", "data after a file's hash");
	unlink(at(dst, "other.txt"));
	hb_open(0);
	hb_hello('d');
	{
		struct buf b = BUF_INIT(0);

		sync_put_u32(&b, 0644);
		sync_put_u64(&b, 0);
		sync_put_u64(&b, 4);
		buf_adds(&b, "other.txt");
		hb_rec(REC_FILE, b.p, b.len);
		hb_rec(REC_DATA, "ne", 2);
		buf_reset(&b);
		sync_put_u64(&b, 0);
		sync_put_u64(&b, 2);
		hb_rec(REC_COPY, b.p, b.len); /* a copy outside a delta */
		buf_release(&b);
	}
	hb_end(1);
	hb_close();
	refused(unpack(&st), "a record that has no place in a file", "a copy in a whole file");

	hb_open(0);
	hb_hello('f');
	hb_file(".", "one\n");
	hb_file(".", "two\n");
	hb_dir(".", 0755);
	hb_end(3);
	hb_close();
	refused(unpack_to(at(dst, "single"), SYNC_FILE, 0, &st), "holds one file",
	        "a directory in a single-file sync");
	unlink(at(dst, "single"));
	hb_open(0);
	hb_hello('f');
	hb_file("../x", "one\n");
	hb_end(1);
	hb_close();
	refused(unpack_to(at(dst, "single"), SYNC_FILE, 0, &st), "holds one file",
	        "another name in a single-file sync");
}

static void test_deletes(void)
{
	struct sync_stats st;

	hb_open(0);
	hb_hello('d');
	hb_rec(REC_DELETE, "../outside/secret", 17);
	hb_end(1);
	hb_close();
	refused(unpack(&st), "'.' or '..'", "delete ../outside/secret");
	hb_open(0);
	hb_hello('d');
	hb_rec(REC_DELETE, "/x", 2);
	hb_end(1);
	hb_close();
	refused(unpack(&st), "absolute path", "delete /x");

	put(at(dst, "jobfile"), "job\n", 0644);
	hb_open(0);
	hb_hello('d');
	hb_rec(REC_DELETE, "jobfile", 7);
	hb_end(1);
	hb_close();
	ok(!unpack(&st) && st.skipped == 1 && !access(at(dst, "jobfile"), F_OK) &&
	           strstr(logtext.p, "not deleting"),
	   "a path no sync wrote is not deleted");
	unlink(at(dst, "jobfile"));
}

/*
 * A real stream cut short anywhere: an error, and every file old or new, never half.
 * flags: SYNC_COMPRESS for a compressed stream; c: the byte the new big file is made of.
 */
static void truncated(unsigned flags, char c, const char *was, const char *now)
{
	struct sync_manifest remote, stored;
	struct buf whole = BUF_INIT(64 << 20), b = BUF_INIT(0);
	char hex[SYNC_HASH_HEX + 1], real[PATH_MAX], *path;
	struct sync_stats st;
	size_t cut, i, bad = 0, partial = 0, ncut = 0;
	char *big = xmalloc(300000);
	uint64_t seed = 1;
	int fd, r;

	mkdir(src, 0755);
	put(at(src, "keep.txt"), now, 0644);
	/* Letters, random: a stream that compresses, but not to nothing. */
	for (i = 0; i < 299999; i++) {
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		big[i] = (char)(c + seed % 20);
	}
	big[299999] = '\0';
	put(at(src, "big"), big, 0644);
	put(at(src, "f1"), now, 0644);
	put(at(src, "f2"), now, 0644);
	sync_manifest_init(&remote);
	sync_remote_manifest(dst, 0, &remote);
	fd = open(stream, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	r = sync_pack(src, &remote, fd, flags, &st);
	close(fd);
	ok(!r && !buf_read_file(&whole, stream), "a real stream to cut (%zu bytes)", whole.len);
	for (cut = 0; cut + 64 < whole.len; cut += cut < 4096 ? 37 : whole.len / 100) {
		raw_stream(whole.p, cut);
		ncut++;
		if (!unpack(&st))
			bad++;
		buf_reset(&b);
		if (buf_read_file(&b, at(dst, "keep.txt")) ||
		    (strcmp(b.p, was) && strcmp(b.p, now)))
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
	path = realpath(dst, real) ? sync_stored_path(real) : NULL;
	ok(path && !buf_read_file(&b, path) && !sync_manifest_parse(&stored, b.p, b.len, "stored"),
	   "the manifest (outside DST) is readable");
	free(path);
	/* (The test itself removed some files behind the sync's back: skip those.) */
	for (i = 0, bad = 0; i < stored.n; i++)
		if (stored.v[i].type == SYNC_T_FILE &&
		    sync_hash_file(at(dst, stored.v[i].path), hex) != -ENOENT &&
		    strcmp(hex, stored.v[i].hash))
			bad++;
	is_int(bad, 0, "it only records what was fully written");

	raw_stream(whole.p, whole.len);
	ok(!unpack(&st), "the whole stream applies");
	buf_reset(&b);
	ok(!buf_read_file(&b, at(dst, "keep.txt")) && !strcmp(b.p, now), "new content");

	sync_manifest_release(&remote);
	sync_manifest_release(&stored);
	buf_release(&whole);
	buf_release(&b);
	free(big);
}

static void test_truncated(void)
{
	truncated(0, 'a', "old\n", "new\n");
}

static void test_truncated_compressed(void)
{
	struct sync_stats st;

	truncated(SYNC_COMPRESS, 'c', "new\n", "newer\n");
	/* What a launcher reads from a node (sync-down) is never decompressed. */
	put(at(src, "keep.txt"), "newest\n", 0644);
	hb_open(3);
	hb_hello('d');
	hb_file("keep.txt", "newest newest newest newest\n");
	hb_end(1);
	hb_close();
	ok(unpack_to(dst, 0, 0, &st) < 0 && strstr(logtext.p, "compressed data where none may be"),
	   "a compressed stream where none may be: refused");
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
	/* The node's manifests live in SKIFF_HOME/sync: the test's own. */
	setenv("SKIFF_HOME", at(tmpdir, "home"), 1);
	signal(SIGPIPE, SIG_IGN);
	mkdir(sandbox, 0755);
	mkdir(outside, 0755);
	put(at(outside, "secret"), "secret\n", 0600);

	/* The baseline: a sync wrote keep.txt. */
	one_file("keep.txt", "old\n");
	ok(!unpack(&st) && st.files == 1 && sandbox_clean(), "baseline sync");

	plan_run(test_paths);
	plan_run(test_links);
	plan_run(test_types);
	plan_run(test_broken);
	plan_run(test_deletes);
	plan_run(test_truncated);
	plan_run(test_truncated_compressed);
	rm_rf(tmpdir);
	buf_release(&logtext);
	return done_testing();
}
