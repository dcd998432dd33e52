/*
 * skiff-unzstd OUT SIZE SHA: the second program of the self-copy (docs/bootstrap.md).
 * On stdin: the packed image (bootstrap/launch/stub/pack.h: a header, then N bytes of one
 * zstd frame). It reads exactly those (so stdin goes on, for the program the script runs
 * next, just after them), decompresses and un-filters them into OUT, a new file (mode 0700), and succeeds only
 * when the frame ended with the N bytes, with exactly SIZE bytes out whose sha256 is SHA.
 * On any failure OUT is removed, a message goes to stderr and the exit status is 1. Built
 * for size with zstd's decoder alone (build.sh makes libzstd-stub.a).
 */
#include <fcntl.h>
#include <unistd.h>

#include "zstd.h"

#include "bootstrap/launch/stub/pack.h"
#include "bootstrap/launch/stub/stub.h"

static const char me[] = "skiff-unzstd";

static int fail(const char *out, const char *what, const char *arg)
{
	if (out)
		unlink(out);
	stub_say(me, what, arg);
	return 1;
}

/* Reads exactly n bytes (n > 0) into p: 0, or -1 at EOF or on an error. */
static int read_exact(unsigned char *p, size_t n)
{
	while (n) {
		ssize_t got = read(0, p, n);

		if (got <= 0)
			return -1;
		p += got;
		n -= (size_t)got;
	}
	return 0;
}

int main(int argc, char **argv)
{
	/* out holds what is not final yet (at most 4 bytes of a branch) before new output. */
	static unsigned char in[1 << 17], out[(1 << 17) + 8];
	char head[PACK_HEAD_LEN + 1];
	ZSTD_inBuffer ib = {in, 0, 0};
	ZSTD_outBuffer ob;
	struct stub_sha sha;
	long long want, left, base = 0;
	size_t r = 1, held = 0, done;
	ZSTD_DStream *d;
	int fd;

	if (argc != 4)
		return fail(NULL, "usage: skiff-unzstd OUT SIZE SHA256", NULL);
	want = stub_num(argv[2]);
	if (want < 0)
		return fail(NULL, "bad size", argv[2]);
	if (read_exact((unsigned char *)head, PACK_HEAD_LEN) || head[PACK_HEAD_LEN - 1] != '\n')
		return fail(NULL, "no header on stdin", NULL);
	head[PACK_HEAD_LEN - 1] = '\0';
	left = stub_num(head);
	if (left <= 0)
		return fail(NULL, "bad packed length", head);
	d = ZSTD_createDStream();
	if (!d)
		return fail(NULL, "out of memory", NULL);
	fd = open(argv[1], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
	if (fd < 0)
		return fail(NULL, "cannot create", argv[1]);
	stub_sha_init(&sha);
	while (left > 0) {
		size_t take = left < (long long)sizeof(in) ? (size_t)left : sizeof(in);
		ssize_t n = read(0, in, take);

		if (n <= 0) {
			close(fd);
			return fail(argv[1], n ? "cannot read stdin" : "the stream is cut short",
			            NULL);
		}
		left -= n;
		ib.size = (size_t)n;
		ib.pos = 0;
		while (ib.pos < ib.size) {
			ob.dst = out + held;
			ob.size = sizeof(out) - held;
			ob.pos = 0;
			r = ZSTD_decompressStream(d, &ob, &ib);
			if (ZSTD_isError(r)) {
				close(fd);
				return fail(argv[1], "corrupt stream", NULL);
			}
			if (base + (long long)(held + ob.pos) > want) {
				close(fd);
				return fail(argv[1], "more data than expected", NULL);
			}
			held += ob.pos;
			done = bcj_filter(out, held, (uint64_t)base, (uint64_t)want, 0);
			stub_sha_update(&sha, out, done);
			if (write(fd, out, done) != (ssize_t)done) {
				close(fd);
				return fail(argv[1], "cannot write", argv[1]);
			}
			base += (long long)done;
			held -= done;
			memmove(out, out + done, held);
		}
	}
	if (close(fd) < 0)
		return fail(argv[1], "cannot write", NULL);
	/* r is 0 only at the end of a frame: anything else is a cut stream. */
	if (r != 0 || held || base != want)
		return fail(argv[1], "the stream is cut short", NULL);
	if (!stub_sha_final_is(&sha, argv[3]))
		return fail(argv[1], "sha256 mismatch", NULL);
	return 0;
}
