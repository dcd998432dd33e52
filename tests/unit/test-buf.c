/* struct buf: growth, the hard limit, formatting, reading files and fds, ownership. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/harness.h"
#include "lib/buf.h"
#include "lib/util.h"
#include "lib/banned.h"

static char tmpdir[PATH_MAX];

static void test_init(void)
{
	struct buf b = BUF_INIT(0), c;

	ok(b.p == buf_empty && b.len == 0 && b.cap == 0, "BUF_INIT is empty, not allocated");
	is_str(b.p, "", "and reads as \"\"");
	buf_init(&c, 100);
	ok(c.p == buf_empty && c.len == 0 && c.max == 100, "buf_init");
	buf_release(&b);
	buf_release(&b);
	ok(b.p == buf_empty && b.len == 0, "releasing an empty buf twice is harmless");
	buf_release(NULL);
	ok(1, "buf_release(NULL) is harmless");
}

static void test_growth(void)
{
	struct buf b = BUF_INIT(0);
	size_t i, bad = 0;

	for (i = 0; i < 100000; i++)
		if (buf_addch(&b, (char)('a' + i % 26)))
			bad++;
	is_int(bad, 0, "100000 single-byte adds succeed");
	is_int(b.len, 100000, "len counts them");
	ok(b.cap > b.len && b.p[b.len] == '\0', "room for and a terminating NUL");
	for (i = 0; i < b.len && b.p[i] == (char)('a' + i % 26); i++)
		;
	is_int(i, 100000, "content intact after every realloc");

	buf_setlen(&b, 3);
	is_str(b.p, "abc", "buf_setlen truncates and terminates");
	buf_reset(&b);
	ok(b.len == 0 && b.p[0] == '\0' && b.cap > 0, "buf_reset keeps the memory");
	is_int(buf_add(&b, "x\0y", 3), 0, "binary data");
	ok(b.len == 3 && !memcmp(b.p, "x\0y", 4), "NULs are kept, terminator added");
	buf_release(&b);
	ok(b.p == buf_empty && b.len == 0 && b.cap == 0, "buf_release empties it");
}

static void test_limits(void)
{
	struct buf b = BUF_INIT(10), d = BUF_INIT(0);

	is_int(buf_adds(&b, "12345"), 0, "5 of 10");
	is_int(buf_adds(&b, "678901"), -ENOBUFS, "past max is -ENOBUFS");
	ok(b.len == 5 && !strcmp(b.p, "12345"), "and leaves the contents intact");
	is_int(buf_adds(&b, "67890"), 0, "exactly max fits");
	is_int(buf_addch(&b, 'x'), -ENOBUFS, "one more does not");
	is_int(buf_addf(&b, "%d", 1), -ENOBUFS, "nor a formatted one");
	is_int(buf_add(&b, "", 0), 0, "adding nothing to a full buf is fine");
	is_str(b.p, "1234567890", "contents intact");
	is_int(buf_grow(&b, SIZE_MAX), -ENOBUFS, "a huge grow does not overflow");
	buf_release(&b);
	is_int(b.max, 10, "release keeps max");
	is_int(buf_grow(&d, SIZE_MAX - 1), -ENOBUFS, "max 0 means the default limit");
	is_int(buf_grow(&d, BUF_DEFAULT_MAX + 1), -ENOBUFS, "which is BUF_DEFAULT_MAX");
	buf_release(&d);
}

static void test_addf(void)
{
	struct buf b = BUF_INIT(0);
	char want[301];

	is_int(buf_addf(&b, "%d-%s-%c", 42, "x", 'y'), 0, "buf_addf");
	is_str(b.p, "42-x-y", "formats");
	is_int(buf_addf(&b, "%s", ""), 0, "an empty format result");
	is_int(b.len, 6, "adds nothing");
	buf_reset(&b);
	memset(want, 'z', 300);
	want[300] = '\0';
	is_int(buf_addf(&b, "%s%s", want, "!"), 0, "a long one that must grow the buf");
	ok(b.len == 301 && !memcmp(b.p, want, 300) && b.p[300] == '!', "formats all of it");
	buf_release(&b);
	buf_addf(&b, "%s", "");
	is_str(b.p, "", "an empty addf on a new buf is a valid string");
	buf_release(&b);

	/* Where it fits, formatted once in place; where it does not, cut short and redone. */
	buf_grow(&b, 8);
	is_int(buf_addf(&b, "%s", "abc"), 0, "fits the room grown ahead");
	is_str(b.p, "abc", "in place");
	is_int(buf_addf(&b, "%s%d", want, 7), 0, "past the room: grown, then written whole");
	ok(b.len == 304 && !memcmp(b.p, "abc", 3) && !memcmp(b.p + 3, want, 300) &&
	           b.p[303] == '7' && b.p[304] == '\0',
	   "all of it, after what was there");
	buf_release(&b);
	{
		struct buf m = BUF_INIT(10);

		buf_grow(&m, 4);
		is_int(buf_addf(&m, "%s", "12345678"), 0, "up to the max, in the room it has");
		is_int(buf_addf(&m, "%s", "901"), -ENOBUFS, "past max, formatted in place or not");
		is_str(m.p, "12345678", "and what was there is left whole, terminated");
		is_int(buf_addf(&m, "%s", "90"), 0, "exactly the max");
		is_str(m.p, "1234567890", "full");
		buf_release(&m);
	}
}

