#include "supervisor/script.h"

#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/quote.h"
#include "lib/util.h"
#include "lib/banned.h"

/*
 * conda's profile defines `conda activate` for the script; set -a exports its functions
 * to the script's children as well (SkyPilot's #436). `conda info --base` starts Python
 * (about half a second): the base comes from CONDA_EXE when a profile already set it, and
 * nothing at all runs where conda is not installed.
 */
static const char conda_profile[] =
        "if command -v conda >/dev/null 2>&1; then\n"
        "\t__skiff_conda=${CONDA_EXE%/bin/conda}\n"
        "\tif [ -z \"$CONDA_EXE\" ] || [ \"$__skiff_conda\" = \"$CONDA_EXE\" ]; then\n"
        "\t\t__skiff_conda=$(conda info --base 2>/dev/null)\n"
        "\tfi\n"
        "\tset -a\n"
        "\t. \"$__skiff_conda/etc/profile.d/conda.sh\" >/dev/null 2>&1\n"
        "\tset +a\n"
        "\tunset __skiff_conda\n"
        "fi\n";

/* The names of pins that a shell can hold, space-separated; 0 if there is none. */
static int pin_names(const struct env *pins, struct buf *b)
{
	size_t i;
	int n = 0;

	for (i = 0; pins && i < pins->n; i++) {
		const char *kv = pins->v[i];
		char *name = xstrndup(kv, strcspn(kv, "="));

		if (sh_valid_name(name)) {
			buf_addf(b, " %s", name);
			n++;
		}
		free(name);
	}
	return n;
}

char *step_script_text(const struct step_script *s)
{
	struct buf b = BUF_INIT(0), names = BUF_INIT(0);
	int keep = s->bash && pin_names(s->pins, &names);
	size_t i;

	/*
	 * bash keeps the pins' values from its own environment before the profile runs and
	 * restores them after, so that the text holds only their names: it may then go to bash
	 * as an argument (bash -c, which execs the script's last command) without a secret
	 * on a command line. A plain sh gets the values written out (the text is a 0600 file).
	 */
	if (keep)
		buf_addf(&b, "__skiff_pins=$(declare -p%s 2>/dev/null)\n", names.p);
	/* A profile that returns early for a non-interactive shell only ends its own part. */
	buf_addf(&b, "if [ -f ~/%s ]; then . ~/%s; fi\n", s->bash ? ".bashrc" : ".profile",
	         s->bash ? ".bashrc" : ".profile");
	buf_adds(&b, conda_profile);
	buf_adds(&b, "export PYTHONUNBUFFERED=1\n");
	if (keep)
		buf_adds(&b, "eval \"$__skiff_pins\" 2>/dev/null; unset __skiff_pins\n");
	for (i = 0; !s->bash && s->pins && i < s->pins->n; i++) {
		const char *kv = s->pins->v[i], *eq = strchr(kv, '=');
		char *name = xstrndup(kv, (size_t)(eq - kv));

		if (sh_valid_name(name)) {
			buf_adds(&b, "export ");
			sh_quote_env(&b, name, eq + 1);
			buf_addch(&b, '\n');
		}
		free(name);
	}
	buf_release(&names);
	if (s->path_prefix && *s->path_prefix) {
		/* An assignment, never split, in every sh (dash splits `export` arguments). */
		buf_adds(&b, "PATH=");
		sh_quote(&b, s->path_prefix);
		buf_adds(&b, "${PATH:+:\"$PATH\"}; export PATH\n");
	}
	if (s->cwd) {
		buf_adds(&b, "cd -- ");
		sh_quote(&b, s->cwd);
		buf_adds(&b, " || exit 1\n");
	}
	buf_adds(&b, s->script ? s->script : "");
	buf_addch(&b, '\n');
	return buf_detach(&b, NULL);
}

void step_env_pins(const struct env *base, const struct env *final, struct env *pins,
                   char **path_prefix)
{
	const char *bpath = env_get(base, "PATH"), *fpath = env_get(final, "PATH");
	size_t i;

	*path_prefix = NULL;
	for (i = 0; i < final->n; i++) {
		const char *kv = final->v[i], *eq = strchr(kv, '=');
		char *name = xstrndup(kv, (size_t)(eq - kv));
		const char *was = env_get(base, name);

		if (strcmp(name, "PATH") && (!was || strcmp(was, eq + 1)))
			env_put(pins, kv);
		free(name);
	}
	if (!fpath || (bpath && !strcmp(bpath, fpath)))
		return;
	if (bpath && *bpath) {
		size_t fl = strlen(fpath), bl = strlen(bpath);

		if (fl > bl + 1 && fpath[fl - bl - 1] == ':' && !strcmp(fpath + fl - bl, bpath)) {
			*path_prefix = xstrndup(fpath, fl - bl - 1);
			return;
		}
	}
	env_set(pins, "PATH", fpath);
}
