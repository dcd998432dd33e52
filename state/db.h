#ifndef SKIFF_STATE_DB_H
#define SKIFF_STATE_DB_H

/*
 * The one place that talks to sqlite. Every database skiff keeps (the node's job queue,
 * the launcher's clusters, the managed-jobs controller) is opened through st_open() with
 * its schema: a list of forward migrations, applied in order inside one transaction, the
 * version kept in PRAGMA user_version (a new file of a schema with an image starts as
 * the migrations' result, made at build time). A database newer than this binary is
 * refused.
 *
 * Connections are in WAL mode with a busy timeout, foreign keys on and synchronous=NORMAL
 * (durable across process crashes; see docs/architecture.md for power loss). Statements
 * are always prepared with bound parameters: st_prepare() caches them per connection by
 * their SQL text, so the hot paths do not re-parse.
 *
 * Errors are converted once, here: functions return 0 or a negative code and print one
 * line naming the database and sqlite's message.
 */

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct st_db;

struct st_schema {
	const char *name;              /* for messages: "node", "launcher", ... */
	const char *const *migrations; /* migrations[i] takes the db from version i to i+1 */
	int n_migrations;
	/*
	 * WAL size (pages) at which a commit checkpoints; 0: SQLite's 1000. A database used
	 * by short-lived processes wants it small: the first connection after all have
	 * closed rebuilds the WAL index by reading the whole WAL (~1 ms per MB).
	 */
	int wal_pages;
	/*
	 * The bytes of a new database, made at build time by these very migrations
	 * (state/images.h): a file that does not exist yet is written from them, not taken
	 * through every migration (a few ms of parsing, and page faults, at each new node).
	 * None when image == image_end (or NULL).
	 */
	const unsigned char *image, *image_end;
};

enum st_flags {
	ST_READONLY = 1 << 0, /* no migrations, no writes; fails if the file is missing */
};

/*
 * For a process whose connections are brief (a few statements, then the process ends:
 * the job shim, once per job). Call before its first st_open(): sqlite then allocates
 * no page-cache block ahead (ST_BRIEF_* in db.c) and a small lookaside, where each was
 * a fresh mapping faulted in page by page for the few pages such a connection reads.
 */
void st_config_brief(void);

/*
 * Opens and migrates; a file that does not exist is created with mode 0600, from the
 * schema's image when it has one. *out is NULL on failure.
 */
int st_open(const char *path, const struct st_schema *schema, unsigned flags, struct st_db **out);
void st_close(struct st_db *db);
sqlite3 *st_handle(struct st_db *db);
const char *st_path(struct st_db *db);

/*
 * Returns a cached prepared statement, reset and with its bindings cleared; NULL (with an
 * error printed) if the SQL does not compile. The statement belongs to the db: never
 * finalize it.
 */
sqlite3_stmt *st_prepare(struct st_db *db, const char *sql);

/* Runs one statement (or several, separated by ';') with no parameters and no rows. */
int st_exec(struct st_db *db, const char *sql);

/*
 * Transactions. st_begin() takes the write lock at once (BEGIN IMMEDIATE), so that a
 * read-then-write claim cannot deadlock on lock upgrade. st_commit() / st_rollback() end
 * it. Nesting is not supported.
 */
int st_begin(struct st_db *db);
int st_commit(struct st_db *db);
void st_rollback(struct st_db *db);
/* 1 between a st_begin() and its commit or rollback: a caller's transaction is open. */
int st_in_tx(const struct st_db *db);

/* Steps a statement expecting no rows (INSERT/UPDATE/DELETE); 0 or an error. */
int st_step_done(struct st_db *db, sqlite3_stmt *st);
/* Steps once: 1 for a row, 0 for done, negative for an error. */
int st_step(struct st_db *db, sqlite3_stmt *st);

/* Binding helpers (indexes start at 1). A NULL string binds SQL NULL. */
void st_bind_text(sqlite3_stmt *st, int i, const char *s);
void st_bind_int(sqlite3_stmt *st, int i, int64_t v);
void st_bind_double(sqlite3_stmt *st, int i, double v);
void st_bind_blob(sqlite3_stmt *st, int i, const void *p, size_t n);
/* Column text as a NUL-terminated string; "" for NULL. Valid until the next step. */
const char *st_col_text(sqlite3_stmt *st, int i);
int st_col_is_null(sqlite3_stmt *st, int i);

/*
 * A struct's row as a table of its columns, in the order of the SELECT that reads them
 * (whose column list is written beside the table; st_cols_text() makes that list from the
 * table, for the tests to compare). st_row_load() fills the struct's members from a
 * stepped statement (the caller zeroes it first); st_row_free() frees the text members
 * it made and sets them NULL. A member whose size is not its type's is a BUG, said at its
 * first load (every table is loaded by the unit tests).
 */
enum st_col_type {
	ST_COL_TEXT,      /* char *: a malloc'd copy, "" for NULL */
	ST_COL_INT,       /* int, pid_t */
	ST_COL_INT64,     /* int64_t, uint64_t */
	ST_COL_DOUBLE,    /* double */
	ST_COL_BLOB,      /* char *: a malloc'd copy with a NUL after it; its length in len_off */
	ST_COL_TEXT_NULL, /* char *: a malloc'd copy, NULL for NULL */
	ST_COL_CHARS,     /* char[N]: the text, cut to N - 1 bytes */
};
struct st_col {
	const char *name;
	enum st_col_type type;
	size_t off, size;
	size_t len_off; /* ST_COL_BLOB: the size_t member that gets the length */
};
/* clang-format off */
#define ST_COL(strct, member, type) \
	{#member, ST_COL_##type, offsetof(strct, member), sizeof(((strct *)0)->member), 0}
#define ST_COL_BLOB_OF(strct, member, len) \
	{#member, ST_COL_BLOB, offsetof(strct, member), sizeof(((strct *)0)->member), \
	 offsetof(strct, len)}
/* clang-format on */
void st_row_load(sqlite3_stmt *st, const struct st_col *cols, size_t n, void *row);
void st_row_free(const struct st_col *cols, size_t n, void *row);
/*
 * A row as the fields of a frame (lib/proto.h), one per column, named as the column
 * (blobs stay out), and back: a field missing from m (a peer of another build) leaves
 * its member zero, or "" (NULL for TEXT_NULL). The decoded row frees with st_row_free().
 */
struct msg;
void st_row_encode(const struct st_col *cols, size_t n, const void *row, struct msg *m);
void st_row_decode(const struct st_col *cols, size_t n, const struct msg *m, void *row);
/* "a, b, c" of the columns' names (the caller frees it). */
char *st_cols_text(const struct st_col *cols, size_t n);

int64_t st_changes(struct st_db *db);
int64_t st_last_rowid(struct st_db *db);
/* The schema version stored in the file (PRAGMA user_version). */
int st_version(struct st_db *db);
/* PRAGMA integrity_check; 0 if "ok". */
int st_integrity_check(struct st_db *db);

#endif
