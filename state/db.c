#include "state/db.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/proto.h"
#include "lib/util.h"
#include "lib/banned.h"

#define ST_BUSY_TIMEOUT_MS 30000
#define ST_CACHE_SIZE 128

struct st_cached {
	const char *sql; /* the caller's string literal: compared by pointer, then by text */
	sqlite3_stmt *stmt;
};

struct st_db {
	sqlite3 *h;
	char *path;
	const char *name;
	struct st_cached cache[ST_CACHE_SIZE];
	int n_cache;
	int in_tx;
	int fault_armed; /* this transaction ran the statement the fault hook waits for */
};

/*
 * A test hook for a failure no real peer produces on demand: SKIFF_TEST_FAIL_COMMIT=N:SQL
 * makes the next N commits of transactions that ran a statement starting with SQL fail,
 * as a full disk would (rolled back, an error returned). docs/testing.md lists it.
 */
static struct {
	int read, left;
	char prefix[128];
} fault;

static void fault_load(void)
{
	const char *v = getenv("SKIFF_TEST_FAIL_COMMIT"), *colon;
	long n;
	char num[16];

	fault.read = 1;
	if (!v || !(colon = strchr(v, ':')) || (size_t)(colon - v) >= sizeof(num))
		return;
	memcpy(num, v, (size_t)(colon - v));
	num[colon - v] = '\0';
	if (parse_long(num, 1, 1000000, &n))
		return;
	fault.left = (int)n;
	xsnprintf(fault.prefix, sizeof(fault.prefix), "%.*s", (int)sizeof(fault.prefix) - 1,
	          colon + 1);
}

static void fault_note(struct st_db *db, const char *sql)
{
	if (!fault.read)
		fault_load();
	if (fault.left > 0 && db->in_tx && *fault.prefix && starts_with(sql, fault.prefix))
		db->fault_armed = 1;
}

/*
 * sqlite's default busy handler sleeps up to 100 ms at a time; with hundreds of short
 * writers (one per job shim) that turns into seconds of idle waiting. Sleep briefly with
 * jitter instead, up to the same overall timeout.
 */
static void busy_pause(int count)
{
	struct timespec ts;
	long us = 200 + (random() % 800) + (count > 100 ? 2000 : count * 20);

	ts.tv_sec = 0;
	ts.tv_nsec = us * 1000;
	nanosleep(&ts, NULL);
}

static int busy_handler(void *arg, int count)
{
	(void)arg;
	if ((int64_t)count * 1000 > (int64_t)ST_BUSY_TIMEOUT_MS * 1000 / 2 + 1000000)
		return 0;
	busy_pause(count);
	return 1;
}

static int db_error(struct st_db *db, const char *what)
{
	error("%s database '%s': %s: %s", db->name, db->path, what, sqlite3_errmsg(db->h));
	return -EIO;
}

sqlite3 *st_handle(struct st_db *db)
{
	return db->h;
}

const char *st_path(struct st_db *db)
{
	return db->path;
}

int st_exec(struct st_db *db, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(db->h, sql, NULL, NULL, &msg) != SQLITE_OK) {
		error("%s database '%s': %s", db->name, db->path, msg ? msg : "error");
		sqlite3_free(msg);
		return -EIO;
	}
	return 0;
}

