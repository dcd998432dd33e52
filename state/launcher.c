#include "state/launcher.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "state/jobs_schema.h"
#include "lib/log.h"
#include "lib/util.h"
#include "lib/banned.h"

static const char *const status_names[CLUSTER_N_STATUS] = {"INIT", "UP", "STOPPED"};

const char *cluster_status_name(int status)
{
	return enum_name(status_names, CLUSTER_N_STATUS, status);
}

int cluster_status_parse(const char *name)
{
	return enum_parse(status_names, CLUSTER_N_STATUS, name);
}

/*
 * WITHOUT ROWID: every table is looked up by its text primary key. The UNIQUE on node_key
 * is what makes double booking impossible; the foreign keys (st_open() turns them on)
 * make a cluster's nodes and jobs go with it. clusters.next_job_id is the job id counter,
 * so ids are never reused while the cluster exists.
 */
static const char *const migrations[] = {
        /* 0 -> 1 */
        "CREATE TABLE clusters ("
        "  name TEXT PRIMARY KEY,"
        "  infra TEXT NOT NULL,"
        "  status INTEGER NOT NULL CHECK (status BETWEEN 0 AND 2),"
        "  num_nodes INTEGER NOT NULL CHECK (num_nodes >= 1),"
        "  resources TEXT NOT NULL DEFAULT '',"
        "  created_at REAL NOT NULL,"
        "  launched_at REAL NOT NULL DEFAULT 0,"
        "  autostop_minutes INTEGER NOT NULL DEFAULT -1,"
        "  autostop_down INTEGER NOT NULL DEFAULT 0,"
        "  last_task TEXT NOT NULL DEFAULT '',"
        "  head_ip TEXT NOT NULL DEFAULT '',"
        "  next_job_id INTEGER NOT NULL DEFAULT 1"
        ") WITHOUT ROWID;"
        "CREATE TABLE cluster_nodes ("
        "  cluster TEXT NOT NULL REFERENCES clusters(name) ON DELETE CASCADE,"
        "  rank INTEGER NOT NULL CHECK (rank >= 0),"
        "  node_key TEXT NOT NULL UNIQUE,"
        "  ip TEXT NOT NULL,"
        "  user TEXT NOT NULL DEFAULT '',"
        "  port INTEGER NOT NULL DEFAULT 0,"
        "  identity_file TEXT NOT NULL DEFAULT '',"
        "  proxy_jump TEXT NOT NULL DEFAULT '',"
        "  home TEXT NOT NULL DEFAULT '',"
        "  skiff_exe TEXT NOT NULL DEFAULT '',"
        "  PRIMARY KEY (cluster, rank)"
        ") WITHOUT ROWID;"
        "CREATE INDEX cluster_nodes_addr ON cluster_nodes(ip, port);"
        "CREATE TABLE cluster_jobs ("
        "  cluster TEXT NOT NULL REFERENCES clusters(name) ON DELETE CASCADE,"
        "  id INTEGER NOT NULL CHECK (id >= 1),"
        "  name TEXT NOT NULL DEFAULT '',"
        "  num_nodes INTEGER NOT NULL CHECK (num_nodes >= 1),"
        "  submitted_at REAL NOT NULL,"
        "  node_job_ids TEXT NOT NULL DEFAULT '',"
        "  log_dir TEXT NOT NULL DEFAULT '',"
        "  entrypoint TEXT NOT NULL DEFAULT '',"
        "  PRIMARY KEY (cluster, id)"
        ") WITHOUT ROWID;",
        /* 1 -> 2: managed jobs (state/jobs.c) */
        ST_JOBS_MIGRATION,
        /* 2 -> 3: a gang's outcome, once decided (its ranks' statuses may change later) */
        "ALTER TABLE cluster_jobs ADD COLUMN final_status INTEGER NOT NULL DEFAULT -1;",
        /* 3 -> 4: the address a node says it was reached at (SKYPILOT_NODE_IPS) */
        "ALTER TABLE cluster_nodes ADD COLUMN addr TEXT NOT NULL DEFAULT '';",
        /*
         * 4 -> 5: who submits a job (its launcher's pid and start time) and the key its
         * ranks were submitted with, so that a job whose launcher died mid-submit is settled
         * by asking the nodes; the reason of an outcome decided here
         */
        "ALTER TABLE cluster_jobs ADD COLUMN submit_key TEXT NOT NULL DEFAULT '';"
        "ALTER TABLE cluster_jobs ADD COLUMN owner_pid INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE cluster_jobs ADD COLUMN owner_start INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE cluster_jobs ADD COLUMN reason TEXT NOT NULL DEFAULT '';"
        /* and a managed job's task overrides as data (task_overrides_encode()) */
        "ALTER TABLE managed_jobs ADD COLUMN overrides BLOB;",
        /* 5 -> 6: what autostop waits for (SkyPilot's --wait-for); '': the node's default */
        "ALTER TABLE clusters ADD COLUMN autostop_wait_for TEXT NOT NULL DEFAULT '';",
        /* 6 -> 7: the ports opened by the tasks launched on it ("8080,9000-9002") */
        "ALTER TABLE clusters ADD COLUMN ports TEXT NOT NULL DEFAULT '';",
        /* 7 -> 8: a managed job's resources as `jobs queue` shows them ("1x[cpus=4]") */
        "ALTER TABLE managed_jobs ADD COLUMN resources TEXT NOT NULL DEFAULT '';",
        /* 8 -> 9: a managed job's tasks; how each run ended (state/jobs_schema.h) */
        ST_JOB_TASKS_MIGRATION,
        /* 9 -> 10: the workdir's git commit when the job was submitted (queue's GIT COMMIT) */
        "ALTER TABLE cluster_jobs ADD COLUMN git_commit TEXT NOT NULL DEFAULT '';",
        /* 10 -> 11: job groups, a managed job per task (state/jobs_schema.h) */
        ST_JOB_GROUPS_MIGRATION,
        /* 11 -> 12: a job's cleanups by its id (state/jobs_schema.h) */
        ST_JOB_CLEANUPS_INDEX_MIGRATION,
        /* 12 -> 13: a node that outlives its cluster (an ssh host, a pool's container or
         * pod): down releases it, the bootstrap holds it. SSH hosts always did. */
        "ALTER TABLE cluster_nodes ADD COLUMN stays INTEGER NOT NULL DEFAULT 0;"
        "UPDATE cluster_nodes SET stays = 1 WHERE cluster IN "
        "(SELECT name FROM clusters WHERE infra = 'ssh' OR infra LIKE 'ssh/%');",
        /* 13 -> 14: a node held as a share of a host that clusters share (cluster_node.share) */
        "ALTER TABLE cluster_nodes ADD COLUMN share TEXT NOT NULL DEFAULT '';",
        /*
         * 14 -> 15: since when a managed job's probes have failed, and whether the last one
         * found its node gone (state/jobs.h)
         */
        "ALTER TABLE managed_jobs ADD COLUMN probe_since REAL NOT NULL DEFAULT 0;"
        "ALTER TABLE managed_jobs ADD COLUMN probe_gone INTEGER NOT NULL DEFAULT 0;",
        /* 15 -> 16: why a managed job's last launch attempt failed (state/jobs.h) */
        "ALTER TABLE managed_jobs ADD COLUMN launch_error TEXT NOT NULL DEFAULT '';",
};

