/* `ssh CLUSTER`: the text of a cluster's ssh_config and of ~/.ssh/config's Include line. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/harness.h"
#include "bootstrap/launch/ssh_config.h"
#include "lib/buf.h"
#include "lib/util.h"
#include "lib/banned.h"

static const char common[] = "    UserKnownHostsFile /h/.skiff/ssh/known_hosts\n"
                             "    StrictHostKeyChecking accept-new\n"
                             "    ConnectTimeout 10\n"
                             "    ServerAliveInterval 3\n"
                             "    ServerAliveCountMax 3\n"
                             "    KexAlgorithms ^curve25519-sha256\n"
                             "    Ciphers ^aes128-gcm@openssh.com\n"
                             "    ControlMaster auto\n";

static void test_text(void)
{
	struct ssh_conn v[3] = {
	        {.host = "10.0.0.1",
	         .user = "alice",
	         .port = 2222,
	         .identity_file = "/keys/id_ed25519",
	         .proxy_jump = "bob@bastion:2200",
	         .control = "/h/.skiff/ssh/0123abcd",
	         .known_hosts = "/h/.skiff/ssh/known_hosts"},
	        {.host = "node7",
	         .control = "/tmp/skiff-ssh.0/ffff",
	         .known_hosts = "/h/.skiff/ssh/known_hosts"},
	        {.host = "fe80::1%eth0",
	         .identity_file = "/my keys/50%#1",
	         .control = "/tmp/c",
	         .known_hosts = "/h/.skiff/ssh/known_hosts"},
	};
	struct buf b = BUF_INIT(0);
	char *want;

	ok(!ssh_config_text(&b, "My_c.1", v, 3), "three nodes");
	want = xasprintf(
	        "# skiff: cluster My_c.1 (written by 'skiff launch', removed by 'skiff down');\n"
	        "# read through the Include line at the top of ~/.ssh/config.\n"
	        "\n"
	        "Host My_c.1\n"
	        "    HostName 10.0.0.1\n"
	        "    User alice\n"
	        "    Port 2222\n"
	        "    IdentityFile /keys/id_ed25519\n"
	        "    IdentitiesOnly yes\n"
	        "    ProxyJump bob@bastion:2200\n"
	        "%s"
	        "    ControlPath /h/.skiff/ssh/0123abcd\n"
	        "    ControlPersist 300\n"
	        "\n"
	        "Host My_c.1-worker1\n"
	        "    HostName node7\n"
	        "%s"
	        "    ControlPath /tmp/skiff-ssh.0/ffff\n"
	        "    ControlPersist 300\n"
	        "\n"
	        "Host My_c.1-worker2\n"
	        "    HostName fe80::1%%%%eth0\n"
	        "    IdentityFile \"/my keys/50%%%%#1\"\n"
	        "    IdentitiesOnly yes\n"
	        "%s"
	        "    ControlPath /tmp/c\n"
	        "    ControlPersist 300\n",
	        common, common, common);
	is_str(b.p, want,
	       "head, then workers: what skiff connects with, '%%' doubled, blanks quoted");
	free(want);
	buf_release(&b);

	/* What no ssh_config line can carry is refused, and nothing is written. */
	{
		static const char *const bad_identity[] = {"/k\"ey", "/k\\ey", "/k\ney", "/k\x7f"};
		size_t i;

		for (i = 0; i < ARRAY_SIZE(bad_identity); i++) {
			struct ssh_conn h = v[0];

			h.identity_file = bad_identity[i];
			is_int(ssh_config_text(&b, "c", &h, 1), -EINVAL, "bad identity file #%zu",
			       i);
			is_int((int)b.len, 0, "... nothing written");
		}
	}
	{
		struct ssh_conn h = v[0];

		h.user = "al%ce";
		is_int(ssh_config_text(&b, "c", &h, 1), -EINVAL, "'%%' in a user");
		h = v[0];
		h.proxy_jump = "b%h";
		is_int(ssh_config_text(&b, "c", &h, 1), -EINVAL, "'%%' in a jump host");
		h = v[0];
		h.host = "a\tb";
		is_int(ssh_config_text(&b, "c", &h, 1), -EINVAL, "a tab in a host");
		h = v[0];
		h.control = NULL;
		is_int(ssh_config_text(&b, "c", &h, 1), -EINVAL, "no ControlPath");
		h = v[1];
		h.host = "";
		is_int(ssh_config_text(&b, "c", &h, 1), -EINVAL, "no host");
		is_int((int)b.len, 0, "... nothing written");
	}
	buf_release(&b);
}

