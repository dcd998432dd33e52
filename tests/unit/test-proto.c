/* The control-socket message format: round trips and hostile input. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/proto.h"
#include "tests/unit/harness.h"

static void test_roundtrip(void)
{
	struct msg m, d;
	const char *why = NULL;
	const char weird[] = "a b\n'c\"$(x)`y`\x80\xff";

	msg_init(&m);
	msg_init(&d);
	ok(!msg_add(&m, "op", "submit"), "add op");
	ok(!msg_add(&m, "env", "A=1"), "add env");
	ok(!msg_add(&m, "env", weird), "add a hostile value");
	ok(!msg_add(&m, "empty", ""), "empty value");
	ok(!msg_add_int(&m, "id", -42), "int");
	is_int(msg_add(&m, "Bad", "x"), -EINVAL, "upper-case key refused");
	is_int(msg_add(&m, "", "x"), -EINVAL, "empty key refused");
	ok(!msg_decode(&d, m.raw.p, m.raw.len, &why), "decodes");
	is_int(d.n, 5, "five fields");
	is_str(msg_get(&d, "op"), "submit", "op");
	is_str(d.vals[2], weird, "hostile value verbatim");
	is_str(msg_get(&d, "empty"), "", "empty value");
	int64_t v = 0;
	ok(!msg_get_int(&d, "id", &v) && v == -42, "int back");
	ok(msg_get(&d, "nope") == NULL, "missing key");
	msg_release(&m);
	msg_release(&d);
}

static void test_many_fields(void)
{
	struct msg m, d;
	const char *why;
	int i, good = 1;

	msg_init(&m);
	msg_init(&d);
	for (i = 0; i < 5000; i++)
		msg_add_int(&m, "id", i);
	ok(!msg_decode(&d, m.raw.p, m.raw.len, &why), "5000 fields decode");
	for (i = 0; i < 5000 && good; i++)
		good = atoi(d.vals[i]) == i; /* test code: banned.h not included */
	ok(good, "in order");
	msg_release(&m);
	msg_release(&d);
}

static void test_hostile(void)
{
	struct msg d;
	const char *why = NULL;
	static const struct {
		const char *data;
		size_t len;
		const char *what;
	} bad[] = {
	        {"op", 2, "no NUL after the key"},      {"op\0", 3, "key without a value"},
	        {"op\0submit", 9, "value without NUL"}, {"\0x\0", 3, "empty key"},
	        {"OP\0x\0", 5, "upper-case key"},       {"o p\0x\0", 6, "space in key"},
	        {"op\0x\0\xff\0y\0", 9, "binary key"},
	};
	size_t i;

	msg_init(&d);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		is_int(msg_decode(&d, bad[i].data, bad[i].len, &why), -EPROTO, "refused: %s",
		       bad[i].what);
		ok(why && *why, "with a reason (%s)", why ? why : "none");
	}
	ok(!msg_decode(&d, "", 0, &why) && d.n == 0, "an empty message is valid and empty");
	unsigned char hdr[4] = {0x7f, 0xff, 0xff, 0xff};
	size_t len;
	is_int(proto_parse_header(hdr, &len), -EPROTO, "a 2 GiB length is refused");
	msg_release(&d);
}

static void test_socketpair(void)
{
	int sv[2];
	struct msg m, r;

	ok(!socketpair(AF_UNIX, SOCK_STREAM, 0, sv), "socketpair");
	msg_init(&m);
	msg_init(&r);
	msg_add(&m, "op", "ping");
	ok(!proto_send(sv[0], &m), "send");
	ok(!proto_recv(sv[1], &r, 1000), "recv");
	is_str(msg_get(&r, "op"), "ping", "same message");
	close(sv[0]);
	is_int(proto_recv(sv[1], &r, 1000), -ECONNRESET, "EOF is a reset");
	close(sv[1]);
	msg_release(&m);
	msg_release(&r);
}