/* Every skiff command opens it anew: keep its WAL short (see wal_pages). */
const struct st_schema st_launcher_schema = {"launcher", migrations, ARRAY_SIZE(migrations), 64};

int st_launcher_open(unsigned flags, struct st_db **out)
{
	const char *home = skiff_home();
	char *path;
	int r;

	*out = NULL;
	if (!home)
		return -ENOENT;
	if (!(flags & ST_READONLY)) {
		r = ensure_private_dir(home);
		if (r) {
			errno = -r;
			return error_errno("cannot use state directory '%s'", home);
		}
	}
	path = xasprintf("%s/launcher.db", home);
	if ((flags & ST_READONLY) && access(path, F_OK) < 0 && errno == ENOENT)
		r = -ENOENT;
	else
		r = st_open(path, &st_launcher_schema, flags, out);
	free(path);
	return r;
}

/* ---- structs ------------------------------------------------------------------------- */

/* Each struct's row, in the order of its SELECTs' column list (CLUSTER_COLS, ...). */
static const struct st_col st_cluster_cols[] = {
        ST_COL(struct cluster, name, TEXT),
        ST_COL(struct cluster, infra, TEXT),
        ST_COL(struct cluster, status, INT),
        ST_COL(struct cluster, num_nodes, INT),
        ST_COL(struct cluster, resources, TEXT),
        ST_COL(struct cluster, created_at, DOUBLE),
        ST_COL(struct cluster, launched_at, DOUBLE),
        ST_COL(struct cluster, autostop_minutes, INT),
        ST_COL(struct cluster, autostop_down, INT),
        ST_COL(struct cluster, last_task, TEXT),
        ST_COL(struct cluster, head_ip, TEXT),
        ST_COL(struct cluster, autostop_wait_for, TEXT),
        ST_COL(struct cluster, ports, TEXT),
};
static const size_t st_cluster_ncols = ARRAY_SIZE(st_cluster_cols);

