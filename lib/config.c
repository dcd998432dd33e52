/*
 * SkyPilot's config: the tree and its merge, files and --config pairs, JSON, and what
 * skiff reads from it (lib/config.h, docs/config.md); the schema is lib/config_schema.c.
 */
#include "lib/config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/config_internal.h"
#include "lib/json.h"
#include "lib/util.h"
#include "lib/banned.h"

/* ---- the tree ------------------------------------------------------------------------ */

void cfg_free(struct cfg_node *n)
{
	size_t i;

	if (!n)
		return;
	for (i = 0; i < n->n; i++)
		cfg_free(n->items[i]);
	free(n->items);
	free(n->value);
	free(n->file);
	free(n);
}

static struct cfg_node *cfg_new(enum cfg_kind kind, const char *file, int line, int col)
{
	struct cfg_node *n = xcalloc(1, sizeof(*n));

	n->kind = kind;
	n->file = xstrdup(file ? file : "");
	n->line = line;
	n->col = col;
	return n;
}

static struct cfg_node *cfg_scalar(const char *value, int plain, const char *file, int line,
                                   int col)
{
	struct cfg_node *n = cfg_new(CFG_SCALAR, file, line, col);

	n->value = xstrdup(value);
	n->plain = plain;
	return n;
}

static void cfg_push(struct cfg_node *n, struct cfg_node *item)
{
	n->items = xrealloc(n->items, (n->n + 1) * sizeof(*n->items));
	n->items[n->n++] = item;
}

struct cfg_node *cfg_from_ynode(const struct ynode *y, const char *file)
{
	struct cfg_node *n;
	size_t i;

	if (!y)
		return NULL;
	if (y->kind == Y_SCALAR)
		return cfg_scalar(y->value, yscalar_type(y) != YS_STR, file, y->line, y->col);
	n = cfg_new(y->kind == Y_SEQ ? CFG_SEQ : CFG_MAP, file, y->line, y->col);
	n->items = xcalloc(y->n ? y->n : 1, sizeof(*n->items));
	for (i = 0; i < y->n; i++)
		n->items[i] = cfg_from_ynode(y->items[i], file);
	n->n = y->n;
	return n;
}

struct cfg_node *cfg_dup(const struct cfg_node *c)
{
	struct cfg_node *n;
	size_t i;

	if (!c)
		return NULL;
	n = cfg_new(c->kind, c->file, c->line, c->col);
	n->value = c->value ? xstrdup(c->value) : NULL;
	n->plain = c->plain;
	n->items = xcalloc(c->n ? c->n : 1, sizeof(*n->items));
	for (i = 0; i < c->n; i++)
		n->items[i] = cfg_dup(c->items[i]);
	n->n = c->n;
	return n;
}

enum yscalar_type cfg_type(const struct cfg_node *n)
{
	if (n->kind != CFG_SCALAR || !n->plain)
		return YS_STR;
	return yaml_plain_type(n->value, strlen(n->value));
}

int cfg_is_null(const struct cfg_node *n)
{
	return n->kind == CFG_SCALAR && cfg_type(n) == YS_NULL;
}

/* The index of key's pair in map, or -1. */
static long map_find(const struct cfg_node *map, const char *key)
{
	size_t i;

	if (!map || map->kind != CFG_MAP)
		return -1;
	for (i = 0; i + 1 < map->n; i += 2)
		if (map->items[i]->kind == CFG_SCALAR && !strcmp(map->items[i]->value, key))
			return (long)i;
	return -1;
}

struct cfg_node *cfg_map_get(const struct cfg_node *map, const char *key)
{
	long i = map_find(map, key);

	return i < 0 ? NULL : map->items[i + 1];
}

const struct cfg_node *cfg_get(const struct cfg_node *root, const char *path)
{
	char seg[CONFIG_PATH_MAX];
	const char *p = path, *dot;

	while (root && *p) {
		size_t len;

		dot = strchr(p, '.');
		len = dot ? (size_t)(dot - p) : strlen(p);
		if (len >= sizeof(seg))
			return NULL;
		memcpy(seg, p, len);
		seg[len] = '\0';
		root = cfg_map_get(root, seg);
		p += len + (dot ? 1 : 0);
	}
	return root;
}

/* ---- merging ------------------------------------------------------------------------- */

static void merge_map(struct cfg_node *base, struct cfg_node *over, const char *path);

