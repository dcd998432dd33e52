/* lib/env.c: a job's envs blob, its copies ("env_copy") checked as added and resolved. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/env.h"
#include "tests/unit/harness.h"

/* Adds kv (copy or not) with an entry bound of max; 0 or -1, the reason in *why. */
static int add(struct buf *blob, const char *kv, int copy, size_t max, struct buf *why)
{
	buf_reset(why);
	return env_blob_add(blob, kv, copy, max, why);
}

static void test_add(void)
{
	struct buf b = BUF_INIT(0), why = BUF_INIT(0);
	size_t len;

	ok(!add(&b, "A=1", 0, 100, &why), "a plain entry");
	ok(!add(&b, "B=", 0, 100, &why), "an empty value");
	ok(!add(&b, "C=A", 1, 100, &why), "a copy of an entry before it");
	ok(!add(&b, "D=C", 1, 100, &why), "a copy of a copy");
	len = b.len;
	is_int(len, 4 + 3 + 5 + 5, "entries NUL-terminated, copies marked by a leading '='");
	ok(!memcmp(b.p, "A=1\0B=\0=C=A\0=D=C\0", len), "the blob, byte for byte");

	ok(add(&b, "E=Z", 1, 100, &why) && b.len == len,
	   "a copy of nothing: refused, nothing added");
	is_str(why.p, "bad env_copy 'E=Z': Z is not set by an env before it", "and why");
	ok(add(&b, "1X=2", 0, 100, &why), "a name that starts with a digit");
	is_str(why.p, "bad env '1X=2': expected NAME=VALUE", "and why");
	ok(add(&b, "=2", 0, 100, &why) && add(&b, "NOEQ", 0, 100, &why) &&
	           add(&b, "A-B=1", 0, 100, &why),
	   "no name, no '=', a '-' in the name: refused");
	ok(add(&b, "F=A B", 1, 100, &why), "a copy of something that is not a name");
	is_str(why.p, "bad env_copy 'F=A B': expected NAME=OTHER, two names", "and why");
	ok(add(&b, "G=", 1, 100, &why), "a copy of nothing named");
	is_int(b.len, len, "none of them added");
	buf_release(&b);
	buf_release(&why);
}

static void test_bound(void)
{
	struct buf b = BUF_INIT(0), why = BUF_INIT(0);

	/* "LONG=" and 10 bytes: 16 with the NUL. */
	ok(!add(&b, "LONG=0123456789", 0, 16, &why), "an entry of the bound exactly");
	ok(add(&b, "LONG2=0123456789", 0, 16, &why), "one byte more: refused");
	is_str(why.p,
	       "env LONG2 is 16 bytes: one environment entry holds at most 15 bytes (the "
	       "kernel's limit)",
	       "and why");
	ok(!add(&b, "L=LONG", 1, 16, &why), "a copy under a shorter name");
	ok(add(&b, "LONGER=LONG", 1, 16, &why), "a copy under a longer name: over, once copied");
	is_str(why.p,
	       "env LONGER is 17 bytes: one environment entry holds at most 15 bytes (the "
	       "kernel's limit)",
	       "its size is the copied entry's");
	ok(add(&b, "LONGER=L", 1, 16, &why), "the same through a copy of a copy");
	ok(!add(&b, "LONG=x", 0, 16, &why) && !add(&b, "LONGER=LONG", 1, 16, &why),
	   "once LONG is short again, its copy fits: the last entry before the copy counts");
	buf_release(&b);
	buf_release(&why);
}

static void test_apply(void)
{
	struct buf b = BUF_INIT(0), why = BUF_INIT(0);
	struct env e;

	add(&b, "IPS=10.0.0.1\n10.0.0.2", 0, 1000, &why);
	add(&b, "SETUP_IPS=IPS", 1, 1000, &why);
	add(&b, "OWN_IPS=IPS", 1, 1000, &why);
	add(&b, "OWN_SETUP_IPS=SETUP_IPS", 1, 1000, &why);
	add(&b, "IPS=changed", 0, 1000, &why);
	add(&b, "LATE=IPS", 1, 1000, &why);
	env_init(&e, 0);
	env_set(&e, "OWN_IPS", "from the supervisor");
	env_blob_apply(&e, b.p, b.len);
	is_str(env_get(&e, "SETUP_IPS"), "10.0.0.1\n10.0.0.2", "a copy: the value then");
	is_str(env_get(&e, "OWN_IPS"), "10.0.0.1\n10.0.0.2", "a copy replaces what was there");
	is_str(env_get(&e, "OWN_SETUP_IPS"), "10.0.0.1\n10.0.0.2", "a copy of a copy");
	is_str(env_get(&e, "IPS"), "changed", "a later entry wins, as env_put()");
	is_str(env_get(&e, "LATE"), "changed", "a copy after it: the new value");
	is_int(e.n, 5, "five names, each once");
	env_release(&e);

	/* A copy whose source is not there (not from a checked submit): left out. */
	env_init(&e, 0);
	env_blob_apply(&e, "=X=NONE\0Y=1", 12);
	ok(!env_get(&e, "X") && !strcmp(env_get(&e, "Y"), "1"), "an unresolved copy is skipped");
	env_release(&e);
	buf_release(&b);
	buf_release(&why);
}

int main(void)
{
	plan_run(test_add);
	plan_run(test_bound);
	plan_run(test_apply);
	return done_testing();
}
