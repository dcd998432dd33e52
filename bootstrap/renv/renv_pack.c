/*
 * working_dir and py_modules packages: content-hashed and packed by the launcher (a
 * compressed sync stream, so the node's unpacking is sync_unpack() with all its refusals),
 * or fetched from an https:// URL by the download manager (a .zip or .tar.gz, one
 * top-level directory stripped as Ray does). Unpacked into pkgs/dir/ID through a temp
 * dir and a rename, so a package dir that exists is complete.
 */
#include "bootstrap/renv/renv.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap/fetch/fetch.h"
#include "bootstrap/sync/sync.h"
#include "lib/log.h"
#include "lib/sha256.h"
#include "lib/util.h"
#include "lib/banned.h"

int renv_tree_hash(const char *dir, char hex[65])
{
	struct sync_manifest m;
	struct sha256_ctx c;
	struct buf line = BUF_INIT(0);
	size_t i;
	int r;

	sync_manifest_init(&m);
	r = sync_local_manifest(dir, 0, &m, NULL);
	sha256_init(&c);
	for (i = 0; i < m.n && !r; i++) {
		const struct sync_entry *e = &m.v[i];
		char fh[65] = "";

		if (!strcmp(e->path, SYNC_MANIFEST_NAME))
			continue;
		if (e->type == SYNC_T_FILE) {
			char *full = xasprintf("%s/%s", dir, e->path);

			r = sha256_file(full, fh);
			if (r)
				error("cannot read '%s': %s", full, strerror(-r));
			free(full);
		}
		buf_reset(&line);
		buf_addf(&line, "%c %o %s %s\n", e->type, e->mode & 0777,
		         e->type == SYNC_T_LINK ? e->target : fh, e->path);
		sha256_update(&c, line.p, line.len + 1); /* the NUL separates, paths hold '\n' */
	}
	sha256_final_hex(&c, hex);
	sync_manifest_release(&m);
	buf_release(&line);
	return r;
}

int renv_pack_dir(const char *dir, const char *path)
{
	char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
	char *parent = xstrdup(path);
	int fd, r;

	*strrchr(parent, '/') = '\0';
	r = mkdir_p(parent, 0700);
	if (r) {
		error("cannot create '%s': %s", parent, strerror(-r));
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = error_errno("cannot create '%s'", tmp);
		goto out;
	}
	r = sync_pack(dir, NULL, fd, SYNC_COMPRESS, NULL);
	if (!r && fsync(fd) < 0)
		r = error_errno("cannot write '%s'", tmp);
	close(fd);
	if (!r && rename(tmp, path) < 0)
		r = error_errno("cannot rename '%s'", tmp);
	if (r)
		unlink(tmp);
out:
	free(tmp);
	free(parent);
	return r;
}