static void test_include_line(void)
{
	char *s;

	s = ssh_config_include_line("/home/al/.skiff/generated/ssh", "/home/al", "/home/al");
	is_str(s, "Include ~/.skiff/generated/ssh/*", "under the home: ~/...");
	free(s);
	s = ssh_config_include_line("/home/al/.skiff/generated/ssh", "/tmp/t/userhome", "/home/al");
	is_str(s, "Include /home/al/.skiff/generated/ssh/*",
	       "$HOME is not the account's home (ssh's ~): the path as it is");
	free(s);
	s = ssh_config_include_line("/srv/sk/generated/ssh", "/home/al", "/home/al");
	is_str(s, "Include /srv/sk/generated/ssh/*", "SKIFF_HOME elsewhere: the path");
	free(s);
	s = ssh_config_include_line("/home/alice/x", "/home/al", "/home/al");
	is_str(s, "Include /home/alice/x/*", "a home that is only a prefix is no home");
	free(s);
	s = ssh_config_include_line("/x/generated/ssh", "/", "/");
	is_str(s, "Include /x/generated/ssh/*", "home /: the path");
	free(s);
	s = ssh_config_include_line("/my home/.skiff/generated/ssh", "/my home", "/my home");
	is_str(s, "Include \"~/.skiff/generated/ssh/*\"", "blanks: quoted");
	free(s);
	ok(!ssh_config_include_line("/a\"b", "/h", "/h"), "'\"': none");
	ok(!ssh_config_include_line("/a\nb", "/h", "/h"), "a newline: none");
	ok(!ssh_config_include_line("rel/dir", "/h", "/h"), "a relative dir: none");
}

static void check_edit(const char *old, size_t len, int want_rc, const char *want, const char *what)
{
	struct buf b = BUF_INIT(0);
	int rc = ssh_config_with_include(old, len, "Include ~/.skiff/generated/ssh/*", &b);

	is_int(rc, want_rc, "%s: %s", what, want_rc ? "rewritten" : "unchanged");
	if (want_rc && rc == 1) {
		ok(b.len == strlen(want) && !memcmp(b.p, want, b.len), "%s: the text", what);
		if (b.len != strlen(want) || memcmp(b.p, want, b.len))
			printf("# got:\n%.*s# want:\n%s", (int)b.len, b.p ? b.p : "", want);
	} else {
		is_int((int)b.len, 0, "%s: nothing in out", what);
	}
	buf_release(&b);
}

#define INC "Include ~/.skiff/generated/ssh/*"

static void test_with_include(void)
{
	static const char user[] =
	        "Host *\n    ServerAliveInterval 60\n\nHost box\n  User me # hi\n";
	static const char binary[] = "# caf\xc3\xa9 \xff\x01\nHost x\n\tHostName y";
	char *s;

	check_edit(NULL, 0, 1, INC "\n", "no file");
	check_edit("", 0, 1, INC "\n", "an empty file");
	check_edit(INC "\n", strlen(INC "\n"), 0, NULL, "only the line");
	check_edit(INC, strlen(INC), 0, NULL, "the line without its newline");
	s = xasprintf(INC "\n%s", user);
	check_edit(s, strlen(s), 0, NULL, "the line at the top");
	free(s);
	s = xasprintf(INC "\r\n%s", user);
	check_edit(s, strlen(s), 0, NULL, "the line at the top, CRLF");
	free(s);
	check_edit(user, strlen(user), 1,
	           INC "\n"
	               "Host *\n    ServerAliveInterval 60\n\nHost box\n  User me # hi\n",
	           "a user's file: the line first, the rest byte for byte");
	check_edit(binary, sizeof(binary) - 1, 1,
	           INC "\n# caf\xc3\xa9 \xff\x01\nHost x\n\tHostName y",
	           "non-UTF-8 and no final newline: kept");
	s = xasprintf("%s" INC "\n", user);
	check_edit(s, strlen(s), 1,
	           INC "\n"
	               "Host *\n    ServerAliveInterval 60\n\nHost box\n  User me # hi\n",
	           "the line inside a Host block (where ssh ignores it): moved to the top");
	free(s);
	s = xasprintf(INC "\n" INC "\n%s", user);
	check_edit(s, strlen(s), 1,
	           INC "\n"
	               "Host *\n    ServerAliveInterval 60\n\nHost box\n  User me # hi\n",
	           "twice: once");
	free(s);
	check_edit("# Include ~/.skiff/generated/ssh/*\n", 35, 1,
	           INC "\n# Include ~/.skiff/generated/ssh/*\n",
	           "a comment that looks like it is not it");
	check_edit("Host a\n  " INC " \n", strlen("Host a\n  " INC " \n"), 1, INC "\nHost a\n",
	           "an indented copy, blanks after it: the same line, moved");
}

int main(void)
{
	plan_run(test_text);
	plan_run(test_include_line);
	plan_run(test_with_include);
	return done_testing();
}
