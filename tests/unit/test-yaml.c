/* Unit tests for lib/yaml.c: the node tree, scalar resolution, limits and errors. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/util.h"
#include "lib/yaml.h"
#include "tests/unit/harness.h"
#include "lib/banned.h"

static struct ystream S;
static struct yerrors E;
static char msg[1024];

/* Loads text; returns yaml_load()'s result. msg holds "LINE:COL: message" of the first error. */
static int loadn(const char *text, size_t len)
{
	int r;

	yaml_stream_release(&S);
	yerr_release(&E);
	r = yaml_load(&S, "t.yaml", text, len, &E);
	msg[0] = '\0';
	if (E.n)
		snprintf(msg, sizeof(msg), "%d:%d: %s", E.v[0].line, E.v[0].col, E.v[0].msg);
	return r;
}

static int load(const char *text)
{
	return loadn(text, strlen(text));
}

static struct ynode *root(size_t doc)
{
	return doc < S.ndocs ? S.docs[doc].root : NULL;
}

static void test_tree(void)
{
	struct ynode *r, *v;

	ok(!load("name: x\nresources:\n  cpus: 4+\nlist: [a, 'b', \"c\"]\n"), "loads a mapping");
	r = root(0);
	ok(r && r->kind == Y_MAP && ymap_pairs(r) == 3, "three pairs");
	is_str(ymap_get(r, "name")->value, "x", "scalar value");
	v = ymap_get(r, "resources");
	ok(v->kind == Y_MAP && v->line == 3 && v->col == 3, "nested mapping at 3:3");
	is_str(ymap_get(v, "cpus")->value, "4+", "nested value");
	v = ymap_get(r, "list");
	ok(v->kind == Y_SEQ && v->n == 3, "flow sequence of three");
	ok(v->items[0]->plain && !v->items[1]->plain && !v->items[2]->plain, "plain vs quoted");
	is_int(v->items[1]->line, 4, "item line");
	is_int(v->items[1]->col, 11, "item column (1-based)");
	ok(ymap_get(r, "missing") == NULL, "missing key is NULL");
	ok(ymap_get(v, "x") == NULL, "ymap_get on a list is NULL");

	ok(!load("a: |\n  line1\n  line2\nb: >\n  folded\n  text\n"), "block scalars");
	is_str(ymap_get(root(0), "a")->value, "line1\nline2\n", "literal block");
	is_str(ymap_get(root(0), "b")->value, "folded text\n", "folded block");
	ok(!ymap_get(root(0), "a")->plain, "a block scalar is not plain");
}