/* The columns are printf's "%-W.Ms" and "%-Wlld", byte for byte. */
static void test_cols(void)
{
	static const char *const words[] = {"", "a", "abcd", "abcdefghij", "héllo", "x y"};
	static const long long nums[] = {
	        0, 7, -7, 12345, -12345, 9223372036854775807LL, -9223372036854775807LL - 1};
	struct buf b = BUF_INIT(0), w = BUF_INIT(0);
	size_t i, width, max;
	int same = 1;

	for (i = 0; i < ARRAY_SIZE(words); i++)
		for (width = 0; width < 12; width += 3)
			for (max = 0; max < 14; max += 4) {
				buf_reset(&b);
				buf_reset(&w);
				buf_add_col(&b, words[i], width, max);
				buf_addf(&w, "%-*.*s", (int)width, (int)max, words[i]);
				same &= !strcmp(b.p, w.p) && b.len == w.len;
				buf_reset(&b);
				buf_reset(&w);
				buf_add_col(&b, words[i], width, SIZE_MAX);
				buf_addf(&w, "%-*s", (int)width, words[i]);
				same &= !strcmp(b.p, w.p) && b.len == w.len;
			}
	ok(same, "buf_add_col() is %%-W.Ms and %%-Ws");
	same = 1;
	for (i = 0; i < ARRAY_SIZE(nums); i++)
		for (width = 0; width < 24; width += 5) {
			buf_reset(&b);
			buf_reset(&w);
			buf_add_int_col(&b, nums[i], width);
			buf_addf(&w, "%-*lld", (int)width, nums[i]);
			same &= !strcmp(b.p, w.p);
		}
	ok(same, "buf_add_int_col() is %%-Wlld, the extremes too");
	{
		struct buf small = BUF_INIT(8);

		ok(buf_add_col(&small, "abc", 9, SIZE_MAX) == -ENOBUFS && small.len == 0,
		   "a column past max: -ENOBUFS, the buf as it was");
		buf_release(&small);
	}
	buf_reset(&b);
	buf_add_col(&b, "a\nb\033[31m\x7f\tc", 12, SIZE_MAX);
	is_str(b.p, "a?b?[31m??c ", "a control byte is '?': one line, no escape");
	{
		char cell[6];

		is_str(buf_cell(cell, sizeof(cell), "x\ry\x01zzz"), "x?y?z", "buf_cell(): so, cut");
		is_str(buf_cell(cell, sizeof(cell), "h\xc3\xa9"), "h\xc3\xa9",
		       "  UTF-8 is kept as it is");
	}
	buf_release(&b);
	buf_release(&w);
}

static void test_detach(void)
{
	struct buf b = BUF_INIT(0);
	size_t len = 99;
	char *s;

	buf_adds(&b, "hello");
	s = buf_detach(&b, &len);
	ok(!strcmp(s, "hello") && len == 5, "detach hands over the string and its length");
	ok(b.p == buf_empty && b.len == 0 && b.cap == 0, "and leaves the buf empty");
	free(s);
	s = buf_detach(&b, &len);
	ok(s && !strcmp(s, "") && len == 0, "detach of an empty buf is a fresh \"\"");
	ok(s != buf_empty, "that the caller can free");
	free(s);
	buf_adds(&b, "again");
	is_str(b.p, "again", "the buf is reusable after detach");
	buf_release(&b);
}

