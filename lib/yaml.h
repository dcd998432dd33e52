#ifndef SKIFF_YAML_H
#define SKIFF_YAML_H

/*
 * A YAML loader for untrusted input: libyaml's event parser builds a small node tree.
 *
 * The tree is read-only once loaded. All nodes and strings of a stream live in one arena
 * owned by the struct ystream; yaml_stream_release() frees them all at once. An alias is
 * the very node its anchor names (shared, never copied), so the tree is a DAG; cycles
 * (an alias to an enclosing node) are rejected. Merge keys (`<<: *base`) are resolved
 * while loading: the merged pairs share the base's nodes.
 *
 * Hostile input fails fast with an error, in bounded time and memory, never a crash:
 * the limits below are checked while parsing, and the alias budget counts the nodes a
 * consumer would visit with every alias expanded (a "billion laughs" file is refused
 * after about YAML_MAX_EXPANDED steps), and the bytes of text it would copy.
 *
 * Errors are collected in a struct yerrors (file, line, column, message) and never
 * printed here: callers decide how to show them. Positions are 1-based; libyaml counts
 * columns in characters.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "lib/log.h"

#define YAML_MAX_INPUT ((size_t)4 << 20) /* bytes in one file */
#define YAML_MAX_DEPTH 64                /* nested sequences and mappings */
#define YAML_MAX_EXPANDED 100000         /* nodes in a stream, counting every alias expanded */
#define YAML_MAX_EXPANDED_BYTES ((size_t)16 << 20) /* scalar bytes, aliases expanded */
#define YAML_MAX_DOCS 16                           /* documents in one stream */
#define YAML_MAX_ANCHORS 4096                      /* anchors in one document */
#define YAML_MAX_ERRORS 50                         /* errors kept; later ones are only counted */

/* ---- errors ------------------------------------------------------------------------ */

struct yerror {
	char *file;    /* owned */
	int line, col; /* 1-based */
	char *msg;     /* owned; one line, no trailing newline */
	int warning;   /* 1: not fatal (printed as "warning: ...") */
};

struct yerrors {
	struct yerror *v;
	size_t n, alloc;
	size_t nerrors; /* fatal entries, including dropped ones */
	size_t dropped; /* entries past YAML_MAX_ERRORS, not stored */
};

#define YERRORS_INIT                                                                               \
	{                                                                                          \
		NULL, 0, 0, 0, 0                                                                   \
	}

/* Adds an error (or a warning). The message is formatted; file is copied. */
void yerr_add(struct yerrors *e, const char *file, int line, int col, const char *fmt, ...)
        SKIFF_PRINTF(5, 6);
void yerr_vadd(struct yerrors *e, int warning, const char *file, int line, int col, const char *fmt,
               va_list ap);
void yerr_warn(struct yerrors *e, const char *file, int line, int col, const char *fmt, ...)
        SKIFF_PRINTF(5, 6);
/* Writes "FILE:LINE:COL: message" lines (warnings as "FILE:LINE:COL: warning: ..."). */
void yerr_print(const struct yerrors *e, FILE *out);
void yerr_release(struct yerrors *e);

/* ---- nodes ------------------------------------------------------------------------- */

enum ynode_kind { Y_SCALAR, Y_SEQ, Y_MAP };

struct ynode {
	enum ynode_kind kind;
	char *tag;   /* explicit tag as resolved by libyaml ("tag:yaml.org,2002:str"), or NULL */
	char *value; /* scalar: NUL-terminated text; never contains a NUL byte. NULL otherwise */
	size_t len;  /* scalar: strlen(value) */
	int plain;   /* scalar written without quotes or block style: null/bool/int resolve */
	struct ynode **items;   /* seq: the items; map: key, value, key, value, ... */
	size_t n;               /* entries in items (a map has n / 2 pairs) */
	int line, col;          /* where the node starts, 1-based */
	size_t expanded;        /* nodes under and including this one with aliases expanded */
	size_t expanded_bytes;  /* scalar bytes under this node with aliases expanded */
	unsigned char complete; /* loader use: the end event has been seen */
};

/* Pairs of a map node: for (i = 0; i < ymap_pairs(m); i++) ymap_key(m, i) ... */
#define ymap_pairs(m) ((m)->n / 2)
#define ymap_key(m, i) ((m)->items[2 * (i)])
#define ymap_val(m, i) ((m)->items[2 * (i) + 1])

struct ydoc {
	struct ynode *root; /* never NULL: an empty document is an empty plain scalar */
	int line, col;      /* start of the document */
};

struct yarena;

struct ystream {
	struct ydoc *docs;
	size_t ndocs;
	struct yarena *arena; /* owns every node and string */
};

#define YSTREAM_INIT                                                                               \
	{                                                                                          \
		NULL, 0, NULL                                                                      \
	}

/*
 * Parses data[0..len) (need not be NUL-terminated). `file` names the input in errors.
 * Returns 0, or -1 with at least one error added to errs; on error *out holds nothing
 * and needs no release (releasing it is harmless). Never aborts on any input.
 */
int yaml_load(struct ystream *out, const char *file, const char *data, size_t len,
              struct yerrors *errs);
void yaml_stream_release(struct ystream *s);
/* Sets scalar n's text to a copy of value, owned by s; it now reads as a quoted string. */
void yscalar_set(struct ystream *s, struct ynode *n, const char *value);

/* ---- scalar resolution (YAML 1.1, as PyYAML's safe loader sees it) ------------------ */

enum yscalar_type { YS_STR, YS_NULL, YS_BOOL, YS_INT, YS_FLOAT };

/*
 * The type of a scalar: quoted and block scalars are strings; a plain one is null (`~`,
 * `null`, empty), bool (true/false/yes/no/on/off in any of their three cases), int
 * (decimal), float, else string. An explicit standard tag (!!str, !!int, ...) wins.
 */
enum yscalar_type yscalar_type(const struct ynode *n);
/* The type plain text would resolve to (text[len] must be NUL). */
enum yscalar_type yaml_plain_type(const char *text, size_t len);
/* 1 if n is a null scalar. */
int ynode_is_null(const struct ynode *n);
/* Value of a bool scalar into *out; -1 if n is not one. */
int ynode_bool(const struct ynode *n, int *out);
/* Value of an int scalar in [min, max]; -EINVAL if not an int, -ERANGE if out of range. */
int ynode_long(const struct ynode *n, long min, long max, long *out);
/* Value of an int or float scalar; -EINVAL otherwise. */
int ynode_number(const struct ynode *n, double *out);
/* The value for a scalar key in a map, or NULL. */
struct ynode *ymap_get(const struct ynode *map, const char *key);
/* "a mapping", "a list", "a string", "an integer", ... for messages. */
const char *ynode_describe(const struct ynode *n);

#endif