static const struct st_col st_node_cols[] = {
        ST_COL(struct cluster_node, cluster, TEXT),
        ST_COL(struct cluster_node, rank, INT),
        ST_COL(struct cluster_node, node_key, TEXT),
        ST_COL(struct cluster_node, ip, TEXT),
        ST_COL(struct cluster_node, user, TEXT),
        ST_COL(struct cluster_node, port, INT),
        ST_COL(struct cluster_node, identity_file, TEXT),
        ST_COL(struct cluster_node, proxy_jump, TEXT),
        ST_COL(struct cluster_node, home, TEXT),
        ST_COL(struct cluster_node, skiff_exe, TEXT),
        ST_COL(struct cluster_node, addr, TEXT),
        ST_COL(struct cluster_node, stays, INT),
        ST_COL(struct cluster_node, share, TEXT),
};
static const size_t st_node_ncols = ARRAY_SIZE(st_node_cols);

static const struct st_col st_job_cols[] = {
        ST_COL(struct cluster_job, cluster, TEXT),
        ST_COL(struct cluster_job, id, INT64),
        ST_COL(struct cluster_job, name, TEXT),
        ST_COL(struct cluster_job, num_nodes, INT),
        ST_COL(struct cluster_job, submitted_at, DOUBLE),
        ST_COL(struct cluster_job, node_job_ids, TEXT),
        ST_COL(struct cluster_job, log_dir, TEXT),
        ST_COL(struct cluster_job, entrypoint, TEXT),
        ST_COL(struct cluster_job, final_status, INT),
        ST_COL(struct cluster_job, submit_key, TEXT),
        ST_COL(struct cluster_job, owner_pid, INT),
        ST_COL(struct cluster_job, owner_start, INT64),
        ST_COL(struct cluster_job, reason, TEXT),
        ST_COL(struct cluster_job, git_commit, TEXT),
};
static const size_t st_job_ncols = ARRAY_SIZE(st_job_cols);

void cluster_free(struct cluster *c)
{
	if (!c)
		return;
	st_row_free(st_cluster_cols, st_cluster_ncols, c);
	memset(c, 0, sizeof(*c));
}

void clusters_free(struct cluster *v, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++)
		cluster_free(&v[i]);
	free(v);
}

void cluster_node_free(struct cluster_node *n)
{
	if (!n)
		return;
	st_row_free(st_node_cols, st_node_ncols, n);
	memset(n, 0, sizeof(*n));
}

void cluster_nodes_free(struct cluster_node *v, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++)
		cluster_node_free(&v[i]);
	free(v);
}

void cluster_job_free(struct cluster_job *j)
{
	if (!j)
		return;
	st_row_free(st_job_cols, st_job_ncols, j);
	memset(j, 0, sizeof(*j));
}

void cluster_jobs_free(struct cluster_job *v, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++)
		cluster_job_free(&v[i]);
	free(v);
}

static const char *or_empty(const char *s)
{
	return s ? s : "";
}

static char *col_dup(sqlite3_stmt *st, int i)
{
	return xstrdup(st_col_text(st, i));
}

/*
 * Rows are collected with xgrow(); a failed step frees what was read, so a caller never
 * sees half a list.
 */

/* ---- clusters ------------------------------------------------------------------------ */

#define NODE_COLS                                                                                  \
	"cluster, rank, node_key, ip, user, port, identity_file, proxy_jump, home, skiff_exe, "    \
	"addr, stays, share"

#define CLUSTER_COLS                                                                               \
	"name, infra, status, num_nodes, resources, created_at, launched_at, autostop_minutes, "   \
	"autostop_down, last_task, head_ip, autostop_wait_for, ports"

static void load_cluster(sqlite3_stmt *st, struct cluster *c)
{
	memset(c, 0, sizeof(*c));
	st_row_load(st, st_cluster_cols, st_cluster_ncols, c);
}

