/*
 * A new database written from its schema's image (state/images.h): the same schema,
 * version and settings as the migrations make, never seen half-written, and the
 * migrations still there for a file that exists empty.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/buf.h"
#include "lib/util.h"
#include "state/db.h"
#include "state/images.h"
#include "state/node.h"
#include "tests/unit/harness.h"

static char dir[] = "/tmp/skiff-unit-image.XXXXXX";

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* The node schema without its image: what a new database was before, every migration. */
static struct st_schema plain(void)
{
	struct st_schema s = st_node_schema;

	s.image = s.image_end = NULL;
	return s;
}

/* Everything that says what a database is: its schema's rows and its settings. */
static void describe(struct st_db *db, struct buf *out)
{
	static const char *const q[] = {
	        "SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name",
	        "PRAGMA user_version",
	        "PRAGMA journal_mode",
	        "PRAGMA page_size",
	        "PRAGMA auto_vacuum",
	        "PRAGMA encoding",
	};
	size_t i;

	buf_reset(out);
	for (i = 0; i < ARRAY_SIZE(q); i++) {
		sqlite3_stmt *st = st_prepare(db, q[i]);
		int c;

		while (st && st_step(db, st) == 1) {
			for (c = 0; c < sqlite3_column_count(st); c++)
				buf_addf(out, "%s|",
				         st_col_text(st, c) ? st_col_text(st, c) : "NULL");
			buf_adds(out, "\n");
		}
		if (st)
			sqlite3_reset(st);
	}
}

/* Names in dir other than the ones given (NULL-terminated): what a creation left behind. */
static int others(const char *const *names)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0, i, known;

	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		for (known = 0, i = 0; names[i]; i++)
			known |= !strcmp(e->d_name, names[i]);
		if (!known) {
			printf("# left: %s\n", e->d_name);
			n++;
		}
	}
	if (d)
		closedir(d);
	return n;
}

static void test_image_is_the_migrations(void)
{
	static const char *const mine[] = {"img.db",     "img.db-wal", "img.db-shm", "mig.db",
	                                   "mig.db-wal", "mig.db-shm", NULL};
	struct st_schema s = plain();
	char *img = xasprintf("%s/img.db", dir), *mig = xasprintf("%s/mig.db", dir);
	struct buf a = BUF_INIT(0), b = BUF_INIT(0);
	struct st_db *db;
	struct stat st;
	sqlite3_stmt *q;

	ok(st_node_schema.image && st_node_schema.image_end > st_node_schema.image,
	   "the node schema has an image (%zu bytes)",
	   (size_t)(st_node_schema.image_end - st_node_schema.image));
	ok(!st_open(img, &st_node_schema, 0, &db), "a new database from the image");
	ok(!stat(img, &st) && (st.st_mode & 0777) == 0600, "it is 0600");
	is_int(st_version(db), st_node_schema.n_migrations, "at the last version");
	ok(!st_integrity_check(db), "integrity_check ok");
	describe(db, &a);
	/* Usable as the migrations' own: a job in, read back. */
	ok(!st_exec(db, "INSERT INTO jobs (status, submitted_at) VALUES (1, 1.5)"), "a row in");
	q = st_prepare(db, "SELECT count(*) FROM jobs WHERE status < 4");
	ok(q && st_step(db, q) == 1 && sqlite3_column_int(q, 0) == 1, "and read back");
	if (q)
		sqlite3_reset(q);
	st_close(db);

	ok(!st_open(mig, &s, 0, &db), "a new database through every migration");
	describe(db, &b);
	st_close(db);
	ok(a.len > 0 && !strcmp(a.p, b.p), "the same schema, version and settings");
	if (strcmp(a.p, b.p))
		printf("# image:\n%s# migrations:\n%s", a.p, b.p);
	is_int(others(mine), 0, "no temporary file left");
	buf_release(&a);
	buf_release(&b);
	free(img);
	free(mig);
}

static void test_existing_names_are_left(void)
{
	char *empty = xasprintf("%s/empty.db", dir), *link = xasprintf("%s/link.db", dir);
	char *none = xasprintf("%s/none.db", dir);
	struct st_db *db;
	struct stat st;
	int fd;

	/* An empty file (a creation cut short before the image): the migrations take it. */
	fd = open(empty, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ok(fd >= 0 && !close(fd), "an empty file");
	ok(!st_open(empty, &st_node_schema, 0, &db), "opens");
	is_int(st_version(db), st_node_schema.n_migrations, "migrated to the last version");
	st_close(db);
	/* A dangling link is not replaced by the image: sqlite says what it says. */
	ok(!symlink("nowhere", link), "a dangling link");
	st_open(link, &st_node_schema, 0, &db);
	ok(!lstat(link, &st) && S_ISLNK(st.st_mode), "still a link");
	st_close(db);
	/* Read-only: never created. */
	ok(st_open(none, &st_node_schema, ST_READONLY, &db) < 0 && !db,
	   "a read-only open of no file fails");
	ok(access(none, F_OK) < 0 && errno == ENOENT, "and creates none");
	free(none);
	free(empty);
	free(link);
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	plan_run(test_image_is_the_migrations);
	plan_run(test_existing_names_are_left);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return done_testing();
}
