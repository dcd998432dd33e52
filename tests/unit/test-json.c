/* The JSON writer: escaping, UTF-8 repair, commas and nesting, numbers, errors. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tests/unit/harness.h"
#include "lib/buf.h"
#include "lib/json.h"
#include "lib/util.h"
#include "lib/banned.h"

/* json_quote() of n bytes, as a string the test owns in a static buffer. */
static const char *quote(const char *s, size_t n)
{
	static char out[512];
	struct buf b = BUF_INIT(0);

	if (json_quote(&b, s, n))
		xsnprintf(out, sizeof(out), "(error)");
	else
		xsnprintf(out, sizeof(out), "%s", b.p);
	buf_release(&b);
	return out;
}

#define Q(lit) quote(lit, sizeof(lit) - 1)

static void test_escaping(void)
{
	is_str(Q("plain"), "\"plain\"", "plain text");
	is_str(Q(""), "\"\"", "empty string");
	is_str(Q("\"\\/"), "\"\\\"\\\\/\"", "quote and backslash escaped, slash not");
	is_str(Q("\n\r\t\b\f"), "\"\\n\\r\\t\\b\\f\"", "the short escapes");
	is_str(Q("\x01\x1f\x7f"), "\"\\u0001\\u001f\\u007f\"", "other controls as \\u00XX");
	is_str(Q("a\0b"), "\"a\\u0000b\"", "an embedded NUL");
	is_str(Q("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x92\xa9"),
	       "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x92\xa9\"", "valid UTF-8 passes through");
}

