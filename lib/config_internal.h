#ifndef SKIFF_CONFIG_INTERNAL_H
#define SKIFF_CONFIG_INTERNAL_H

/* Shared by lib/config*.c only. */

#include "lib/config.h"

#define CONFIG_PATH_MAX 200 /* a dotted key path in messages */

/* A scalar's type as YAML resolves it (a quoted one is a string); YS_STR for others. */
enum yscalar_type cfg_type(const struct cfg_node *n);
int cfg_is_null(const struct cfg_node *n);
/* The value of key in map, or NULL. */
struct cfg_node *cfg_map_get(const struct cfg_node *map, const char *key);
/* An amount of CPUs or memory ("4", 4, "4+", "16GB"): the number, or -1. */
double cfg_amount(const struct cfg_node *n);

#endif
