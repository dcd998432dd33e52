/*
 * YAML loading for untrusted input: see lib/yaml.h for the contract and the limits.
 *
 * libyaml's event parser drives a stack of open collections. Children are gathered in a
 * per-level vector and copied into the stream's arena when the collection ends, so each
 * node is allocated once at its final size and freeing is one walk over the arena.
 */
#include "lib/yaml.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "lib/json.h"
#include "lib/util.h"
#include "lib/banned.h"

/* ---- errors ------------------------------------------------------------------------ */

void yerr_vadd(struct yerrors *e, int warning, const char *file, int line, int col, const char *fmt,
               va_list ap)
{
	char msg[512];
	struct yerror *y;
	size_t i;

	if (!warning)
		e->nerrors++;
	if (e->n >= YAML_MAX_ERRORS) {
		e->dropped++;
		return;
	}
	if (e->n == e->alloc) {
		e->alloc = e->alloc ? 2 * e->alloc : 8;
		e->v = xrealloc(e->v, e->alloc * sizeof(*e->v));
	}
	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* Messages quote user text: keep them on one line whatever it holds. */
	for (i = 0; msg[i]; i++)
		if ((unsigned char)msg[i] < 0x20 || msg[i] == 0x7f)
			msg[i] = '?';
	y = &e->v[e->n++];
	y->file = xstrdup(file ? file : "-");
	y->line = line > 0 ? line : 1;
	y->col = col > 0 ? col : 1;
	y->msg = xstrdup(msg);
	y->warning = warning;
}

void yerr_add(struct yerrors *e, const char *file, int line, int col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	yerr_vadd(e, 0, file, line, col, fmt, ap);
	va_end(ap);
}

void yerr_warn(struct yerrors *e, const char *file, int line, int col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	yerr_vadd(e, 1, file, line, col, fmt, ap);
	va_end(ap);
}

void yerr_print(const struct yerrors *e, FILE *out)
{
	size_t i;

	for (i = 0; i < e->n; i++) {
		const struct yerror *y = &e->v[i];

		char *line = xasprintf("%s:%d:%d: %s%s", y->file, y->line, y->col,
		                       y->warning ? "warning: " : "", y->msg);

		fprintf(out, "%s\n", line);
		if (!y->warning)
			log_count_error(line);
		free(line);
	}
	if (e->dropped && e->n) {
		const struct yerror *y = &e->v[e->n - 1];

		fprintf(out, "%s:%d:%d: too many errors: %zu more not shown\n", y->file, y->line,
		        y->col, e->dropped);
	}
}

void yerr_release(struct yerrors *e)
{
	size_t i;

	if (!e)
		return;
	for (i = 0; i < e->n; i++) {
		free(e->v[i].file);
		free(e->v[i].msg);
	}
	free(e->v);
	memset(e, 0, sizeof(*e));
}

/* ---- arena ------------------------------------------------------------------------- */

struct yarena {
	struct yarena *next; /* older chunks */
	size_t used, cap;
};

#define ARENA_CHUNK ((size_t)64 << 10)
#define ARENA_HDR ((sizeof(struct yarena) + 15) & ~(size_t)15)

static void *arena_alloc(struct ystream *s, size_t n)
{
	struct yarena *a = s->arena;
	void *p;

	n = (n + 15) & ~(size_t)15;
	if (!a || a->cap - a->used < n) {
		size_t cap = n > ARENA_CHUNK ? n : ARENA_CHUNK;

		a = xmalloc(ARENA_HDR + cap);
		a->next = s->arena;
		a->used = 0;
		a->cap = cap;
		s->arena = a;
	}
	p = (char *)a + ARENA_HDR + a->used;
	a->used += n;
	return p;
}

static char *arena_strndup(struct ystream *s, const char *str, size_t n)
{
	char *p = arena_alloc(s, n + 1);

	memcpy(p, str, n);
	p[n] = '\0';
	return p;
}