/* 1 if the cluster exists, 0 if not, or an error. */
static int cluster_exists(struct st_db *db, const char *name)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT 1 FROM clusters WHERE name = ?");
	int r;

	if (!st)
		return -EIO;
	st_bind_text(st, 1, name);
	r = st_step(db, st);
	sqlite3_reset(st);
	return r;
}

int st_node_holder(struct st_db *db, const char *node_key, const char *ip, int port, int share,
                   char **cluster)
{
	sqlite3_stmt *st;
	int r;

	*cluster = NULL;
	st = st_prepare(db, "SELECT cluster FROM cluster_nodes WHERE node_key = ?");
	if (!st)
		return -EIO;
	st_bind_text(st, 1, node_key);
	r = st_step(db, st);
	if (r == 1)
		*cluster = col_dup(st, 0);
	sqlite3_reset(st);
	if (r || !ip)
		return r < 0 ? r : 0;
	/* Every cluster there (shares of one host are several): "a, b". */
	st = st_prepare(db, "SELECT group_concat(cluster, ', ') FROM (SELECT DISTINCT cluster "
	                    "FROM cluster_nodes WHERE ip = ? AND port = ? AND (? = 0 OR "
	                    "share = '') ORDER BY cluster)");
	if (!st)
		return -EIO;
	st_bind_text(st, 1, ip);
	st_bind_int(st, 2, port);
	st_bind_int(st, 3, share != 0);
	r = st_step(db, st);
	if (r == 1 && *st_col_text(st, 0))
		*cluster = col_dup(st, 0);
	sqlite3_reset(st);
	return r < 0 ? r : 0;
}