static void test_scalars(void)
{
	static const char *const nulls[] = {"~", "null", "Null", "NULL", ""};
	static const char *const bools[] = {"true", "False", "YES", "no", "on", "OFF"};
	static const char *const ints[] = {"0", "-12", "+7", "1_000", "0x1F", "017", "0b101"};
	static const char *const floats[] = {"1.5",    "-0.5", ".5",    "1.",
	                                     "1.0e+3", ".inf", "-.Inf", ".nan"};
	static const char *const strs[] = {"abc",    "1e5",        "08", "0x", "4+", "1:30",
	                                   "H100:8", "yes please", "-",  ".",  "+.5"};
	char text[64];
	long l;
	double d;
	int b;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(nulls); i++) {
		snprintf(text, sizeof(text), "k: %s\n", nulls[i]);
		load(text);
		ok(ynode_is_null(ymap_get(root(0), "k")), "'%s' is null", nulls[i]);
	}
	for (i = 0; i < ARRAY_SIZE(bools); i++) {
		snprintf(text, sizeof(text), "k: %s\n", bools[i]);
		load(text);
		ok(!ynode_bool(ymap_get(root(0), "k"), &b) && b == (i % 2 == 0 || i == 4),
		   "'%s' is a bool", bools[i]);
	}
	for (i = 0; i < ARRAY_SIZE(ints); i++) {
		snprintf(text, sizeof(text), "k: %s\n", ints[i]);
		load(text);
		ok(yscalar_type(ymap_get(root(0), "k")) == YS_INT, "'%s' is an int", ints[i]);
	}
	for (i = 0; i < ARRAY_SIZE(floats); i++) {
		snprintf(text, sizeof(text), "k: %s\n", floats[i]);
		load(text);
		ok(yscalar_type(ymap_get(root(0), "k")) == YS_FLOAT, "'%s' is a float", floats[i]);
	}
	for (i = 0; i < ARRAY_SIZE(strs); i++) {
		snprintf(text, sizeof(text), "k: %s\n", strs[i]);
		load(text);
		ok(yscalar_type(ymap_get(root(0), "k")) == YS_STR, "'%s' is a string", strs[i]);
	}
	load("a: '1'\nb: \"true\"\nc: 'null'\nd: !!str 12\ne: !!int \"12\"\nf: ! 12\n");
	ok(yscalar_type(ymap_get(root(0), "a")) == YS_STR, "quoted number is a string");
	ok(yscalar_type(ymap_get(root(0), "b")) == YS_STR, "quoted bool is a string");
	ok(!ynode_is_null(ymap_get(root(0), "c")), "quoted null is not null");
	ok(yscalar_type(ymap_get(root(0), "d")) == YS_STR, "!!str makes a string");
	ok(yscalar_type(ymap_get(root(0), "e")) == YS_INT, "!!int makes an int");
	ok(yscalar_type(ymap_get(root(0), "f")) == YS_STR, "the ! tag makes a string");

	load("a: 0x1F\nb: 017\nc: 1_000\nd: -5\ne: 99999999999999999999\nf: 2.5\n");
	ok(!ynode_long(ymap_get(root(0), "a"), 0, 100, &l) && l == 31, "hex");
	ok(!ynode_long(ymap_get(root(0), "b"), 0, 100, &l) && l == 15, "octal");
	ok(!ynode_long(ymap_get(root(0), "c"), 0, 10000, &l) && l == 1000, "underscores");
	ok(!ynode_long(ymap_get(root(0), "d"), -10, 10, &l) && l == -5, "negative");
	is_int(ynode_long(ymap_get(root(0), "d"), 0, 10, &l), -ERANGE, "below min");
	is_int(ynode_long(ymap_get(root(0), "e"), 0, 10, &l), -ERANGE, "overflow");
	is_int(ynode_long(ymap_get(root(0), "f"), 0, 10, &l), -EINVAL, "a float is not an int");
	ok(!ynode_number(ymap_get(root(0), "f"), &d) && d == 2.5, "number from a float");
	ok(!ynode_number(ymap_get(root(0), "d"), &d) && d == -5, "number from an int");
	is_str(ynode_describe(ymap_get(root(0), "f")), "a number", "describe a float");
	is_str(ynode_describe(root(0)), "a mapping", "describe a mapping");
}

static void test_documents(void)
{
	char *text;
	size_t i, n = 0;

	ok(!load("name: p\n---\nrun: a\n---\nrun: b\n"), "three documents");
	is_int(S.ndocs, 3, "ndocs");
	is_int(S.docs[1].line, 2, "second document starts at line 2");
	ok(!load(""), "an empty stream loads");
	is_int(S.ndocs, 0, "with no documents");
	ok(!load("# just a comment\n"), "a comment-only stream loads");
	is_int(S.ndocs, 0, "with no documents either");
	ok(!load("a: 1\n---\n"), "a trailing separator");
	ok(S.ndocs == 2 && ynode_is_null(root(1)), "gives an empty (null) document");

	text = xmalloc(32 * (YAML_MAX_DOCS + 2));
	for (i = 0; i <= YAML_MAX_DOCS; i++)
		n += (size_t)snprintf(text + n, 32, "---\nrun: %zu\n", i);
	ok(load(text), "more than YAML_MAX_DOCS documents fail");
	ok(strstr(msg, "more than 16 documents") != NULL, "and say so: %s", msg);
	free(text);
}

