/*
 * Sync sessions: sync_push() to nodes that are forked children running sync_serve() on
 * pipes, as `skiff __sync-serve` runs on a node. Several nodes at once (one group, and
 * nodes in different states), the launcher's cache (nothing changed: no manifest moves),
 * block deltas, touches, a file that changes while it is read, sparse files, hard links,
 * a node that dies; and a fake launcher that sends a node deltas and touches that cannot
 * apply (it must ask for the file whole and keep its old copy), and fake nodes whose
 * answers are hostile (the launcher must fail cleanly).
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
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
#include "bootstrap/sync/sync_internal.h"
#include "bootstrap/sync/sync_wire.h"
#include "lib/log.h"
#include "lib/sha256.h"
#include "lib/util.h"
#include "lib/banned.h"

#define BIG (3u << 20)
#define NODES 3

static char tmpdir[PATH_MAX], src[PATH_MAX + 8], dsts[NODES][PATH_MAX + 16];
static uint64_t seed = 7;

static uint32_t rnd(void)
{
	seed ^= seed >> 12;
	seed ^= seed << 25;
	seed ^= seed >> 27;
	return (uint32_t)((seed * 0x2545f4914f6cdd1dULL) >> 32);
}

static const char *at(const char *root, const char *rel)
{
	static char buf[8][PATH_MAX * 2];
	static int k;

	k = (k + 1) % 8;
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

static void random_bytes(unsigned char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)rnd();
}

/* Rewrites len bytes at off of an existing file (its mtime moves). */
static void poke(const char *path, off_t off, size_t len)
{
	unsigned char b[65536];
	int fd = open(path, O_WRONLY);

	random_bytes(b, len);
	if (fd < 0 || pwrite(fd, b, len, off) != (ssize_t)len)
		printf("# cannot poke %s\n", path);
	close(fd);
}

static void make_tree(void)
{
	unsigned char *big = xmalloc(BIG);
	char name[64];
	int i;

	mkdir_p(at(src, "pkg/sub"), 0755);
	mkdir_p(at(src, "private"), 0700);
	for (i = 0; i < 40; i++) {
		xsnprintf(name, sizeof(name), "pkg/mod%02d.py", i);
		put_s(at(src, name), "import os\nprint('hello from a module')\n");
	}
	put(at(src, "run.sh"), "#!/bin/sh\necho hi\n", 18, 0755);
	put(at(src, "private/key"), "secret\n", 7, 0600);
	put(at(src, "empty"), "", 0, 0644);
	random_bytes(big, BIG);
	put(at(src, "big.bin"), big, BIG, 0644);
	free(big);
	if (symlink("pkg/mod00.py", at(src, "link")) || symlink("../run.sh", at(src, "pkg/up")))
		printf("# symlink: %s\n", strerror(errno));
}

/* src and dst as trees: types, modes, sizes, mtimes, contents, link targets. */
static int trees_equal(const char *a, const char *b)
{
	struct sync_manifest ma, mb;
	char ha[SHA256_HEX_LEN + 1], hb[SHA256_HEX_LEN + 1];
	const struct sync_entry *x, *y;
	int same = 1;
	size_t i;

	sync_manifest_init(&ma);
	sync_manifest_init(&mb);
	if (sync_local_manifest(a, SYNC_NO_IGNORE, &ma, NULL) ||
	    sync_local_manifest(b, SYNC_NO_IGNORE, &mb, NULL) || ma.n != mb.n) {
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
		if (!same)
			printf("# differs: '%s'\n", x->path);
	}
	sync_manifest_release(&ma);
	sync_manifest_release(&mb);
	return same;
}

/* --- a push to forked nodes -------------------------------------------------------------- */

struct run {
	struct sync_peer peers[NODES];
	char names[NODES][32];
	int rc, status[NODES];
};

/*
 * Pushes src to the first n of dsts, each served by a child. kill_at: a node (1-based)
 * whose child dies as soon as it starts, 0 for none.
 */