static void test_bad_utf8(void)
{
	is_str(Q("\xff"), "\"\\ufffd\"", "0xff is U+FFFD");
	is_str(Q("\x80"), "\"\\ufffd\"", "a lone continuation byte");
	is_str(Q("\xc3\x28"), "\"\\ufffd(\"", "a truncated sequence, next byte kept");
	is_str(Q("\xc0\xaf"), "\"\\ufffd\\ufffd\"", "an overlong '/'");
	is_str(Q("\xe0\x80\xaf"), "\"\\ufffd\\ufffd\\ufffd\"", "an overlong 3-byte form");
	is_str(Q("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"", "a UTF-16 surrogate");
	is_str(Q("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"", "past U+10FFFF");
	is_str(Q("ok\xe2\x82"), "\"ok\\ufffd\\ufffd\"", "cut off at the end");
	ok(utf8_valid("caf\xc3\xa9", 5) && !utf8_valid("caf\xc3", 4), "utf8_valid");
}

/* Writes the same document in either mode. */
static void document(struct json *j)
{
	json_obj_begin(j);
	json_key(j, "a");
	json_int(j, 1);
	json_key(j, "b");
	json_arr_begin(j);
	json_int(j, 1);
	json_str(j, "two");
	json_obj_begin(j);
	json_obj_end(j);
	json_arr_end(j);
	json_key(j, "c");
	json_obj_begin(j);
	json_key(j, "k\"ey");
	json_null(j);
	json_obj_end(j);
	json_key(j, "d");
	json_arr_begin(j);
	json_arr_end(j);
	json_key(j, "e");
	json_bool(j, 1);
	json_key(j, "f");
	json_bool(j, 0);
	json_key(j, "g");
	json_str(j, NULL);
	json_key(j, "h");
	json_raw(j, "[1,2]");
	json_obj_end(j);
}

static void test_nesting(void)
{
	struct buf b = BUF_INIT(0);
	struct json j;

	json_init(&j, &b, 0);
	document(&j);
	is_int(json_finish(&j), 0, "compact document");
	is_str(b.p,
	       "{\"a\":1,\"b\":[1,\"two\",{}],\"c\":{\"k\\\"ey\":null},\"d\":[],\"e\":true,"
	       "\"f\":false,\"g\":null,\"h\":[1,2]}",
	       "compact: commas and nesting");

	buf_reset(&b);
	json_init(&j, &b, 1);
	document(&j);
	is_int(json_finish(&j), 0, "pretty document");
	is_str(b.p,
	       "{\n"
	       "  \"a\": 1,\n"
	       "  \"b\": [\n"
	       "    1,\n"
	       "    \"two\",\n"
	       "    {}\n"
	       "  ],\n"
	       "  \"c\": {\n"
	       "    \"k\\\"ey\": null\n"
	       "  },\n"
	       "  \"d\": [],\n"
	       "  \"e\": true,\n"
	       "  \"f\": false,\n"
	       "  \"g\": null,\n"
	       "  \"h\": [1,2]\n"
	       "}\n",
	       "pretty: two-space indent, final newline");

	buf_reset(&b);
	json_init(&j, &b, 1);
	json_obj_begin(&j);
	json_obj_end(&j);
	json_finish(&j);
	is_str(b.p, "{}\n", "empty object, pretty");
	buf_reset(&b);
	json_init(&j, &b, 0);
	json_arr_begin(&j);
	json_arr_end(&j);
	json_finish(&j);
	is_str(b.p, "[]", "empty array, compact");
	buf_reset(&b);
	json_init(&j, &b, 0);
	json_str(&j, "top");
	json_finish(&j);
	is_str(b.p, "\"top\"", "a top-level scalar");
	buf_release(&b);
}

static const char *num(double v)
{
	static char out[64];
	struct buf b = BUF_INIT(0);
	struct json j;

	json_init(&j, &b, 0);
	json_double(&j, v);
	json_finish(&j);
	xsnprintf(out, sizeof(out), "%s", b.p);
	buf_release(&b);
	return out;
}

static void test_numbers(void)
{
	struct buf b = BUF_INIT(0);
	struct json j;

	is_str(num(0.5), "0.5", "0.5");
	is_str(num(0.1), "0.1", "0.1 in its shortest form");
	is_str(num(1e-7), "1e-07", "1e-7");
	is_str(num(3.0), "3", "an integral double prints as an integer");
	is_str(num(-2.0), "-2", "-2");
	is_str(num(0.0), "0", "0");
	is_str(num(1e15), "1e+15", "1e15");
	is_str(num(1e300), "1e+300", "1e300 (past int64)");
	is_str(num(-1e300), "-1e+300", "-1e300");
	is_str(num(9.2233720368547758e18), "9.2233720368547758e+18", "2^63 (past int64)");
	is_str(num(1.0 / 3), "0.33333333333333331", "a value needing 17 digits");
	is_str(num(NAN), "null", "NaN is null");
	is_str(num(INFINITY), "null", "infinity is null");

	json_init(&j, &b, 0);
	json_arr_begin(&j);
	json_int(&j, INT64_MAX);
	json_int(&j, INT64_MIN);
	json_int(&j, 0);
	json_arr_end(&j);
	json_finish(&j);
	is_str(b.p, "[9223372036854775807,-9223372036854775808,0]", "int64 extremes");
	buf_release(&b);
}

/* Times and exit codes, as the job listings write them, in a list (commas). */
static void test_times_and_codes(void)
{
	static const struct {
		const char *codes, *want;
	} c[] = {
	        {"", "[]"},      {"0", "[0]"},           {"0,3,?", "[0,3,null]"},
	        {"?", "[null]"}, {"-1,255", "[-1,255]"}, {"?,?", "[null,null]"},
	        {"1,", "[1]"},   {"x7", "[null]"},
	};
	struct buf b = BUF_INIT(0);
	struct json j;
	size_t i;

	json_init(&j, &b, 0);
	json_arr_begin(&j);
	json_time(&j, 1796241883.5614);
	json_time(&j, 1796241883.9996);
	json_time(&j, 0.0001);
	json_time(&j, 0);
	json_time(&j, -5);
	json_time(&j, NAN);
	json_time(&j, 1e300);
	json_arr_end(&j);
	json_finish(&j);
	is_str(b.p, "[1796241883.561,1796241884.000,0.000,null,null,null,1e+300]",
	       "times: three decimals, null for none, no overflow past int64");
	for (i = 0; i < ARRAY_SIZE(c); i++) {
		buf_reset(&b);
		json_init(&j, &b, 0);
		json_codes(&j, c[i].codes);
		json_finish(&j);
		is_str(b.p, c[i].want, "codes \"%s\"", c[i].codes);
	}
	buf_release(&b);
}

static void test_errors(void)
{
	struct buf b = BUF_INIT(8);
	struct json j;
	int i;

	json_init(&j, &b, 0);
	json_str(&j, "longer than eight bytes");
	is_int(json_finish(&j), -ENOBUFS, "a full buf is reported by json_finish");
	json_init(&j, &b, 0);
	buf_reset(&b);
	json_arr_end(&j);
	is_int(json_finish(&j), -EINVAL, "closing what was never opened is -EINVAL");

	buf_release(&b);
	b.max = 0;
	json_init(&j, &b, 0);
	for (i = 0; i < JSON_MAX_DEPTH + 5; i++)
		json_arr_begin(&j);
	is_int(json_finish(&j), -E2BIG, "nesting past JSON_MAX_DEPTH is -E2BIG");
	buf_release(&b);
}

int main(void)
{
	plan_run(test_escaping);
	plan_run(test_bad_utf8);
	plan_run(test_nesting);
	plan_run(test_numbers);
	plan_run(test_times_and_codes);
	plan_run(test_errors);
	return done_testing();
}
