/*
 * One-way sync round trips: sync_pack() into a pipe, sync_unpack() out of it, for a tree
 * with awkward names, an executable, symlinks, empty things and a 5 MB file; incremental
 * syncs; single files; the manifest's escaping and strict parser. Sessions (deltas, the
 * caches, several nodes) are in test-sync-session.c.
 */
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/unit/harness.h"
#include "bootstrap/sync/sync.h"
#include "bootstrap/sync/sync_internal.h"
#include "lib/json.h"
#include "lib/sha256.h"
#include "lib/util.h"
#include "lib/banned.h"

#define WEIRD "we ird\n\xff\xfe name\\x"

static char tmpdir[PATH_MAX], src[PATH_MAX], dst[PATH_MAX];

static const char *at(const char *root, const char *rel)
{
	static char buf[4][PATH_MAX * 2];
	static int k;

	k = (k + 1) % 4;
	xsnprintf(buf[k], sizeof(buf[k]), "%s/%s", root, rel);
	return buf[k];
}

static void put(const char *path, const void *data, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || write_all(fd, data, len) || close(fd) || chmod(path, mode))
		printf("# cannot write %s: %s\n", path, strerror(errno));
}

static void put_s(const char *path, const char *text)
{
	put(path, text, strlen(text), 0644);
}

static void set_mtime(const char *path, time_t sec, long nsec)
{
	struct timespec ts[2] = {{sec, nsec}, {sec, nsec}};

	utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW);
}

static void make_tree(void)
{
	size_t big = 5 << 20, i;
	uint32_t x = 12345;
	char *data = xmalloc(big);

	mkdir_p(at(src, "a/b/c"), 0755);
	mkdir_p(at(src, "empty"), 0755);
	mkdir_p(at(src, "a/empty2"), 0750);
	put_s(at(src, "a/b/c/deep.txt"), "deep\n");
	put_s(at(src, "top.txt"), "top\n");
	put(at(src, "run.sh"), "#!/bin/sh\necho hi\n", 18, 0755);
	put(at(src, "zero"), "", 0, 0644);
	put_s(at(src, WEIRD), "weird name\n");
	put_s(at(src, "a/" WEIRD), "weird in a dir\n");
	for (i = 0; i < big; i++) {
		x = x * 1103515245 + 12345;
		data[i] = (char)(x >> 16);
	}
	put(at(src, "a/big.bin"), data, big, 0640);
	free(data);
	if (symlink("a/b/c/deep.txt", at(src, "link")) || symlink("../top.txt", at(src, "a/up")) ||
	    symlink("/etc", at(src, "outside")) || symlink("../../x", at(src, "a/escapes")))
		printf("# symlink: %s\n", strerror(errno));
	set_mtime(at(src, "top.txt"), 1600000000, 123456789);
}

/* Compares src and dst as trees: types, modes, sizes, mtimes, contents, link targets. */
static int trees_equal(const char *a, const char *b, int quiet)
{
	struct sync_manifest ma, mb;
	char ha[SHA256_HEX_LEN + 1], hb[SHA256_HEX_LEN + 1];
	const struct sync_entry *x, *y;
	int same = 1;
	size_t i;

	sync_manifest_init(&ma);
	sync_manifest_init(&mb);
	if (sync_local_manifest(a, SYNC_NO_IGNORE, &ma, NULL) ||
	    sync_local_manifest(b, SYNC_NO_IGNORE, &mb, NULL))
		same = 0;
	if (ma.n != mb.n) {
		if (!quiet)
			printf("# %zu entries vs %zu\n", ma.n, mb.n);
		same = 0;
	}
	for (i = 0; i < ma.n && same; i++) {
		x = &ma.v[i];
		y = sync_manifest_find(&mb, x->path);
		if (!y || x->type != y->type || x->mode != y->mode ||
		    (x->type == SYNC_T_FILE &&
		     (x->size != y->size || x->mtime_ns != y->mtime_ns)) ||
		    (x->type == SYNC_T_LINK && strcmp(x->target, y->target))) {
			same = 0;
		} else if (x->type == SYNC_T_FILE) {
			sha256_file(at(a, x->path), ha);
			sha256_file(at(b, x->path), hb);
			same = !strcmp(ha, hb);
		}
		if (!same && !quiet)
			printf("# differs: '%s'\n", x->path);
	}
	sync_manifest_release(&ma);
	sync_manifest_release(&mb);
	return same;
}