static int insert_node(struct st_db *db, const char *cluster, const struct cluster_node *n)
{
	sqlite3_stmt *st = st_prepare(
	        db, "INSERT INTO cluster_nodes (cluster, rank, node_key, ip, user, port, "
	            "identity_file, proxy_jump, home, skiff_exe, stays, share) "
	            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");

	if (!st)
		return -EIO;
	st_bind_text(st, 1, cluster);
	st_bind_int(st, 2, n->rank);
	st_bind_text(st, 3, n->node_key);
	st_bind_text(st, 4, n->ip);
	st_bind_text(st, 5, or_empty(n->user));
	st_bind_int(st, 6, n->port);
	st_bind_text(st, 7, or_empty(n->identity_file));
	st_bind_text(st, 8, or_empty(n->proxy_jump));
	st_bind_text(st, 9, or_empty(n->home));
	st_bind_text(st, 10, or_empty(n->skiff_exe));
	st_bind_int(st, 11, n->stays != 0);
	st_bind_text(st, 12, or_empty(n->share));
	return st_step_done(db, st);
}

static int cmp_str_ptr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int check_create_args(const struct cluster *c, const struct cluster_node *nodes, size_t n)
{
	const char **keys;
	size_t i;
	int r = 0;

	if (!c->name || !*c->name || !c->infra || !*c->infra)
		return error("cannot create a cluster without a name and an infra");
	if (c->status < 0 || c->status >= CLUSTER_N_STATUS)
		return error("cluster '%s': bad status %d", c->name, c->status);
	if (!n || n > 1000000)
		return error("cluster '%s': bad number of nodes %zu", c->name, n);
	for (i = 0; i < n; i++) {
		if (nodes[i].rank != (int)i)
			return error("cluster '%s': node %zu has rank %d: ranks must be 0..%zu in "
			             "order",
			             c->name, i, nodes[i].rank, n - 1);
		if (!nodes[i].node_key || !*nodes[i].node_key || !nodes[i].ip)
			return error("cluster '%s': node %zu has no key or address", c->name, i);
	}
	/* The UNIQUE constraint would refuse it too, in sqlite's words. */
	keys = xcalloc(n, sizeof(*keys));
	for (i = 0; i < n; i++)
		keys[i] = nodes[i].node_key;
	qsort(keys, n, sizeof(*keys), cmp_str_ptr);
	for (i = 1; i < n && !r; i++)
		if (!strcmp(keys[i - 1], keys[i]))
			r = error("cluster '%s': node '%s' is listed twice", c->name, keys[i]);
	free(keys);
	return r;
}

int st_cluster_create(struct st_db *db, const struct cluster *c, const struct cluster_node *nodes,
                      size_t n)
{
	sqlite3_stmt *st;
	double now = now_wall();
	size_t i;
	int r;

	if (check_create_args(c, nodes, n))
		return -EINVAL;
	r = st_begin(db);
	if (r)
		return r;
	/*
	 * The write lock is held from here on: the checks below cannot go stale before the
	 * inserts, so a taken node gets a message naming its holder rather than sqlite's
	 * constraint error. The UNIQUE and PRIMARY KEY constraints stay the last word.
	 */
	r = cluster_exists(db, c->name);
	if (r < 0)
		goto fail;
	if (r) {
		r = -EEXIST;
		error("cluster '%s' already exists", c->name);
		goto fail;
	}
	for (i = 0; i < n; i++) {
		char *holder;

		r = st_node_holder(db, nodes[i].node_key, NULL, 0, 0, &holder);
		if (r)
			goto fail;
		if (holder) {
			error("cannot book node '%s' for cluster '%s': it is in use by cluster '%s'",
			      nodes[i].node_key, c->name, holder);
			free(holder);
			r = -EBUSY;
			goto fail;
		}
	}
	st = st_prepare(db, "INSERT INTO clusters (name, infra, status, num_nodes, resources, "
	                    "created_at, launched_at, autostop_minutes, autostop_down, last_task, "
	                    "head_ip) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
	if (!st) {
		r = -EIO;
		goto fail;
	}
	st_bind_text(st, 1, c->name);
	st_bind_text(st, 2, c->infra);
	st_bind_int(st, 3, c->status);
	st_bind_int(st, 4, (int64_t)n);
	st_bind_text(st, 5, or_empty(c->resources));
	st_bind_double(st, 6, now);
	st_bind_double(st, 7, now);
	st_bind_int(st, 8, c->autostop_minutes < 0 ? -1 : c->autostop_minutes);
	st_bind_int(st, 9, c->autostop_minutes < 0 ? 0 : !!c->autostop_down);
	st_bind_text(st, 10, or_empty(c->last_task));
	st_bind_text(st, 11, or_empty(c->head_ip));
	r = st_step_done(db, st);
	if (r)
		goto fail;
	for (i = 0; i < n; i++) {
		r = insert_node(db, c->name, &nodes[i]);
		if (r)
			goto fail;
	}
	return st_commit(db);
fail:
	st_rollback(db);
	return r;
}

int st_cluster_get(struct st_db *db, const char *name, struct cluster *out)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT " CLUSTER_COLS " FROM clusters WHERE name = ?");
	int r;

	if (!st)
		return -EIO;
	st_bind_text(st, 1, name);
	r = st_step(db, st);
	if (r == 1)
		load_cluster(st, out);
	sqlite3_reset(st);
	return r == 1 ? 0 : r == 0 ? -ENOENT : r;
}

int st_cluster_list(struct st_db *db, struct cluster **out, size_t *n)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT " CLUSTER_COLS " FROM clusters ORDER BY name");
	struct cluster *v = NULL;
	size_t k = 0, alloc = 0;
	int r;

	*out = NULL;
	*n = 0;
	if (!st)
		return -EIO;
	while ((r = st_step(db, st)) == 1) {
		v = xgrow(v, k, &alloc, sizeof(*v));
		load_cluster(st, &v[k++]);
	}
	sqlite3_reset(st);
	if (r < 0) {
		clusters_free(v, k);
		return r;
	}
	*out = v;
	*n = k;
	return 0;
}

int st_cluster_nodes(struct st_db *db, const char *cluster, struct cluster_node **out, size_t *n)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT " NODE_COLS " FROM cluster_nodes "
	                                  "WHERE cluster = ? ORDER BY rank");
	struct cluster_node *v = NULL;
	size_t k = 0, alloc = 0;
	int r;

	*out = NULL;
	*n = 0;
	if (!st)
		return -EIO;
	st_bind_text(st, 1, cluster);
	while ((r = st_step(db, st)) == 1) {
		struct cluster_node *c;

		v = xgrow(v, k, &alloc, sizeof(*v));
		c = &v[k++];
		memset(c, 0, sizeof(*c));
		st_row_load(st, st_node_cols, st_node_ncols, c);
	}
	sqlite3_reset(st);
	if (r < 0 || !k) {
		cluster_nodes_free(v, k);
		return r < 0 ? r : -ENOENT;
	}
	*out = v;
	*n = k;
	return 0;
}

