/* Unit tests for the runtime env cache key (bootstrap/renv/renv_key.c). */
#include <stdlib.h>
#include <string.h>

#include "bootstrap/renv/renv.h"
#include "lib/util.h"
#include "tests/unit/harness.h"

#define PYID "/usr/bin/python3.11\n3.11.2 (main) [GCC 12]\nx86_64"

static void spec(struct renv_spec *s, const char *const *pkgs)
{
	memset(s, 0, sizeof(*s));
	s->set = 1;
	s->tool = RENV_TOOL_PIP;
	for (; pkgs && *pkgs; pkgs++)
		renv_strv_push(&s->pkgs, *pkgs);
}

static void key_of(const char *const *pkgs, const char *pyid, const char *conf, char hex[65])
{
	struct renv_spec s;

	spec(&s, pkgs);
	renv_key(&s, pyid, conf, hex, NULL);
	renv_spec_release(&s);
}

static const char *norm(const char *line)
{
	static char out[256];
	struct buf b = BUF_INIT(0);

	renv_norm_req(line, &b);
	xsnprintf(out, sizeof(out), "%s", b.p);
	buf_release(&b);
	return out;
}

static void test_norm(void)
{
	is_str(norm("NumPy"), "numpy", "names are lowercased");
	is_str(norm("Foo_Bar.baz"), "foo-bar-baz", "PEP 503: runs of -_. become -");
	is_str(norm("  numpy >= 1.0 , < 2  "), "numpy>=1.0,<2", "no whitespace in specifiers");
	is_str(norm("requests [Socks, security]>=2"), "requests[security,socks]>=2",
	       "extras sorted and normalised");
	is_str(norm("a; python_version  <  \"3.8\"  and os_name == 'nt'"),
	       "a; python_version < \"3.8\" and os_name == 'nt'", "markers keep single spaces");
	is_str(norm("numpy == 1.0   --hash=sha256:ab  --hash=sha256:cd"),
	       "numpy==1.0 --hash=sha256:ab --hash=sha256:cd",
	       "per-requirement options kept apart");
	is_str(norm("numpy >=1 ; os_name=='nt' --hash=x"), "numpy>=1; os_name=='nt' --hash=x",
	       "options after a marker");
	is_str(norm(norm("A_b [X] >= 1 ; os_name=='nt'")), "a-b[x]>=1; os_name=='nt'",
	       "normalising twice changes nothing");
	is_str(norm("# a comment"), "", "a comment line is empty");
	is_str(norm("numpy==2.0  # pinned"), "numpy==2.0", "a trailing comment is dropped");
	is_str(norm("--index-url   https://x/simple"), "--index-url https://x/simple",
	       "options: whitespace folded only");
	is_str(norm("https://h/p/Pkg-1.0.whl#sha256=AB"), "https://h/p/Pkg-1.0.whl#sha256=AB",
	       "URLs are kept as written");
}

static void test_order(void)
{
	static const char *const ab[] = {"a", "b", NULL}, *const ba[] = {"b", "a", NULL};
	static const char *const ab2[] = {"B", "a", "A==", NULL}, *const aab[] = {"a", "A", "b",
	                                                                          NULL};
	char k1[65], k2[65], k3[65];

	key_of(ab, PYID, "", k1);
	key_of(ba, PYID, "", k2);
	is_str(k1, k2, "package order does not change the key");
	key_of(aab, PYID, "", k3);
	is_str(k1, k3, "duplicates (after normalising) do not change it");
	key_of(ab2, PYID, "", k3);
	ok(strcmp(k1, k3), "a different specifier does");
	ok(strlen(k1) == 64, "the key is a sha256 in hex");
}

static void test_inputs(void)
{
	static const char *const a[] = {"a", NULL};
	char base[65], k[65];
	struct renv_spec s;
	struct buf canon = BUF_INIT(0);

	key_of(a, PYID, "", base);
	key_of(a, "/usr/bin/python3.11\n3.11.3 (main) [GCC 12]\nx86_64", "", k);
	ok(strcmp(base, k), "the interpreter's exact version is in the key");
	key_of(a, "/opt/py/bin/python3.11\n3.11.2 (main) [GCC 12]\nx86_64", "", k);
	ok(strcmp(base, k), "and its path");
	key_of(a, PYID, "--find-links /w", k);
	ok(strcmp(base, k), "the node's index settings are in the key");

	spec(&s, a);
	s.timeout = 5;
	renv_strv_push(&s.env_vars, "A=1");
	s.working_dir = xstrdup("sha256:00");
	renv_strv_push(&s.modules, "sha256:11/m");
	renv_key(&s, PYID, "", k, NULL);
	is_str(k, base, "config, env_vars, working_dir and py_modules are not in the key");
	renv_spec_release(&s);

	spec(&s, a);
	s.tool = RENV_TOOL_UV;
	renv_key(&s, PYID, "", k, NULL);
	ok(strcmp(base, k), "uv and pip envs differ");
	renv_spec_release(&s);

	spec(&s, a);
	renv_strv_push(&s.wheels, "aaaa x-1.0-py3-none-any.whl");
	renv_key(&s, PYID, "", k, NULL);
	renv_spec_release(&s);
	spec(&s, a);
	renv_strv_push(&s.wheels, "bbbb x-1.0-py3-none-any.whl");
	renv_key(&s, PYID, "", base, NULL);
	ok(strcmp(base, k), "a wheel with the same name and other bytes is another env");
	renv_spec_release(&s);

	spec(&s, a);
	s.check = 1;
	renv_key(&s, PYID, "", k, &canon);
	ok(strstr(canon.p, "check 1\n") != NULL, "pip_check is in the key");
	renv_spec_release(&s);
	spec(&s, a);
	s.tool_version = xstrdup("==23.0");
	renv_key(&s, PYID, "", k, NULL);
	ok(strcmp(base, k), "pip_version is in the key");
	renv_spec_release(&s);
	buf_release(&canon);
}

static void test_no_forging(void)
{
	static const char *const evil[] = {"a\nreq b", NULL}, *const a[] = {"a", NULL};
	static const char *const ab[] = {"a", "b", NULL};
	char k1[65], k2[65], k3[65];

	key_of(evil, PYID, "", k1);
	key_of(ab, PYID, "", k2);
	ok(strcmp(k1, k2), "a line with a newline cannot forge another entry");
	key_of(a, PYID "\nreq b", "", k3);
	ok(strcmp(k3, k2), "nor can the interpreter's identity");
}

static void test_canon(void)
{
	static const char *const p[] = {"B", "a>=1", NULL};
	struct renv_spec s;
	struct buf c = BUF_INIT(0);
	char k[65];

	spec(&s, p);
	renv_key(&s, "py", "--no-index", k, &c);
	is_str(c.p,
	       "skiff-renv-key 1\ntool pip\npython py\nindex --no-index\nreq a>=1\nreq b\n"
	       "check 0\nversion \n",
	       "the canonical text");
	renv_spec_release(&s);
	buf_release(&c);
}

int main(void)
{
	plan_run(test_norm);
	plan_run(test_order);
	plan_run(test_inputs);
	plan_run(test_no_forging);
	plan_run(test_canon);
	return done_testing();
}