static void merge_at(struct cfg_node **base, struct cfg_node *over, const char *path)
{
	if (*base && (*base)->kind == CFG_MAP && over->kind == CFG_MAP) {
		if (!strcmp(path, "kubernetes.pod_config") ||
		    !strcmp(path, "kubernetes.custom_metadata")) {
			config_k8s_merge(*base, over);
			cfg_free(over);
		} else {
			merge_map(*base, over, path);
		}
		return;
	}
	cfg_free(*base);
	*base = over;
}

/* Moves over's pairs into base (over is freed). */
static void merge_map(struct cfg_node *base, struct cfg_node *over, const char *path)
{
	char sub[CONFIG_PATH_MAX];
	size_t i;

	for (i = 0; i + 1 < over->n; i += 2) {
		struct cfg_node *k = over->items[i], *v = over->items[i + 1];
		long at = k->kind == CFG_SCALAR ? map_find(base, k->value) : -1;

		if (at < 0) {
			cfg_push(base, k);
			cfg_push(base, v);
			continue;
		}
		if (*path)
			snprintf(sub, sizeof(sub), "%s.%s", path, k->value);
		else
			snprintf(sub, sizeof(sub), "%s", k->value);
		/* The key keeps the later layer's position: that is where it was set. */
		cfg_free(base->items[at]);
		base->items[at] = k;
		merge_at(&base->items[at + 1], v, sub);
	}
	free(over->items);
	over->items = NULL;
	over->n = 0;
	cfg_free(over);
}

void cfg_merge(struct cfg_node **base, struct cfg_node *over)
{
	if (!over)
		return;
	if (!*base || (*base)->kind != CFG_MAP || over->kind != CFG_MAP) {
		cfg_free(*base);
		*base = over;
		return;
	}
	merge_map(*base, over, "");
}

/* Lists whose items are merged by a key, as Kubernetes' strategic merge patches do. */
static const char *const patch_keys[][2] = {
        {"initContainers", "name"}, {"ephemeralContainers", "name"},
        {"volumes", "name"},        {"volumeMounts", "name"},
        {"resourceClaims", "name"}, {"env", "name"},
        {"hostAliases", "ip"},      {"topologySpreadConstraints", "topologyKey"},
        {"ports", "containerPort"}, {"volumeDevices", "devicePath"},
};

static const char *patch_key(const char *list)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(patch_keys); i++)
		if (!strcmp(list, patch_keys[i][0]))
			return patch_keys[i][1];
	return NULL;
}

static void k8s_merge_list(struct cfg_node *base, const struct cfg_node *over, const char *key)
{
	const char *mk = patch_key(key);
	size_t i, k;

	if (!strcmp(key, "containers") || !strcmp(key, "imagePullSecrets")) {
		/* One container per pod: the first of each merges. */
		if (over->n && base->n && base->items[0]->kind == CFG_MAP &&
		    over->items[0]->kind == CFG_MAP)
			config_k8s_merge(base->items[0], over->items[0]);
		else if (over->n && !base->n)
			cfg_push(base, cfg_dup(over->items[0]));
		return;
	}
	for (i = 0; i < over->n; i++) {
		const struct cfg_node *item = over->items[i];
		const struct cfg_node *name = mk ? cfg_map_get(item, mk) : NULL;

		for (k = 0; name && name->kind == CFG_SCALAR && k < base->n; k++) {
			const struct cfg_node *other = cfg_map_get(base->items[k], mk);

			if (other && other->kind == CFG_SCALAR &&
			    !strcmp(other->value, name->value))
				break;
		}
		if (name && name->kind == CFG_SCALAR && k < base->n)
			config_k8s_merge(base->items[k], item);
		else
			cfg_push(base, cfg_dup(item));
	}
}

void config_k8s_merge(struct cfg_node *base, const struct cfg_node *over)
{
	size_t i;

	if (base->kind != CFG_MAP || over->kind != CFG_MAP)
		return;
	for (i = 0; i + 1 < over->n; i += 2) {
		const struct cfg_node *k = over->items[i], *v = over->items[i + 1];
		long at = k->kind == CFG_SCALAR ? map_find(base, k->value) : -1;
		struct cfg_node *bv = at >= 0 ? base->items[at + 1] : NULL;

		if (!bv) {
			cfg_push(base, cfg_dup(k));
			cfg_push(base, cfg_dup(v));
		} else if (v->kind == CFG_MAP && bv->kind == CFG_MAP) {
			config_k8s_merge(bv, v);
		} else if (v->kind == CFG_SEQ && bv->kind == CFG_SEQ) {
			k8s_merge_list(bv, v, k->value);
		} else {
			cfg_free(bv);
			base->items[at + 1] = cfg_dup(v);
		}
	}
}

