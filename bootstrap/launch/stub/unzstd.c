/*
 * skiff-unzstd OUT SIZE SHA: the second program of the self-copy (docs/bootstrap.md).
 * It decompresses the zstd stream on stdin into OUT, a new file (mode 0700), and succeeds
 * only when the stream ended cleanly with exactly SIZE bytes out whose sha256 is SHA. On any
 * failure OUT is removed, a message goes to stderr and the exit status is 1. Built for size
 * with zstd's decoder alone (build.sh makes libzstd-stub.a).
 */
#include <fcntl.h>
#include <unistd.h>

#include "zstd.h"

#include "bootstrap/launch/stub/stub.h"

static const char me[] = "skiff-unzstd";

static int fail(const char *out, const char *what, const char *arg)
{
	if (out)
		unlink(out);
	stub_say(me, what, arg);
	return 1;
}

int main(int argc, char **argv)
{
	static unsigned char in[1 << 17], out[1 << 17];
	ZSTD_inBuffer ib = {in, 0, 0};
	ZSTD_outBuffer ob;
	struct stub_sha sha;
	long long want, got = 0;
	ZSTD_DStream *d;
	size_t r = 1;
	ssize_t n;
	int fd;

	if (argc != 4)
		return fail(NULL, "usage: skiff-unzstd OUT SIZE SHA256", NULL);
	want = stub_num(argv[2]);
	if (want < 0)
		return fail(NULL, "bad size", argv[2]);
	d = ZSTD_createDStream();
	if (!d)
		return fail(NULL, "out of memory", NULL);
	fd = open(argv[1], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
	if (fd < 0)
		return fail(NULL, "cannot create", argv[1]);
	stub_sha_init(&sha);
	while ((n = read(0, in, sizeof(in))) > 0) {
		ib.size = (size_t)n;
		ib.pos = 0;
		while (ib.pos < ib.size) {
			ob.dst = out;
			ob.size = sizeof(out);
			ob.pos = 0;
			r = ZSTD_decompressStream(d, &ob, &ib);
			if (ZSTD_isError(r)) {
				close(fd);
				return fail(argv[1], "corrupt stream", NULL);
			}
			got += (long long)ob.pos;
			if (got > want) {
				close(fd);
				return fail(argv[1], "more data than expected", NULL);
			}
			stub_sha_update(&sha, out, ob.pos);
			if (write(fd, out, ob.pos) != (ssize_t)ob.pos) {
				close(fd);
				return fail(argv[1], "cannot write", argv[1]);
			}
		}
	}
	if (close(fd) < 0 || n < 0)
		return fail(argv[1], n < 0 ? "cannot read stdin" : "cannot write", NULL);
	/* r is 0 only at the end of a frame: anything else is a cut stream. */
	if (r != 0 || got != want)
		return fail(argv[1], "the stream is cut short", NULL);
	if (!stub_sha_final_is(&sha, argv[3]))
		return fail(argv[1], "sha256 mismatch", NULL);
	return 0;
}