static int push_to(const char *from, size_t n, unsigned flags, struct run *run, int kill_at)
{
	pid_t pid[NODES];
	int to[2], fr[2];
	size_t i;

	memset(run, 0, sizeof(*run));
	fflush(stdout);
	for (i = 0; i < n; i++) {
		if (pipe2(to, O_CLOEXEC) || pipe2(fr, O_CLOEXEC))
			return -1;
		pid[i] = fork();
		if (pid[i] == 0) {
			struct sync_stats st;
			int r;

			close(to[1]);
			close(fr[0]);
			if (kill_at == (int)i + 1)
				_exit(9);
			r = sync_serve(to[0], fr[1], dsts[i], flags, 0, &st);
			_exit(r ? 1 : 0);
		}
		close(to[0]);
		close(fr[1]);
		xsnprintf(run->names[i], sizeof(run->names[i]), "node %zu", i + 1);
		run->peers[i].name = run->names[i];
		run->peers[i].to_fd = to[1];
		run->peers[i].from_fd = fr[0];
		run->peers[i].cache_key = run->names[i];
	}
	run->rc = sync_push(from, flags, run->peers, n);
	for (i = 0; i < n; i++) {
		close(run->peers[i].from_fd);
		waitpid(pid[i], &run->status[i], 0);
	}
	return run->rc;
}

static void test_first_and_nothing(void)
{
	struct run run;
	struct stat st;
	size_t i;
	int same = 1;

	make_tree();
	is_int(push_to(src, NODES, 0, &run, 0), 0, "first sync to three nodes at once");
	for (i = 0; i < NODES; i++)
		same = same && trees_equal(src, dsts[i]) && WIFEXITED(run.status[i]) &&
		       !WEXITSTATUS(run.status[i]);
	ok(same, "every node now holds src: names, modes, mtimes, contents, links");
	is_int(run.peers[0].st.files, 44, "44 files written on a node");
	ok(run.peers[0].wire_bytes == run.peers[2].wire_bytes &&
	           run.peers[0].wire_bytes < BIG + 64 * 1024,
	   "one encoding: each node got the same %llu bytes",
	   (unsigned long long)run.peers[0].wire_bytes);
	ok(stat(at(dsts[0], SYNC_MANIFEST_NAME), &st) < 0, "no manifest inside DST");

	is_int(push_to(src, NODES, 0, &run, 0), 0, "again, nothing changed");
	ok(run.peers[1].wire_bytes < 200 && !run.peers[1].st.files && !run.peers[1].st.dirs,
	   "the launcher's cache matched: %llu bytes went, no manifest came back",
	   (unsigned long long)run.peers[1].wire_bytes);
}

static void test_delta_and_touch(void)
{
	struct run run;
	struct stat st;
	char name[64];
	int i, same = 1;

	poke(at(src, "big.bin"), BIG / 2, 4096);
	is_int(push_to(src, NODES, 0, &run, 0), 0, "4 KiB changed inside a 3 MiB file");
	for (i = 0; i < NODES; i++)
		same = same && trees_equal(src, dsts[i]);
	ok(same && run.peers[0].wire_bytes < 64 * 1024,
	   "rebuilt from a delta on every node: %llu bytes went",
	   (unsigned long long)run.peers[0].wire_bytes);

	/* Many small changes: every module edited, and the big file in 30 places. */
	for (i = 0; i < 40; i++) {
		xsnprintf(name, sizeof(name), "pkg/mod%02d.py", i);
		put_s(at(src, name), "import os\nprint('hello from an edited module')\n");
	}
	for (i = 0; i < 30; i++)
		poke(at(src, "big.bin"), (off_t)i * (BIG / 30) + 100, 10);
	is_int(push_to(src, NODES, 0, &run, 0), 0, "many small changes");
	for (i = 0, same = 1; i < NODES; i++)
		same = same && trees_equal(src, dsts[i]);
	ok(same && run.peers[0].wire_bytes < BIG / 4, "in sync again: %llu bytes went",
	   (unsigned long long)run.peers[0].wire_bytes);

	/* Same content, a new mtime; and a mode change alone: nothing but that moves. */
	{
		struct timespec ts[2] = {{1500000000, 5}, {1500000000, 5}};

		utimensat(AT_FDCWD, at(src, "big.bin"), ts, 0);
	}
	chmod(at(src, "run.sh"), 0700);
	is_int(push_to(src, NODES, 0, &run, 0), 0, "touch and chmod");
	ok(!stat(at(dsts[1], "big.bin"), &st) && st.st_mtim.tv_sec == 1500000000 &&
	           st.st_mtim.tv_nsec == 5 && !stat(at(dsts[1], "run.sh"), &st) &&
	           (st.st_mode & 0777) == 0700 && run.peers[1].wire_bytes < 4096,
	   "the node took the new mtime and mode without the data (%llu bytes)",
	   (unsigned long long)run.peers[1].wire_bytes);
	ok(trees_equal(src, dsts[1]), "and equals src");
}