/* ---- files and --config -------------------------------------------------------------- */

static int load_text(const char *name, const char *data, size_t len, struct cfg_node **out,
                     struct yerrors *errs)
{
	struct ystream s = YSTREAM_INIT;
	const struct ynode *root;
	int r = 0;

	*out = NULL;
	if (yaml_load(&s, name, data, len, errs))
		return -EINVAL;
	if (s.ndocs > 1) {
		yerr_add(errs, name, s.docs[1].line, s.docs[1].col,
		         "a config file is one YAML document, not %zu", s.ndocs);
		r = -EINVAL;
		goto out;
	}
	root = s.ndocs ? s.docs[0].root : NULL;
	if (!root || ynode_is_null(root))
		goto out;
	if (root->kind != Y_MAP) {
		yerr_add(errs, name, root->line, root->col, "a config must be a mapping, not %s",
		         ynode_describe(root));
		r = -EINVAL;
		goto out;
	}
	*out = cfg_from_ynode(root, name);
out:
	yaml_stream_release(&s);
	return r;
}

int config_load_file(const char *path, struct cfg_node **out, struct yerrors *errs)
{
	struct buf b = BUF_INIT(YAML_MAX_INPUT);
	int r;

	*out = NULL;
	r = buf_read_file(&b, path);
	if (r) {
		yerr_add(errs, path, 1, 1, "cannot read the config file: %s", buf_read_strerror(r));
		buf_release(&b);
		return r == -ENOENT || r == -EACCES ? r : -EINVAL;
	}
	r = load_text(path, b.p ? b.p : "", b.len, out, errs);
	buf_release(&b);
	if (!r && config_validate(*out, CONFIG_IN_FILE, errs)) {
		cfg_free(*out);
		*out = NULL;
		r = -EINVAL;
	}
	return r;
}

char *config_file_path(void)
{
	const char *env = getenv(CONFIG_ENV), *home;
	char *path;

	if (env && *env)
		return xstrdup(env);
	home = skiff_home();
	if (home) {
		path = xasprintf("%s/" CONFIG_FILE, home);
		if (!access(path, F_OK))
			return path;
		free(path);
	}
	/* Without one of our own, SkyPilot's, as it is (the keys are the same). */
	home = user_home();
	if (home) {
		path = xasprintf("%s/.sky/" CONFIG_FILE, home);
		if (!access(path, F_OK))
			return path;
		free(path);
	}
	return NULL;
}

/* Positions of a value read from the command line: column col onwards on line 1. */
static void relocate(struct cfg_node *n, int col)
{
	size_t i;

	free(n->file);
	n->file = xstrdup(CONFIG_CLI_NAME);
	if (n->line == 1)
		n->col += col - 1;
	n->line = 1;
	for (i = 0; i < n->n; i++)
		relocate(n->items[i], col);
}

static int key_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

/* One KEY=VALUE at arg[off..off+len): a tree {k1: {k2: VALUE}} into *out. */
static int parse_pair(const char *arg, size_t off, size_t len, struct cfg_node **out,
                      struct yerrors *errs)
{
	const char *p = arg + off, *eq = memchr(p, '=', len), *seg;
	struct cfg_node *value = NULL, *top = NULL, **slot = &top;
	struct yerrors verrs = YERRORS_INIT;
	size_t i;
	int r = 0;

