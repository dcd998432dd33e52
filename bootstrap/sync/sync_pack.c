/*
 * The launcher's side of a sync: compare the local tree with the node's manifest and
 * write the stream that brings the node up to date. See sync.h and docs/sync.md.
 */
#include "bootstrap/sync/sync_internal.h"

#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/sha256.h"
#include "lib/util.h"
#include "lib/banned.h"

#define PACK_BLOCK 65536

struct pack {
	const char *src;
	unsigned flags;
	struct archive *a;
	struct buf path; /* scratch: a local path */
	struct buf name; /* scratch: an escaped member name */
	struct buf link; /* scratch: an escaped link target */
	struct sync_stats *st;
	uint64_t members; /* between the control and the end entry */
	char *blk;
};

static const char *local_path(struct pack *p, const char *rel)
{
	buf_reset(&p->path);
	if (p->flags & SYNC_FILE)
		buf_adds(&p->path, p->src);
	else
		buf_addf(&p->path, "%s/%s", p->src, rel);
	return p->path.p;
}

/* 1 if the node's entry r already is what the local entry l says. */
static int unchanged(struct pack *p, const struct sync_entry *l, const struct sync_entry *r)
{
	char hex[SHA256_HEX_LEN + 1];

	if (!r || l->type != r->type)
		return 0;
	switch (l->type) {
	case SYNC_T_DIR: return l->mode == r->mode;
	case SYNC_T_LINK: return l->target && r->target && !strcmp(l->target, r->target);
	case SYNC_T_FILE:
		if (l->mode != r->mode || l->size != r->size)
			return 0;
		if (l->mtime_ns == r->mtime_ns)
			return 1;
		/* Same size, another mtime: the content decides, if the node knows a hash. */
		if (!r->sha256[0] || sha256_file(local_path(p, l->path), hex))
			return 0;
		return !strcmp(hex, r->sha256);
	}
	return 0;
}

static int write_member(struct pack *p, const char *name, unsigned type, unsigned perm,
                        uint64_t size, int64_t mtime_ns, const char *target)
{
	struct archive_entry *e = archive_entry_new();
	int64_t sec, ns;
	int r = 0;

	if (!e)
		return error("out of memory");
	buf_reset(&p->name);
	buf_reset(&p->link);
	if (sync_escape(&p->name, name) || (target && sync_escape(&p->link, target))) {
		r = error("cannot encode the name '%s'", name);
		goto out;
	}
	archive_entry_copy_pathname(e, p->name.p);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, perm & 0777);
	archive_entry_set_size(e, (la_int64_t)size);
	sec = mtime_ns / 1000000000;
	ns = mtime_ns % 1000000000;
	if (ns < 0)
		sec--, ns += 1000000000;
	archive_entry_set_mtime(e, (time_t)sec, (long)ns);
	if (target)
		archive_entry_copy_symlink(e, p->link.p);
	if (archive_write_header(p->a, e) != ARCHIVE_OK)
		r = sync_archive_error(p->a, "cannot write the sync stream");
out:
	archive_entry_free(e);
	return r;
}

static int write_data(struct pack *p, const void *data, size_t len)
{
	la_ssize_t n = archive_write_data(p->a, data, len);

	if (n < 0 || (size_t)n != len)
		return sync_archive_error(p->a, "cannot write the sync stream");
	return 0;
}