/* Extracts any archive libarchive reads into dst (created), refusing unsafe paths. */
static int extract_any(const char *file, const char *dst, struct buf *err)
{
	struct archive *a = archive_read_new(), *w = archive_write_disk_new();
	struct archive_entry *e;
	int r = 0, rc;

	archive_read_support_filter_all(a);
	archive_read_support_format_all(a);
	/* Paths are made absolute under dst here, after the member's own was checked. */
	archive_write_disk_set_options(w, ARCHIVE_EXTRACT_SECURE_NODOTDOT |
	                                          ARCHIVE_EXTRACT_SECURE_SYMLINKS |
	                                          ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME);
	if (archive_read_open_filename(a, file, 1 << 16) != ARCHIVE_OK) {
		buf_addf(err, "cannot read archive: %s", archive_error_string(a));
		r = -EIO;
		goto out;
	}
	while ((rc = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		const char *why = NULL;
		char *name = xstrdup(archive_entry_pathname(e) ? archive_entry_pathname(e) : "");
		char *full;
		const void *blk;
		size_t len;
		int64_t off;

		while (len = strlen(name), len > 1 && name[len - 1] == '/')
			name[len - 1] = '\0';
		if (!*name || starts_with(name, "__MACOSX") || !strcmp(name, ".")) {
			free(name);
			continue;
		}
		/* The archive is untrusted: a relative path with no "..", nothing absolute. */
		if (sync_path_check(starts_with(name, "./") ? name + 2 : name, &why)) {
			buf_addf(err, "archive member '%.200s' refused: %s", name, why);
			free(name);
			r = -EPERM;
			break;
		}
		full = xasprintf("%s/%s", dst, name);
		archive_entry_set_pathname(e, full);
		free(full);
		if (archive_entry_hardlink(e)) {
			buf_addf(err, "archive member '%.200s' is a hard link (refused)", name);
			r = -EPERM;
		} else if (archive_write_header(w, e) != ARCHIVE_OK) {
			buf_addf(err, "cannot extract '%.200s': %s", name, archive_error_string(w));
			r = -EIO;
		} else {
			while ((rc = archive_read_data_block(a, &blk, &len, &off)) == ARCHIVE_OK)
				if (archive_write_data_block(w, blk, len, off) != ARCHIVE_OK)
					break;
			if (rc != ARCHIVE_EOF) {
				buf_addf(err, "cannot extract '%.200s': %s", name,
				         archive_error_string(a));
				r = -EIO;
			}
			archive_write_finish_entry(w);
		}
		free(name);
		if (r)
			break;
	}
	if (!r && rc != ARCHIVE_EOF) {
		buf_addf(err, "corrupt archive: %s", archive_error_string(a));
		r = -EIO;
	}
out:
	archive_read_free(a);
	archive_write_close(w);
	archive_write_free(w);
	return r;
}

/* The one subdirectory of dir when it holds nothing else, else NULL. */
static char *single_subdir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char *only = NULL;
	int n = 0;

	if (!d)
		return NULL;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		n++;
		free(only);
		only = de->d_type == DT_DIR ? xasprintf("%s/%s", dir, de->d_name) : NULL;
	}
	closedir(d);
	if (n != 1) {
		free(only);
		return NULL;
	}
	return only;
}

static char *url_map_path(const char *home, const char *url)
{
	char h[65];

	sha256_hex(url, strlen(url), h);
	return xasprintf("%s/pkgs/url/%s", home, h);
}

char *renv_pkg_ready(const char *home, const char *ref)
{
	struct buf id = BUF_INIT(256);
	char *dir = NULL;
	struct stat st;

	if (starts_with(ref, "sha256:")) {
		dir = xasprintf("%s/pkgs/dir/%.64s", home, ref + 7);
	} else {
		char *map = url_map_path(home, ref);

		if (!buf_read_file(&id, map)) {
			buf_rtrim(&id);
			if (id.len == 64 && !strchr(id.p, '/'))
				dir = xasprintf("%s/pkgs/dir/%s", home, id.p);
		}
		free(map);
	}
	buf_release(&id);
	if (dir && (stat(dir, &st) || !S_ISDIR(st.st_mode))) {
		free(dir);
		dir = NULL;
	}
	return dir;
}

int renv_pkg_hold(const char *home, const char *ref, char **dir)
{
	char *lock;
	int fd;

	*dir = renv_pkg_ready(home, ref);
	if (!*dir)
		return -ENOENT;
	/* pkgs/dir/<id> -> pkgs/<id>.lock */
	lock = xasprintf("%s/pkgs/%s.lock", home, strrchr(*dir, '/') + 1);
	fd = renv_lock(lock, LOCK_SH);
	free(lock);
	if (fd < 0) {
		free(*dir);
		*dir = NULL;
		return fd;
	}
	/* Evicted between the look and the lock: not ready (and no lock kept). */
	if (access(*dir, F_OK)) {
		close(fd);
		free(*dir);
		*dir = NULL;
		return -ENOENT;
	}
	futimens(fd, NULL); /* the last use, for LRU eviction */
	return fd;
}

/* Splits "URL#sha256=HEX" into the URL and the pin. */
static char *url_pin(const char *ref, char pin[65])
{
	const char *h = strstr(ref, "#sha256=");

	pin[0] = '\0';
	if (!h)
		return xstrdup(ref);
	xsnprintf(pin, 65, "%.64s", h + 8);
	return xstrndup(ref, (size_t)(h - ref));
}

int renv_fetch(const char *home, const char *ref, const struct renv_conf *c, char **file,
               struct buf *err)
{
	struct fetch_opts o = FETCH_OPTS_INIT;
	char pin[65], *url = url_pin(ref, pin), *cache = xasprintf("%s/downloads", home);
	int r;