	*out = NULL;
	if (!eq || eq == p) {
		yerr_add(errs, CONFIG_CLI_NAME, 1, (int)off + 1,
		         "'%.*s' is neither a file nor KEY=VALUE (a dotted key: "
		         "kubernetes.provision_timeout=600)",
		         (int)(len > 80 ? 80 : len), p);
		return -EINVAL;
	}
	for (seg = p; seg <= eq; seg++)
		if (seg < eq && !key_char_ok(*seg) &&
		    (*seg != '.' || seg == p || seg[-1] == '.' || seg + 1 == eq)) {
			yerr_add(
			        errs, CONFIG_CLI_NAME, 1, (int)(off + (size_t)(seg - p)) + 1,
			        "'%.*s' is not a dotted key (names of letters, digits, '_' and '-' "
			        "joined by '.')",
			        (int)(eq - p > 80 ? 80 : eq - p), p);
			return -EINVAL;
		}
	if (load_text(CONFIG_CLI_NAME, eq + 1, len - (size_t)(eq + 1 - p), &value, &verrs) &&
	    !value) {
		/* load_text() refuses a non-mapping: read the value as one YAML node. */
		struct ystream s = YSTREAM_INIT;

		yerr_release(&verrs);
		if (yaml_load(&s, CONFIG_CLI_NAME, eq + 1, len - (size_t)(eq + 1 - p), &verrs) ||
		    s.ndocs > 1) {
			for (i = 0; i < verrs.n; i++)
				yerr_add(errs, CONFIG_CLI_NAME, 1,
				         (int)(off + (size_t)(eq + 1 - p)) + verrs.v[i].col, "%s",
				         verrs.v[i].msg);
			if (!verrs.n)
				yerr_add(errs, CONFIG_CLI_NAME, 1,
				         (int)(off + (size_t)(eq - p)) + 2,
				         "a value is one YAML node");
			yaml_stream_release(&s);
			yerr_release(&verrs);
			return -EINVAL;
		}
		value = s.ndocs ? cfg_from_ynode(s.docs[0].root, CONFIG_CLI_NAME) : NULL;
		yaml_stream_release(&s);
	}
	yerr_release(&verrs);
	if (!value)
		value = cfg_scalar("", 1, CONFIG_CLI_NAME, 1, 1);
	relocate(value, (int)(off + (size_t)(eq + 1 - p)) + 1);
	/* The key's segments, outermost first. */
	for (seg = p; seg < eq;) {
		const char *dot = memchr(seg, '.', (size_t)(eq - seg));
		size_t slen = dot ? (size_t)(dot - seg) : (size_t)(eq - seg);
		char *name = xstrndup(seg, slen);
		int col = (int)(off + (size_t)(seg - p)) + 1;
		struct cfg_node *map = cfg_new(CFG_MAP, CONFIG_CLI_NAME, 1, col);

		cfg_push(map, cfg_scalar(name, 0, CONFIG_CLI_NAME, 1, col));
		free(name);
		cfg_push(map, NULL);
		*slot = map;
		slot = &map->items[1];
		seg += slen + (dot ? 1 : 0);
	}
	*slot = value;
	*out = top;
	return r;
}

int config_add_cli(struct cfg_node **layers, const char *arg, struct yerrors *errs)
{
	struct cfg_node *layer = NULL;
	size_t i, start = 0, len = strlen(arg);
	int depth = 0, r = 0;
	char quote = 0;

	if (!access(arg, F_OK) || (!strchr(arg, '=') && *arg)) {
		r = config_load_file(arg, &layer, errs);
		if (r)
			return r;
		cfg_merge(layers, layer);
		return 0;
	}
	for (i = 0; i <= len; i++) {
		char c = arg[i];
		struct cfg_node *pair;

		if (quote) {
			if (c == quote)
				quote = 0;
			else if (c == '\\' && quote == '"' && arg[i + 1])
				i++;
			if (c)
				continue;
		}
		if (c == '\'' || c == '"') {
			quote = c;
			continue;
		}
		if (c == '[' || c == '{')
			depth++;
		else if ((c == ']' || c == '}') && depth > 0)
			depth--;
		if (c && (c != ',' || depth))
			continue;
		if (parse_pair(arg, start, i - start, &pair, errs)) {
			r = -EINVAL;
		} else if (config_validate(pair, CONFIG_IN_FILE, errs)) {
			cfg_free(pair);
			r = -EINVAL;
		} else {
			cfg_merge(&layer, pair);
		}
		start = i + 1;
	}
	if (r) {
		cfg_free(layer);
		return r;
	}
	cfg_merge(layers, layer);
	return 0;
}

/* ---- JSON ---------------------------------------------------------------------------- */

static int json_int_text(const char *s)
{
	const char *c = s + (*s == '-');

	if (!*c || (*c == '0' && c[1]))
		return 0;
	for (; *c; c++)
		if (*c < '0' || *c > '9')
			return 0;
	return strlen(s) < 19;
}

