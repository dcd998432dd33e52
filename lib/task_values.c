/*
 * Value forms shared by the YAML fields and the CLI overrides (cpus, memory, sizes,
 * accelerators, times), and which resource fields only a cloud can honour.
 */
#include "lib/task.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/task_internal.h"
#include "lib/buf.h"
#include "lib/util.h"
#include "lib/banned.h"

/* ---- value forms shared with the CLI ------------------------------------------------ */

/* GiB per unit, for memory and disk sizes ("512MB", "1TB"); NULL-terminated by name. */
static const struct {
	const char *unit;
	double gib;
} units[] = {
        {"pb", 1048576.0},
        {"p", 1048576.0},
        {"tb", 1024.0},
        {"t", 1024.0},
        {"gb", 1.0},
        {"g", 1.0},
        {"mb", 1.0 / 1024},
        {"m", 1.0 / 1024},
        {"kb", 1.0 / 1048576},
        {"k", 1.0 / 1048576},
        {"b", 1.0 / 1073741824.0},
};

/* Strips a size unit from num (in place); returns the factor to GiB. */
static double strip_unit(char *num)
{
	size_t n = strlen(num), i, k;

	for (i = 0; i < ARRAY_SIZE(units); i++) {
		k = strlen(units[i].unit);
		if (n > k && !strcasecmp(num + n - k, units[i].unit) &&
		    ((num[n - k - 1] >= '0' && num[n - k - 1] <= '9') || num[n - k - 1] == '.')) {
			num[n - k] = '\0';
			return units[i].gib;
		}
	}
	return 1.0;
}

int task_size_parse(const char *text, double *gib)
{
	char num[64];
	size_t n = strlen(text);
	double factor;

	if (!n || n >= sizeof(num))
		return -1;
	memcpy(num, text, n + 1);
	factor = strip_unit(num);
	if (parse_double(num, gib))
		return -1;
	*gib *= factor;
	return 0;
}

int task_amount_parse(const char *text, int memory, struct task_amount *out, char *why,
                      size_t whysize)
{
	enum task_amount_mode mode = TASK_EXACT;
	char num[64], canon[80];
	double v, factor = 1.0;
	size_t n = strlen(text);

	if (!n || n >= sizeof(num))
		goto bad;
	memcpy(num, text, n + 1);
	if (num[n - 1] == '+') {
		mode = TASK_AT_LEAST;
		num[--n] = '\0';
	} else if (memory && (num[n - 1] == 'x' || num[n - 1] == 'X')) {
		mode = TASK_PER_CPU;
		num[--n] = '\0';
	}
	if (memory && mode != TASK_PER_CPU)
		factor = strip_unit(num);
	if (parse_double(num, &v))
		goto bad;
	v *= factor;
	if (!(v > 0) || !(v <= TASK_AMOUNT_MAX)) {
		snprintf(why, whysize, "must be more than 0, at most %.0f%s", TASK_AMOUNT_MAX,
		         memory ? " GiB" : "");
		return -1;
	}
	if (factor != 1.0)
		snprintf(canon, sizeof(canon), "%g%s", v, mode == TASK_AT_LEAST ? "+" : "");
	else
		snprintf(canon, sizeof(canon), "%s%s", num,
		         mode == TASK_AT_LEAST  ? "+"
		         : mode == TASK_PER_CPU ? "x"
		                                : "");
	free(out->text);
	out->text = xstrdup(canon);
	out->value = v;
	out->mode = mode;
	return 0;
bad:
	snprintf(why, whysize, "must be a number like 4 or 4+%s",
	         memory ? " (GiB; also 16GB, 512MB+ or 4x for 4 GiB per CPU)" : "");
	return -1;
}

int task_accel_count_ok(double count)
{
	return count > 0 && count <= TASK_ACCEL_COUNT_MAX; /* false for NaN */
}