static void test_aliases(void)
{
	struct ynode *r;

	ok(!load("base: &b {cpus: 4, memory: 8}\nuse: *b\nlist: [*b, *b]\n"), "aliases load");
	r = root(0);
	ok(ymap_get(r, "base") == ymap_get(r, "use"), "an alias is the anchored node (shared)");
	ok(ymap_get(r, "list")->items[0] == ymap_get(r, "base"), "in a list too");
	is_int(ymap_get(r, "list")->expanded, 11, "expanded size counts both copies (1 + 2 * 5)");

	ok(!load("base: &b {cpus: 4, memory: 8}\nx:\n  <<: *b\n  cpus: 2\n"), "merge key loads");
	r = ymap_get(root(0), "x");
	is_int(ymap_pairs(r), 2, "merged mapping has two pairs");
	is_str(ymap_get(r, "cpus")->value, "2", "explicit key wins over merged");
	is_str(ymap_get(r, "memory")->value, "8", "merged key present");
	ok(!load("a: &a {k: 1}\nb: &b {k: 2, j: 3}\nc: {<<: [*a, *b]}\n"), "merge list loads");
	r = ymap_get(root(0), "c");
	is_str(ymap_get(r, "k")->value, "1", "earlier merge source wins");
	is_str(ymap_get(r, "j")->value, "3", "later source fills in");
	ok(load("a: {<<: [1]}\n") && strstr(msg, "merge key") != NULL, "merge of a scalar fails");

	ok(load("a: *nope\n"), "undefined alias fails");
	is_str(msg, "1:4: alias '*nope' names no anchor defined before it", "undefined alias msg");
	ok(load("a: &x [1, *x]\n"), "recursive alias fails");
	ok(strstr(msg, "contains it") != NULL, "recursive alias msg: %s", msg);
	ok(load("a: &x\n  b: *x\n"), "recursive alias in a mapping fails");
	ok(load("---\na: &x 1\n---\nb: *x\n"), "anchors do not cross documents");
}

static void test_bomb(void)
{
	static const char bomb[] = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
	                           "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
	                           "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
	                           "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
	                           "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
	                           "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
	                           "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
	                           "h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]\n"
	                           "i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]\n";
	struct buf b = BUF_INIT(0);
	clock_t t0 = clock();
	size_t i;

	ok(load(bomb), "billion laughs fails");
	ok(strstr(msg, "too many nodes") != NULL, "with the node budget: %s", msg);
	is_int(E.v[0].line, 6, "at the line that crosses the budget");
	ok((clock() - t0) * 10 < CLOCKS_PER_SEC, "in well under 100 ms");

	buf_adds(&b, "s: &s \"");
	for (i = 0; i < 100000; i++)
		buf_adds(&b, "0123456789");
	buf_adds(&b,
	         "\"\nl: [*s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s]\n");
	ok(loadn(b.p, b.len), "a long string aliased many times fails");
	ok(strstr(msg, "too much text") != NULL, "with the byte budget: %s", msg);
	buf_release(&b);
}

static void test_depth(void)
{
	struct buf b = BUF_INIT(0);
	int i;

	for (i = 0; i < YAML_MAX_DEPTH; i++)
		buf_addch(&b, '[');
	for (i = 0; i < YAML_MAX_DEPTH; i++)
		buf_addch(&b, ']');
	ok(!loadn(b.p, b.len), "%d levels load", YAML_MAX_DEPTH);
	buf_reset(&b);
	for (i = 0; i < 10000; i++)
		buf_addch(&b, '[');
	ok(loadn(b.p, b.len), "10000 levels fail");
	is_str(msg, "1:65: nesting deeper than 64 levels", "at the 65th");
	buf_reset(&b);
	for (i = 0; i < 200; i++)
		buf_addf(&b, "%*sk:\n", 2 * i, "");
	ok(loadn(b.p, b.len), "deep block mappings fail");
	is_int(E.v[0].line, 65, "at line 65");
	buf_release(&b);
}