sqlite3_stmt *st_prepare(struct st_db *db, const char *sql)
{
	sqlite3_stmt *st;
	int i;

	fault_note(db, sql);
	for (i = 0; i < db->n_cache; i++) {
		if (db->cache[i].sql == sql || !strcmp(db->cache[i].sql, sql)) {
			st = db->cache[i].stmt;
			sqlite3_reset(st);
			sqlite3_clear_bindings(st);
			return st;
		}
	}
	if (sqlite3_prepare_v3(db->h, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
		db_error(db, "cannot prepare statement");
		return NULL;
	}
	/*
	 * Callers hold on to cached statements, so none may be evicted: the set of SQL texts
	 * is fixed in the source and far below the cache size.
	 */
	if (db->n_cache == ST_CACHE_SIZE) {
		sqlite3_finalize(st);
		error("%s database: BUG: more than %d distinct statements", db->name,
		      ST_CACHE_SIZE);
		return NULL;
	}
	db->cache[db->n_cache].sql = sql;
	db->cache[db->n_cache].stmt = st;
	db->n_cache++;
	return st;
}

int st_step(struct st_db *db, sqlite3_stmt *st)
{
	int r = sqlite3_step(st);

	if (r == SQLITE_ROW)
		return 1;
	if (r == SQLITE_DONE)
		return 0;
	db_error(db, "query failed");
	sqlite3_reset(st);
	return -EIO;
}

int st_step_done(struct st_db *db, sqlite3_stmt *st)
{
	int r = st_step(db, st);

	sqlite3_reset(st);
	if (r == 1)
		return error("%s database: BUG: statement returned a row", db->name);
	return r;
}

void st_bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

void st_bind_int(sqlite3_stmt *st, int i, int64_t v)
{
	sqlite3_bind_int64(st, i, v);
}

void st_bind_double(sqlite3_stmt *st, int i, double v)
{
	sqlite3_bind_double(st, i, v);
}

void st_bind_blob(sqlite3_stmt *st, int i, const void *p, size_t n)
{
	sqlite3_bind_blob64(st, i, p, n, SQLITE_TRANSIENT);
}

const char *st_col_text(sqlite3_stmt *st, int i)
{
	const unsigned char *s = sqlite3_column_text(st, i);

	return s ? (const char *)s : "";
}

int st_col_is_null(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL;
}

static const size_t col_size[] = {
        [ST_COL_TEXT] = sizeof(char *),
        [ST_COL_INT] = sizeof(int),
        [ST_COL_INT64] = sizeof(int64_t),
        [ST_COL_DOUBLE] = sizeof(double),
        [ST_COL_BLOB] = sizeof(char *),
        [ST_COL_TEXT_NULL] = sizeof(char *),
        [ST_COL_CHARS] = 0, /* any: an array */
};

void st_row_load(sqlite3_stmt *st, const struct st_col *cols, size_t n, void *row)
{
	char *base = row;
	size_t i;

	for (i = 0; i < n; i++) {
		char *m = base + cols[i].off;
		int iv;
		int64_t lv;
		double dv;
		char *sv;
		size_t len;

		if (col_size[cols[i].type] ? cols[i].size != col_size[cols[i].type]
		                           : cols[i].size < 2)
			die("BUG: column '%s' is %zu bytes in its struct, not %zu", cols[i].name,
			    cols[i].size, col_size[cols[i].type]);
		switch (cols[i].type) {
		case ST_COL_TEXT:
			sv = xstrdup(st_col_text(st, (int)i));
			memcpy(m, &sv, sizeof(sv));
			break;
		case ST_COL_INT:
			iv = sqlite3_column_int(st, (int)i);
			memcpy(m, &iv, sizeof(iv));
			break;
		case ST_COL_INT64:
			lv = sqlite3_column_int64(st, (int)i);
			memcpy(m, &lv, sizeof(lv));
			break;
		case ST_COL_DOUBLE:
			dv = sqlite3_column_double(st, (int)i);
			memcpy(m, &dv, sizeof(dv));
			break;
		case ST_COL_TEXT_NULL:
			sv = st_col_is_null(st, (int)i) ? NULL : xstrdup(st_col_text(st, (int)i));
			memcpy(m, &sv, sizeof(sv));
			break;
		case ST_COL_CHARS:
			xsnprintf(m, cols[i].size, "%.*s", (int)cols[i].size - 1,
			          st_col_text(st, (int)i));
			break;
		case ST_COL_BLOB:
			len = (size_t)sqlite3_column_bytes(st, (int)i);
			sv = xmalloc(len + 1);
			if (len)
				memcpy(sv, sqlite3_column_blob(st, (int)i), len);
			sv[len] = '\0';
			memcpy(m, &sv, sizeof(sv));
			memcpy(base + cols[i].len_off, &len, sizeof(len));
			break;
		}
	}
}

void st_row_encode(const struct st_col *cols, size_t n, const void *row, struct msg *m)
{
	const char *base = row;
	size_t i;

	for (i = 0; i < n; i++) {
		const char *p = base + cols[i].off;
		int iv;
		int64_t lv;
		double dv;
		char *sv;

		switch (cols[i].type) {
		case ST_COL_TEXT:
		case ST_COL_TEXT_NULL:
			memcpy(&sv, p, sizeof(sv));
			/* A value the frames cannot hold (a NUL in it) is left out: "" there. */
			if (sv)
				msg_add(m, cols[i].name, sv);
			break;
		case ST_COL_CHARS: msg_add(m, cols[i].name, p); break;
		case ST_COL_INT:
			memcpy(&iv, p, sizeof(iv));
			msg_add_int(m, cols[i].name, iv);
			break;
		case ST_COL_INT64:
			memcpy(&lv, p, sizeof(lv));
			msg_add_int(m, cols[i].name, lv);
			break;
		case ST_COL_DOUBLE:
			memcpy(&dv, p, sizeof(dv));
			msg_addf(m, cols[i].name, "%.17g", dv);
			break;
		case ST_COL_BLOB: break; /* bytes stay where they are stored */
		}
	}
}

void st_row_decode(const struct st_col *cols, size_t n, const struct msg *m, void *row)
{
	char *base = row;
	size_t i, k = 0;

	for (i = 0; i < n; i++) {
		const char *v;

		/* st_row_encode() writes the columns in order: the next field is this one's. */
		while (k < m->n && !strcmp(m->keys[k], "row"))
			k++;
		if (k < m->n && !strcmp(m->keys[k], cols[i].name))
			v = m->vals[k++];
		else
			v = msg_get(m, cols[i].name);
		char *p = base + cols[i].off, *sv;
		int64_t lv = 0;
		double dv = 0;
		int iv;
		size_t len = 0;

		switch (cols[i].type) {
		case ST_COL_TEXT:
			sv = xstrdup(v ? v : "");
			memcpy(p, &sv, sizeof(sv));
			break;
		case ST_COL_TEXT_NULL:
			sv = v ? xstrdup(v) : NULL;
			memcpy(p, &sv, sizeof(sv));
			break;
		case ST_COL_CHARS:
			xsnprintf(p, cols[i].size, "%.*s", (int)cols[i].size - 1, v ? v : "");
			break;
		case ST_COL_INT:
			lv = v ? strtoll(v, NULL, 10) : 0;
			iv = lv < INT_MIN || lv > INT_MAX ? 0 : (int)lv;
			memcpy(p, &iv, sizeof(iv));
			break;
		case ST_COL_INT64:
			lv = v ? strtoll(v, NULL, 10) : 0;
			memcpy(p, &lv, sizeof(lv));
			break;
		case ST_COL_DOUBLE:
			dv = v ? strtod(v, NULL) : 0;
			memcpy(p, &dv, sizeof(dv));
			break;
		case ST_COL_BLOB:
			sv = xcalloc(1, 1);
			memcpy(p, &sv, sizeof(sv));
			memcpy(base + cols[i].len_off, &len, sizeof(len));
			break;
		}
	}
}

void st_row_free(const struct st_col *cols, size_t n, void *row)
{
	char *base = row, *sv;
	size_t i;

	for (i = 0; i < n; i++) {
		if (cols[i].type != ST_COL_TEXT && cols[i].type != ST_COL_BLOB &&
		    cols[i].type != ST_COL_TEXT_NULL)
			continue;
		memcpy(&sv, base + cols[i].off, sizeof(sv));
		free(sv);
		sv = NULL;
		memcpy(base + cols[i].off, &sv, sizeof(sv));
	}
}

char *st_cols_text(const struct st_col *cols, size_t n)
{
	struct buf b = BUF_INIT(0);
	size_t i;

	for (i = 0; i < n; i++)
		buf_addf(&b, "%s%s", i ? ", " : "", cols[i].name);
	return buf_detach(&b, NULL);
}

int64_t st_changes(struct st_db *db)
{
	return sqlite3_changes64(db->h);
}

int64_t st_last_rowid(struct st_db *db)
{
	return sqlite3_last_insert_rowid(db->h);
}

int st_begin(struct st_db *db)
{
	int r;

	if (db->in_tx)
		return error("%s database: BUG: nested transaction", db->name);
	r = st_exec(db, "BEGIN IMMEDIATE");
	if (!r)
		db->in_tx = 1;
	return r;
}

int st_in_tx(const struct st_db *db)
{
	return db->in_tx;
}

int st_commit(struct st_db *db)
{
	int r;

	if (db->fault_armed && fault.left > 0) {
		fault.left--;
		db->fault_armed = 0;
		st_rollback(db);
		return error("%s database '%s': cannot commit: fault injected by "
		             "SKIFF_TEST_FAIL_COMMIT",
		             db->name, db->path),
		       -EIO;
	}
	db->fault_armed = 0;
	r = st_exec(db, "COMMIT");

	if (r) {
		st_rollback(db);
		return r;
	}
	db->in_tx = 0;
	return 0;
}

void st_rollback(struct st_db *db)
{
	db->fault_armed = 0;
	if (!sqlite3_get_autocommit(db->h))
		sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
	db->in_tx = 0;
}

int st_version(struct st_db *db)
{
	sqlite3_stmt *st = st_prepare(db, "PRAGMA user_version");
	int v = -1;

	if (st && st_step(db, st) == 1)
		v = sqlite3_column_int(st, 0);
	if (st)
		sqlite3_reset(st);
	return v;
}

int st_integrity_check(struct st_db *db)
{
	sqlite3_stmt *st = st_prepare(db, "PRAGMA integrity_check");
	int r = -EIO;

	if (st && st_step(db, st) == 1 && !strcmp(st_col_text(st, 0), "ok"))
		r = 0;
	if (st)
		sqlite3_reset(st);
	return r;
}

static int migrate(struct st_db *db, const struct st_schema *schema)
{
	int v, i, r;
	char pragma[64];

	/* The common case, an up-to-date file, needs no write lock. */
	v = st_version(db);
	if (v == schema->n_migrations)
		return 0;
	r = st_begin(db);
	if (r)
		return r;
	v = st_version(db);
	if (v < 0) {
		r = -EIO;
		goto fail;
	}
	if (v > schema->n_migrations) {
		r = error("%s database '%s' has schema version %d, newer than this skiff knows "
		          "(%d): upgrade skiff",
		          db->name, db->path, v, schema->n_migrations);
		goto fail;
	}
	if (v == schema->n_migrations) {
		st_rollback(db);
		return 0;
	}
	for (i = v; i < schema->n_migrations; i++) {
		r = st_exec(db, schema->migrations[i]);
		if (r) {
			error("%s database '%s': migration %d -> %d failed", db->name, db->path, i,
			      i + 1);
			goto fail;
		}
	}
	xsnprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d", schema->n_migrations);
	r = st_exec(db, pragma);
	if (r)
		goto fail;
	return st_commit(db);
fail:
	st_rollback(db);
	return r;
}

/*
 * A brief connection's memory (st_config_brief()). sqlite's defaults carve a 20-page
 * page-cache block (90,112 bytes) and a 1,200 x 40-byte lookaside at each open, and
 * write every slot's header, so both are faulted in whole; a brief connection reads a
 * handful of pages and runs a few statements.
 */
#define ST_BRIEF_PCACHE_PAGES 0    /* pages allocated one by one, as read */
#define ST_BRIEF_LOOKASIDE_SLOT 64 /* bytes per lookaside slot */
#define ST_BRIEF_LOOKASIDE_SLOTS 16

void st_config_brief(void)
{
	/* Both fail (SQLITE_MISUSE) once sqlite is initialized: the defaults then stay. */
	sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)NULL, 0, ST_BRIEF_PCACHE_PAGES);
	sqlite3_config(SQLITE_CONFIG_LOOKASIDE, ST_BRIEF_LOOKASIDE_SLOT, ST_BRIEF_LOOKASIDE_SLOTS);
}