	o.ca_file = c ? c->ca_file : NULL;
	o.sha256 = pin[0] ? pin : NULL;
	r = fetch_url(url, cache, &o, file, err);
	free(url);
	free(cache);
	return r;
}

int renv_pkg_ensure(const char *home, const char *ref, const struct renv_conf *c, char **dir,
                    struct buf *err)
{
	char *src = NULL, *final = NULL, *tmp = NULL, *lock = NULL, *top = NULL, id[65];
	int r = 0, fd = -1, lfd = -1;

	*dir = renv_pkg_ready(home, ref);
	if (*dir)
		return 0;
	if (starts_with(ref, "sha256:")) {
		xsnprintf(id, sizeof(id), "%.64s", ref + 7);
		src = xasprintf("%s/pkgs/tgz/%s.tar.gz", home, id);
	} else {
		r = renv_fetch(home, ref, c, &src, err);
		if (r)
			goto out;
		xsnprintf(id, sizeof(id), "%.64s", strrchr(src, '/') + 1);
	}
	final = xasprintf("%s/pkgs/dir/%s", home, id);
	tmp = xasprintf("%s.tmp.%ld", final, (long)getpid());
	lock = xasprintf("%s/pkgs/%s.lock", home, id);
	free(top);
	top = xasprintf("%s/pkgs/dir", home);
	mkdir_p(top, 0700);
	lfd = renv_lock(lock, LOCK_EX);
	if (lfd < 0) {
		r = lfd;
		buf_addf(err, "cannot lock '%s': %s", lock, strerror(-r));
		goto out;
	}
	if (access(final, F_OK)) {
		glob_t g;
		size_t i;

		/* Under the lock, any temp dir of this package is a killed unpack's. */
		free(top);
		top = xasprintf("%s.tmp.*", final);
		if (!glob(top, GLOB_NOSORT, NULL, &g)) {
			for (i = 0; i < g.gl_pathc; i++)
				rm_rf(g.gl_pathv[i]);
			globfree(&g);
		}
		if (starts_with(ref, "sha256:")) {
			char got[65];

			fd = open(src, O_RDONLY | O_CLOEXEC);
			if (fd < 0) {
				r = -errno;
				buf_addf(err, "package %s was not shipped to this node (%s)", ref,
				         strerror(errno));
				goto out;
			}
			r = sync_unpack(fd, tmp, SYNC_NO_STATE | SYNC_COMPRESS, 0, NULL);
			if (r) {
				buf_addf(err, "cannot unpack '%s'", src);
				goto out;
			}
			free(top);
			top = xasprintf("%s/%s", tmp, SYNC_MANIFEST_NAME);
			unlink(top);
			if (renv_tree_hash(tmp, got) || strcmp(got, id)) {
				r = -EBADMSG;
				buf_addf(err, "package %s unpacked to different contents (%s)", ref,
				         got);
				goto out;
			}
		} else {
			char *sub;

			r = extract_any(src, tmp, err);
			if (r)
				goto out;
			sub = single_subdir(tmp);
			if (sub) {
				free(top);
				top = xasprintf("%s.top", tmp);
				if (rename(sub, top) == 0) {
					rmdir(tmp);
					rename(top, tmp);
				}
				free(sub);
			}
		}
		if (rename(tmp, final) < 0) {
			r = -errno;
			buf_addf(err, "cannot rename '%s': %s", tmp, strerror(errno));
			goto out;
		}
	}
	if (!starts_with(ref, "sha256:")) {
		char *map = url_map_path(home, ref), *mdir = xstrdup(map);

		*strrchr(mdir, '/') = '\0';
		mkdir_p(mdir, 0700);
		r = write_file_atomic(map, id, 64, 0600);
		if (r)
			buf_addf(err, "cannot write '%s': %s", map, strerror(-r));
		free(map);
		free(mdir);
	}
	if (!r)
		*dir = xstrdup(final);
out:
	if (r && tmp)
		rm_rf(tmp);
	if (fd >= 0)
		close(fd);
	if (lfd >= 0)
		close(lfd);
	free(src);
	free(final);
	free(tmp);
	free(lock);
	free(top);
	return r;
}