static void test_different_nodes(void)
{
	struct run run;
	size_t i;
	int same = 1;

	/* A job on node 2 edits a file and deletes another; node 3 lost the cache. */
	put_s(at(dsts[1], "pkg/mod03.py"), "changed by a job\n");
	unlink(at(dsts[1], "pkg/mod04.py"));
	put_s(at(dsts[1], "job-output.txt"), "mine\n");
	sync_cache_drop("node 3");
	put_s(at(src, "new.txt"), "new\n");
	is_int(push_to(src, NODES, 0, &run, 0), 0, "nodes in three states");
	for (i = 0; i < NODES; i++) {
		if (i == 1)
			unlink(at(dsts[1], "job-output.txt"));
		same = same && trees_equal(src, dsts[i]);
	}
	ok(same, "each is brought to src; what a job wrote and the sync did not is kept");
	ok(run.peers[1].st.files == 3 && run.peers[0].st.files == 1,
	   "node 2 got its two files back and the new one, node 1 the new one");
}

/* Rewrites big.bin over and over, front to back, each time all of one byte value. */
static volatile int writer_stop;

static void *writer_main(void *arg)
{
	static unsigned char b[BIG];
	unsigned v = 1;
	int fd;

	(void)arg;
	while (!writer_stop) {
		memset(b, (int)(v++ & 0xff), sizeof(b));
		fd = open(at(src, "big.bin"), O_WRONLY);
		if (fd >= 0) {
			for (size_t off = 0; off < sizeof(b); off += 65536)
				(void)!pwrite(fd, b + off, 65536, (off_t)off);
			close(fd);
		}
	}
	return NULL;
}

/*
 * 1 if the file is what big.bin was at one instant: `was` (its sha256), or its 64 KiB
 * blocks written by writer_main() up to some block in version v and the rest still in
 * v - 1 (the writer writes front to back). A read that a writer overtook would show the
 * opposite, old bytes before new ones: a file that never was.
 */
static int one_version(const char *path, const char *was)
{
	struct buf b = BUF_INIT(BIG + 1);
	char hex[SHA256_HEX_LEN + 1];
	size_t i, runs = 1;
	int good = !buf_read_file(&b, path) && b.len == BIG;

	for (i = 1; good && i < b.len; i++) {
		if (b.p[i] == b.p[i - 1])
			continue;
		runs++;
		good = (unsigned char)b.p[i] == (unsigned char)(b.p[i - 1] - 1) && i % 65536 == 0;
	}
	good = good && runs <= 2;
	if (!good && !sha256_file(path, hex))
		good = !strcmp(hex, was);
	if (!good && b.len == BIG)
		printf("# %s: %zu runs, first byte %u, last %u\n", path, runs,
		       (unsigned char)b.p[0], (unsigned char)b.p[b.len - 1]);
	buf_release(&b);
	return good;
}

