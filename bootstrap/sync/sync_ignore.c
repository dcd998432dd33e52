/*
 * .skyignore / .gitignore rules for the launcher's walk (see sync.h for the contract).
 * The glob matcher is our own because '**' has no fnmatch() flag; it follows git's
 * wildmatch: '*', '?' and brackets never match '/', '**' only counts as a component.
 */
#include "bootstrap/sync/sync.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "lib/banned.h"

/* Longer lines are no pattern anyone writes; they are dropped rather than matched. */
#define IGNORE_LINE_MAX 4096

struct sync_ignore_rule {
	char *base; /* directory of the ignore file, relative to the root; "" for it */
	size_t base_len;
	char *pat; /* without the '!', the anchoring '/' and the trailing '/' */
	unsigned negate : 1;
	unsigned dir_only : 1;
	unsigned anchored : 1; /* match the whole path below base, not just the name */
};

void sync_ignore_init(struct sync_ignore *ig)
{
	ig->v = NULL;
	ig->n = ig->alloc = 0;
}

void sync_ignore_truncate(struct sync_ignore *ig, size_t n)
{
	while (ig->n > n) {
		ig->n--;
		free(ig->v[ig->n].base);
		free(ig->v[ig->n].pat);
	}
}

void sync_ignore_release(struct sync_ignore *ig)
{
	if (!ig)
		return;
	sync_ignore_truncate(ig, 0);
	free(ig->v);
	sync_ignore_init(ig);
}

/* Parses one line (without its newline) into a rule; 0 if it holds none. */
static int parse_line(struct sync_ignore_rule *r, const char *line, size_t len)
{
	const char *p = line;

	memset(r, 0, sizeof(*r));
	if (len && p[len - 1] == '\r')
		len--;
	/* Trailing spaces go, unless the last one is escaped with a backslash. */
	while (len && p[len - 1] == ' ' && !(len >= 2 && p[len - 2] == '\\'))
		len--;
	if (!len || *p == '#' || len > IGNORE_LINE_MAX)
		return 0;
	if (*p == '!') {
		r->negate = 1;
		p++, len--;
	}
	if (len && p[len - 1] == '/' && !(len >= 2 && p[len - 2] == '\\')) {
		r->dir_only = 1;
		len--;
	}
	if (memchr(p, '/', len))
		r->anchored = 1;
	if (len && *p == '/')
		p++, len--;
	if (!len || memchr(p, '\0', len))
		return 0;
	r->pat = xstrndup(p, len);
	return 1;
}

int sync_ignore_add(struct sync_ignore *ig, const char *base, const char *text, size_t len)
{
	const char *end = text + len, *nl;
	struct sync_ignore_rule r;

	while (text < end) {
		nl = memchr(text, '\n', (size_t)(end - text));
		if (!nl)
			nl = end;
		if (parse_line(&r, text, (size_t)(nl - text))) {
			if (ig->n == ig->alloc) {
				ig->alloc = ig->alloc ? 2 * ig->alloc : 16;
				ig->v = xrealloc(ig->v, ig->alloc * sizeof(*ig->v));
			}
			r.base = xstrdup(base);
			r.base_len = strlen(base);
			ig->v[ig->n++] = r;
		}
		text = nl + 1;
	}
	return 0;
}

static int class_match(const char *name, size_t len, unsigned char c)
{
	static const struct {
		const char *name;
		int (*fn)(int);
	} classes[] = {
	        {"alnum", isalnum}, {"alpha", isalpha}, {"blank", isblank}, {"cntrl", iscntrl},
	        {"digit", isdigit}, {"graph", isgraph}, {"lower", islower}, {"print", isprint},
	        {"punct", ispunct}, {"space", isspace}, {"upper", isupper}, {"xdigit", isxdigit},
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(classes); i++)
		if (strlen(classes[i].name) == len && !memcmp(classes[i].name, name, len))
			return classes[i].fn(c) ? 1 : 0;
	return -1;
}

/*
 * Matches c against the bracket expression at *pp (just past the '['). Moves *pp past
 * the closing ']' and returns 1 or 0; -1 if the expression is not terminated or has an
 * unknown class (then nothing matches, as in git).
 */