/* proto_take(): frames out of a byte stream, as they arrive in pieces. */
static void test_take(void)
{
	struct msg a, b, m;
	struct buf s = BUF_INIT(0);
	unsigned char hdr[PROTO_HDR];
	const char *why;
	size_t whole;

	msg_init(&a);
	msg_init(&b);
	msg_init(&m);
	msg_add(&a, "op", "one");
	msg_add(&b, "row", "two");
	msg_add_int(&b, "id", 7);
	proto_header(&a, hdr);
	buf_add(&s, hdr, sizeof(hdr));
	buf_add(&s, a.raw.p, a.raw.len);
	proto_header(&b, hdr);
	buf_add(&s, hdr, sizeof(hdr));
	buf_add(&s, b.raw.p, b.raw.len);
	whole = s.len;
	buf_setlen(&s, 2);
	is_int(proto_take(&s, &m, &why), 0, "half a header: no frame yet");
	buf_setlen(&s, whole - 1);
	is_int(proto_take(&s, &m, &why), 1, "the first frame");
	is_str(msg_get(&m, "op"), "one", "  its field");
	is_int(proto_take(&s, &m, &why), 0, "the second, one byte short: not yet");
	buf_setlen(&s, s.len + 1);
	is_int(proto_take(&s, &m, &why), 1, "once whole, the second");
	ok(!strcmp(msg_get(&m, "row"), "two") && !msg_get(&m, "op"), "  its fields alone");
	is_int((int)s.len, 0, "  nothing left");
	buf_reset(&s);
	buf_add(&s, "\xff\xff\xff\xff", 4);
	is_int(proto_take(&s, &m, &why), -EPROTO, "a header over the limit");
	ok(why != NULL, "  says why");
	buf_reset(&s);
	buf_add(&s, "\0\0\0\3op\0", 7);
	is_int(proto_take(&s, &m, &why), -EPROTO, "a field cut short");
	buf_reset(&s);
	buf_add(&s, "hello world\n", 12);
	is_int(proto_take(&s, &m, &why), -EPROTO, "text where a frame belongs");
	msg_release(&a);
	msg_release(&b);
	msg_release(&m);
	buf_release(&s);
}

/* proto_put(): the bytes of a frame written by hand, or nothing at all. */
static void test_put(void)
{
	struct msg a, m;
	struct buf s = BUF_INIT(0), hand = BUF_INIT(0), small;
	unsigned char hdr[PROTO_HDR];
	const char *why;

	msg_init(&a);
	msg_init(&m);
	msg_add(&a, "op", "submit");
	msg_add_int(&a, "id", 42);
	proto_header(&a, hdr);
	buf_add(&hand, "x", 1);
	buf_add(&hand, hdr, sizeof(hdr));
	buf_add(&hand, a.raw.p, a.raw.len);
	buf_add(&s, "x", 1);
	is_int(proto_put(&s, &a), 0, "a frame put after a byte");
	ok(s.len == hand.len && !memcmp(s.p, hand.p, s.len), "  its header and body, as by hand");
	buf_init(&small, 1 + PROTO_HDR + a.raw.len - 1);
	buf_add(&small, "x", 1);
	ok(proto_put(&small, &a) != 0, "a frame that does not fit: an error");
	is_int((int)small.len, 1, "  the buffer as it was");
	buf_release(&small);
	buf_init(&small, 1 + PROTO_HDR - 1);
	buf_add(&small, "x", 1);
	ok(proto_put(&small, &a) != 0, "not even its header fits: an error");
	is_int((int)small.len, 1, "  the buffer as it was");
	buf_setlen(&s, 0);
	is_int(proto_put(&s, &a), 0, "put again");
	is_int(proto_take(&s, &m, &why), 1, "  proto_take() reads it back");
	is_str(msg_get(&m, "op"), "submit", "  its field");
	msg_release(&a);
	msg_release(&m);
	buf_release(&s);
	buf_release(&hand);
	buf_release(&small);
}

int main(void)
{
	plan_run(test_roundtrip);
	plan_run(test_many_fields);
	plan_run(test_hostile);
	plan_run(test_socketpair);
	plan_run(test_take);
	plan_run(test_put);
	return done_testing();
}