static void test_changing_file(void)
{
	char was[SHA256_HEX_LEN + 1];
	pthread_t th;
	struct run run;
	int rounds, mixed = 0;

	sha256_file(at(dsts[0], "big.bin"), was);
	for (rounds = 0; rounds < 6; rounds++) {
		writer_stop = 0;
		pthread_create(&th, NULL, writer_main, NULL);
		push_to(src, 1, 0, &run, 0);
		writer_stop = 1;
		pthread_join(th, NULL);
		/* The node's copy: one version whole (the old one, or one the writer finished). */
		if (!one_version(at(dsts[0], "big.bin"), was))
			mixed++;
	}
	is_int(mixed, 0, "a file rewritten while it is read arrives as it was at one instant");
	is_int(push_to(src, 1, 0, &run, 0), 0, "once it is quiet, it syncs");
	ok(trees_equal(src, dsts[0]), "and the node holds src");
}

static void test_sparse_links_dies(void)
{
	struct run run;
	struct stat st;
	int fd;

	/* 64 MiB with 4 KiB of data in the middle. */
	fd = open(at(src, "sparse"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, 64 << 20) || pwrite(fd, "data", 4, 32 << 20) != 4)
		printf("# cannot make a sparse file\n");
	close(fd);
	link(at(src, "run.sh"), at(src, "hardlink"));
	is_int(push_to(src, 2, 0, &run, 0), 0, "a sparse file and a hard link");
	ok(!stat(at(dsts[0], "sparse"), &st) && st.st_size == 64 << 20 &&
	           (uint64_t)st.st_blocks * 512 < (4 << 20) && run.peers[0].wire_bytes < (1 << 20),
	   "the sparse file stays sparse (%lld blocks), and its holes do not travel",
	   (long long)st.st_blocks);
	ok(trees_equal(src, dsts[0]) && !stat(at(dsts[0], "hardlink"), &st) && st.st_nlink == 1,
	   "the hard link arrives as a file of its own, same content");

	put_s(at(src, "after-death.txt"), "x\n");
	ok(push_to(src, 3, 0, &run, 2) != 0 && run.peers[1].rc && !run.peers[0].rc &&
	           !run.peers[2].rc,
	   "a node that dies fails alone; the others succeed");
	ok(trees_equal(src, dsts[0]) && trees_equal(src, dsts[2]), "and hold src");
	is_int(push_to(src, 3, 0, &run, 0), 0, "the next sync brings it back");
	ok(trees_equal(src, dsts[1]), "node 2 holds src");
}

/* --- a fake launcher: deltas and touches a node cannot apply ----------------------------- */

struct fake {
	pid_t pid;
	int to, from;
	struct sync_wire_out w;
	struct sync_wire_in in;
	struct buf b;
};

/* A session with a real node at to_dst; the hello says digest (NULL: none). */
static void fake_open_as(struct fake *f, const char *to_dst, const unsigned char *digest)
{
	int a[2], b[2];

	if (pipe2(a, O_CLOEXEC) || pipe2(b, O_CLOEXEC))
		return;
	fflush(stdout);
	f->pid = fork();
	if (f->pid == 0) {
		struct sync_stats st;

		close(a[1]);
		close(b[0]);
		_exit(sync_serve(a[0], b[1], to_dst, 0, 0, &st) ? 1 : 0);
	}
	close(a[0]);
	close(b[1]);
	f->to = a[1];
	f->from = b[0];
	sync_wire_out_init(&f->w, "test stream", &f->to, 1, 0);
	sync_wire_in_init(&f->in, "test answer", f->from, 0);
	buf_init(&f->b, 1 << 24);
	sync_send_hello(&f->w, 0, 1, digest);
	sync_wire_flush(&f->w);
}

static void fake_open(struct fake *f, const char *to_dst)
{
	fake_open_as(f, to_dst, NULL);
}

/* The next answer's type (its body in f->b), or -1. */
static int fake_answer(struct fake *f)
{
	uint32_t len;
	int type;

	if (sync_rec_head(&f->in, &type, &len) || sync_rec_body(&f->in, type, len, 1 << 24, &f->b))
		return -1;
	return type;
}