/* After an UPDATE of one cluster: 0 if it changed a row, else -ENOENT. */
static int changed_or_enoent(struct st_db *db, int r)
{
	if (r)
		return r;
	return st_changes(db) ? 0 : -ENOENT;
}

int st_cluster_set_status(struct st_db *db, const char *name, unsigned from_mask, int status)
{
	sqlite3_stmt *st;
	int r;

	if (status < 0 || status >= CLUSTER_N_STATUS)
		return error("cluster '%s': bad status %d", name, status);
	st = st_prepare(db, "UPDATE clusters SET status = ?2, launched_at = CASE "
	                    "WHEN ?2 = 1 AND status != 1 THEN ?3 ELSE launched_at END "
	                    "WHERE name = ?1 AND ((1 << status) & ?4)");
	if (!st)
		return -EIO;
	st_bind_text(st, 1, name);
	st_bind_int(st, 2, status);
	st_bind_double(st, 3, now_wall());
	st_bind_int(st, 4, from_mask);
	r = st_step_done(db, st);
	if (r)
		return r;
	if (st_changes(db))
		return 0;
	r = cluster_exists(db, name);
	return r < 0 ? r : r ? -ESTALE : -ENOENT;
}

int st_cluster_set_autostop(struct st_db *db, const char *name, int minutes, int down,
                            const char *wait_for)
{
	sqlite3_stmt *st =
	        st_prepare(db, "UPDATE clusters SET autostop_minutes = ?, "
	                       "autostop_down = ?, autostop_wait_for = ? WHERE name = ?");

	if (!st)
		return -EIO;
	st_bind_int(st, 1, minutes < 0 ? -1 : minutes);
	st_bind_int(st, 2, minutes < 0 ? 0 : !!down);
	st_bind_text(st, 3, minutes < 0 || !wait_for ? "" : wait_for);
	st_bind_text(st, 4, name);
	return changed_or_enoent(db, st_step_done(db, st));
}

int st_cluster_set_head_ip(struct st_db *db, const char *name, const char *ip)
{
	sqlite3_stmt *st = st_prepare(db, "UPDATE clusters SET head_ip = ? WHERE name = ?");

	if (!st)
		return -EIO;
	st_bind_text(st, 1, or_empty(ip));
	st_bind_text(st, 2, name);
	return changed_or_enoent(db, st_step_done(db, st));
}

int st_cluster_set_ports(struct st_db *db, const char *name, const char *ports)
{
	sqlite3_stmt *st = st_prepare(db, "UPDATE clusters SET ports = ? WHERE name = ?");

	if (!st)
		return -EIO;
	st_bind_text(st, 1, or_empty(ports));
	st_bind_text(st, 2, name);
	return changed_or_enoent(db, st_step_done(db, st));
}

int st_cluster_set_last_task(struct st_db *db, const char *name, const char *entrypoint)
{
	sqlite3_stmt *st = st_prepare(db, "UPDATE clusters SET last_task = ? WHERE name = ?");

	if (!st)
		return -EIO;
	st_bind_text(st, 1, or_empty(entrypoint));
	st_bind_text(st, 2, name);
	return changed_or_enoent(db, st_step_done(db, st));
}

int st_cluster_node_set_exe(struct st_db *db, const char *cluster, int rank, const char *exe)
{
	sqlite3_stmt *st = st_prepare(db, "UPDATE cluster_nodes SET skiff_exe = ? "
	                                  "WHERE cluster = ? AND rank = ?");

	if (!st)
		return -EIO;
	st_bind_text(st, 1, or_empty(exe));
	st_bind_text(st, 2, cluster);
	st_bind_int(st, 3, rank);
	return changed_or_enoent(db, st_step_done(db, st));
}

int st_cluster_node_set_addr(struct st_db *db, const char *cluster, int rank, const char *addr)
{
	sqlite3_stmt *st = st_prepare(db, "UPDATE cluster_nodes SET addr = ? "
	                                  "WHERE cluster = ? AND rank = ?");

	if (!st)
		return -EIO;
	st_bind_text(st, 1, or_empty(addr));
	st_bind_text(st, 2, cluster);
	st_bind_int(st, 3, rank);
	return changed_or_enoent(db, st_step_done(db, st));
}