/* 0 sent, 1 skipped because it vanished, or -errno. */
static int send_file(struct pack *p, const struct sync_entry *e)
{
	const char *path = local_path(p, e->path);
	int fd, r;
	uint64_t left;
	struct stat st;
	ssize_t n;

	/* The source of a single-file sync may be a symlink; a member of a tree never. */
	fd = open(path,
	          O_RDONLY | O_CLOEXEC | O_NONBLOCK | (p->flags & SYNC_FILE ? 0 : O_NOFOLLOW));
	if (fd < 0 && errno == ENOENT && !(p->flags & SYNC_FILE)) {
		warning("'%s' vanished before it could be synced", path);
		return 1;
	}
	if (fd < 0)
		return error_errno("cannot open '%s'", path);
	if (fstat(fd, &st) < 0) {
		r = error_errno("cannot stat '%s'", path);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = error("'%s' changed while it was being synced: not a file any more", path);
		goto out;
	}
	r = write_member(p, e->path, AE_IFREG, st.st_mode, (uint64_t)st.st_size,
	                 (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec, NULL);
	/* Send exactly the size in the header: a file that grows is cut there. */
	for (left = (uint64_t)st.st_size; !r && left; left -= (uint64_t)n) {
		n = read(fd, p->blk, left < PACK_BLOCK ? (size_t)left : PACK_BLOCK);
		if (n < 0 && errno == EINTR) {
			n = 0;
			continue;
		}
		if (n < 0)
			r = error_errno("cannot read '%s'", path);
		else if (n == 0)
			r = error("'%s' shrank while it was being synced", path);
		else
			r = write_data(p, p->blk, (size_t)n);
	}
	if (!r) {
		p->st->files++;
		p->st->bytes += (uint64_t)st.st_size;
	}
out:
	close(fd);
	return r;
}

static int send_entry(struct pack *p, const struct sync_entry *e)
{
	int r;

	switch (e->type) {
	case SYNC_T_FILE:
		r = send_file(p, e);
		if (r > 0)
			return 0; /* vanished: nothing sent */
		break;
	case SYNC_T_DIR:
		r = write_member(p, e->path, AE_IFDIR, e->mode, 0, e->mtime_ns, NULL);
		p->st->dirs += !r;
		break;
	case SYNC_T_LINK:
		r = write_member(p, e->path, AE_IFLNK, 0777, 0, e->mtime_ns, e->target);
		p->st->links += !r;
		break;
	default: return 0;
	}
	p->members += !r;
	return r;
}

static int write_text_member(struct pack *p, const char *name, const struct buf *text)
{
	int r = write_member(p, name, AE_IFREG, 0600, text->len, 0, NULL);

	return r ? r : write_data(p, text->p, text->len);
}

/*
 * The control text: what the node must delete. Paths go children first (reverse
 * order); a path whose type changed is deleted too, so that the new one can take it.
 */
static int control_text(struct pack *p, const struct sync_manifest *local,
                        const struct sync_manifest *remote, struct buf *out)
{
	const struct sync_entry *r, *l;
	size_t i;
	int ret;

	ret = buf_addf(out, "skiff-sync %d\nmode %s\n", SYNC_PROTO_VERSION,
	               p->flags & SYNC_FILE ? "file" : "dir");
	for (i = remote && !(p->flags & SYNC_FILE) ? remote->n : 0; i-- > 0 && !ret;) {
		r = &remote->v[i];
		l = sync_manifest_find(local, r->path);
		if (l && l->type == r->type)
			continue;
		ret = buf_adds(out, "delete ");
		if (!ret)
			ret = sync_escape(out, r->path);
		if (!ret)
			ret = buf_addch(out, '\n');
		p->st->deleted++;
	}
	if (!ret)
		ret = buf_adds(out, "end\n");
	return ret ? error("the list of paths to delete is too large") : 0;
}

int sync_pack(const char *src, const struct sync_manifest *remote, int out_fd, unsigned flags,
              struct sync_stats *st)
{
	struct sync_stats dummy;
	struct pack p = {.src = src, .flags = flags, .st = st ? st : &dummy};
	struct buf text = BUF_INIT(SYNC_MANIFEST_MAX);
	struct sync_manifest local;
	const struct sync_entry *e;
	size_t i;
	int r, opened = 0;

	memset(p.st, 0, sizeof(*p.st));
	sync_manifest_init(&local);
	buf_init(&p.path, strlen(src) + SYNC_PATH_MAX + 2);
	buf_init(&p.name, 4 * SYNC_PATH_MAX + 4);
	buf_init(&p.link, 4 * SYNC_PATH_MAX + 4);
	p.blk = xmalloc(PACK_BLOCK);
	r = sync_local_manifest(src, flags, &local, &p.st->skipped);
	if (!r)
		r = control_text(&p, &local, remote, &text);
	if (r)
		goto out;

	p.a = archive_write_new();
	if (!p.a) {
		r = error("out of memory");
		goto out;
	}
	if (archive_write_set_format_pax(p.a) != ARCHIVE_OK ||
	    ((flags & SYNC_GZIP) && archive_write_add_filter_gzip(p.a) != ARCHIVE_OK) ||
	    archive_write_set_bytes_in_last_block(p.a, 1) != ARCHIVE_OK) {
		r = sync_archive_error(p.a, "cannot set up the sync stream");
		goto out;
	}
	if (archive_write_open_fd(p.a, out_fd) != ARCHIVE_OK) {
		r = sync_archive_error(p.a, "cannot start the sync stream");
		goto out;
	}
	opened = 1;
	r = write_text_member(&p, SYNC_CONTROL_NAME, &text);
	for (i = 0; i < local.n && !r; i++) {
		e = &local.v[i];
		if (remote && unchanged(&p, e, sync_manifest_find(remote, e->path)))
			p.st->unchanged++;
		else
			r = send_entry(&p, e);
	}
	if (!r) {
		buf_reset(&text);
		buf_addf(&text, "entries %" PRIu64 "\n", p.members);
		r = write_text_member(&p, SYNC_END_NAME, &text);
	}
	if (!r && archive_write_close(p.a) != ARCHIVE_OK)
		r = sync_archive_error(p.a, "cannot finish the sync stream");
out:
	if (p.a) {
		/* Do not let free() flush a valid-looking tar after a failure. */
		if (r && opened)
			archive_write_fail(p.a);
		archive_write_free(p.a);
	}
	sync_manifest_release(&local);
	buf_release(&text);
	buf_release(&p.path);
	buf_release(&p.name);
	buf_release(&p.link);
	free(p.blk);
	return r;
}
