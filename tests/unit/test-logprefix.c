/* supervisor/logprefix.c: SkyPilot's gang log prefixes, and lines prefixed in pieces. */
#include <string.h>

#include "tests/unit/harness.h"
#include "lib/buf.h"
#include "supervisor/logprefix.h"

static char *fmt(int rank, long pid, const char *ip)
{
	static struct buf b = BUF_INIT(1 << 16);

	buf_reset(&b);
	if (logprefix_format(&b, rank, pid, ip))
		return NULL;
	return b.p;
}

static void test_format(void)
{
	/* SkyPilot's lines: "(head, rank=0, pid=2345) hi", "(worker1, rank=1, pid=2345, ip=IP) hi"
	 */
	is_str(fmt(0, 4012, "10.0.0.1"), "(head, rank=0, pid=4012) ", "the head: no ip");
	is_str(fmt(1, 3871, "10.0.0.2"), "(worker1, rank=1, pid=3871, ip=10.0.0.2) ",
	       "a worker: its ip");
	is_str(fmt(255, 7, "h"), "(worker255, rank=255, pid=7, ip=h) ", "a high rank");
	is_str(fmt(2, 0, "10.0.0.3"), "(worker2, rank=2, ip=10.0.0.3) ", "pid unknown: not said");
	is_str(fmt(3, 9, NULL), "(worker3, rank=3, pid=9) ", "no ip: not said");
	is_str(fmt(3, 9, ""), "(worker3, rank=3, pid=9) ", "an empty ip: not said");

	/* A host's name of any length (an ssh pool's long names). */
	{
		char ip[5000];
		struct buf b = BUF_INIT(1 << 16);

		memset(ip, 'a', sizeof(ip) - 1);
		ip[sizeof(ip) - 1] = 0;
		ok(!logprefix_format(&b, 1, 1, ip) &&
		           b.len == strlen("(worker1, rank=1, pid=1, ip=) ") + sizeof(ip) - 1,
		   "a 4999-byte host name is all there");
		buf_release(&b);
	}
	{
		struct buf b = BUF_INIT(8);

		ok(logprefix_format(&b, 1, 1, "10.0.0.2") != 0,
		   "past the buffer's bound: an error");
	}
}

/* in, prefixed whole (one piece), with the stream starting at a line's start. */
static void whole(struct buf *out, const char *in, size_t n)
{
	int bol = 1;

	buf_reset(out);
	logprefix_lines(out, in, n, "P ", 2, &bol);
}

static void test_lines(void)
{
	static const char *const cases[] = {
	        "", "a", "a\n", "\n", "\n\n", "a\nb", "a\nb\n", "ab\ncd\n\nef", "\n\nx\n\n",
	};
	static const char *const want[] = {
	        "",
	        "P a",
	        "P a\n",
	        "P \n",
	        "P \nP \n",
	        "P a\nP b",
	        "P a\nP b\n",
	        "P ab\nP cd\nP \nP ef",
	        "P \nP \nP x\nP \n",
	};
	struct buf a = BUF_INIT(1 << 16), b = BUF_INIT(1 << 16);
	size_t c;
	int bad = 0;

	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		whole(&a, cases[c], strlen(cases[c]));
		is_str(a.p, want[c], "case %zu whole", c);
	}
	/* Every split into three pieces gives what the whole gives. */
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		size_t n = strlen(cases[c]), i, j;

		whole(&a, cases[c], n);
		for (i = 0; i <= n; i++)
			for (j = i; j <= n; j++) {
				int bol = 1;

				buf_reset(&b);
				logprefix_lines(&b, cases[c], i, "P ", 2, &bol);
				logprefix_lines(&b, cases[c] + i, j - i, "P ", 2, &bol);
				logprefix_lines(&b, cases[c] + j, n - j, "P ", 2, &bol);
				if (b.len != a.len || memcmp(a.p, b.p, a.len))
					bad++;
			}
	}
	is_int(bad, 0, "every split into three pieces prefixes as the whole does");
	{
		int bol = 0;

		buf_reset(&b);
		logprefix_lines(&b, "rest\nnext", 9, "P ", 2, &bol);
		is_str(b.p, "rest\nP next", "mid-line: the piece's start is not a line's");
		ok(!bol, "a piece without a final newline leaves the line open");
	}
	{
		struct buf small = BUF_INIT(4);
		int bol = 1;

		ok(logprefix_lines(&small, "abc\n", 4, "P ", 2, &bol) != 0,
		   "past the buffer's bound: an error");
		buf_release(&small);
	}
	buf_release(&a);
	buf_release(&b);
}

int main(void)
{
	plan_run(test_format);
	plan_run(test_lines);
	return done_testing();
}
