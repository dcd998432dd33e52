/* Who holds a node (supervisor/hold.h): the record, its decision, take and drop on disk. */
#include <errno.h>
#include <stdint.h>
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

static struct hold mk_share(const char *launcher, const char *cluster, const char *from,
                            double cpus, double memory, int gpus, uint64_t mask)
{
	struct hold h = mk(launcher, cluster, from);

	h.share = 1;
	h.cpus = cpus;
	h.memory = memory;
	h.gpus = gpus;
	h.gpu_mask = mask;
	return h;
}

static const struct hold_cap cap4 = {4, 16, 4}; /* 4 CPUs, 16 GiB, 4 GPUs */

static enum hold_verdict decide(const struct holds *held, const struct hold *want, size_t *who)
{
	uint64_t gpus;

	return hold_decide(held, want, &cap4, who, &gpus);
}

static void test_decide(void)
{
	struct hold a = mk("aa", "c1", "u@m1"), b = mk("bb", "c1", "u@m2"),
	            c = mk("aa", "c2", "u@m1");
	struct holds none = {0}, held = {0};
	size_t who = 99;

	is_int(decide(&none, &a, &who), HOLD_TAKE, "nobody holds it: taken");
	held.v = &a;
	held.n = 1;
	is_int(decide(&held, &a, &who), HOLD_OURS, "the same launcher's same cluster: ours");
	is_int(decide(&held, &b, &who), HOLD_REFUSED,
	       "the same cluster name of another launcher: refused");
	is_int(who, 0, "and the holder is said");
	is_int(decide(&held, &c, &who), HOLD_TAKE,
	       "another cluster of the same launcher: taken (the launcher's db booked it; "
	       "the hold is stale)");
	ok(hold_stale(&a, &c) && !hold_stale(&a, &a) && !hold_stale(&a, &b), "which is stale");
	{
		struct hold copied = mk("aa", "c9", "u@m9");

		is_int(decide(&held, &copied, &who), HOLD_REFUSED,
		       "the same id from another machine (a copied home): refused, not stale");
	}
	{
		struct hold two[2];

		two[0] = a;
		two[1] = b;
		held.v = two;
		held.n = 2;
		who = 99;
		is_int(decide(&held, &c, &who), HOLD_REFUSED,
		       "a stale hold beside another launcher's: refused");
		is_int(who, 1, "naming the other launcher's, not the stale one");
	}
}

/* Shares of a node with 4 CPUs, 16 GiB, 4 GPUs. */
static void test_shares(void)
{
	struct hold s1 = mk_share("aa", "s1", "u@m1", 2, 8, 1, 0x1),
	            s2 = mk_share("bb", "s2", "u@m2", 1, 4, 2, 0x6), whole = mk("cc", "w", "u@m3");
	struct hold v[4];
	struct holds none = {0}, held = {v, 0, 4};
	uint64_t gpus = 99;
	size_t who = 99;

	{
		struct hold big = mk_share("aa", "big", "u@m1", 64, 1024, 8, 0);

		is_int(hold_decide(&none, &big, &cap4, &who, &gpus), HOLD_TAKE,
		       "a share alone is taken whatever it asks (the submit says what does not fit)");
		is_int((int)gpus, 0xf, "with every GPU the node has, no more");
	}
	s1.gpu_mask = 0;
	is_int(hold_decide(&none, &s1, &cap4, &who, &gpus), HOLD_TAKE, "a share of a free node");
	is_int((int)gpus, 0x1, "GPU 0");
	s1.gpu_mask = 0x1;
	v[0] = s1;
	held.n = 1;
	{
		struct hold want = s2;

		want.gpu_mask = 0;
		is_int(hold_decide(&held, &want, &cap4, &who, &gpus), HOLD_TAKE,
		       "a second share that fits beside it");
		is_int((int)gpus, 0x6, "GPUs 1 and 2: never GPU 0");
	}
	v[1] = s2;
	held.n = 2;
	is_int(hold_decide(&held, &s1, &cap4, &who, &gpus), HOLD_OURS, "its own share again: ours");
	is_int((int)gpus, 0x1, "with the GPUs it has");
	{
		struct hold cpus = mk_share("dd", "x", "u@m4", 1.5, 1, 0, 0),
		            mem = mk_share("dd", "x", "u@m4", 1, 4.5, 0, 0),
		            gpu = mk_share("dd", "x", "u@m4", 0, 0, 2, 0),
		            fits = mk_share("dd", "x", "u@m4", 1, 4, 1, 0);

		who = 99;
		is_int(hold_decide(&held, &cpus, &cap4, &who, &gpus), HOLD_FULL,
		       "1.5 CPUs where 1 is left: full");
		is_int(who, 0, "naming a holder");
		is_int(hold_decide(&held, &mem, &cap4, &who, &gpus), HOLD_FULL,
		       "4.5 GiB where 4 are left: full");
		is_int(hold_decide(&held, &gpu, &cap4, &who, &gpus), HOLD_FULL,
		       "2 GPUs where 1 is left: full");
		is_int(hold_decide(&held, &fits, &cap4, &who, &gpus), HOLD_TAKE,
		       "what is left, exactly: taken");
		is_int((int)gpus, 0x8, "GPU 3, the one left");
		{
			struct hold_cap left;

			ok(!hold_free(&held, &fits, &cap4, &left) && left.cpus == 1 &&
			           left.memory == 4 && left.gpus == 1,
			   "what is free beside s1 and s2: 1 CPU, 4 GiB, 1 GPU");
		}
	}
	is_int(hold_decide(&held, &whole, &cap4, &who, &gpus), HOLD_REFUSED,
	       "the node whole while shares are held: refused");
	{
		struct hold shared[1] = {whole};
		struct holds w = {shared, 1, 1};
		struct hold want = mk_share("dd", "x", "u@m4", 0.5, 0, 0, 0);
		struct hold_cap left;

		is_int(hold_decide(&w, &want, &cap4, &who, &gpus), HOLD_REFUSED,
		       "a share while another holds the node whole: refused");
		ok(hold_free(&w, &want, &cap4, &left) == 1 && left.cpus == 0,
		   "and nothing is free");
	}
	{
		/* The same launcher: its shares stand beside each other; its whole replaces them.
		 */
		struct hold s3 = mk_share("aa", "s3", "u@m1", 1, 1, 0, 0),
		            w1 = mk("aa", "w1", "u@m1");

		ok(!hold_stale(&s1, &s3), "a share of the same launcher is not stale to a share");
		ok(hold_stale(&s1, &w1), "but is to the same launcher's whole hold");
		ok(hold_stale(&w1, &s3), "and a whole hold is to its share");
		v[0] = s1;
		held.n = 1;
		is_int(hold_decide(&held, &w1, &cap4, &who, &gpus), HOLD_TAKE,
		       "the same launcher's cluster whole, where only its share was: taken");
	}
}

