#ifndef SKIFF_JSON_H
#define SKIFF_JSON_H

/*
 * A streaming JSON writer over a buf. Commas and nesting are tracked for the caller:
 *
 *   struct json j;
 *   json_init(&j, &b, 1);            // 1 = pretty (two-space indent), 0 = compact
 *   json_obj_begin(&j);
 *   json_key(&j, "id"); json_int(&j, 7);
 *   json_key(&j, "tags"); json_arr_begin(&j); json_str(&j, "a"); json_arr_end(&j);
 *   json_obj_end(&j);
 *
 * Strings are escaped per RFC 8259; bytes that are not valid UTF-8 become U+FFFD, so the
 * output is always valid UTF-8 whatever the input. Errors (buffer limit) are sticky in
 * j->err and reported by json_finish().
 */

#include <stdint.h>

#include "lib/buf.h"

#define JSON_MAX_DEPTH 64

struct json {
	struct buf *out;
	int pretty;
	int depth;
	int err;
	unsigned char first[JSON_MAX_DEPTH]; /* nothing written yet at this level */
	unsigned char after_key;
};

void json_init(struct json *j, struct buf *out, int pretty);
void json_obj_begin(struct json *j);
void json_obj_end(struct json *j);
void json_arr_begin(struct json *j);
void json_arr_end(struct json *j);
void json_key(struct json *j, const char *key);
void json_str(struct json *j, const char *s);
void json_strn(struct json *j, const char *s, size_t n);
void json_int(struct json *j, int64_t v);
void json_double(struct json *j, double v);
void json_bool(struct json *j, int v);
void json_null(struct json *j);
/*
 * A time as epoch seconds with millisecond precision (always three decimals, without
 * printf: long listings write many), or null for t <= 0 (no time).
 */
void json_time(struct json *j, double t);
/* A list of exit codes "0,3,?" (one per rank) as [0,3,null]: what is not a number is null. */
void json_codes(struct json *j, const char *codes);
/* Inserts already-encoded JSON text as one value. */
void json_raw(struct json *j, const char *text);
/* Adds a final newline in pretty mode; returns j->err. */
int json_finish(struct json *j);

/* Escapes s as a JSON string (with quotes) onto b. */
int json_quote(struct buf *b, const char *s, size_t n);
/* Appends v in decimal to b (without printf: long listings write many). 0 or -ENOBUFS. */
int json_put_int(struct buf *b, int64_t v);

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is not valid. */
size_t utf8_seq_len(const unsigned char *s, size_t avail);
/* 1 if all of s[0..n) is valid UTF-8. */
int utf8_valid(const char *s, size_t n);

#endif