static void node_json(const struct cfg_node *n, struct json *j)
{
	size_t i;
	double d;

	if (!n) {
		json_null(j);
		return;
	}
	if (n->kind == CFG_MAP) {
		json_obj_begin(j);
		for (i = 0; i + 1 < n->n; i += 2) {
			json_key(j, n->items[i]->kind == CFG_SCALAR ? n->items[i]->value : "?");
			node_json(n->items[i + 1], j);
		}
		json_obj_end(j);
		return;
	}
	if (n->kind == CFG_SEQ) {
		json_arr_begin(j);
		for (i = 0; i < n->n; i++)
			node_json(n->items[i], j);
		json_arr_end(j);
		return;
	}
	switch (cfg_type(n)) {
	case YS_NULL: json_null(j); return;
	case YS_BOOL:
		json_bool(j, strchr("tTyY", n->value[0]) || !strcasecmp(n->value, "on"));
		return;
	case YS_INT:
		if (json_int_text(n->value)) {
			json_raw(j, n->value);
			return;
		}
		break;
	case YS_FLOAT:
		if (!parse_double(n->value, &d) && isfinite(d)) {
			json_double(j, d);
			return;
		}
		break;
	default: break;
	}
	json_str(j, n->value);
}

char *config_to_json(const struct cfg_node *root)
{
	struct buf b = BUF_INIT(0);
	struct json j;

	json_init(&j, &b, 0);
	node_json(root, &j);
	json_finish(&j);
	return buf_detach(&b, NULL);
}

int config_from_json(const char *text, const char *name, struct cfg_node **out,
                     struct yerrors *errs)
{
	return load_text(name, text, strlen(text), out, errs);
}

/* ---- words --------------------------------------------------------------------------- */

static void words_push(char ***words, size_t *n, struct buf *w)
{
	*words = xrealloc(*words, (*n + 2) * sizeof(**words));
	(*words)[(*n)++] = buf_detach(w, NULL);
	(*words)[*n] = NULL;
}

int config_split_words(const char *s, char ***words, size_t *n, const char **why)
{
	struct buf w = BUF_INIT(0);
	size_t before = *n;
	int in_word = 0;
	char quote = 0;

	for (; *s; s++) {
		char c = *s;

		if (quote == '\'') {
			if (c == '\'')
				quote = 0;
			else
				buf_addch(&w, c);
			continue;
		}
		if (quote == '"') {
			if (c == '"')
				quote = 0;
			else if (c == '\\' && s[1] && strchr("\"\\$`", s[1]))
				buf_addch(&w, *++s);
			else
				buf_addch(&w, c);
			continue;
		}
		if (c == ' ' || c == '\t' || c == '\n') {
			if (in_word)
				words_push(words, n, &w);
			in_word = 0;
			continue;
		}
		in_word = 1;
		if (c == '\'' || c == '"')
			quote = c;
		else if (c == '\\' && s[1])
			buf_addch(&w, *++s);
		else
			buf_addch(&w, c);
		if (*n >= CONFIG_MAX_WORDS) {
			buf_release(&w);
			*why = "too many words";
			return -EINVAL;
		}
	}
	if (quote) {
		buf_release(&w);
		*why = quote == '\'' ? "a ' is not closed" : "a \" is not closed";
		return -EINVAL;
	}
	if (in_word)
		words_push(words, n, &w);
	buf_release(&w);
	return (int)(*n - before);
}

void config_words_free(char **words)
{
	size_t i;

	for (i = 0; words && words[i]; i++)
		free(words[i]);
	free(words);
}

/* ---- what skiff reads ---------------------------------------------------------------- */

char **config_run_options(const struct cfg_node *root)
{
	const struct cfg_node *n = cfg_get(root, "docker.run_options");
	char **words = NULL;
	size_t nw = 0, i;
	const char *why;

	if (!n || cfg_is_null(n))
		return NULL;
	if (n->kind == CFG_SCALAR) {
		config_split_words(n->value, &words, &nw, &why);
		return words;
	}
	for (i = 0; n->kind == CFG_SEQ && i < n->n; i++)
		if (n->items[i]->kind == CFG_SCALAR)
			config_split_words(n->items[i]->value, &words, &nw, &why);
	return words;
}

