#include <archive.h>
#include <mbedtls/version.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>
#include <zlib.h>

#include "cmd/cmd.h"
#include "lib/json.h"
#include "lib/self.h"
#include "lib/banned.h"

const char cmd_version_usage[] =
        "usage: skiff version [--json]\n"
        "\n"
        "Prints skiff's version, the git commit it was built from, the sha256 of the running\n"
        "executable (the content address nodes install it under) and the versions of the\n"
        "libraries linked into it.\n"
        "\n"
        "  --json    print one JSON object\n";

int cmd_version(int argc, char **argv)
{
	const char *sha = self_sha256(skiff_argv0);
	char mbed[32];
	struct buf b = BUF_INIT(0);
	struct json j;
	int as_json = 0, i, r;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			as_json = 1;
		else
			return usage_error("version", "unknown argument '%s'", argv[i]);
	}
	mbedtls_version_get_string(mbed);
	if (!as_json) {
		printf("skiff %s\n", skiff_version);
		printf("commit:     %s\n", skiff_commit);
		printf("sha256:     %s\n", sha ? sha : "unknown (executable not readable)");
		printf("libyaml:    %s\n", yaml_get_version_string());
		printf("sqlite:     %s\n", sqlite3_libversion());
		printf("mbedtls:    %s\n", mbed);
		printf("libarchive: %s\n", archive_version_string() + strlen("libarchive "));
		printf("zlib:       %s\n", zlibVersion());
		return EXIT_OK;
	}
	json_init(&j, &b, 1);
	json_obj_begin(&j);
	json_key(&j, "version");
	json_str(&j, skiff_version);
	json_key(&j, "commit");
	json_str(&j, skiff_commit);
	json_key(&j, "sha256");
	json_str(&j, sha);
	json_key(&j, "libraries");
	json_obj_begin(&j);
	json_key(&j, "libyaml");
	json_str(&j, yaml_get_version_string());
	json_key(&j, "sqlite");
	json_str(&j, sqlite3_libversion());
	json_key(&j, "mbedtls");
	json_str(&j, mbed);
	json_key(&j, "libarchive");
	json_str(&j, archive_version_string() + strlen("libarchive "));
	json_key(&j, "zlib");
	json_str(&j, zlibVersion());
	json_obj_end(&j);
	json_obj_end(&j);
	r = json_finish(&j) || print_out(b.p, b.len) ? EXIT_FAIL : EXIT_OK;
	buf_release(&b);
	return r;
}