/*
 * One sync as the launcher does it: the node's manifest as text, parsed; the stream
 * through a pipe from a child that packs. Returns sync_unpack()'s result.
 */
static int sync_once(const char *from, const char *to, unsigned flags, struct sync_stats *pst,
                     struct sync_stats *ust)
{
	struct buf text = BUF_INIT(0);
	struct sync_manifest node, remote;
	int data[2], stats[2], r, status;
	pid_t pid;

	memset(pst, 0, sizeof(*pst));
	sync_manifest_init(&node);
	sync_manifest_init(&remote);
	if (sync_remote_manifest(to, flags, &node) || sync_manifest_format(&node, &text) ||
	    sync_manifest_parse(&remote, text.p, text.len, "node manifest"))
		return -100;
	if (pipe(data) || pipe(stats))
		return -101;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(data[0]);
		close(stats[0]);
		r = sync_pack(from, &remote, data[1], flags, pst);
		close(data[1]);
		write_all(stats[1], pst, sizeof(*pst));
		_exit(r ? 1 : 0);
	}
	close(data[1]);
	close(stats[1]);
	r = sync_unpack(data[0], to, flags, 0, ust);
	close(data[0]);
	if (read(stats[0], pst, sizeof(*pst)) != (ssize_t)sizeof(*pst))
		memset(pst, 0xff, sizeof(*pst));
	close(stats[0]);
	waitpid(pid, &status, 0);
	if (!r && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		r = -102;
	sync_manifest_release(&node);
	sync_manifest_release(&remote);
	buf_release(&text);
	return r;
}

