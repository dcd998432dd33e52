/*
 * The runtime env cache key: a pure function of the spec, the interpreter's identity and
 * the node's index settings. Ray keys pip envs by the JSON of the spec as written, so
 * [a, b] and [b, a] are two envs and a requirements file's contents are not hashed; here
 * every requirement line is normalised, sorted and de-duplicated first.
 */
#include "bootstrap/renv/renv.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/sha256.h"
#include "lib/util.h"
#include "lib/banned.h"

void renv_strv_push(struct renv_strv *s, const char *str)
{
	s->v = xrealloc(s->v, (s->n + 1) * sizeof(*s->v));
	s->v[s->n++] = xstrdup(str);
}

void renv_strv_release(struct renv_strv *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

void renv_spec_release(struct renv_spec *s)
{
	free(s->python);
	renv_strv_release(&s->pkgs);
	renv_strv_release(&s->wheels);
	renv_strv_release(&s->urls);
	renv_strv_release(&s->opts);
	free(s->tool_version);
	free(s->working_dir);
	renv_strv_release(&s->modules);
	renv_strv_release(&s->env_vars);
	memset(s, 0, sizeof(*s));
}

int renv_spec_wants_venv(const struct renv_spec *s)
{
	return s->tool != RENV_TOOL_NONE || s->python;
}

static int name_char(int c)
{
	return isalnum(c) || c == '-' || c == '_' || c == '.';
}

/* PEP 503: lowercase, runs of -, _ and . become one -. */
static void norm_name(const char *s, size_t n, struct buf *out)
{
	size_t i;
	int sep = 0;

	for (i = 0; i < n; i++) {
		int c = (unsigned char)s[i];

		if (c == '-' || c == '_' || c == '.') {
			sep = 1;
			continue;
		}
		if (sep && out->len)
			buf_addch(out, '-');
		sep = 0;
		buf_addch(out, (char)tolower(c));
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Extras "[B, a]" -> "[a,b]". */
static const char *norm_extras(const char *p, struct buf *out)
{
	const char *end = strchr(p, ']');
	struct renv_strv ex = {0};
	size_t i;

	if (!end)
		return p;
	p++;
	while (p < end) {
		const char *s, *e;
		struct buf one = BUF_INIT(0);

		while (p < end && (isspace((unsigned char)*p) || *p == ','))
			p++;
		s = p;
		while (p < end && *p != ',')
			p++;
		e = p;
		while (e > s && isspace((unsigned char)e[-1]))
			e--;
		if (e > s) {
			norm_name(s, (size_t)(e - s), &one);
			renv_strv_push(&ex, one.p);
		}
		buf_release(&one);
	}
	if (ex.n)
		qsort(ex.v, ex.n, sizeof(*ex.v), cmp_str);
	buf_addch(out, '[');
	for (i = 0; i < ex.n; i++)
		buf_addf(out, "%s%s", i ? "," : "", ex.v[i]);
	buf_addch(out, ']');
	renv_strv_release(&ex);
	return end + 1;
}

void renv_norm_req(const char *line, struct buf *out)
{
	const char *p = line, *end, *semi, *hash;
	size_t n;

	while (isspace((unsigned char)*p))
		p++;
	/* A comment: the whole line, or " #..." after it (pip's rule: '#' after blank). */
	end = p + strlen(p);
	for (hash = p; hash < end; hash++)
		if (*hash == '#' && (hash == p || isspace((unsigned char)hash[-1])))
			break;
	end = hash;
	while (end > p && isspace((unsigned char)end[-1]))
		end--;
	if (end == p)
		return;
	if (*p == '-' || strstr(p, "://") || *p == '.' || *p == '/') {
		/* An option, a URL or a path: only whitespace runs are folded. */
		int sp = 0;

		for (; p < end; p++) {
			if (isspace((unsigned char)*p)) {
				sp = 1;
				continue;
			}
			if (sp)
				buf_addch(out, ' ');
			sp = 0;
			buf_addch(out, *p);
		}
		return;
	}
	for (n = 0; p + n < end && name_char((unsigned char)p[n]); n++)
		;
	norm_name(p, n, out);
	p += n;
	while (p < end && isspace((unsigned char)*p))
		p++;
	if (p < end && *p == '[')
		p = norm_extras(p, out);
	/*
	 * The version part, up to a marker (";") or per-requirement options (" --hash=..."):
	 * no whitespace at all. What follows keeps single spaces.
	 */
	for (semi = p; semi < end; semi++)
		if (*semi == ';' || (*semi == '-' && semi > p && isspace((unsigned char)semi[-1])))
			break;
	for (; p < semi; p++)
		if (!isspace((unsigned char)*p))
			buf_addch(out, *p);
	if (semi < end) {
		int sp = 0;

		buf_adds(out, *semi == ';' ? "; " : " ");
		for (p = semi + (*semi == ';'); p < end && isspace((unsigned char)*p); p++)
			;
		for (; p < end; p++) {
			if (isspace((unsigned char)*p)) {
				sp = 1;
				continue;
			}
			if (sp)
				buf_addch(out, ' ');
			sp = 0;
			buf_addch(out, *p);
		}
	}
}

/* Adds the normalised, sorted, unique lines of v to out, each as "TAG LINE\n". */
static void add_sorted(struct buf *out, const char *tag, char *const *v, size_t n, int norm)
{
	struct renv_strv lines = {0};
	size_t i;

	for (i = 0; i < n; i++) {
		struct buf b = BUF_INIT(0);

		if (norm)
			renv_norm_req(v[i], &b);
		else
			buf_adds(&b, v[i]);
		if (b.len && !strchr(b.p, '\n'))
			renv_strv_push(&lines, b.p);
		buf_release(&b);
	}
	if (lines.n)
		qsort(lines.v, lines.n, sizeof(*lines.v), cmp_str);
	for (i = 0; i < lines.n; i++)
		if (!i || strcmp(lines.v[i], lines.v[i - 1]))
			buf_addf(out, "%s %s\n", tag, lines.v[i]);
	renv_strv_release(&lines);
}

int renv_key(const struct renv_spec *s, const char *python_id, const char *pip_conf, char hex[65],
             struct buf *canon)
{
	struct buf b = BUF_INIT(0);
	const char *p;
	size_t i;

	buf_adds(&b, "skiff-renv-key 1\n");
	buf_addf(&b, "tool %s\n", s->tool == RENV_TOOL_UV ? "uv" : "pip");
	/* Multi-line texts go in one line per line, so no field can forge another. */
	for (p = python_id ? python_id : ""; *p;) {
		size_t n = strcspn(p, "\n");

		buf_addf(&b, "python %.*s\n", (int)n, p);
		p += n + (p[n] == '\n');
	}
	for (p = pip_conf ? pip_conf : ""; *p;) {
		size_t n = strcspn(p, "\n");

		if (n)
			buf_addf(&b, "index %.*s\n", (int)n, p);
		p += n + (p[n] == '\n');
	}
	add_sorted(&b, "req", s->pkgs.v, s->pkgs.n, 1);
	add_sorted(&b, "wheel", s->wheels.v, s->wheels.n, 0);
	add_sorted(&b, "url", s->urls.v, s->urls.n, 0);
	buf_addf(&b, "check %d\n", s->check > 0);
	buf_addf(&b, "version %s\n", s->tool_version ? s->tool_version : "");
	/* Install options are order-sensitive flags and values: kept as given. */
	for (i = 0; i < s->opts.n; i++)
		if (!strchr(s->opts.v[i], '\n'))
			buf_addf(&b, "opt %s\n", s->opts.v[i]);
	sha256_hex(b.p, b.len, hex);
	if (canon)
		buf_add(canon, b.p, b.len);
	buf_release(&b);
	return 0;
}