int st_cluster_node_set_ip(struct st_db *db, const char *cluster, int rank, const char *ip)
{
	/* The address it said it was reached at was the old one's (a copy of the old ip when
	 * it said none): it says again at the next bootstrap. */
	sqlite3_stmt *st = st_prepare(db, "UPDATE cluster_nodes SET ip = ?, addr = '' "
	                                  "WHERE cluster = ? AND rank = ?");

	if (!st)
		return -EIO;
	st_bind_text(st, 1, or_empty(ip));
	st_bind_text(st, 2, cluster);
	st_bind_int(st, 3, rank);
	return changed_or_enoent(db, st_step_done(db, st));
}

int st_cluster_delete(struct st_db *db, const char *name)
{
	sqlite3_stmt *st = st_prepare(db, "DELETE FROM clusters WHERE name = ?");

	if (!st)
		return -EIO;
	st_bind_text(st, 1, name);
	/* One statement: the cascade to cluster_nodes and cluster_jobs is part of it. */
	return changed_or_enoent(db, st_step_done(db, st));
}

/* ---- cluster jobs -------------------------------------------------------------------- */

#define JOB_COLS                                                                                        \
	"cluster, id, name, num_nodes, submitted_at, node_job_ids, log_dir, entrypoint, final_status, " \
	"submit_key, owner_pid, owner_start, reason, git_commit"

int st_launcher_cols_check(void)
{
	static const struct {
		const char *what, *text;
		const struct st_col *cols;
		size_t n;
	} t[] = {
	        {"clusters", CLUSTER_COLS, st_cluster_cols, ARRAY_SIZE(st_cluster_cols)},
	        {"cluster_nodes", NODE_COLS, st_node_cols, ARRAY_SIZE(st_node_cols)},
	        {"cluster_jobs", JOB_COLS, st_job_cols, ARRAY_SIZE(st_job_cols)},
	};
	size_t i;
	int r = 0;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		char *have = st_cols_text(t[i].cols, t[i].n);

		if (strcmp(have, t[i].text))
			r = error("%s: the row table reads '%s', the SELECT '%s'", t[i].what, have,
			          t[i].text);
		free(have);
	}
	return r;
}

static void load_job(sqlite3_stmt *st, struct cluster_job *j)
{
	memset(j, 0, sizeof(*j));
	st_row_load(st, st_job_cols, st_job_ncols, j);
}

int st_cluster_job_add(struct st_db *db, const char *cluster, struct cluster_job *j)
{
	sqlite3_stmt *st;
	int64_t id;
	double now = now_wall();
	int r;

	if (j->num_nodes < 1)
		return error("cluster '%s': a job needs at least one node", cluster);
	r = st_begin(db);
	if (r)
		return r;
	st = st_prepare(db, "SELECT next_job_id FROM clusters WHERE name = ?");
	if (!st) {
		r = -EIO;
		goto fail;
	}
	st_bind_text(st, 1, cluster);
	r = st_step(db, st);
	id = r == 1 ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_reset(st);
	if (r <= 0) {
		if (!r)
			r = -ENOENT;
		goto fail;
	}
	st = st_prepare(db, "UPDATE clusters SET next_job_id = ? WHERE name = ?");
	if (!st) {
		r = -EIO;
		goto fail;
	}
	st_bind_int(st, 1, id + 1);
	st_bind_text(st, 2, cluster);
	r = st_step_done(db, st);
	if (r)
		goto fail;
	st = st_prepare(db,
	                "INSERT INTO cluster_jobs (cluster, id, name, num_nodes, submitted_at, "
	                "node_job_ids, log_dir, entrypoint, submit_key, owner_pid, owner_start, "
	                "git_commit) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
	if (!st) {
		r = -EIO;
		goto fail;
	}
	st_bind_text(st, 1, cluster);
	st_bind_int(st, 2, id);
	st_bind_text(st, 3, or_empty(j->name));
	st_bind_int(st, 4, j->num_nodes);
	st_bind_double(st, 5, now);
	st_bind_text(st, 6, or_empty(j->node_job_ids));
	st_bind_text(st, 7, or_empty(j->log_dir));
	st_bind_text(st, 8, or_empty(j->entrypoint));
	st_bind_text(st, 9, or_empty(j->submit_key));
	st_bind_int(st, 10, j->owner_pid);
	st_bind_int(st, 11, (int64_t)j->owner_start);
	st_bind_text(st, 12, or_empty(j->git_commit));
	r = st_step_done(db, st);
	if (r)
		goto fail;
	r = st_commit(db);
	if (r)
		return r;
	j->id = id;
	j->submitted_at = now;
	return 0;
fail:
	st_rollback(db);
	return r;
}

int st_cluster_job_get(struct st_db *db, const char *cluster, int64_t id, struct cluster_job *out)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT " JOB_COLS " FROM cluster_jobs "
	                                  "WHERE cluster = ? AND id = ?");
	int r;

	if (!st)
		return -EIO;
	st_bind_text(st, 1, cluster);
	st_bind_int(st, 2, id);
	r = st_step(db, st);
	if (r == 1)
		load_job(st, out);
	sqlite3_reset(st);
	return r == 1 ? 0 : r == 0 ? -ENOENT : r;
}

