/*
 * The SSH node pool file parser (infra_pools_parse_buf, bootstrap/infra/infra_ssh.c): never a
 * crash, a leak or a hang; errors iff it fails; nothing kept on failure; every pool it
 * keeps has a name and hosts that can be turned into node keys.
 */
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "bootstrap/infra/infra.h"
#include "lib/log.h"
#include "lib/yaml.h"
#include "lib/banned.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	log_set_level(LOG_QUIET);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct yerrors errs = YERRORS_INIT;
	struct infra_pools p;
	size_t i, k;
	int r;

	memset(&p, 0, sizeof(p));
	r = infra_pools_parse_buf(&p, "pools.yaml", (const char *)data, size, &errs);
	if ((r == 0) != (errs.nerrors == 0))
		fuzz_fail("infra_pools_parse_buf returned %d with %zu errors", r, errs.nerrors);
	if (r && (p.n || p.v))
		fuzz_fail("a failed parse kept %zu pools", p.n);
	for (i = 0; !r && i < p.n; i++) {
		const struct infra_pool *pool = &p.v[i];

		if (!pool->name || !*pool->name)
			fuzz_fail("pool %zu has no name", i);
		if (infra_pools_find(&p, pool->name) == NULL)
			fuzz_fail("pool '%s' cannot be found by name", pool->name);
		if (!pool->nhosts || !pool->hosts)
			fuzz_fail("pool '%s' has no hosts", pool->name);
		for (k = 0; k < pool->nhosts; k++)
			free(infra_host_key(pool->name, &pool->hosts[k]));
	}
	infra_pools_release(&p);
	yerr_release(&errs);
	return 0;
}