static int fake_close(struct fake *f)
{
	int status;

	if (f->to >= 0)
		close(f->to);
	sync_wire_out_release(&f->w);
	while (fake_answer(f) >= 0)
		;
	sync_wire_in_release(&f->in);
	close(f->from);
	buf_release(&f->b);
	waitpid(f->pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void fake_delta(struct fake *f, const char *path, uint64_t size, uint64_t bsize,
                       uint64_t off, uint64_t len, int good_hash)
{
	struct buf b = BUF_INIT(0);
	unsigned char d[SYNC_HASH_LEN] = {0};

	sync_put_u32(&b, 0644);
	sync_put_u64(&b, 0);
	sync_put_u64(&b, size);
	sync_put_u64(&b, bsize);
	buf_adds(&b, path);
	sync_wire_rec(&f->w, REC_DELTA, b.p, b.len, 0);
	buf_reset(&b);
	sync_put_u64(&b, off);
	sync_put_u64(&b, len);
	sync_wire_rec(&f->w, REC_COPY, b.p, b.len, 0);
	if (good_hash) {
		struct buf old = BUF_INIT(BIG + 1);
		struct sync_hash c;

		buf_read_file(&old, at(dsts[0], path));
		sync_hash_init(&c);
		sync_hash_update(&c, old.p + off, (size_t)len);
		sync_hash_final(&c, d);
		buf_release(&old);
	}
	sync_wire_rec(&f->w, REC_HASH, d, SYNC_HASH_LEN, 0);
	buf_release(&b);
}

static void test_node_refuses_bad_deltas(void)
{
	struct fake f;
	char before[SHA256_HEX_LEN + 1], after[SHA256_HEX_LEN + 1];
	struct buf b = BUF_INIT(0);
	struct stat st;
	int type, wants = 0, acked = 0, n = 0;

	stat(at(dsts[0], "big.bin"), &st);
	sha256_file(at(dsts[0], "big.bin"), before);
	fake_open(&f, dsts[0]);
	type = fake_answer(&f);
	ok(type == REC_STATE && (unsigned char)f.b.p[0] == 0, "the node: no match, here is mine");
	while ((type = fake_answer(&f)) == REC_MANIFEST)
		;
	ok(type == REC_MANIFEST_END, "its manifest");
	/* Copies past the old file's end; a hash that does not match; a wrong old size. */
	fake_delta(&f, "big.bin", 100, (uint64_t)st.st_size, (uint64_t)st.st_size - 50, 100, 0);
	fake_delta(&f, "big.bin", 100, (uint64_t)st.st_size, 0, 100, 0);
	fake_delta(&f, "big.bin", 100, 12345, 0, 100, 1);
	/* A touch that claims another content. */
	sync_put_u32(&b, 0600);
	sync_put_u64(&b, 0);
	sync_put_u64(&b, (uint64_t)st.st_size);
	buf_add(&b, (char[SYNC_HASH_LEN]){1}, SYNC_HASH_LEN);
	buf_adds(&b, "big.bin");
	sync_wire_rec(&f.w, REC_TOUCH, b.p, b.len, 0);
	/* And one that is right: 100 bytes of the old file, hashed correctly. */
	fake_delta(&f, "run.sh", 10, 18, 0, 10, 1);
	n = 5;
	sync_wire_rec(&f.w, REC_BARRIER, NULL, 0, 0);
	sync_wire_flush(&f.w);
	while ((type = fake_answer(&f)) == REC_WANT)
		wants++;
	acked = type == REC_ACK;
	is_int(wants, 4, "four 'send it whole' answers");
	ok(acked, "then the barrier");
	buf_reset(&b);
	sync_put_u64(&b, (uint64_t)n);
	sync_wire_rec(&f.w, REC_END, b.p, b.len, 0);
	sync_wire_flush(&f.w);
	/* The node answers once it saw that nothing follows the end. */
	close(f.to);
	f.to = -1;
	type = fake_answer(&f);
	ok(type == REC_FINAL && !f.b.p[0], "and a good end");
	is_int(fake_close(&f), 0, "the node exits 0");
	sha256_file(at(dsts[0], "big.bin"), after);
	is_str(after, before, "the old big.bin is untouched");
	ok(!stat(at(dsts[0], "run.sh"), &st) && st.st_size == 10, "the good delta applied");
	buf_release(&b);
}

/*
 * The quiet record: a node whose DST is what the hello says ends at once, without waiting
 * for the launcher's end; any other takes the rest of the stream; out of place it is refused.
 */
static void test_quiet(void)
{
	struct fake f;
	struct buf b = BUF_INIT(0);
	unsigned char d[32];
	int type;

	fake_open(&f, dsts[0]);
	type = fake_answer(&f);
	ok(type == REC_STATE && f.b.len == 33 && !f.b.p[0], "no digest in the hello: no match");
	memcpy(d, f.b.p + 1, 32);
	while ((type = fake_answer(&f)) == REC_MANIFEST)
		;
	sync_wire_rec(&f.w, REC_QUIET, NULL, 0, 0);
	sync_put_u64(&b, 0);
	sync_wire_rec(&f.w, REC_END, b.p, b.len, 0);
	sync_wire_flush(&f.w);
	close(f.to);
	f.to = -1;
	type = fake_answer(&f);
	ok(type == REC_FINAL && !f.b.p[0], "a node that did not match goes on to the end");
	is_int(fake_close(&f), 0, "and exits 0");

	/* The digest it gave: a match; the quiet record ends it, the launcher's side open. */
	fake_open_as(&f, dsts[0], d);
	sync_wire_rec(&f.w, REC_QUIET, NULL, 0, 0);
	sync_wire_flush(&f.w);
	type = fake_answer(&f);
	ok(type == REC_STATE && f.b.len == 33 && f.b.p[0] == 1, "its own digest: a match");
	type = fake_answer(&f);
	ok(type == REC_FINAL && !f.b.p[0] && !memcmp(f.b.p + 1 + 7 * 8 + 1, d, 32),
	   "the quiet record ends it at once, with the same digest");
	is_int(fake_close(&f), 0, "and it exits 0");

	/* After an entry, or twice: refused. */
	fake_open(&f, dsts[0]);
	while ((type = fake_answer(&f)) == REC_STATE || type == REC_MANIFEST)
		;
	buf_reset(&b);
	sync_put_u32(&b, 0755);
	buf_adds(&b, "pkg");
	sync_wire_rec(&f.w, REC_DIR, b.p, b.len, 0);
	sync_wire_rec(&f.w, REC_QUIET, NULL, 0, 0);
	sync_wire_flush(&f.w);
	close(f.to);
	f.to = -1;
	type = fake_answer(&f);
	ok(type == REC_FINAL && f.b.p[0], "a quiet record after an entry: the sync fails");
	is_int(fake_close(&f), 1, "and the node exits 1");
	buf_release(&b);
}

/* --- fake nodes: hostile answers ----------------------------------------------------------- */

/* A "node" that answers a push with the bytes given, then closes. */
static int push_to_liar(const void *answer, size_t len)
{
	struct sync_peer p = {.name = "liar"};
	int to[2], fr[2], r;
	pid_t pid;

	if (pipe2(to, O_CLOEXEC) || pipe2(fr, O_CLOEXEC))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		char sink[4096];

		close(to[1]);
		close(fr[0]);
		(void)!write(fr[1], answer, len);
		close(fr[1]);
		while (read(to[0], sink, sizeof(sink)) > 0)
			;
		_exit(0);
	}
	close(to[0]);
	close(fr[1]);
	p.to_fd = to[1];
	p.from_fd = fr[0];
	r = sync_push(src, 0, &p, 1);
	close(fr[0]);
	waitpid(pid, NULL, 0);
	return r ? p.rc ? p.rc : r : 0;
}

static void frame(struct buf *b, char kind, const void *p, size_t n)
{
	unsigned char h[4] = {(unsigned char)kind, (unsigned char)n, (unsigned char)(n >> 8),
	                      (unsigned char)(n >> 16)};

	buf_add(b, h, 4);
	buf_add(b, p, n);
}

/* A record of an answer, appended to b. */
static void arec(struct buf *b, int type, const void *body, size_t n)
{
	unsigned char h[5] = {(unsigned char)type, (unsigned char)n, (unsigned char)(n >> 8),
	                      (unsigned char)(n >> 16), (unsigned char)(n >> 24)};

	buf_add(b, h, 5);
	buf_add(b, body, n);
}

/* "No match", and a manifest whose text is text (told as `told` bytes long). */
static void no_match(struct buf *b, const char *text, uint64_t told)
{
	unsigned char st[33] = {0};
	struct buf n = BUF_INIT(0);

	arec(b, REC_STATE, st, sizeof(st));
	arec(b, REC_MANIFEST, text, strlen(text));
	sync_put_u64(&n, told);
	arec(b, REC_MANIFEST_END, n.p, n.len);
	buf_release(&n);
}

static void test_hostile_answers(void)
{
	static const char empty[] = "skiff-sync-manifest 1\nend 0\n";
	struct buf a = BUF_INIT(0), r = BUF_INIT(0), k = BUF_INIT(0);

	ok(push_to_liar("", 0) != 0, "a node that says nothing: an error");
	frame(&a, 'Z', "\x28\xb5\x2f\xfd garbage", 12);
	ok(push_to_liar(a.p, a.len) != 0, "a compressed answer: refused (never decompressed)");
	buf_reset(&a);
	arec(&r, 'q', "x", 1);
	frame(&a, 'R', r.p, r.len);
	ok(push_to_liar(a.p, a.len) != 0, "an unknown answer record: refused");
	buf_reset(&a);
	buf_reset(&r);
	no_match(&r, empty, strlen(empty) + 1);
	frame(&a, 'R', r.p, r.len);
	ok(push_to_liar(a.p, a.len) != 0, "a manifest whose length is wrong: refused");
	buf_reset(&a);
	buf_reset(&r);
	no_match(&r, "skiff-sync-manifest 1\nfoo\n", 26);
	frame(&a, 'R', r.p, r.len);
	ok(push_to_liar(a.p, a.len) != 0, "a manifest that does not parse: refused");
	buf_reset(&a);
	buf_reset(&r);
	no_match(&r, empty, strlen(empty));
	sync_put_u32(&k, 99);
	sync_put_u8(&k, 0);
	arec(&r, REC_SIGS, k.p, k.len);
	frame(&a, 'R', r.p, r.len);
	ok(push_to_liar(a.p, a.len) != 0, "signatures nobody asked for: refused");
	buf_reset(&a);
	buf_reset(&r);
	no_match(&r, empty, strlen(empty));
	arec(&r, REC_STATE, (unsigned char[33]){0}, 33);
	frame(&a, 'R', r.p, r.len);
	ok(push_to_liar(a.p, a.len) != 0, "a second state: refused");
	buf_release(&a);
	buf_release(&r);
	buf_release(&k);
}

int main(void)
{
	const char *t = getenv("TMPDIR");
	size_t i;

	signal(SIGPIPE, SIG_IGN);
	xsnprintf(tmpdir, sizeof(tmpdir), "%s/skiff-test-session.XXXXXX", t ? t : "/tmp");
	if (!mkdtemp(tmpdir)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	/* The launcher's cache and the nodes' manifests: the test's own SKIFF_HOME. */
	setenv("SKIFF_HOME", at(tmpdir, "home"), 1);
	xsnprintf(src, sizeof(src), "%s/src", tmpdir);
	mkdir(src, 0755);
	for (i = 0; i < NODES; i++)
		xsnprintf(dsts[i], sizeof(dsts[i]), "%s/node%zu/dst", tmpdir, i + 1);
	plan_run(test_first_and_nothing);
	plan_run(test_delta_and_touch);
	plan_run(test_different_nodes);
	plan_run(test_changing_file);
	plan_run(test_sparse_links_dies);
	plan_run(test_node_refuses_bad_deltas);
	plan_run(test_quiet);
	plan_run(test_hostile_answers);
	rm_rf(tmpdir);
	return done_testing();
}
