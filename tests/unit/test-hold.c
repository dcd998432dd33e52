/* Who holds a node (supervisor/hold.h): the record, its decision, take and drop on disk. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/util.h"
#include "supervisor/hold.h"
#include "tests/unit/harness.h"

static struct hold mk(const char *launcher, const char *cluster, const char *from)
{
	struct hold h;

	memset(&h, 0, sizeof(h));
	xsnprintf(h.launcher, sizeof(h.launcher), "%s", launcher);
	xsnprintf(h.cluster, sizeof(h.cluster), "%s", cluster);
	xsnprintf(h.from, sizeof(h.from), "%s", from);
	return h;
}

static int parse(const char *text, struct holds *out, struct buf *why)
{
	buf_reset(why);
	return holds_parse(text, strlen(text), out, why);
}

static void test_decide(void)
{
	struct hold a = mk("aa", "c1", "u@m1"), b = mk("bb", "c1", "u@m2"),
	            c = mk("aa", "c2", "u@m1");
	struct holds none = {0}, held = {0};
	size_t who = 99;

	is_int(hold_decide(&none, &a, &who), HOLD_TAKE, "nobody holds it: taken");
	held.v = &a;
	held.n = 1;
	is_int(hold_decide(&held, &a, &who), HOLD_OURS, "the same launcher's same cluster: ours");
	is_int(hold_decide(&held, &b, &who), HOLD_REFUSED,
	       "the same cluster name of another launcher: refused");
	is_int(who, 0, "and the holder is said");
	is_int(hold_decide(&held, &c, &who), HOLD_TAKE,
	       "another cluster of the same launcher: taken (the launcher's db booked it; "
	       "the hold is stale)");
	ok(hold_stale(&a, &c) && !hold_stale(&a, &a) && !hold_stale(&a, &b), "which is stale");
	{
		struct hold copied = mk("aa", "c9", "u@m9");

		is_int(hold_decide(&held, &copied, &who), HOLD_REFUSED,
		       "the same id from another machine (a copied home): refused, not stale");
	}
	{
		struct hold two[2];

		two[0] = a;
		two[1] = b;
		held.v = two;
		held.n = 2;
		who = 99;
		is_int(hold_decide(&held, &c, &who), HOLD_REFUSED,
		       "a stale hold beside another launcher's: refused");
		is_int(who, 1, "naming the other launcher's, not the stale one");
	}
}

static void test_parse_and_format(void)
{
	struct buf why = BUF_INIT(0), out = BUF_INIT(0);
	struct holds h;
	const char *rec = "launcher=0123abcd cluster=dev from=ann@box since=1700000000 future=x\n"
	                  "\n"
	                  "cluster=c2 launcher=ff\n";

	ok(!parse(rec, &h, &why), "a record with an unknown key and an empty line parses");
	is_int(h.n, 2, "two holds");
	is_str(h.v[0].launcher, "0123abcd", "launcher");
	is_str(h.v[0].cluster, "dev", "cluster");
	is_str(h.v[0].from, "ann@box", "from");
	ok(h.v[0].since == 1700000000.0, "since");
	is_str(h.v[1].cluster, "c2", "fields in any order");
	is_str(h.v[1].from, "", "from may be left out");
	holds_format(&h, &out);
	is_str(out.p,
	       "launcher=0123abcd cluster=dev from=ann@box since=1700000000 future=x\n"
	       "cluster=c2 launcher=ff\n",
	       "written back as read: the unknown key stays");
	holds_release(&h);

	ok(!parse("", &h, &why) && h.n == 0, "an empty record: no hold");
	holds_release(&h);
	buf_release(&out);
	buf_release(&why);
}

static void test_bad_records(void)
{
	static const char *const bad[] = {
	        "cluster=dev\n",                         /* no launcher */
	        "launcher=abc\n",                        /* no cluster */
	        "launcher=XYZ cluster=dev\n",            /* not hex */
	        "launcher=abc cluster=dev junk\n",       /* a field with no '=' */
	        "launcher=abc cluster=\n",               /* empty */
	        "launcher=abc cluster=dev since=soon\n", /* not a number */
	        "launcher=abc cluster=dev since=-1\n",   /* negative */
	        "launcher=abc cluster=a=b\n",            /* '=' in a value */
	        "launcher=abc cluster=d\x01v\n",         /* a control byte */
	        "launcher=abc cluster=dev\nlauncher=\n", /* the second line */
	};
	struct buf why = BUF_INIT(0);
	struct holds h;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		int r = parse(bad[i], &h, &why);

		ok(r == -EINVAL && why.len && strstr(why.p, "(line "), "refused, with its line: %s",
		   why.p ? why.p : "");
	}
	ok(parse("launcher=abc cluster=dev\nlauncher=\n", &h, &why) && strstr(why.p, "(line 2)"),
	   "the bad line is named: %s", why.p);

	/* Sizes: a line past HOLD_LINE_MAX, a value past its field, more than HOLDS_MAX. */
	{
		struct buf big = BUF_INIT(0);

		buf_adds(&big, "launcher=abc cluster=dev x=");
		while (big.len <= HOLD_LINE_MAX)
			buf_addch(&big, 'y');
		ok(parse(big.p, &h, &why) == -EINVAL && strstr(why.p, "too long"),
		   "a line past %d bytes: %s", HOLD_LINE_MAX, why.p);
		buf_reset(&big);
		buf_adds(&big, "launcher=abc cluster=");
		for (i = 0; i < 64; i++)
			buf_addch(&big, 'c');
		ok(parse(big.p, &h, &why) == -EINVAL, "a cluster name of 64 bytes");
		buf_reset(&big);
		for (i = 0; i <= HOLDS_MAX; i++)
			buf_addf(&big, "launcher=abc cluster=c%zu\n", i);
		ok(parse(big.p, &h, &why) == -EINVAL && strstr(why.p, "too many"),
		   "more than %d lines: %s", HOLDS_MAX, why.p);
		buf_release(&big);
	}
	buf_release(&why);
}