static void test_bad_input(void)
{
	char *big;

	big = xcalloc(YAML_MAX_INPUT + 2, 1);
	memset(big, 'a', YAML_MAX_INPUT + 1);
	ok(loadn(big, YAML_MAX_INPUT + 1), "input over the size limit fails");
	is_str(msg, "1:1: file is 4194305 bytes, over the limit of 4194304 bytes for a task file",
	       "with the size");
	free(big);

	ok(loadn("a: b\0c\n", 7), "a NUL byte fails");
	ok(strstr(msg, "1:5: this looks like a binary file") == msg, "binary file msg: %s", msg);
	ok(load("name: ok\nrun: caf\xe9\n"), "latin-1 fails");
	is_str(msg, "2:9: invalid UTF-8 (byte 0xE9): a YAML file must be UTF-8 text", "utf-8 msg");
	ok(load("a: \xc3\x28\n"), "a bad continuation byte fails");
	ok(load("a: \xed\xa0\x80\n"), "an encoded surrogate fails");
	ok(load("a: \xc0\xaf\n"), "an overlong form fails");
	ok(!load("a: caf\xc3\xa9 \xf0\x9f\x9a\x80\n"), "real UTF-8 loads");
	ok(load("a: b\x01\n"), "a control character fails");
	is_str(msg, "1:5: control characters are not allowed (character U+0001)", "control msg");
	ok(load("k: \"a\\0b\"\n"), "a \\0 escape fails");
	is_str(msg, "1:4: NUL character in a string ('\\0' escape)", "escape msg");
	ok(load("a: [b\n"), "unclosed flow sequence fails");
	ok(strstr(msg, "2:1: did not find expected ',' or ']'") == msg, "syntax msg: %s", msg);
	ok(load("a: b\n c: d\n"), "bad indentation fails");
	ok(strstr(msg, "2:3: mapping values are not allowed") == msg, "indent msg: %s", msg);
	ok(load("k: !foo bar\n"), "an unknown tag fails");
	is_str(msg, "1:4: unsupported tag '!foo' on a string", "tag msg");
	ok(load("k: !!int abc\n"), "a wrong !!int fails");
	ok(load("k: !!binary aGk=\n"), "!!binary is not taken");
	ok(load("a: 1\na: 2\n"), "a duplicate key fails");
	is_str(msg, "2:1: duplicate key 'a' (first defined at line 1)", "duplicate msg");
	ok(load("x:\n  a: 1\n  b: 2\n  a: 3\n"), "a nested duplicate fails");
	is_str(msg, "4:3: duplicate key 'a' (first defined at line 2)", "nested duplicate msg");
	ok(load("a: {1: x, '1': y}\n"), "keys compare by their text: 1 and '1' are the same");
}

static void test_errors(void)
{
	struct yerrors e = YERRORS_INIT;
	char *out = NULL;
	size_t len = 0, i;
	FILE *f;

	for (i = 0; i < YAML_MAX_ERRORS + 5; i++)
		yerr_add(&e, "f.yaml", (int)i + 1, 2, "bad\nthing %zu", i);
	yerr_warn(&e, "f.yaml", 0, 0, "just a warning");
	is_int(e.n, YAML_MAX_ERRORS, "errors past the limit are not kept");
	is_int(e.dropped, 6, "but counted");
	is_int(e.nerrors, YAML_MAX_ERRORS + 5, "warnings are not errors");
	is_str(e.v[0].msg, "bad?thing 0", "control characters in messages are replaced");
	f = open_memstream(&out, &len);
	yerr_print(&e, f);
	fclose(f);
	ok(strncmp(out, "f.yaml:1:2: bad?thing 0\n", 24) == 0, "FILE:LINE:COL: message");
	ok(strstr(out, "too many errors: 6 more not shown") != NULL, "the overflow line");
	free(out);
	yerr_release(&e);
	ok(e.n == 0 && e.v == NULL, "released");
	yerr_release(NULL);
	yaml_stream_release(NULL);
}

int main(void)
{
	plan_run(test_tree);
	plan_run(test_scalars);
	plan_run(test_documents);
	plan_run(test_aliases);
	plan_run(test_bomb);
	plan_run(test_depth);
	plan_run(test_bad_input);
	plan_run(test_errors);
	yaml_stream_release(&S);
	yerr_release(&E);
	return done_testing();
}
