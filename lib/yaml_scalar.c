/*
 * Scalar resolution for lib/yaml.c's nodes: the YAML 1.1 types PyYAML's safe loader gives
 * plain scalars, so that a task file means in skiff what it means in SkyPilot.
 */
#include "lib/yaml.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "lib/banned.h"

#define TAG_PREFIX "tag:yaml.org,2002:"

static int is_tag(const struct ynode *n, const char *name)
{
	return n->tag && starts_with(n->tag, TAG_PREFIX) &&
	       !strcmp(n->tag + strlen(TAG_PREFIX), name);
}

static int in_list(const char *v, const char *const *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(v, list[i]))
			return 1;
	return 0;
}

static const char *const true_words[] = {"true", "True", "TRUE", "yes", "Yes",
                                         "YES",  "on",   "On",   "ON"};
static const char *const false_words[] = {"false", "False", "FALSE", "no", "No",
                                          "NO",    "off",   "Off",   "OFF"};

/* Digits (and '_' separators) of `base` from s; returns the count, 0 if none. */
static size_t span_digits(const char *s, int base)
{
	size_t i = 0, digits = 0;

	for (;; i++) {
		char c = s[i];
		int d = c >= '0' && c <= '9'   ? c - '0'
		        : c >= 'a' && c <= 'f' ? c - 'a' + 10
		        : c >= 'A' && c <= 'F' ? c - 'A' + 10
		                               : 99;

		if (c == '_' && i > 0)
			continue;
		if (d >= base)
			break;
		digits++;
	}
	return digits ? i : 0;
}

/* The integer forms of YAML 1.1: decimal, 0x hex, 0 octal, 0b binary, '_' separators. */
static int int_form(const char *v, int *base, size_t *start)
{
	size_t i = (*v == '-' || *v == '+') ? 1 : 0, k;

	if (v[i] == '0' && (v[i + 1] == 'x' || v[i + 1] == 'b')) {
		*base = v[i + 1] == 'x' ? 16 : 2;
		*start = i + 2;
	} else if (v[i] == '0' && v[i + 1]) {
		*base = 8;
		*start = i + 1;
	} else {
		*base = 10;
		*start = i;
	}
	k = span_digits(v + *start, *base);
	return k && !v[*start + k];
}

static int float_form(const char *v)
{
	size_t i = (*v == '-' || *v == '+') ? 1 : 0, k;

	if (!strcmp(v + i, ".inf") || !strcmp(v + i, ".Inf") || !strcmp(v + i, ".INF"))
		return 1;
	if (!strcmp(v, ".nan") || !strcmp(v, ".NaN") || !strcmp(v, ".NAN"))
		return 1;
	k = span_digits(v + i, 10);
	if (!k && i) /* "+.5" is not a float in YAML 1.1 */
		return 0;
	i += k;
	if (v[i] != '.')
		return 0;
	if (!k && !(v[i + 1] >= '0' && v[i + 1] <= '9'))
		return 0;
	i++;
	while ((v[i] >= '0' && v[i] <= '9') || v[i] == '_')
		i++;
	if (v[i] == 'e' || v[i] == 'E') {
		if (v[i + 1] != '-' && v[i + 1] != '+')
			return 0;
		i += 2;
		k = 0;
		while (v[i] >= '0' && v[i] <= '9')
			i++, k++;
		if (!k)
			return 0;
	}
	return !v[i];
}

enum yscalar_type yaml_plain_type(const char *v, size_t len)
{
	int base;
	size_t start;

	if (!len || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
	    !strcmp(v, "NULL"))
		return YS_NULL;
	if (in_list(v, true_words, ARRAY_SIZE(true_words)) ||
	    in_list(v, false_words, ARRAY_SIZE(false_words)))
		return YS_BOOL;
	if (int_form(v, &base, &start))
		return YS_INT;
	if (float_form(v))
		return YS_FLOAT;
	return YS_STR;
}

enum yscalar_type yscalar_type(const struct ynode *n)
{
	if (!n || n->kind != Y_SCALAR)
		return YS_STR;
	if (n->tag && strcmp(n->tag, "!")) {
		if (is_tag(n, "null"))
			return YS_NULL;
		if (is_tag(n, "bool"))
			return YS_BOOL;
		if (is_tag(n, "int"))
			return YS_INT;
		if (is_tag(n, "float"))
			return YS_FLOAT;
		return YS_STR;
	}
	if (!n->plain || (n->tag && !strcmp(n->tag, "!")))
		return YS_STR;
	return yaml_plain_type(n->value, n->len);
}

int ynode_is_null(const struct ynode *n)
{
	return n && n->kind == Y_SCALAR && yscalar_type(n) == YS_NULL;
}

int ynode_bool(const struct ynode *n, int *out)
{
	if (!n || yscalar_type(n) != YS_BOOL || n->kind != Y_SCALAR)
		return -1;
	*out = in_list(n->value, true_words, ARRAY_SIZE(true_words));
	return 0;
}

int ynode_long(const struct ynode *n, long min, long max, long *out)
{
	char digits[72];
	size_t start, i, k = 0;
	int base, neg;
	long v;
	char *end;

	if (!n || n->kind != Y_SCALAR || yscalar_type(n) != YS_INT ||
	    !int_form(n->value, &base, &start))
		return -EINVAL;
	neg = n->value[0] == '-';
	for (i = start; n->value[i]; i++) {
		if (n->value[i] == '_')
			continue;
		if (k + 1 >= sizeof(digits))
			return -ERANGE;
		digits[k++] = n->value[i];
	}
	digits[k] = '\0';
	errno = 0;
	v = strtol(digits, &end, base);
	if (errno == ERANGE || *end)
		return -ERANGE;
	if (neg)
		v = -v;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int ynode_number(const struct ynode *n, double *out)
{
	enum yscalar_type t = yscalar_type(n);
	char tmp[128];
	size_t i, k = 0;
	long l;

	if (t == YS_INT) {
		if (ynode_long(n, LONG_MIN + 1, LONG_MAX, &l))
			return -EINVAL;
		*out = (double)l;
		return 0;
	}
	if (t != YS_FLOAT || n->len >= sizeof(tmp))
		return -EINVAL;
	for (i = 0; i < n->len; i++)
		if (n->value[i] != '_')
			tmp[k++] = n->value[i];
	tmp[k] = '\0';
	return parse_double(tmp, out) ? -EINVAL : 0;
}

struct ynode *ymap_get(const struct ynode *map, const char *key)
{
	size_t i;

	if (!map || map->kind != Y_MAP)
		return NULL;
	for (i = 0; i < ymap_pairs(map); i++) {
		const struct ynode *k = ymap_key(map, i);

		if (k->kind == Y_SCALAR && !strcmp(k->value, key))
			return ymap_val(map, i);
	}
	return NULL;
}

const char *ynode_describe(const struct ynode *n)
{
	if (!n)
		return "nothing";
	if (n->kind == Y_SEQ)
		return "a list";
	if (n->kind == Y_MAP)
		return "a mapping";
	switch (yscalar_type(n)) {
	case YS_NULL: return "null";
	case YS_BOOL: return "a boolean";
	case YS_INT: return "an integer";
	case YS_FLOAT: return "a number";
	default: return "a string";
	}
}