static void test_gpus_and_homes(void)
{
	char ids[4 * HOLD_GPUS_MAX];
	uint64_t m;
	char *home;

	ok(!hold_gpus_parse("0,2,63", &m) && m == (1ULL | 4ULL | 1ULL << 63), "0,2,63");
	ok(!hold_gpus_parse("", &m) && m == 0, "none");
	ok(hold_gpus_parse("64", &m) == -EINVAL, "64 is past the last");
	ok(hold_gpus_parse("1,1", &m) == -EINVAL, "twice");
	ok(hold_gpus_parse("1,", &m) == -EINVAL && hold_gpus_parse(",1", &m) == -EINVAL,
	   "an empty index");
	ok(hold_gpus_parse("-1", &m) == -EINVAL && hold_gpus_parse("a", &m) == -EINVAL,
	   "not an index");
	hold_gpus_format(1ULL | 4ULL | 1ULL << 63, ids, sizeof(ids));
	is_str(ids, "0,2,63", "formatted back");
	hold_gpus_format(~0ULL, ids, sizeof(ids));
	ok(strlen(ids) < sizeof(ids) && ends_with(ids, ",62,63"), "all 64 fit");

	{
		struct hold h = mk("0123456789abcdef", "My_Dev.1", "u@m");

		home = hold_share_home("/home/u/.skiff", &h);
		is_str(home, "/home/u/.skiff/c/my-dev-1-0123456789ab", "a share's home");
		free(home);
	}
	{
		static const char hex[] =
		        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
		char exe[256];

		xsnprintf(exe, sizeof(exe), "/home/u/.skiff/c/dev-0123/bin/skiff-%s", hex);
		home = cluster_home_of(exe);
		is_str(home, "/home/u/.skiff/c/dev-0123", "cluster_home_of: its home");
		free(home);
		xsnprintf(exe, sizeof(exe), "/home/u/.skiff/bin/skiff-%s", hex);
		ok(!cluster_home_of(exe), "the node's own binary: no cluster home");
		xsnprintf(exe, sizeof(exe), "/c/dev/bin/skiff-%s", hex);
		ok(!cluster_home_of(exe), "nothing above c/");
		xsnprintf(exe, sizeof(exe), "/h/c/Dev/bin/skiff-%s", hex);
		ok(!cluster_home_of(exe), "a key with upper case");
		xsnprintf(exe, sizeof(exe), "/h/c/dev/bin/skiff-%.63s", hex);
		ok(!cluster_home_of(exe), "63 hex digits");
		xsnprintf(exe, sizeof(exe), "/h/c/dev/bin/skiff-%.63sg", hex);
		ok(!cluster_home_of(exe), "a digit that is not hex");
		xsnprintf(exe, sizeof(exe), "/h/x/dev/bin/skiff-%s", hex);
		ok(!cluster_home_of(exe), "not under c/");
		xsnprintf(exe, sizeof(exe), "/h/c//bin/skiff-%s", hex);
		ok(!cluster_home_of(exe), "an empty key");
		ok(!cluster_home_of("skiff") && !cluster_home_of(NULL) && !cluster_home_of("/"),
		   "odd paths");
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

	ok(!parse("launcher=ab cluster=s cpus=1.5 memory=4 gpus=1,3\n", &h, &why),
	   "a share parses");
	ok(h.n == 1 && h.v[0].share && h.v[0].cpus == 1.5 && h.v[0].memory == 4 &&
	           h.v[0].gpu_mask == 0xa && h.v[0].gpus == 2,
	   "its CPUs, memory and GPUs by index");
	holds_release(&h);
	{
		struct hold one[1];
		struct holds w = {one, 1, 1};

		one[0] = mk_share("ab", "s", "u@m", 0.5, 2, 2, 0x5);
		one[0].since = 7;
		buf_reset(&out);
		holds_format(&w, &out);
		is_str(out.p, "launcher=ab cluster=s from=u@m since=7 cpus=0.5 memory=2 gpus=0,2\n",
		       "a new share written");
		ok(!parse(out.p, &h, &why) && h.v[0].gpu_mask == 0x5, "and read back");
		holds_release(&h);
	}
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
	        "launcher=abc cluster=dev cpus=-1\n",    /* a negative share */
	        "launcher=abc cluster=dev gpus=64\n",    /* no such GPU index */
	        "launcher=abc cluster=dev gpus=1,1\n",   /* a GPU twice */
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

static int take(const struct hold *h, struct buf *why)
{
	uint64_t gpus;

	return hold_take(h, &cap4, &gpus, why);
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

	ok(!take(&a, &why), "a takes the free node");
	ok(!take(&a, &why), "and takes it again (a relaunch)");
	buf_reset(&why);
	ok(take(&b, &why) == -EBUSY, "b is refused");
	ok(strstr(why.p, "cluster 'c1' of u@m1") &&
	           strstr(why.p, "node release --hold c1 --launcher aa"),
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
	ok(!take(&b, &why), "now b takes it");
	{
		struct hold b2 = mk("bb", "c3", "u@m2");

		ok(!take(&b2, &why), "b's next cluster replaces b's stale hold");
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
	ok(take(&a, &why) == -EINVAL && strstr(why.p, "move it away"),
	   "a record that does not parse refuses a hold: %s", why.p);
	ok(!hold_drop(NULL, &why), "--all-holds removes it");
	ok(access(path, F_OK) < 0, "gone");
	ok(!take(&a, &why), "and the node can be held again");
	ok(!hold_drop(&a, &why), "and let go");

	/* Shares on disk: GPUs by index kept in the record; the one that does not fit is told. */
	{
		struct hold s1 = mk_share("aa", "s1", "u@m1", 2, 8, 2, 0),
		            s2 = mk_share("bb", "s2", "u@m2", 2, 8, 2, 0),
		            s3 = mk_share("cc", "s3", "u@m3", 0.5, 0, 0, 0);
		uint64_t g1 = 0, g2 = 0, g3 = 0;

		ok(!hold_take(&s1, &cap4, &g1, &why) && g1 == 0x3, "s1 takes GPUs 0 and 1");
		ok(!hold_take(&s2, &cap4, &g2, &why) && g2 == 0xc, "s2 takes GPUs 2 and 3");
		ok(!hold_take(&s1, &cap4, &g1, &why) && g1 == 0x3, "s1 again: the same GPUs");
		buf_reset(&why);
		ok(hold_take(&s3, &cap4, &g3, &why) == -ENOSPC, "s3 does not fit: no CPU is left");
		ok(strstr(why.p, "this node has 4 CPUs, 16 GiB and 4 GPUs") &&
		           strstr(why.p, "cluster 's1' of u@m1 holds 2 CPUs, 8 GiB and 2 GPUs") &&
		           strstr(why.p, "which leaves 0 CPUs, 0 GiB and 0 GPUs") &&
		           strstr(why.p, "cluster 's3' asks for 0.5 CPUs"),
		   "saying what the node has, who holds what, and what is asked: %s", why.p);
		ok(!hold_list(&h, &why) && h.n == 2 && h.v[1].gpu_mask == 0xc,
		   "the record has both");
		holds_release(&h);
		ok(!hold_drop(&s1, &why) && !hold_take(&s3, &cap4, &g3, &why),
		   "once s1 lets go, s3 fits");
	}

	rm_rf(dir);
	buf_release(&why);
}

int main(void)
{
	plan_run(test_decide);
	plan_run(test_shares);
	plan_run(test_gpus_and_homes);
	plan_run(test_parse_and_format);
	plan_run(test_bad_records);
	plan_run(test_check);
	plan_run(test_on_disk);
	return done_testing();
}