static void test_check(void)
{
	struct buf why = BUF_INIT(0);
	struct hold h = mk("0a1b", "dev", "ann@box");

	ok(!hold_check(&h, &why), "a good hold");
	h = mk("0A1B", "dev", "");
	ok(hold_check(&h, &why) == -EINVAL, "an upper-case id");
	h = mk("0a1b", "a b", "");
	ok(hold_check(&h, &why) == -EINVAL, "a space in the cluster");
	h = mk("0a1b", "dev", "ann box");
	ok(hold_check(&h, &why) == -EINVAL, "a space in from");
	buf_release(&why);
}

/* take and drop on a record in a directory of our own (node_paths() reads SKIFF_HOME once). */
static void test_on_disk(void)
{
	char dir[] = "/tmp/skiff-test-hold.XXXXXX", path[128];
	struct hold a = mk("aa", "c1", "u@m1"), b = mk("bb", "c2", "u@m2");
	struct buf why = BUF_INIT(0);
	struct holds h;

	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp");
		return;
	}
	setenv("SKIFF_HOME", dir, 1);
	xsnprintf(path, sizeof(path), "%s/holds", dir);

	ok(!hold_take(&a, &why), "a takes the free node");
	ok(!hold_take(&a, &why), "and takes it again (a relaunch)");
	buf_reset(&why);
	ok(hold_take(&b, &why) == -EBUSY, "b is refused");
	ok(strstr(why.p, "cluster 'c1' of u@m1") && strstr(why.p, "node release --all-holds"),
	   "naming the holder and the way out: %s", why.p);
	ok(!hold_list(&h, &why) && h.n == 1 && !strcmp(h.v[0].cluster, "c1"), "one hold listed");
	ok(h.n && h.v[0].since > 0, "with the time it was taken");
	holds_release(&h);

	ok(!hold_drop(&b, &why), "b lets go of what it does not hold: nothing changes");
	ok(!hold_list(&h, &why) && h.n == 1, "a still holds it");
	holds_release(&h);
	ok(!hold_drop(&a, &why), "a lets go");
	ok(!hold_list(&h, &why) && h.n == 0, "nobody holds it");
	holds_release(&h);
	ok(!hold_take(&b, &why), "now b takes it");
	{
		struct hold b2 = mk("bb", "c3", "u@m2");

		ok(!hold_take(&b2, &why), "b's next cluster replaces b's stale hold");
		ok(!hold_list(&h, &why) && h.n == 1 && !strcmp(h.v[0].cluster, "c3"),
		   "one hold, the new one");
		holds_release(&h);
	}

	/* A record that is not ours: refused with its line, never overwritten; by hand it goes. */
	{
		FILE *f = fopen(path, "w");

		fputs("garbage\n", f);
		fclose(f);
	}
	buf_reset(&why);
	ok(hold_take(&a, &why) == -EINVAL && strstr(why.p, "move it away"),
	   "a record that does not parse refuses a hold: %s", why.p);
	ok(!hold_drop(NULL, &why), "--all-holds removes it");
	ok(access(path, F_OK) < 0, "gone");
	ok(!hold_take(&a, &why), "and the node can be held again");

	rm_rf(dir);
	buf_release(&why);
}

int main(void)
{
	plan_run(test_decide);
	plan_run(test_parse_and_format);
	plan_run(test_bad_records);
	plan_run(test_check);
	plan_run(test_on_disk);
	return done_testing();
}