/*
 * A database that does not exist yet, created 0600 (sqlite gives -wal and -shm the file's
 * mode). From the schema's image when it has one: written whole to a file of this call's
 * own, synced, then linked to its name, so that nothing ever opens it half-written, and a
 * process that lost the race to another keeps the other's. Else, or where the image cannot
 * be written (no hard links, a full disk), an empty file, which the migrations take from
 * version 0. A name that exists, whatever it is, is left to sqlite, as is saying why none
 * can be made.
 */
static void create_new(const char *path, const struct st_schema *schema)
{
	static unsigned seq;
	size_t len = schema->image ? (size_t)(schema->image_end - schema->image) : 0;
	struct stat st;
	int fd;

	if (!lstat(path, &st) || errno != ENOENT)
		return;
	if (len) {
		/* Per process and per call: the launcher opens databases from several threads. */
		char *tmp = xasprintf("%s.new.%ld.%u", path, (long)getpid(),
		                      __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
		int ok = 0;

		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			ok = !write_all(fd, schema->image, len) && !fdatasync(fd);
			ok = !close(fd) && ok && (!link(tmp, path) || errno == EEXIST);
			unlink(tmp);
		}
		free(tmp);
		if (ok)
			return;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
}

/*
 * journal_mode is stored in the file: a new one is switched to WAL, and that it took is
 * checked. The switch takes the file's exclusive lock from inside the pragma's own read
 * transaction, where sqlite answers SQLITE_BUSY at once instead of calling the busy
 * handler (waiting there could deadlock): two processes opening a new database at once
 * met "database is locked" (a jobs controller pod's first launch, and its controller).
 * The pragma is tried again, paced as the busy handler paces, for ST_BUSY_TIMEOUT_MS.
 */
static int set_wal(struct st_db *db)
{
	int64_t deadline = now_ms() + ST_BUSY_TIMEOUT_MS;
	sqlite3_stmt *st = st_prepare(db, "PRAGMA journal_mode=WAL");
	int rc, tries = 0, wal;

	if (!st)
		return -EIO;
	for (;;) {
		rc = sqlite3_step(st);
		wal = rc == SQLITE_ROW && !strcmp(st_col_text(st, 0), "wal");
		sqlite3_reset(st);
		if (wal)
			return 0;
		if ((rc & 0xff) != SQLITE_BUSY || now_ms() >= deadline)
			break;
		busy_pause(tries++);
	}
	if (rc != SQLITE_ROW)
		db_error(db, "query failed");
	return error("%s database '%s': cannot switch to WAL mode", db->name, db->path);
}

int st_open(const char *path, const struct st_schema *schema, unsigned flags, struct st_db **out)
{
	struct st_db *db = xcalloc(1, sizeof(*db));
	int oflags = (flags & ST_READONLY) ? SQLITE_OPEN_READONLY
	                                   : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	int r, rc;

	*out = NULL;
	db->path = xstrdup(path);
	db->name = schema->name;
	/*
	 * sqlite would create the file 0644 less the umask: a new one is made here first. Not
	 * with umask(): that is the whole process's, and the launcher opens databases and
	 * creates files from several threads at once.
	 */
	if (!(flags & ST_READONLY))
		create_new(path, schema);
	rc = sqlite3_open_v2(path, &db->h, oflags | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		if (db->h)
			r = db_error(db, "cannot open");
		else
			r = error("%s database '%s': cannot open: out of memory", db->name, path);
		goto fail;
	}
	sqlite3_extended_result_codes(db->h, 1);
	sqlite3_busy_handler(db->h, busy_handler, NULL);
	/*
	 * Short-lived clients (every skiff command) would otherwise checkpoint the WAL,
	 * fsync twice and delete -wal and -shm each time the last one closes, and the next
	 * would create them again. The commits are as durable in the WAL; sqlite checkpoints
	 * it as it grows (wal_autocheckpoint, schema->wal_pages).
	 */
	sqlite3_db_config(db->h, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
	if (!(flags & ST_READONLY)) {
		r = set_wal(db);
		if (r)
			goto fail;
		r = st_exec(db, "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON");
		if (r)
			goto fail;
		if (schema->wal_pages > 0) {
			char *q = xasprintf("PRAGMA wal_autocheckpoint=%d; "
			                    "PRAGMA journal_size_limit=%d",
			                    schema->wal_pages, schema->wal_pages * 2 * 4096);

			r = st_exec(db, q);
			free(q);
			if (r)
				goto fail;
		}
		r = migrate(db, schema);
		if (r)
			goto fail;
	} else {
		int v = st_version(db);

		if (v != schema->n_migrations) {
			r = error("%s database '%s' has schema version %d, expected %d", db->name,
			          path, v, schema->n_migrations);
			goto fail;
		}
	}
	*out = db;
	return 0;
fail:
	st_close(db);
	return r < 0 ? r : -EIO;
}

void st_close(struct st_db *db)
{
	int i;

	if (!db)
		return;
	for (i = 0; i < db->n_cache; i++)
		sqlite3_finalize(db->cache[i].stmt);
	if (db->h)
		sqlite3_close(db->h);
	free(db->path);
	free(db);
}