void yscalar_set(struct ystream *s, struct ynode *n, const char *value)
{
	n->len = strlen(value);
	n->value = arena_strndup(s, value, n->len);
	n->plain = 0;
}

void yaml_stream_release(struct ystream *s)
{
	struct yarena *a, *next;

	if (!s)
		return;
	for (a = s->arena; a; a = next) {
		next = a->next;
		free(a);
	}
	free(s->docs);
	s->docs = NULL;
	s->ndocs = 0;
	s->arena = NULL;
}

/* ---- the loader -------------------------------------------------------------------- */

struct frame {
	struct ynode *node; /* NULL: the document level */
	struct ynode **kids;
	size_t n, alloc;
};

struct anchor {
	const char *name;
	struct ynode *node;
};

struct loader {
	const char *file;
	const char *data;
	size_t len;
	struct yerrors *errs;
	struct ystream *s;
	struct frame stack[YAML_MAX_DEPTH + 1]; /* [0] is the document */
	int depth;                              /* open collections */
	size_t total;                           /* nodes seen with aliases expanded */
	size_t total_bytes;                     /* scalar bytes seen with aliases expanded */
	struct anchor *anchors;                 /* open-addressing hash table */
	size_t nanchors, anchor_cap;
	int failed;
};

static int fail(struct loader *L, int line, int col, const char *fmt, ...) SKIFF_PRINTF(4, 5);

static int fail(struct loader *L, int line, int col, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	yerr_vadd(L->errs, 0, L->file, line, col, fmt, ap);
	va_end(ap);
	L->failed = 1;
	return -1;
}

/* Line and column (characters, 1-based) of a byte offset, counting breaks as libyaml. */
static void offset_pos(const struct loader *L, size_t off, int *line, int *col)
{
	const unsigned char *s = (const unsigned char *)L->data;
	size_t i;
	int l = 1, c = 1;

	if (off > L->len)
		off = L->len;
	for (i = 0; i < off; i++) {
		if (s[i] == '\n' || (s[i] == '\r' && (i + 1 >= L->len || s[i + 1] != '\n'))) {
			l++;
			c = 1;
		} else if ((s[i] & 0xc0) != 0x80 && s[i] != '\r') {
			c++;
		}
	}
	*line = l;
	*col = c;
}

/*
 * libyaml reports bad bytes one at a time; checking the text first gives one clear
 * message, and tells a binary file (NUL bytes) from a text file in another encoding.
 */
static int check_text(struct loader *L)
{
	const unsigned char *s = (const unsigned char *)L->data;
	int binary = memchr(L->data, 0, L->len) != NULL;
	size_t i = 0;
	int line, col;

	while (i < L->len) {
		size_t k = s[i] ? utf8_seq_len(s + i, L->len - i) : 0;

		if (!k)
			break;
		i += k;
	}
	if (i == L->len)
		return 0;
	offset_pos(L, i, &line, &col);
	if (binary)
		return fail(L, line, col,
		            "this looks like a binary file (it has NUL bytes), not YAML text");
	/* One loader for task, config and pool files: the words fit each of them. */
	return fail(L, line, col, "invalid UTF-8 (byte 0x%02X): a YAML file must be UTF-8 text",
	            s[i]);
}

static void libyaml_error(struct loader *L, const yaml_parser_t *p)
{
	const char *problem = p->problem ? p->problem : "cannot parse YAML";
	int line, col;

	switch (p->error) {
	case YAML_MEMORY_ERROR: fail(L, 1, 1, "out of memory while parsing YAML"); break;
	case YAML_READER_ERROR:
		offset_pos(L, p->problem_offset, &line, &col);
		if (p->problem_value != -1)
			fail(L, line, col, "%s (character U+%04X)", problem,
			     (unsigned)p->problem_value);
		else
			fail(L, line, col, "%s", problem);
		break;
	default:
		line = (int)p->problem_mark.line + 1;
		col = (int)p->problem_mark.column + 1;
		if (p->context)
			fail(L, line, col, "%s (%s at line %d, column %d)", problem, p->context,
			     (int)p->context_mark.line + 1, (int)p->context_mark.column + 1);
		else
			fail(L, line, col, "%s", problem);
		break;
	}
}