int st_cluster_job_list(struct st_db *db, const char *cluster, struct cluster_job **out, size_t *n)
{
	sqlite3_stmt *st = st_prepare(db, "SELECT " JOB_COLS " FROM cluster_jobs "
	                                  "WHERE cluster = ? ORDER BY id");
	struct cluster_job *v = NULL;
	size_t k = 0, alloc = 0;
	int r;

	*out = NULL;
	*n = 0;
	if (!st)
		return -EIO;
	st_bind_text(st, 1, cluster);
	while ((r = st_step(db, st)) == 1) {
		v = xgrow(v, k, &alloc, sizeof(*v));
		load_job(st, &v[k++]);
	}
	sqlite3_reset(st);
	if (r < 0) {
		cluster_jobs_free(v, k);
		return r;
	}
	*out = v;
	*n = k;
	return 0;
}

int st_cluster_job_set_node_ids(struct st_db *db, const char *cluster, int64_t id,
                                const char *node_job_ids)
{
	sqlite3_stmt *st = st_prepare(db, "UPDATE cluster_jobs SET node_job_ids = ? "
	                                  "WHERE cluster = ? AND id = ?");

	if (!st)
		return -EIO;
	st_bind_text(st, 1, or_empty(node_job_ids));
	st_bind_text(st, 2, cluster);
	st_bind_int(st, 3, id);
	return changed_or_enoent(db, st_step_done(db, st));
}

int st_cluster_job_set_final(struct st_db *db, const char *cluster, int64_t id, const char *key,
                             int status)
{
	sqlite3_stmt *st = st_prepare(db, "UPDATE cluster_jobs SET final_status = ? "
	                                  "WHERE cluster = ? AND id = ? AND final_status < 0 "
	                                  "AND (?4 IS NULL OR submit_key = ?4)");

	if (!st)
		return -EIO;
	st_bind_int(st, 1, status);
	st_bind_text(st, 2, cluster);
	st_bind_int(st, 3, id);
	st_bind_text(st, 4, key);
	return st_step_done(db, st);
}

int st_cluster_job_settle(struct st_db *db, const char *cluster, int64_t id, int status,
                          const char *node_job_ids, const char *reason)
{
	sqlite3_stmt *st = st_prepare(db, "UPDATE cluster_jobs SET final_status = ?, "
	                                  "node_job_ids = ?, reason = ? "
	                                  "WHERE cluster = ? AND id = ? AND final_status < 0");

	if (!st)
		return -EIO;
	st_bind_int(st, 1, status);
	st_bind_text(st, 2, or_empty(node_job_ids));
	st_bind_text(st, 3, or_empty(reason));
	st_bind_text(st, 4, cluster);
	st_bind_int(st, 5, id);
	return st_step_done(db, st);
}

int st_cluster_job_delete(struct st_db *db, const char *cluster, int64_t id)
{
	sqlite3_stmt *st = st_prepare(db, "DELETE FROM cluster_jobs WHERE cluster = ? AND id = ?");

	if (!st)
		return -EIO;
	st_bind_text(st, 1, cluster);
	st_bind_int(st, 2, id);
	return changed_or_enoent(db, st_step_done(db, st));
}

int st_cluster_job_set_log_dir(struct st_db *db, const char *cluster, int64_t id,
                               const char *log_dir)
{
	sqlite3_stmt *st = st_prepare(db, "UPDATE cluster_jobs SET log_dir = ? "
	                                  "WHERE cluster = ? AND id = ?");

	if (!st)
		return -EIO;
	st_bind_text(st, 1, or_empty(log_dir));
	st_bind_text(st, 2, cluster);
	st_bind_int(st, 3, id);
	return changed_or_enoent(db, st_step_done(db, st));
}