char **config_slurm_options(const struct cfg_node *root)
{
	const struct cfg_node *opts = cfg_get(root, "slurm.sbatch_options");
	const struct cfg_node *queue = cfg_get(root, "slurm.quota.queue");
	const struct cfg_node *account = cfg_get(root, "slurm.quota.account");
	char **words = NULL;
	size_t n = 0, i;

	for (i = 0; opts && opts->kind == CFG_MAP && i + 1 < opts->n; i += 2) {
		const struct cfg_node *k = opts->items[i], *v = opts->items[i + 1];
		enum yscalar_type t = cfg_type(v);
		int on = t == YS_BOOL &&
		         (strchr("tTyY", v->value[0]) || !strcasecmp(v->value, "on"));

		if (k->kind != CFG_SCALAR || v->kind != CFG_SCALAR || (t == YS_BOOL && !on))
			continue;
		words = xrealloc(words, (n + 2) * sizeof(*words));
		words[n++] = t == YS_NULL || t == YS_BOOL
		                     ? xasprintf("--%s", k->value)
		                     : xasprintf("--%s=%s", k->value, v->value);
		words[n] = NULL;
	}
	if (queue && queue->kind == CFG_SCALAR && !cfg_is_null(queue)) {
		words = xrealloc(words, (n + 2) * sizeof(*words));
		words[n++] = xasprintf("--qos=%s", queue->value);
		words[n] = NULL;
	}
	if (account && account->kind == CFG_SCALAR && !cfg_is_null(account)) {
		words = xrealloc(words, (n + 2) * sizeof(*words));
		words[n++] = xasprintf("--account=%s", account->value);
		words[n] = NULL;
	}
	return words;
}

long config_k8s_provision_timeout(const struct cfg_node *root, long def)
{
	const struct cfg_node *n = cfg_get(root, "kubernetes.provision_timeout");
	long v;

	if (!n || n->kind != CFG_SCALAR || parse_long(n->value, 1, 86400 * 7, &v))
		return def;
	return v;
}

char *config_k8s_pod(const struct cfg_node *root, const char *manifest_json)
{
	const struct cfg_node *pc = cfg_get(root, "kubernetes.pod_config");
	const struct cfg_node *cm = cfg_get(root, "kubernetes.custom_metadata");
	struct yerrors errs = YERRORS_INIT;
	struct cfg_node *pod = NULL, *meta;
	char *out;

	if ((!pc || pc->kind != CFG_MAP) && (!cm || cm->kind != CFG_MAP))
		return xstrdup(manifest_json);
	if (config_from_json(manifest_json, "pod", &pod, &errs) || !pod) {
		yerr_release(&errs);
		cfg_free(pod);
		return xstrdup(manifest_json);
	}
	yerr_release(&errs);
	if (pc && pc->kind == CFG_MAP)
		config_k8s_merge(pod, pc);
	meta = cfg_map_get(pod, "metadata");
	if (cm && cm->kind == CFG_MAP && meta)
		config_k8s_merge(meta, cm);
	out = config_to_json(pod);
	cfg_free(pod);
	return out;
}

void config_controller_resources(const struct cfg_node *root, double *cpus, double *memory_gib)
{
	const struct cfg_node *c = cfg_get(root, "jobs.controller.resources.cpus");
	const struct cfg_node *m = cfg_get(root, "jobs.controller.resources.memory");
	double v;

	*cpus = c && (v = cfg_amount(c)) > 0 ? v : 0;
	*memory_gib = m && (v = cfg_amount(m)) > 0 ? v : 0;
}

const char *config_controller_infra(const struct cfg_node *root)
{
	const struct cfg_node *n = cfg_get(root, "jobs.controller.resources.infra");

	if (!n || n->kind != CFG_SCALAR || cfg_is_null(n) || !*n->value ||
	    !strcmp(n->value, "local"))
		return NULL;
	return n->value;
}

const char *config_controller_image(const struct cfg_node *root)
{
	const struct cfg_node *n = cfg_get(root, "jobs.controller.resources.image_id");

	if (!n || n->kind != CFG_SCALAR || cfg_is_null(n) || !*n->value)
		return NULL;
	return n->value;
}

double config_task_logs_retention_hours(const struct cfg_node *root, double def)
{
	const struct cfg_node *n = cfg_get(root, "jobs.controller.task_logs_gc_retention_hours");
	double v;

	if (!n || n->kind != CFG_SCALAR || parse_double(n->value, &v) || !isfinite(v))
		return def;
	return v;
}
