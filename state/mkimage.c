/*
 * A build tool, not part of skiff: writes the image of a new database of a schema
 * (state/images.h), made by the schema's own migrations through st_open(), for
 * state/images.c to embed. So a new database is byte for byte what the migrations make,
 * with no second copy of the schema to keep equal to them.
 *
 *   mkimage node OUT
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/log.h"
#include "lib/util.h"
#include "state/db.h"
#include "state/images.h"
#include "state/node.h"
#include "lib/banned.h"

/* This program makes the images: it has none (image == image_end: st_open() migrates). */
const unsigned char st_node_image[1];
extern const unsigned char st_node_image_end[1] __attribute__((alias("st_node_image")));

/* SQLite's header, to check what is written: the magic, and the page size at offset 16. */
#define SQLITE_MAGIC "SQLite format 3"
#define HEADER_LEN 100

/* Removes the scratch database (and its -wal, -shm) and its folder: a leftover, or done. */
static void scratch_remove(const char *dir, const char *path, const char *wal, const char *shm)
{
	unlink(path);
	unlink(wal);
	unlink(shm);
	rmdir(dir);
}

static int make(const struct st_schema *schema, const char *out)
{
	char *dir = xasprintf("%s.d", out), *path = xasprintf("%s/new.db", dir);
	char *wal = xasprintf("%s-wal", path), *shm = xasprintf("%s-shm", path);
	struct buf b = BUF_INIT(1 << 16);
	struct st_db *db;
	unsigned page;
	int r;

	scratch_remove(dir, path, wal, shm);
	if (mkdir(dir, 0700) < 0) {
		r = error_errno("cannot create '%s'", dir);
		goto out;
	}
	r = st_open(path, schema, 0, &db);
	if (r)
		goto out;
	/* Everything into the file itself: the image is one file, no WAL beside it. */
	r = st_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	st_close(db);
	if (r)
		goto out;
	r = buf_read_file(&b, path);
	if (r) {
		r = error("cannot read '%s': %s", path, strerror(-r));
		goto out;
	}
	page = b.len >= HEADER_LEN ? (unsigned)(unsigned char)b.p[16] << 8 | (unsigned char)b.p[17]
	                           : 0;
	if (b.len < HEADER_LEN || memcmp(b.p, SQLITE_MAGIC, sizeof(SQLITE_MAGIC)) || page < 512 ||
	    b.len % page) {
		r = error("'%s' is not a whole SQLite database (%zu bytes)", path, b.len);
		goto out;
	}
	r = write_file_atomic(out, b.p, b.len, 0644);
	if (r)
		r = error("cannot write '%s': %s", out, strerror(-r));
out:
	scratch_remove(dir, path, wal, shm);
	buf_release(&b);
	free(dir);
	free(path);
	free(wal);
	free(shm);
	return r ? 1 : 0;
}

int main(int argc, char **argv)
{
	log_set_prog("mkimage");
	if (argc != 3 || strcmp(argv[1], "node")) {
		fprintf(stderr, "usage: mkimage node OUT\n");
		return 2;
	}
	return make(&st_node_schema, argv[2]);
}
