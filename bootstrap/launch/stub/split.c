/*
 * skiff-split N SHA OUT [ARG...]: the first program the self-copy puts on a new node (the
 * install script writes it with printf: docs/bootstrap.md). It reads exactly N bytes of
 * stdin into OUT, a new file (mode 0700), checks that their sha256 is SHA, and execs OUT
 * with ARGs, stdin left just after those N bytes: that is how one stream carries a program
 * and then that program's own input, with nothing on the node but sh. Exit 1 and a message
 * on stderr, OUT removed, on any failure.
 */
#include <fcntl.h>
#include <unistd.h>

#include "bootstrap/launch/stub/stub.h"

static const char me[] = "skiff-split";

static int fail(const char *out, const char *what, const char *arg)
{
	if (out)
		unlink(out);
	stub_say(me, what, arg);
	return 1;
}

int main(int argc, char **argv)
{
	static unsigned char buf[32768];
	struct stub_sha sha;
	long long left;
	ssize_t n;
	int fd;

	if (argc < 4)
		return fail(NULL, "usage: skiff-split N SHA256 OUT [ARG...]", NULL);
	left = stub_num(argv[1]);
	if (left < 0)
		return fail(NULL, "bad size", argv[1]);
	fd = open(argv[3], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
	if (fd < 0)
		return fail(NULL, "cannot create", argv[3]);
	stub_sha_init(&sha);
	while (left > 0) {
		n = read(0, buf, left < (long long)sizeof(buf) ? (size_t)left : sizeof(buf));
		if (n <= 0) {
			close(fd);
			return fail(argv[3], n ? "cannot read stdin" : "stdin ended early", NULL);
		}
		stub_sha_update(&sha, buf, (size_t)n);
		if (write(fd, buf, (size_t)n) != n) {
			close(fd);
			return fail(argv[3], "cannot write", argv[3]);
		}
		left -= n;
	}
	if (close(fd) < 0)
		return fail(argv[3], "cannot write", argv[3]);
	if (!stub_sha_final_is(&sha, argv[2]))
		return fail(argv[3], "sha256 mismatch for", argv[3]);
	execv(argv[3], argv + 3);
	return fail(argv[3], "cannot run", argv[3]);
}