static void test_round_trip(void)
{
	struct sync_stats p, u;
	struct stat st;
	char buf[64];
	ssize_t n;

	make_tree();
	is_int(sync_once(src, dst, 0, &p, &u), 0, "first sync");
	is_int(p.skipped, 2, "the symlinks leaving the tree are skipped...");
	ok(lstat(at(dst, "outside"), &st) < 0 && lstat(at(dst, "a/escapes"), &st) < 0,
	   "...and are not on the node");
	unlink(at(src, "outside"));
	unlink(at(src, "a/escapes"));
	ok(trees_equal(src, dst, 0), "dst is now src: names, modes, mtimes, contents, links");
	is_int(u.files, 7, "7 files written");
	is_int(u.bytes, (5 << 20) + 5 + 4 + 18 + 11 + 15, "bytes counted");
	is_int(u.links, 2, "2 links written");
	is_int(u.dirs, 5, "5 dirs made");
	is_int(p.files, u.files, "pack and unpack agree on files");
	ok(!stat(at(dst, "run.sh"), &st) && (st.st_mode & 0777) == 0755, "executable bit kept");
	ok(!stat(at(dst, "top.txt"), &st) && st.st_mtim.tv_sec == 1600000000 &&
	           st.st_mtim.tv_nsec == 123456789,
	   "mtime kept to the nanosecond");
	ok(!stat(at(dst, "a/empty2"), &st) && (st.st_mode & 0777) == 0750, "dir mode kept");
	n = readlink(at(dst, "link"), buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	is_str(buf, "a/b/c/deep.txt", "symlink target kept");
	ok(!stat(at(dst, "zero"), &st) && st.st_size == 0, "0-byte file");
	ok(!stat(at(dst, WEIRD), &st), "name with space, newline and non-UTF-8 bytes");
	ok(stat(at(dst, SYNC_MANIFEST_NAME), &st) < 0, "the node keeps its manifest outside DST");
	{
		struct sync_manifest m;

		sync_manifest_init(&m);
		ok(!sync_remote_manifest(dst, 0, &m) && m.n == 14 &&
		           sync_manifest_find(&m, "a/big.bin") &&
		           sync_manifest_find(&m, "a/big.bin")->hash[0],
		   "...and knows every entry it wrote, with its hash");
		sync_manifest_release(&m);
	}

	is_int(sync_once(src, dst, 0, &p, &u), 0, "second sync");
	ok(!u.files && !u.dirs && !u.links && !u.bytes && !u.deleted,
	   "nothing moves when nothing changed");
	is_int(p.unchanged, 14, "every entry unchanged");
}

static void test_incremental(void)
{
	struct sync_stats p, u;
	struct stat st;

	/* Same size, new content, new mtime; one gone; one new. */
	put_s(at(src, "top.txt"), "TOP\n");
	unlink(at(src, "zero"));
	put_s(at(src, "a/b/new.txt"), "new\n");
	is_int(sync_once(src, dst, 0, &p, &u), 0, "change, delete, add");
	is_int(u.files, 2, "only the changed and the new file move");
	is_int(u.deleted, 1, "one deletion");
	is_int(u.bytes, 8, "8 bytes");
	ok(trees_equal(src, dst, 0), "trees equal");

	/* Touched, same content: the hash says it is the same. */
	set_mtime(at(src, "a/b/c/deep.txt"), 1500000000, 0);
	is_int(sync_once(src, dst, 0, &p, &u), 0, "touch");
	is_int(u.files, 0, "a touched file with the same content is not sent");

	chmod(at(src, "top.txt"), 0700);
	is_int(sync_once(src, dst, 0, &p, &u), 0, "chmod");
	ok(u.files == 1 && !stat(at(dst, "top.txt"), &st) && (st.st_mode & 0777) == 0700,
	   "a mode change is sent");

	/* Type changes both ways: file -> dir, dir -> symlink. */
	unlink(at(src, "top.txt"));
	mkdir(at(src, "top.txt"), 0755);
	put_s(at(src, "top.txt/inner"), "in\n");
	rm_rf(at(src, "a/b/c"));
	symlink("../new.txt", at(src, "a/b/c"));
	is_int(sync_once(src, dst, 0, &p, &u), 0, "type changes");
	ok(trees_equal(src, dst, 0), "trees equal after type changes");
	ok(!lstat(at(dst, "a/b/c"), &st) && S_ISLNK(st.st_mode), "dir became a symlink");

	/* What a job does on the node: a new file stays, a changed file is re-sent. */
	put_s(at(dst, "job-output.txt"), "result\n");
	put_s(at(dst, "a/b/new.txt"), "NEW\n");
	is_int(sync_once(src, dst, 0, &p, &u), 0, "after a job wrote in dst");
	ok(!stat(at(dst, "job-output.txt"), &st), "files the sync did not write are kept");
	is_int(u.files, 1, "a file a job changed is sent again");
	ok(trees_equal(src, dst, 1) == 0 && !unlink(at(dst, "job-output.txt")) &&
	           trees_equal(src, dst, 0),
	   "and otherwise dst is src");

	/* A job's file in a directory the launcher deletes: the dir is kept. */
	put_s(at(dst, "top.txt/mine"), "mine\n");
	rm_rf(at(src, "top.txt"));
	is_int(sync_once(src, dst, 0, &p, &u), 0, "delete a dir holding a job's file");
	ok(!stat(at(dst, "top.txt/mine"), &st) && stat(at(dst, "top.txt/inner"), &st) < 0,
	   "our file went, the job's file and its dir stayed");

	is_int(sync_once(src, dst, SYNC_COMPRESS, &p, &u), 0, "compressed, nothing to do");
	put_s(at(src, "z.txt"), "compressed\n");
	is_int(sync_once(src, dst, SYNC_COMPRESS, &p, &u), 0, "compressed");
	ok(u.files == 1 && !stat(at(dst, "z.txt"), &st), "a compressed stream is read");
}

static void test_single_file(void)
{
	struct sync_stats p, u;
	char file[PATH_MAX * 2], target[PATH_MAX * 2];
	struct stat st;

	xsnprintf(file, sizeof(file), "%s/one.cfg", tmpdir);
	xsnprintf(target, sizeof(target), "%s/node/etc/app.cfg", tmpdir);
	put(file, "key: value\n", 11, 0755);
	is_int(sync_once(file, target, SYNC_FILE, &p, &u), 0, "single file");
	ok(u.files == 1 && !stat(target, &st) && st.st_size == 11 && (st.st_mode & 0777) == 0755,
	   "the file is at the destination path, with its mode");
	ok(stat(at(tmpdir, "node/etc/" SYNC_MANIFEST_NAME), &st) < 0,
	   "no manifest next to a single file");
	is_int(sync_once(file, target, SYNC_FILE, &p, &u), 0, "single file again");
	is_int(u.files, 0, "an unchanged single file is not sent");
	put(file, "key: other\n", 11, 0755);
	is_int(sync_once(file, target, SYNC_FILE, &p, &u), 0, "single file changed");
	is_int(u.files, 1, "a changed single file is sent");
	ok(sync_once(file, at(tmpdir, "node"), SYNC_FILE, &p, &u) != 0,
	   "a single file onto a directory is an error");
	ok(sync_once(src, target, 0, &p, &u) != 0, "a directory onto a file is an error");
}

static void test_escape(void)
{
	struct buf b = BUF_INIT(0), back = BUF_INIT(0);
	char all[256];
	int i;

	for (i = 1; i < 256; i++)
		all[i - 1] = (char)i;
	all[255] = '\0';
	ok(!sync_escape(&b, all), "escape every byte");
	ok(!strchr(b.p, ' ') && !strchr(b.p, '\n') && utf8_valid(b.p, b.len),
	   "escaped: no space, no newline, ASCII");
	ok(!sync_unescape(&back, b.p, b.len) && !strcmp(back.p, all), "and back");
	buf_reset(&back);
	ok(sync_escape(&b, "") == -EINVAL, "empty string refused");
	ok(sync_unescape(&back, "a b", 3) == -EINVAL, "raw space refused");
	ok(sync_unescape(&back, "a\\x0", 4) == -EINVAL, "short escape refused");
	ok(sync_unescape(&back, "a\\x00", 5) == -EINVAL, "NUL refused");
	ok(sync_unescape(&back, "a\\x4G", 5) == -EINVAL, "bad hex refused");
	ok(sync_unescape(&back, "a\\X41", 5) == -EINVAL, "\\X refused");
	ok(sync_unescape(&back, "\xc3\xa9", 2) == -EINVAL, "raw non-ASCII refused");
	ok(sync_unescape(&back, "", 0) == -EINVAL && back.len == 0, "empty refused");
	buf_release(&b);
	buf_release(&back);
}

static void test_manifest_text(void)
{
	struct sync_manifest m, back;
	struct buf t = BUF_INIT(0);
	struct sync_entry *e;
	static const char *bad[] = {
	        "",
	        "skiff-sync-manifest 1\n",
	        "skiff-sync-manifest 3\nend 0\n",
	        "skiff-sync-manifest 2\nf 644 1 0 "
	        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad x\nend 1\n",
	        "skiff-sync-manifest 1\nend 1\n",
	        "skiff-sync-manifest 1\nend 0",
	        "skiff-sync-manifest 1\nend 0\nd 755 0 x\n",
	        "skiff-sync-manifest 1\nd 755 0 x\nd 755 0 x\nend 2\n",
	        "skiff-sync-manifest 1\nd 758 0 x\nend 1\n",
	        "skiff-sync-manifest 1\nd 1755 0 x\nend 1\n",
	        "skiff-sync-manifest 1\nd 755 0 ../x\nend 1\n",
	        "skiff-sync-manifest 1\nd 755 0 /x\nend 1\n",
	        "skiff-sync-manifest 1\nd 755 0 a//x\nend 1\n",
	        "skiff-sync-manifest 1\nd 755 0 a b\nend 1\n",
	        "skiff-sync-manifest 1\nd  755 0 x\nend 1\n",
	        "skiff-sync-manifest 1\nf 644 1 0 abc x\nend 1\n",
	        "skiff-sync-manifest 1\nf 644 -1 0 - x\nend 1\n",
	        "skiff-sync-manifest 1\nf 644 99999999999999999999999 0 - x\nend 1\n",
	        "skiff-sync-manifest 1\nl 0 /etc x\nend 1\n",
	        "skiff-sync-manifest 1\nl 0 ../y x\nend 1\n",
	        "skiff-sync-manifest 1\nl 0 a/../../y b/x\nend 1\n",
	        "skiff-sync-manifest 1\nx 0 y\nend 1\n",
	        "skiff-sync-manifest 1\nd 755 0 x\\x2f..\\x2f..\nend 1\n",
	};
	size_t i;

	sync_manifest_init(&m);
	sync_manifest_init(&back);
	e = sync_manifest_add(&m, WEIRD, SYNC_T_FILE);
	e->mode = 0755;
	e->size = 42;
	e->mtime_ns = -1500000000;
	memset(e->hash, 'a', SYNC_HASH_HEX);
	e = sync_manifest_add(&m, "d/sub dir", SYNC_T_DIR);
	e->mode = 0700;
	e = sync_manifest_add(&m, "d/l\n", SYNC_T_LINK);
	e->target = xstrdup("../a b\xff");
	sync_manifest_add(&m, "nohash", SYNC_T_FILE);
	sync_manifest_sort(&m);
	ok(!sync_manifest_format(&m, &t), "format");
	ok(!sync_manifest_parse(&back, t.p, t.len, "test") && back.n == 4, "parse it back");
	e = sync_manifest_find(&back, WEIRD);
	ok(e && e->mode == 0755 && e->size == 42 && e->mtime_ns == -1500000000 && e->hash[0] == 'a',
	   "file entry round trip (negative mtime too)");
	e = sync_manifest_find(&back, "d/l\n");
	ok(e && e->type == SYNC_T_LINK && !strcmp(e->target, "../a b\xff"), "symlink round trip");
	e = sync_manifest_find(&back, "nohash");
	ok(e && !e->hash[0], "an unknown hash stays unknown");
	{
		static const char v1[] =
		        "skiff-sync-manifest 1\nf 644 3 0 "
		        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad x\n"
		        "end 1\n";
		struct sync_manifest old;

		sync_manifest_init(&old);
		ok(!sync_manifest_parse(&old, v1, strlen(v1), "v1") && old.n == 1 &&
		           !old.v[0].hash[0],
		   "a version 1 manifest (SHA-256) is read, its hashes as unknown");
		sync_manifest_release(&old);
	}
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		size_t n = back.n;

		ok(sync_manifest_parse(&back, bad[i], strlen(bad[i]), "bad") == -EINVAL &&
		           back.n == n,
		   "bad manifest %zu refused", i);
	}
	sync_manifest_release(&m);
	sync_manifest_release(&back);
	buf_release(&t);
}