static uint32_t hash_name(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

static struct anchor *anchor_slot(struct loader *L, const char *name)
{
	size_t mask = L->anchor_cap - 1, i;

	for (i = hash_name(name) & mask;; i = (i + 1) & mask)
		if (!L->anchors[i].name || !strcmp(L->anchors[i].name, name))
			return &L->anchors[i];
}

static int anchor_add(struct loader *L, const yaml_char_t *name, struct ynode *node)
{
	struct anchor *a;

	if (!name)
		return 0;
	if (L->nanchors >= YAML_MAX_ANCHORS)
		return fail(L, node->line, node->col, "more than %d anchors in one document",
		            YAML_MAX_ANCHORS);
	if (2 * (L->nanchors + 1) > L->anchor_cap) {
		struct anchor *old = L->anchors;
		size_t oldcap = L->anchor_cap, i;

		L->anchor_cap = oldcap ? 2 * oldcap : 64;
		L->anchors = xcalloc(L->anchor_cap, sizeof(*L->anchors));
		for (i = 0; i < oldcap; i++)
			if (old[i].name)
				*anchor_slot(L, old[i].name) = old[i];
		free(old);
	}
	a = anchor_slot(L, (const char *)name);
	if (!a->name) {
		a->name = arena_strndup(L->s, (const char *)name, strlen((const char *)name));
		L->nanchors++;
	}
	a->node = node; /* a redefined anchor names the later node, as in YAML */
	return 0;
}

static void anchors_reset(struct loader *L)
{
	if (L->anchors)
		memset(L->anchors, 0, L->anchor_cap * sizeof(*L->anchors));
	L->nanchors = 0;
}

static int count(struct loader *L, size_t nodes, size_t bytes, int line, int col)
{
	L->total += nodes;
	L->total_bytes += bytes;
	if (L->total > YAML_MAX_EXPANDED)
		return fail(L, line, col,
		            "too many nodes: more than %d, counting each alias expansion",
		            YAML_MAX_EXPANDED);
	if (L->total_bytes > YAML_MAX_EXPANDED_BYTES)
		return fail(L, line, col,
		            "too much text: more than %zu bytes, counting each alias expansion",
		            YAML_MAX_EXPANDED_BYTES);
	return 0;
}

static void add_kid(struct frame *f, struct ynode *n)
{
	if (f->n == f->alloc) {
		f->alloc = f->alloc ? 2 * f->alloc : 16;
		f->kids = xrealloc(f->kids, f->alloc * sizeof(*f->kids));
	}
	f->kids[f->n++] = n;
}

#define TAG_PREFIX "tag:yaml.org,2002:"

static int is_tag(const struct ynode *n, const char *name)
{
	return n->tag && starts_with(n->tag, TAG_PREFIX) &&
	       !strcmp(n->tag + strlen(TAG_PREFIX), name);
}

/* Tags PyYAML's safe loader knows and that make sense in a task file. */
static int check_tag(struct loader *L, struct ynode *n)
{
	static const struct {
		const char *name;
		enum yscalar_type type;
	} scalar_tags[] = {
	        {"str", YS_STR},   {"int", YS_INT},   {"float", YS_FLOAT},
	        {"bool", YS_BOOL}, {"null", YS_NULL},
	};
	enum yscalar_type t;
	size_t i;

	if (!n->tag || !strcmp(n->tag, "!"))
		return 0;
	if (n->kind == Y_SEQ && is_tag(n, "seq"))
		return 0;
	if (n->kind == Y_MAP && is_tag(n, "map"))
		return 0;
	if (n->kind == Y_SCALAR && is_tag(n, "merge") && !strcmp(n->value, "<<"))
		return 0;
	for (i = 0; n->kind == Y_SCALAR && i < ARRAY_SIZE(scalar_tags); i++) {
		if (!is_tag(n, scalar_tags[i].name))
			continue;
		t = yaml_plain_type(n->value, n->len);
		/* "!!int x" and the like: the text must be what the tag says. */
		if (scalar_tags[i].type == YS_STR || t == scalar_tags[i].type ||
		    (scalar_tags[i].type == YS_FLOAT && t == YS_INT))
			return 0;
		return fail(L, n->line, n->col, "'%.40s' is not a valid !!%s", n->value,
		            scalar_tags[i].name);
	}
	return fail(L, n->line, n->col, "unsupported tag '%.60s' on %s", n->tag, ynode_describe(n));
}

static struct ynode *new_node(struct loader *L, enum ynode_kind kind, const yaml_event_t *ev,
                              const yaml_char_t *tag)
{
	struct ynode *n = arena_alloc(L->s, sizeof(*n));

	memset(n, 0, sizeof(*n));
	n->kind = kind;
	n->line = (int)ev->start_mark.line + 1;
	n->col = (int)ev->start_mark.column + 1;
	n->expanded = 1;
	if (tag)
		n->tag = arena_strndup(L->s, (const char *)tag, strlen((const char *)tag));
	return n;
}

static int is_merge_key(const struct ynode *k)
{
	return k->kind == Y_SCALAR &&
	       ((k->plain && !k->tag && !strcmp(k->value, "<<")) || is_tag(k, "merge"));
}

struct keyref {
	const char *key;
	size_t idx; /* candidate pair index: explicit pairs first, then merged ones */
};

static int keyref_cmp(const void *a, const void *b)
{
	const struct keyref *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int add_merge_source(struct loader *L, struct ynode *src, struct ynode *key,
                            struct ynode ***cand, size_t *ncand, size_t *alloc)
{
	size_t i;

	if (src->kind != Y_MAP)
		return fail(L, key->line, key->col,
		            "merge key '<<' needs a mapping or a list of mappings, not %s",
		            ynode_describe(src));
	for (i = 0; i < src->n; i++) {
		if (*ncand == *alloc) {
			*alloc = *alloc ? 2 * *alloc : 16;
			*cand = xrealloc(*cand, *alloc * sizeof(**cand));
		}
		(*cand)[(*ncand)++] = src->items[i];
	}
	return 0;
}

/*
 * Finishes a mapping: resolves merge keys (explicit keys win, then earlier merge sources,
 * as PyYAML does) and rejects duplicate explicit keys.
 */
static int finish_map(struct loader *L, struct ynode *m, struct ynode **kids, size_t n)
{
	struct ynode **cand = NULL;
	size_t ncand = 0, alloc = 0, nexplicit, i, k;
	struct keyref *refs = NULL;
	unsigned char *drop = NULL;
	size_t nrefs = 0;
	int r = 0;

	for (i = 0; i + 1 < n; i += 2) {
		if (is_merge_key(kids[i]))
			continue;
		if (ncand + 2 > alloc) {
			alloc = alloc ? 2 * alloc : 16;
			cand = xrealloc(cand, alloc * sizeof(*cand));
		}
		cand[ncand++] = kids[i];
		cand[ncand++] = kids[i + 1];
	}
	nexplicit = ncand;
	for (i = 0; i + 1 < n && !r; i += 2) {
		struct ynode *v = kids[i + 1];

		if (!is_merge_key(kids[i]))
			continue;
		if (v->kind == Y_SEQ)
			for (k = 0; k < v->n && !r; k++)
				r = add_merge_source(L, v->items[k], kids[i], &cand, &ncand,
				                     &alloc);
		else
			r = add_merge_source(L, v, kids[i], &cand, &ncand, &alloc);
	}
	if (r)
		goto out;

	refs = xmalloc((ncand / 2 + 1) * sizeof(*refs));
	drop = xcalloc(ncand / 2 + 1, 1);
	for (i = 0; i < ncand / 2; i++)
		if (cand[2 * i]->kind == Y_SCALAR)
			refs[nrefs++] = (struct keyref){cand[2 * i]->value, i};
	qsort(refs, nrefs, sizeof(*refs), keyref_cmp);
	for (i = 1; i < nrefs; i++) {
		const struct keyref *first = &refs[i - 1];

		if (strcmp(refs[i].key, first->key))
			continue;
		if (2 * refs[i].idx < nexplicit) {
			const struct ynode *a, *b = cand[2 * refs[i].idx];

			/* The run's first entry is the first definition. */
			for (k = i - 1; k > 0 && !strcmp(refs[k - 1].key, refs[i].key); k--)
				;
			a = cand[2 * refs[k].idx];

			r = fail(L, b->line, b->col,
			         "duplicate key '%.60s' (first defined at line %d)", b->value,
			         a->line);
			goto out;
		}
		drop[refs[i].idx] = 1;
	}
	m->items = arena_alloc(L->s, (ncand ? ncand : 1) * sizeof(*m->items));
	for (i = 0, m->n = 0; i < ncand / 2; i++) {
		if (drop[i])
			continue;
		m->items[m->n++] = cand[2 * i];
		m->items[m->n++] = cand[2 * i + 1];
	}
out:
	free(cand);
	free(refs);
	free(drop);
	return r;
}

static int finish_collection(struct loader *L)
{
	struct frame *f = &L->stack[L->depth];
	struct ynode *node = f->node;
	size_t i;

	if (node->kind == Y_MAP) {
		if (finish_map(L, node, f->kids, f->n))
			return -1;
	} else {
		node->items = arena_alloc(L->s, (f->n ? f->n : 1) * sizeof(*node->items));
		if (f->n)
			memcpy(node->items, f->kids, f->n * sizeof(*node->items));
		node->n = f->n;
	}
	for (i = 0; i < node->n; i++) {
		node->expanded += node->items[i]->expanded;
		node->expanded_bytes += node->items[i]->expanded_bytes;
	}
	node->complete = 1;
	f->n = 0;
	f->node = NULL;
	L->depth--;
	add_kid(&L->stack[L->depth], node);
	return 0;
}

static int on_scalar(struct loader *L, const yaml_event_t *ev)
{
	const char *v = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	struct ynode *n = new_node(L, Y_SCALAR, ev, ev->data.scalar.tag);

	n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	if (memchr(v, 0, len))
		return fail(L, n->line, n->col, "NUL character in a string ('\\0' escape)");
	n->value = arena_strndup(L->s, v, len);
	n->len = len;
	n->expanded_bytes = len;
	n->complete = 1;
	if (count(L, 1, len, n->line, n->col) || check_tag(L, n) ||
	    anchor_add(L, ev->data.scalar.anchor, n))
		return -1;
	add_kid(&L->stack[L->depth], n);
	return 0;
}

static int on_start(struct loader *L, const yaml_event_t *ev, enum ynode_kind kind)
{
	const yaml_char_t *tag, *anchor;
	struct ynode *n;

	if (kind == Y_SEQ) {
		tag = ev->data.sequence_start.tag;
		anchor = ev->data.sequence_start.anchor;
	} else {
		tag = ev->data.mapping_start.tag;
		anchor = ev->data.mapping_start.anchor;
	}
	n = new_node(L, kind, ev, tag);
	if (L->depth >= YAML_MAX_DEPTH)
		return fail(L, n->line, n->col, "nesting deeper than %d levels", YAML_MAX_DEPTH);
	if (count(L, 1, 0, n->line, n->col) || check_tag(L, n) || anchor_add(L, anchor, n))
		return -1;
	L->depth++;
	L->stack[L->depth].node = n;
	L->stack[L->depth].n = 0;
	return 0;
}

static int on_alias(struct loader *L, const yaml_event_t *ev)
{
	const char *name = (const char *)ev->data.alias.anchor;
	int line = (int)ev->start_mark.line + 1, col = (int)ev->start_mark.column + 1;
	struct anchor *a = L->anchor_cap ? anchor_slot(L, name) : NULL;

	if (!a || !a->name)
		return fail(L, line, col, "alias '*%.60s' names no anchor defined before it", name);
	if (!a->node->complete)
		return fail(L, line, col, "alias '*%.60s' refers to a node that contains it", name);
	if (count(L, a->node->expanded, a->node->expanded_bytes, line, col))
		return -1;
	add_kid(&L->stack[L->depth], a->node);
	return 0;
}

static int on_document_start(struct loader *L, const yaml_event_t *ev)
{
	if (L->s->ndocs >= YAML_MAX_DOCS)
		return fail(L, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1,
		            "more than %d documents in one file", YAML_MAX_DOCS);
	anchors_reset(L);
	L->stack[0].n = 0;
	L->s->docs[L->s->ndocs].line = (int)ev->start_mark.line + 1;
	L->s->docs[L->s->ndocs].col = (int)ev->start_mark.column + 1;
	return 0;
}

static int on_document_end(struct loader *L, const yaml_event_t *ev)
{
	struct frame *f = &L->stack[0];

	if (f->n != 1)
		return fail(L, (int)ev->start_mark.line + 1, (int)ev->start_mark.column + 1,
		            "document without exactly one root node");
	L->s->docs[L->s->ndocs++].root = f->kids[0];
	f->n = 0;
	return 0;
}

static int on_event(struct loader *L, const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_DOCUMENT_START_EVENT: return on_document_start(L, ev);
	case YAML_DOCUMENT_END_EVENT: return on_document_end(L, ev);
	case YAML_SCALAR_EVENT: return on_scalar(L, ev);
	case YAML_SEQUENCE_START_EVENT: return on_start(L, ev, Y_SEQ);
	case YAML_MAPPING_START_EVENT: return on_start(L, ev, Y_MAP);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT: return finish_collection(L);
	case YAML_ALIAS_EVENT: return on_alias(L, ev);
	default: return 0;
	}
}

int yaml_load(struct ystream *out, const char *file, const char *data, size_t len,
              struct yerrors *errs)
{
	struct loader L;
	yaml_parser_t parser;
	int parser_ready = 0, done = 0, i;

	memset(out, 0, sizeof(*out));
	memset(&L, 0, sizeof(L));
	if (!data) {
		data = "";
		len = 0;
	}
	L.file = file;
	L.data = data;
	L.len = len;
	L.errs = errs;
	L.s = out;
	if (len > YAML_MAX_INPUT) {
		fail(&L, 1, 1, "file is %zu bytes, over the limit of %zu bytes for a task file",
		     len, YAML_MAX_INPUT);
		goto out;
	}
	if (check_text(&L))
		goto out;
	if (!yaml_parser_initialize(&parser)) {
		fail(&L, 1, 1, "out of memory while parsing YAML");
		goto out;
	}
	parser_ready = 1;
	yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
	yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
	out->docs = xcalloc(YAML_MAX_DOCS, sizeof(*out->docs));
	while (!done) {
		yaml_event_t ev;

		if (!yaml_parser_parse(&parser, &ev)) {
			libyaml_error(&L, &parser);
			break;
		}
		done = ev.type == YAML_STREAM_END_EVENT;
		i = on_event(&L, &ev);
		yaml_event_delete(&ev);
		if (i)
			break;
	}
out:
	if (parser_ready)
		yaml_parser_delete(&parser);
	for (i = 0; i <= YAML_MAX_DEPTH; i++)
		free(L.stack[i].kids);
	free(L.anchors);
	if (L.failed) {
		yaml_stream_release(out);
		return -1;
	}
	return 0;
}