static int bracket(const char **pp, unsigned char c)
{
	const char *p = *pp;
	int negate = 0, hit = 0, first = 1;
	unsigned char lo, hi;

	if (*p == '!' || *p == '^') {
		negate = 1;
		p++;
	}
	for (;; first = 0) {
		if (!*p)
			return -1;
		if (*p == ']' && !first)
			break;
		if (p[0] == '[' && p[1] == ':') {
			const char *e = strstr(p + 2, ":]");
			int m;

			if (!e)
				return -1;
			m = class_match(p + 2, (size_t)(e - p - 2), c);
			if (m < 0)
				return -1;
			hit |= m;
			p = e + 2;
			continue;
		}
		if (*p == '\\' && p[1])
			p++;
		lo = (unsigned char)*p++;
		hi = lo;
		if (p[0] == '-' && p[1] && p[1] != ']') {
			p++;
			if (*p == '\\' && p[1])
				p++;
			hi = (unsigned char)*p++;
		}
		if (c >= lo && c <= hi)
			hit = 1;
	}
	*pp = p + 1;
	return hit != negate;
}

static int wild(const char *start, const char *p, const char *s)
{
	const char *t;
	int m;

	for (; *p; p++, s++) {
		switch (*p) {
		case '?':
			if (!*s || *s == '/')
				return 0;
			break;
		case '*':
			if (p[1] == '*' && (p == start || p[-1] == '/') && (!p[2] || p[2] == '/')) {
				/* A "**" component: trailing, it takes all the rest. */
				if (!p[2])
					return 1;
				/* "**" + "/": zero or more whole directories. */
				for (t = s;; t++) {
					if (wild(start, p + 3, t))
						return 1;
					t = strchr(t, '/');
					if (!t)
						return 0;
				}
			}
			while (*p == '*')
				p++;
			if (!*p)
				return !strchr(s, '/');
			for (t = s;; t++) {
				if (wild(start, p, t))
					return 1;
				if (!*t || *t == '/')
					return 0;
			}
		case '[':
			if (!*s || *s == '/')
				return 0;
			p++;
			m = bracket(&p, (unsigned char)*s);
			if (m <= 0)
				return 0;
			p--; /* the loop steps past the ']' */
			break;
		case '\\':
			if (p[1])
				p++;
			/* fallthrough */
		default:
			if (*p != *s)
				return 0;
		}
	}
	return !*s;
}

int sync_wildmatch(const char *pat, const char *str)
{
	return wild(pat, pat, str);
}

/* 1 ignored, 0 explicitly kept by a '!' rule, -1 no rule matches. */
static int decide(const struct sync_ignore *ig, const char *path, int is_dir)
{
	const struct sync_ignore_rule *r;
	const char *sub, *name;
	size_t i = ig->n;

	while (i--) {
		r = &ig->v[i];
		if (r->dir_only && !is_dir)
			continue;
		sub = path;
		if (r->base_len) {
			if (strncmp(path, r->base, r->base_len) || path[r->base_len] != '/')
				continue;
			sub = path + r->base_len + 1;
		}
		if (r->anchored) {
			if (!sync_wildmatch(r->pat, sub))
				continue;
		} else {
			name = strrchr(sub, '/');
			if (!sync_wildmatch(r->pat, name ? name + 1 : sub))
				continue;
		}
		return r->negate ? 0 : 1;
	}
	return -1;
}

int sync_ignore_match(const struct sync_ignore *ig, const char *path, int is_dir)
{
	return decide(ig, path, is_dir) == 1;
}

int sync_ignore_path(const struct sync_ignore *ig, const char *path, int is_dir)
{
	char *p = xstrdup(path), *s;
	int r = 0;

	/* Git cannot re-include anything below an excluded directory: parents first. */
	for (s = strchr(p, '/'); s && !r; s = strchr(s + 1, '/')) {
		*s = '\0';
		r = decide(ig, p, 1) == 1;
		*s = '/';
	}
	if (!r)
		r = decide(ig, p, is_dir) == 1;
	free(p);
	return r;
}