int task_accel_parse(const char *text, struct task_accel *out, char *why, size_t whysize)
{
	const char *colon = strchr(text, ':');
	size_t namelen = colon ? (size_t)(colon - text) : strlen(text), i;
	double count = 1;

	if (!namelen || (colon && strchr(colon + 1, ':')))
		goto bad;
	for (i = 0; i < namelen; i++) {
		char c = text[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.'))
			goto bad;
	}
	if (colon && (parse_double(colon + 1, &count) || !task_accel_count_ok(count))) {
		snprintf(why, whysize, "count in '%.40s' must be a number more than 0, at most %d",
		         text, TASK_ACCEL_COUNT_MAX);
		return -1;
	}
	free(out->name);
	out->name = xstrndup(text, namelen);
	out->count = count;
	return 0;
bad:
	snprintf(why, whysize, "'%.40s' must be NAME or NAME:COUNT (like H100:8)", text);
	return -1;
}

/*
 * GPUs by memory: SkyPilot's catalog table (skypilot-catalog, catalogs/v7/common/
 * metadata.csv: GPU, MemoryGB, Manufacturer), as its get_devices_by_memory() reads it,
 * so that "80GB+" picks the devices SkyPilot's would, in the same order.
 */
static const struct {
	const char *name;
	int memory_gb;
	const char *maker;
} gpus_by_memory[] = {
        {"A10", 24, "nvidia"},         {"A100", 40, "nvidia"},
        {"A100-80GB", 80, "nvidia"},   {"A100-80GB-SXM", 80, "nvidia"},
        {"A10G", 24, "nvidia"},        {"A40", 48, "nvidia"},
        {"A4000", 16, "nvidia"},       {"A6000", 48, "nvidia"},
        {"B200", 80, "nvidia"},        {"GH200", 80, "nvidia"},
        {"H100", 80, "nvidia"},        {"H100-MEGA", 80, "nvidia"},
        {"H100-NVL", 80, "nvidia"},    {"H100-NVLINK", 80, "nvidia"},
        {"H100-SXM", 80, "nvidia"},    {"H200", 80, "nvidia"},
        {"H200-SXM", 80, "nvidia"},    {"K80", 12, "nvidia"},
        {"L4", 24, "nvidia"},          {"L40", 48, "nvidia"},
        {"L40S", 48, "nvidia"},        {"M4000", 8, "nvidia"},
        {"M60", 8, "nvidia"},          {"P100", 16, "nvidia"},
        {"P4", 8, "nvidia"},           {"P4000", 8, "nvidia"},
        {"RTX3060", 12, "nvidia"},     {"RTX3080", 10, "nvidia"},
        {"RTX3090", 24, "nvidia"},     {"RTX4000-Ada", 20, "nvidia"},
        {"RTX4090", 24, "nvidia"},     {"RTX6000", 24, "nvidia"},
        {"RTX6000-Ada", 48, "nvidia"}, {"RTX8000", 48, "nvidia"},
        {"RTXA4000", 16, "nvidia"},    {"RTXA4500", 20, "nvidia"},
        {"RTXA5000", 24, "nvidia"},    {"RTXA6000", 48, "nvidia"},
        {"T4", 16, "nvidia"},          {"T4g", 16, "nvidia"},
        {"V100", 16, "nvidia"},        {"V100-32GB", 32, "nvidia"},
        {"Gaudi HL-205", 32, "intel"}, {"MI300X", 192, "amd"},
        {"Radeon MI25", 16, "amd"},    {"Radeon Pro V520", 8, "amd"},
};

/* ^[0-9]+[GgMmTt][Bb]\+?$, SkyPilot's test for a memory size. */
static int is_memory(const char *s, size_t len)
{
	size_t i = 0;

	while (i < len && s[i] >= '0' && s[i] <= '9')
		i++;
	if (!i || i + 2 > len || !strchr("GgMmTt", s[i]) || (s[i + 1] | 0x20) != 'b')
		return 0;
	i += 2;
	return i == len || (i + 1 == len && s[i] == '+');
}

static int whole(const char *s, size_t len, long *out)
{
	char num[24];
	size_t i;

	if (!len || len >= sizeof(num))
		return -1;
	for (i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return -1;
	memcpy(num, s, len);
	num[len] = '\0';
	return parse_long(num, 1, TASK_ACCEL_COUNT_MAX, out);
}

int task_accel_memory_parse(const char *text, struct task_accel **out, size_t *n, char *why,
                            size_t whysize)
{
	const char *part[3], *maker = NULL, *mem;
	size_t len[3], np = 0, mlen, makerlen = 0, i, digits;
	long count = 1, gb;
	int plus;
	const char *p = text;

	*out = NULL;
	*n = 0;
	for (;;) {
		const char *c = strchr(p, ':');

		if (np == 3)
			return 0; /* more than 3 parts: not a memory form */
		part[np] = p;
		len[np++] = c ? (size_t)(c - p) : strlen(p);
		if (!c)
			break;
		p = c + 1;
	}
	if (np == 3) {
		if (!is_memory(part[1], len[1])) {
			snprintf(why, whysize,
			         "'%.40s': with a manufacturer, give the memory and a count "
			         "(NVIDIA:80GB:8)",
			         text);
			return -1;
		}
		maker = part[0];
		makerlen = len[0];
		mem = part[1];
		mlen = len[1];
		if (whole(part[2], len[2], &count))
			goto bad_count;
	} else if (np == 2 && is_memory(part[0], len[0])) {
		mem = part[0];
		mlen = len[0];
		if (whole(part[1], len[1], &count))
			goto bad_count;
	} else if (np == 2 && is_memory(part[1], len[1])) {
		maker = part[0];
		makerlen = len[0];
		mem = part[1];
		mlen = len[1];
	} else if (np == 1 && is_memory(part[0], len[0])) {
		mem = part[0];
		mlen = len[0];
	} else {
		return 0;
	}
	plus = mem[mlen - 1] == '+';
	digits = strspn(mem, "0123456789");
	{
		char num[24];

		if (digits >= sizeof(num)) {
			snprintf(why, whysize, "memory in '%.40s' is too large", text);
			return -1;
		}
		memcpy(num, mem, digits);
		num[digits] = '\0';
		if (parse_long(num, 0, 1 << 20, &gb)) {
			snprintf(why, whysize, "memory in '%.40s' is too large", text);
			return -1;
		}
	}
	switch (mem[digits] | 0x20) {
	case 't': gb *= 1024; break;
	case 'm':
		if (gb % 1024) {
			snprintf(why, whysize, "memory in '%.40s' must be a whole number of GB",
			         text);
			return -1;
		}
		gb /= 1024;
		break;
	default: break;
	}
	for (i = 0; i < ARRAY_SIZE(gpus_by_memory); i++) {
		const char *m = gpus_by_memory[i].maker;

		if (plus ? gpus_by_memory[i].memory_gb < gb : gpus_by_memory[i].memory_gb != gb)
			continue;
		if (maker && (strlen(m) != makerlen || strncasecmp(m, maker, makerlen)))
			continue;
		*out = xrealloc(*out, (*n + 1) * sizeof(**out));
		(*out)[*n].name = xstrdup(gpus_by_memory[i].name);
		(*out)[(*n)++].count = (double)count;
	}
	if (!*n) {
		snprintf(why, whysize, "no %.*s%saccelerator has %s%ld GB of memory ('%.40s')",
		         (int)makerlen, maker ? maker : "", maker ? " " : "",
		         plus ? "at least " : "exactly ", gb, text);
		return -1;
	}
	return 1;
bad_count:
	snprintf(why, whysize, "count in '%.40s' must be a whole number more than 0, at most %d",
	         text, TASK_ACCEL_COUNT_MAX);
	return -1;
}

/* "10" (minutes), "30s", "10m", "1h", "2d", "1w" */
int task_minutes_parse(const char *s, long *out)
{
	char num[32];
	size_t n = strlen(s);
	long v, mult = 1;
	char unit;

	if (!n || n >= sizeof(num))
		return -1;
	memcpy(num, s, n + 1);
	unit = (char)(num[n - 1] | 0x20);
	if (unit >= 'a' && unit <= 'z') {
		num[--n] = '\0';
		if (unit == 's')
			mult = -60; /* seconds: round up to minutes */
		else if (unit == 'm')
			mult = 1;
		else if (unit == 'h')
			mult = 60;
		else if (unit == 'd')
			mult = 1440;
		else if (unit == 'w')
			mult = 10080;
		else
			return -1;
	}
	if (parse_long(num, 0, 100000000, &v))
		return -1;
	/* At most 1e8 * 10080: a long holds it, and the bound below is checked on it. */
	v = mult < 0 ? (v + 59) / 60 : v * mult;
	if (v > TASK_AUTOSTOP_MINUTES_MAX)
		return -1;
	*out = v;
	return 0;
}

int task_autostop_minutes_valid(double m)
{
	/* NaN fails both comparisons; infinities fail one. */
	return m >= 0 && m <= TASK_AUTOSTOP_MINUTES_MAX;
}

/* ---- what only a cloud honours ------------------------------------------------------ */

int task_image_is_docker(const char *image_id)
{
	return image_id && starts_with(image_id, "docker:");
}

/* The resource fields only a cloud can honour unless an infra says it does. */
static const struct {
	const char *name;
	unsigned bit;
} cloud_fields[] = {
        {"cloud", TR_CLOUD},
        {"region", TR_REGION},
        {"zone", TR_ZONE},
        {"instance_type", TR_INSTANCE_TYPE},
        {"use_spot", TR_USE_SPOT},
        {"disk_size", TR_DISK_SIZE},
        {"disk_tier", TR_DISK_TIER},
        {"network_tier", TR_NETWORK_TIER},
        {"image_id", TR_IMAGE_ID},
        {"labels", TR_LABELS},
        {"accelerator_args", TR_ACCELERATOR_ARGS},
        {"volumes", TR_VOLUMES},
        {"ports", TR_PORTS},
};

/* An infra that runs containers honours a container image, and only that. */
static int image_honoured(const struct task_resources *r)
{
	size_t i;

	if (r->image_id)
		return task_image_is_docker(r->image_id);
	for (i = 0; i < r->image_by_region.n; i++)
		if (!task_image_is_docker(r->image_by_region.v[i].value))
			return 0;
	return 1;
}

static size_t add_name(const char **names, size_t n, size_t max, const char *name)
{
	size_t i;

	for (i = 0; i < n && i < max; i++)
		if (!strcmp(names[i], name))
			return n;
	if (n < max)
		names[n] = name;
	return n + 1;
}

size_t task_cloud_only_fields(const struct task *t, unsigned honours, const char **names,
                              size_t max)
{
	size_t a, i, k, n = 0;

	if (honours == TASK_HONOURS_ALL)
		return 0;
	for (a = 0; a < t->nres; a++) {
		const struct task_resources *r = &t->res[a];

		for (i = 0; i < ARRAY_SIZE(cloud_fields); i++) {
			unsigned bit = cloud_fields[i].bit;

			if (!(r->set & bit) || ((honours & bit) && bit != TR_IMAGE_ID))
				continue;
			if (bit == TR_IMAGE_ID && (honours & bit) && image_honoured(r))
				continue;
			n = add_name(names, n, max, cloud_fields[i].name);
		}
		for (k = 0; k < r->nextra; k++)
			n = add_name(names, n, max, r->extra[k].key);
	}
	return n;
}

static int range_cmp(const void *a, const void *b)
{
	const struct task_port_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : x->hi - y->hi;
}

size_t task_ports_parse(const char *text, struct task_port_range *v, size_t cap)
{
	const char *p = text ? text : "";
	size_t n = 0;

	while (*p) {
		char *end;
		long lo = strtol(p, &end, 10), hi = lo;

		if (*end == '-')
			hi = strtol(end + 1, &end, 10);
		if (end != p && lo >= 1 && lo <= hi && hi <= 65535) {
			if (n < cap)
				v[n] = (struct task_port_range){(int)lo, (int)hi};
			n++;
		}
		p = strchr(end, ',');
		if (!p)
			break;
		p++;
	}
	return n;
}

int task_ports_has(const char *text, long port)
{
	size_t n = task_ports_parse(text, NULL, 0), i;
	struct task_port_range *v = xcalloc(n ? n : 1, sizeof(*v));
	int has = 0;

	task_ports_parse(text, v, n);
	for (i = 0; i < n && !has; i++)
		has = port >= v[i].lo && port <= v[i].hi;
	free(v);
	return has;
}

char *task_ports_union(const char *have, const struct task_port_range *add, size_t nadd)
{
	size_t nhave = task_ports_parse(have, NULL, 0), n, i, cap = nhave + nadd + 1;
	struct task_port_range *v = xcalloc(cap, sizeof(*v));
	struct buf out = BUF_INIT(0);

	n = task_ports_parse(have, v, nhave);
	for (i = 0; i < nadd && n < cap; i++)
		v[n++] = add[i];
	if (n)
		qsort(v, n, sizeof(*v), range_cmp);
	for (i = 0; i < n;) {
		int lo = v[i].lo, hi = v[i].hi;

		/* Overlapping or adjacent ranges are one. */
		for (i++; i < n && v[i].lo <= hi + 1; i++)
			if (v[i].hi > hi)
				hi = v[i].hi;
		if (lo == hi)
			buf_addf(&out, "%s%d", out.len ? "," : "", lo);
		else
			buf_addf(&out, "%s%d-%d", out.len ? "," : "", lo, hi);
	}
	free(v);
	return buf_detach(&out, NULL);
}

size_t task_unhonoured_fields(const struct task *t, unsigned honours, const char **names,
                              size_t max)
{
	size_t n = 0;

	if (t->service)
		n = add_name(names, n, max, "service (skiff has no serving layer)");
	if (t->pool)
		n = add_name(names, n, max, "pool (skiff has no worker pools)");
	(void)honours; /* no infra here mounts a named volume yet */
	if (t->volumes)
		n = add_name(names, n, max, "volumes (skiff creates no named volumes)");
	if (t->volume_mounts)
		n = add_name(names, n, max, "volume_mounts (skiff creates no named volumes)");
	if (t->inputs)
		n = add_name(names, n, max, "inputs (a cloud optimizer's hint)");
	if (t->outputs)
		n = add_name(names, n, max, "outputs (a cloud optimizer's hint)");
	if (t->event_callback)
		n = add_name(names, n, max, "event_callback");
	return n;
}
