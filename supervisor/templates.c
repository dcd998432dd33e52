/*
 * ~/sky_templates on a node (supervisor/templates.h). The scripts are files of their own
 * in supervisor/templates/, embedded as they are (.incbin, paths from the top of the
 * tree, where make runs; the Makefile makes this object depend on them).
 */
#include "supervisor/templates.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/log.h"
#include "lib/sha256.h"
#include "lib/util.h"
#include "lib/banned.h"

__asm__(".section .rodata.skiff_templates,\"a\"\n"
        "node_tpl_ray_start:\n"
        ".incbin \"supervisor/templates/ray/start_cluster\"\n"
        "node_tpl_ray_start_end:\n"
        "node_tpl_ray_stop:\n"
        ".incbin \"supervisor/templates/ray/stop_cluster\"\n"
        "node_tpl_ray_stop_end:\n"
        ".previous\n");

extern const unsigned char node_tpl_ray_start[], node_tpl_ray_start_end[];
extern const unsigned char node_tpl_ray_stop[], node_tpl_ray_stop_end[];

#define RECORD_NAME "sky_templates.sha256"
#define RECORD_MAX (64 * 1024)

void node_templates(struct node_template t[NODE_TEMPLATES])
{
	t[0] = (struct node_template){"ray/start_cluster", node_tpl_ray_start,
	                              (size_t)(node_tpl_ray_start_end - node_tpl_ray_start)};
	t[1] = (struct node_template){"ray/stop_cluster", node_tpl_ray_stop,
	                              (size_t)(node_tpl_ray_stop_end - node_tpl_ray_stop)};
}

/* The record's digest for path ("HEX  PATH" lines), into hex; 0 if it has one. */
static int recorded(const struct buf *rec, const char *path, char hex[SHA256_HEX_LEN + 1])
{
	const char *l = rec->p, *nl;
	size_t plen = strlen(path);

	for (; l && *l; l = nl ? nl + 1 : NULL) {
		nl = strchr(l, '\n');
		if ((nl ? (size_t)(nl - l) : strlen(l)) != SHA256_HEX_LEN + 2 + plen ||
		    memcmp(l + SHA256_HEX_LEN, "  ", 2) ||
		    memcmp(l + SHA256_HEX_LEN + 2, path, plen))
			continue;
		memcpy(hex, l, SHA256_HEX_LEN);
		hex[SHA256_HEX_LEN] = '\0';
		if (sha256_hex_valid(hex))
			return 0;
	}
	return -ENOENT;
}

/*
 * The digest of what path holds, if it is a regular file (not followed when a symlink,
 * never waited on when a FIFO): 0, -ENOENT when there is nothing or an empty file (what
 * a crash soon after a write without fsync may leave), -EPERM when it is something else
 * than a file.
 */
static int file_digest(const char *path, char hex[SHA256_HEX_LEN + 1])
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), r;

	if (fd < 0)
		return errno == ENOENT ? -ENOENT : errno == ELOOP ? -EPERM : -errno;
	r = fstat(fd, &st) < 0     ? -errno
	    : !S_ISREG(st.st_mode) ? -EPERM
	    : !st.st_size          ? -ENOENT
	                           : sha256_fd(fd, hex);
	close(fd);
	return r;
}

int node_templates_install(const char *home, const char *state_dir)
{
	struct buf rec = BUF_INIT(RECORD_MAX), want = BUF_INIT(RECORD_MAX);
	struct node_template t[NODE_TEMPLATES];
	char *rec_path = NULL, *path = NULL;
	size_t i;
	int r, wrote = 0;

	if (!home || !state_dir)
		return -ENOENT;
	node_templates(t);
	rec_path = xasprintf("%s/%s", state_dir, RECORD_NAME);
	r = buf_read_file(&rec, rec_path);
	if (r && r != -ENOENT)
		buf_reset(&rec); /* unreadable: as if none, so only missing files are written */
	for (i = 0; i < NODE_TEMPLATES; i++) {
		char ours[SHA256_HEX_LEN + 1], cur[SHA256_HEX_LEN + 1], was[SHA256_HEX_LEN + 1];
		char *slash;
		int have_was;

		sha256_hex(t[i].data, t[i].len, ours);
		free(path);
		path = xasprintf("%s/sky_templates/%s", home, t[i].path);
		r = file_digest(path, cur);
		have_was = !recorded(&rec, t[i].path, was);
		if (r == -EPERM || (!r && strcmp(cur, ours) && (!have_was || strcmp(cur, was)))) {
			/* The user's: keep it, and what the record said. */
			debug("keeping '%s': skiff did not write what it holds", path);
			if (have_was)
				buf_addf(&want, "%s  %s\n", was, t[i].path);
			continue;
		}
		if (r && r != -ENOENT)
			goto fail;
		if (r || strcmp(cur, ours)) {
			slash = strrchr(path, '/');
			*slash = '\0';
			r = mkdir_p(path, 0700);
			*slash = '/';
			if (!r)
				r = write_file_quick(path, t[i].data, t[i].len, 0700);
			if (!r && chmod(path, 0700) < 0) /* whatever the umask */
				r = -errno;
			if (r)
				goto fail;
			wrote++;
		}
		buf_addf(&want, "%s  %s\n", ours, t[i].path);
	}
	r = 0;
	if (rec.len != want.len || memcmp(rec.p, want.p, want.len)) {
		r = write_file_quick(rec_path, want.p, want.len, 0600);
		if (r)
			warning("cannot write '%s': %s", rec_path, strerror(-r));
	}
	goto out;
fail:
	warning("cannot install '%s' (SkyPilot's Ray templates): %s", path, strerror(-r));
out:
	free(path);
	free(rec_path);
	buf_release(&rec);
	buf_release(&want);
	return r ? r : wrote;
}