static void test_expand(void)
{
	char *s;
	const char *home = getenv("HOME");
	char *saved = home ? xstrdup(home) : NULL;

	setenv("HOME", "/home/node", 1);
	s = sync_expand_dst("~/sky_workdir/");
	is_str(s, "/home/node/sky_workdir", "~/ is the node's $HOME");
	free(s);
	s = sync_expand_dst("~");
	is_str(s, "/home/node", "~ alone");
	free(s);
	s = sync_expand_dst("data");
	is_str(s, "/home/node/data", "relative is relative to home");
	free(s);
	s = sync_expand_dst("/abs/x");
	is_str(s, "/abs/x", "absolute is kept");
	free(s);
	ok(!sync_expand_dst("~root/x") && !sync_expand_dst(""), "~user and empty refused");
	if (saved)
		setenv("HOME", saved, 1);
	free(saved);
}

/*
 * File times that do not fit in 64 bits of nanoseconds saturate, never overflow (a real
 * file can say 2286); a file from the future is sent at once, not waited on.
 */
static void test_times(void)
{
	struct timespec t;
	struct sync_stats p, u;
	struct stat st;
	char from[PATH_MAX], to[PATH_MAX];
	time_t now = time(NULL);

	t = (struct timespec){1600000000, 123456789};
	ok(sync_ts_ns(&t) == INT64_C(1600000000123456789), "a time in nanoseconds");
	t = (struct timespec){-1, 999999999};
	ok(sync_ts_ns(&t) == -1, "just before 1970");
	t = (struct timespec){INT64_C(9223372036), 854775807};
	ok(sync_ts_ns(&t) == INT64_MAX, "the last time that fits");
	t = (struct timespec){INT64_C(9223372036), 854775808};
	ok(sync_ts_ns(&t) == INT64_MAX, "one nanosecond later: saturated");
	t = (struct timespec){INT64_C(10000000000), 0};
	ok(sync_ts_ns(&t) == INT64_MAX, "2286: saturated");
	t = (struct timespec){(time_t)INT64_MAX, 999999999};
	ok(sync_ts_ns(&t) == INT64_MAX, "the largest time_t: saturated");
	t = (struct timespec){INT64_C(-9223372036), 0};
	ok(sync_ts_ns(&t) == INT64_C(-9223372036000000000), "the first second that fits");
	t = (struct timespec){INT64_C(-9223372037), 145224193};
	ok(sync_ts_ns(&t) == -INT64_MAX, "before it: -INT64_MAX");
	t = (struct timespec){INT64_C(-10000000000), 0};
	ok(sync_ts_ns(&t) == -INT64_MAX, "1653: saturated");
	t = (struct timespec){(time_t)INT64_MIN, 0};
	ok(sync_ts_ns(&t) == -INT64_MAX, "the smallest time_t: saturated");

	{
		struct sync_manifest m, back;
		struct buf text = BUF_INIT(0);
		struct sync_entry *e;

		sync_manifest_init(&m);
		sync_manifest_init(&back);
		e = sync_manifest_add(&m, "far", SYNC_T_FILE);
		e->mtime_ns = INT64_MAX;
		e = sync_manifest_add(&m, "old", SYNC_T_DIR);
		e->mtime_ns = -INT64_MAX;
		e->mode = 0755;
		sync_manifest_sort(&m);
		ok(!sync_manifest_format(&m, &text) &&
		           !sync_manifest_parse(&back, text.p, text.len, "extremes") &&
		           back.n == 2 && back.v[0].mtime_ns == INT64_MAX &&
		           back.v[1].mtime_ns == -INT64_MAX,
		   "the saturated times survive a manifest's text");
		sync_manifest_release(&m);
		sync_manifest_release(&back);
		buf_release(&text);
	}
	xsnprintf(from, sizeof(from), "%s/times", tmpdir);
	xsnprintf(to, sizeof(to), "%s/times-node", tmpdir);
	mkdir(from, 0755);
	put_s(at(from, "far"), "from 2286\n");
	put_s(at(from, "soon"), "from the next hour\n");
	set_mtime(at(from, "far"), (time_t)INT64_C(10000000000), 5);
	set_mtime(at(from, "soon"), now + 3600, 0);
	if (stat(at(from, "far"), &st) || st.st_mtim.tv_sec != (time_t)INT64_C(10000000000)) {
		printf("# %s cannot hold a file time after 2262: the real files are not tried\n",
		       tmpdir);
		return;
	}
	is_int(sync_once(from, to, 0, &p, &u), 0, "files from 2286 and from the next hour sync");
	ok(u.files == 2 && !stat(at(to, "far"), &st) &&
	           st.st_mtim.tv_sec == (time_t)INT64_C(9223372036) &&
	           st.st_mtim.tv_nsec == 854775807,
	   "both arrive, 2286 as the last time a manifest holds");
	is_int(sync_once(from, to, 0, &p, &u), 0, "again");
	is_int(u.files, 0, "and then nothing moves");
}

int main(void)
{
	const char *t = getenv("TMPDIR");

	signal(SIGPIPE, SIG_IGN);
	xsnprintf(tmpdir, sizeof(tmpdir), "%s/skiff-test-sync.XXXXXX", t ? t : "/tmp");
	if (!mkdtemp(tmpdir)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	/* The node's manifests live in SKIFF_HOME/sync: the test's own. */
	setenv("SKIFF_HOME", at(tmpdir, "home"), 1);
	xsnprintf(src, sizeof(src), "%s/src", tmpdir);
	xsnprintf(dst, sizeof(dst), "%s/dst", tmpdir);
	mkdir(src, 0755);
	plan_run(test_round_trip);
	plan_run(test_incremental);
	plan_run(test_single_file);
	plan_run(test_escape);
	plan_run(test_manifest_text);
	plan_run(test_expand);
	plan_run(test_times);
	rm_rf(tmpdir);
	return done_testing();
}