static void test_rtrim(void)
{
	struct buf b = BUF_INIT(0);

	buf_adds(&b, "text \t\r\n\n");
	buf_rtrim(&b);
	ok(!strcmp(b.p, "text") && b.len == 4, "rtrim drops trailing whitespace");
	buf_reset(&b);
	buf_adds(&b, " \n");
	buf_rtrim(&b);
	ok(!strcmp(b.p, "") && b.len == 0, "down to nothing");
	buf_release(&b);
	buf_rtrim(&b);
	ok(b.len == 0, "rtrim of an unallocated buf");
}

static void path_in_tmp(char *out, size_t n, const char *name)
{
	xsnprintf(out, n, "%s/%s", tmpdir, name);
}

static void test_last_line(void)
{
	static const char *const in[] = {"",      "\n\n",         "one",
	                                 "one\n", "a\nb\n\n  \n", "a\n\nlast \r\n"};
	static const char *const want[] = {"no message", "no message", "one", "one", "b", "last"};
	size_t i;

	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		struct buf b = BUF_INIT(0);

		buf_adds(&b, in[i]);
		is_str(buf_last_line(&b), want[i], "last line of case %zu", i);
		buf_release(&b);
	}
}

static void test_read_file(void)
{
	struct buf b = BUF_INIT(100), big = BUF_INIT(1 << 20), z = BUF_INIT(4096);
	char path[PATH_MAX], sparse[PATH_MAX];
	char data[100];
	int fd, p[2];

	memset(data, 'd', sizeof(data));
	path_in_tmp(path, sizeof(path), "exact");
	write_file_atomic(path, data, 100, 0600);
	is_int(buf_read_file(&b, path), 0, "a file of exactly max bytes");
	is_int(b.len, 100, "is read whole");
	is_int(buf_read_file(&b, path), -EFBIG, "another 100 bytes do not fit: -EFBIG");
	is_int(b.len, 100, "and nothing was added");
	buf_release(&b);
	unlink(path);

	/* A 1 GB sparse file against a 1 MB limit: refused from its size, never read. */
	path_in_tmp(sparse, sizeof(sparse), "sparse");
	fd = open(sparse, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ok(fd >= 0 && !ftruncate(fd, (off_t)1 << 30), "made a 1 GB sparse file");
	if (fd >= 0)
		close(fd);
	is_int(buf_read_file(&big, sparse), -EFBIG, "a file larger than max is -EFBIG");
	ok(big.len == 0 && big.cap == 0, "without reading any of it");
	unlink(sparse);

	/* Not a regular file: refused at once, never read (an endless device, a FIFO). */
	is_int(buf_read_file(&z, "/dev/zero"), -EINVAL, "/dev/zero is not a regular file");
	is_int(z.len, 0, "and nothing of it is read");
	path_in_tmp(path, sizeof(path), "fifo");
	ok(!mkfifo(path, 0600), "made a FIFO");
	is_int(buf_read_file(&z, path), -EINVAL, "a FIFO is refused without waiting for a writer");
	is_str(buf_read_strerror(-EINVAL), "not a regular file (a FIFO, a socket or a device)",
	       "and that is what the error says");
	unlink(path);
	buf_release(&z);

	is_int(buf_read_file(&big, tmpdir), -EISDIR, "a directory is -EISDIR");
	path_in_tmp(path, sizeof(path), "missing");
	is_int(buf_read_file(&big, path), -ENOENT, "a missing file is -ENOENT");
	buf_release(&big);

	if (!ok(!pipe(p), "pipe"))
		return;
	ok(write(p[1], "piped", 5) == 5, "write to a pipe");
	close(p[1]);
	is_int(buf_read_fd(&big, p[0]), 0, "buf_read_fd until EOF");
	is_str(big.p, "piped", "reads it all");
	close(p[0]);
	buf_release(&big);
}

int main(void)
{
	const char *t = getenv("TMPDIR");

	xsnprintf(tmpdir, sizeof(tmpdir), "%s/skiff-test-buf.XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(tmpdir))
		return 1;
	plan_run(test_init);
	plan_run(test_growth);
	plan_run(test_limits);
	plan_run(test_addf);
	plan_run(test_cols);
	plan_run(test_detach);
	plan_run(test_rtrim);
	plan_run(test_last_line);
	plan_run(test_read_file);
	rmdir(tmpdir);
	return done_testing();
}
