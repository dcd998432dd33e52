/*
 * The control-socket request decoder (lib/proto.c) on a byte stream, read the
 * way the supervisor reads a connection (sup_conn_event): a 4-byte length, then that
 * many bytes of fields, again and again. Properties: a length over PROTO_MAX_MSG is
 * refused; a decoded message re-encodes (msg_add of each field) to the same bytes; a
 * refused one has a reason; the typed getters never crash.
 */
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "lib/log.h"
#include "lib/proto.h"
#include "lib/banned.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	log_set_level(LOG_QUIET);
	return 0;
}

static void check_message(const char *p, size_t len)
{
	struct msg m, again;
	const char *why = NULL;
	int64_t iv;
	double dv;
	size_t i;

	msg_init(&m);
	if (msg_decode(&m, p, len, &why)) {
		if (!why || !*why)
			fuzz_fail("refused without a reason");
		msg_release(&m);
		return;
	}
	if (m.raw.len != len || (len && memcmp(m.raw.p, p, len)))
		fuzz_fail("decoded bytes differ from the input");
	msg_init(&again);
	for (i = 0; i < m.n; i++)
		if (msg_add(&again, m.keys[i], m.vals[i]))
			fuzz_fail("field %zu does not re-encode", i);
	if (again.raw.len != len || (len && memcmp(again.raw.p, p, len)))
		fuzz_fail("re-encoding differs from the input");
	if (again.n != m.n)
		fuzz_fail("field count differs after re-encoding");
	msg_get(&m, "op");
	msg_get_int(&m, "id", &iv);
	msg_get_double(&m, "cpus", &dv);
	msg_release(&again);
	msg_release(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data;
	size_t left = size, need;

	/* The first byte picks: a framed stream, or the bytes as one message body. */
	if (size && (data[0] & 1)) {
		check_message(p + 1, size - 1);
		return 0;
	}
	while (left >= PROTO_HDR) {
		const unsigned char *h = (const unsigned char *)p;
		size_t want =
		        ((size_t)h[0] << 24) | ((size_t)h[1] << 16) | ((size_t)h[2] << 8) | h[3];

		if (proto_parse_header(h, &need)) {
			if (want <= PROTO_MAX_MSG)
				fuzz_fail("a length within the limit was refused");
			return 0;
		}
		if (need != want || need > PROTO_MAX_MSG)
			fuzz_fail("length %zu read as %zu", want, need);
		if (left - PROTO_HDR < need)
			return 0; /* the supervisor waits for more */
		check_message(p + PROTO_HDR, need);
		p += PROTO_HDR + need;
		left -= PROTO_HDR + need;
	}
	return 0;
}
