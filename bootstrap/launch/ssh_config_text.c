/*
 * The text of a cluster's ssh_config and of ~/.ssh/config's Include line: pure
 * functions (ssh_config.h). ssh_config(5) splits a line at blanks (double quotes keep
 * them together) and expands %tokens in the paths and the host name, so a value is
 * quoted when it holds a blank or '#', its '%' doubled where ssh expands them, and a value
 * no line can carry (a control character, '"', '\') is refused rather than mangled.
 */
#include <errno.h>
#include <string.h>

#include "bootstrap/launch/ssh_config.h"
#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

enum { V_PLAIN, V_TOKENS, V_NO_PERCENT };

static int value_ok(const char *v, int how)
{
	const unsigned char *p;

	for (p = (const unsigned char *)v; *p; p++)
		if (*p < 0x20 || *p == 0x7f || *p == '"' || *p == '\\' ||
		    (how == V_NO_PERCENT && *p == '%'))
			return 0;
	return 1;
}

/* "    Key value\n"; v was checked by value_ok(). */
static void put(struct buf *out, const char *key, const char *v, int how)
{
	int quote = strpbrk(v, " \t#'") != NULL || !*v;

	buf_addf(out, "    %s ", key);
	if (quote)
		buf_addch(out, '"');
	for (; *v; v++) {
		if (*v == '%' && how == V_TOKENS)
			buf_addch(out, '%');
		buf_addch(out, *v);
	}
	if (quote)
		buf_addch(out, '"');
	buf_addch(out, '\n');
}

static int host_ok(const char *cluster, size_t i, const struct ssh_conn *h)
{
	static const char *const what[] = {"host",      "user",        "identity file",
	                                   "jump host", "ControlPath", "known_hosts file"};
	const char *v[] = {h->host,       h->user,    h->identity_file,
	                   h->proxy_jump, h->control, h->known_hosts};
	size_t k;

	if (!h->host || !*h->host || !h->control || !h->known_hosts)
		return error("cluster %s: node %zu has no address or no ControlPath", cluster, i),
		       0;
	for (k = 0; k < ARRAY_SIZE(v); k++) {
		int how = k == 1 || k == 3 ? V_NO_PERCENT : V_TOKENS;

		if (v[k] && !value_ok(v[k], how))
			return error("cluster %s: node %zu's %s cannot be written in an ssh_config: it "
			             "holds a control character, '\"' or '\\'%s",
			             cluster, i, what[k], how == V_NO_PERCENT ? " or '%'" : ""),
			       0;
	}
	return 1;
}

int ssh_config_text(struct buf *out, const char *cluster, const struct ssh_conn *hosts, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!host_ok(cluster, i, &hosts[i]))
			return -EINVAL;
	buf_addf(out,
	         "# skiff: cluster %s (written by 'skiff launch', removed by 'skiff down');\n"
	         "# read through the Include line at the top of ~/.ssh/config.\n",
	         cluster);
	for (i = 0; i < n; i++) {
		const struct ssh_conn *h = &hosts[i];

		if (i)
			buf_addf(out, "\nHost %s-worker%zu\n", cluster, i);
		else
			buf_addf(out, "\nHost %s\n", cluster);
		put(out, "HostName", h->host, V_TOKENS);
		if (h->user)
			put(out, "User", h->user, V_PLAIN);
		if (h->port > 0)
			buf_addf(out, "    Port %d\n", h->port);
		if (h->identity_file) {
			put(out, "IdentityFile", h->identity_file, V_TOKENS);
			put(out, "IdentitiesOnly", "yes", V_PLAIN);
		}
		if (h->proxy_jump)
			put(out, "ProxyJump", h->proxy_jump, V_PLAIN);
		put(out, "UserKnownHostsFile", h->known_hosts, V_TOKENS);
		put(out, "StrictHostKeyChecking", SSH_HOST_KEY_CHECKING, V_PLAIN);
		buf_addf(out, "    ConnectTimeout %d\n", SSH_CONNECT_TIMEOUT_S);
		buf_addf(out, "    ServerAliveInterval %d\n", SSH_ALIVE_INTERVAL_S);
		buf_addf(out, "    ServerAliveCountMax %d\n", SSH_ALIVE_COUNT_MAX);
		put(out, "KexAlgorithms", SSH_KEX_ALGORITHMS, V_PLAIN);
		put(out, "Ciphers", SSH_CIPHERS, V_PLAIN);
		put(out, "ControlMaster", "auto", V_PLAIN);
		put(out, "ControlPath", h->control, V_TOKENS);
		buf_addf(out, "    ControlPersist %d\n", SSH_CONTROL_PERSIST_S);
	}
	return 0;
}

char *ssh_config_include_line(const char *dir, const char *home, const char *pw_home)
{
	struct buf b = BUF_INIT(0);
	const char *rel = NULL;
	size_t n = pw_home ? strlen(pw_home) : 0;

	if (!dir || *dir != '/' || !value_ok(dir, V_PLAIN))
		return NULL;
	/* ssh expands '~' to the account's home (getpwuid), never to $HOME. */
	if (n > 1 && home && !strcmp(home, pw_home) && !strncmp(dir, pw_home, n) && dir[n] == '/')
		rel = dir + n + 1;
	buf_adds(&b, "Include ");
	if (strpbrk(dir, " \t#'"))
		buf_addch(&b, '"');
	if (rel)
		buf_addf(&b, "~/%s/*", rel);
	else
		buf_addf(&b, "%s/*", dir);
	if (strpbrk(dir, " \t#'"))
		buf_addch(&b, '"');
	return buf_detach(&b, NULL);
}

/* [p, end) is line, give or take blanks around it and a "\n" or "\r\n" after it. */
static int is_line(const char *p, const char *end, const char *line)
{
	size_t k = strlen(line);

	while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' || end[-1] == '\n'))
		end--;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return (size_t)(end - p) == k && !memcmp(p, line, k);
}

int ssh_config_with_include(const char *old, size_t len, const char *line, struct buf *out)
{
	const char *p = old, *end = old ? old + len : NULL;
	size_t copies = 0, first = 0, at = 0;

	while (p && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *next = nl ? nl + 1 : end;

		if (is_line(p, next, line)) {
			copies++;
			first |= at == 0;
		}
		at++;
		p = next;
	}
	if (copies == 1 && first)
		return 0;
	buf_adds(out, line);
	buf_addch(out, '\n');
	for (p = old; p && p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *next = nl ? nl + 1 : end;

		if (!is_line(p, next, line))
			buf_add(out, p, (size_t)(next - p));
		p = next;
	}
	return 1;
}
