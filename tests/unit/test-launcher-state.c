/* The launcher's db: clusters, node booking (no double booking), cluster job ids. */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/util.h"
#include "state/db.h"
#include "state/launcher.h"
#include "state/node.h"
#include "tests/unit/harness.h"

static char dir[] = "/tmp/skiff-unit-launcher.XXXXXX";
static char *db_path;

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* An ssh pool node as infra_pick_nodes() would make it (strings are not copied). */
static struct cluster_node pool_node(int rank, const char *ip)
{
	static char keys[16][64];
	static int next;
	struct cluster_node n = {0};
	char *key = keys[next++ % 16];

	xsnprintf(key, 64, "p/%s:22", ip);
	n.rank = rank;
	n.node_key = key;
	n.ip = (char *)ip;
	n.user = "alice";
	n.port = 22;
	n.identity_file = "/k/id";
	return n;
}

static struct cluster cluster_spec(const char *name, const char *infra)
{
	struct cluster c = {0};

	c.name = (char *)name;
	c.infra = (char *)infra;
	c.status = CLUSTER_INIT;
	c.resources = "1x(cpus=1)";
	c.autostop_minutes = -1;
	c.last_task = "echo hi";
	return c;
}

static int count_rows(struct st_db *db, const char *sql)
{
	sqlite3_stmt *q = st_prepare(db, sql);
	int n = -1;

	if (q && st_step(db, q) == 1)
		n = sqlite3_column_int(q, 0);
	if (q)
		sqlite3_reset(q);
	return n;
}

static void test_row_tables(void)
{
	is_int(st_launcher_cols_check(), 0,
	       "each row table names its SELECT's columns, in order (clusters, nodes, jobs)");
}

static void test_create_list_delete(void)
{
	struct st_db *db;
	struct cluster c = cluster_spec("alpha", "ssh/p"), g, *list;
	struct cluster_node nodes[2] = {pool_node(0, "10.0.0.1"), pool_node(1, "10.0.0.2")};
	struct cluster_node *got;
	size_t n;

	ok(!st_open(db_path, &st_launcher_schema, 0, &db), "open launcher db");
	is_int(st_version(db), 16, "schema version 16");
	ok(!st_cluster_create(db, &c, nodes, 2), "create alpha with 2 nodes");
	is_int(st_cluster_create(db, &c, nodes, 2), -EEXIST, "a second create is refused");
	ok(!st_cluster_get(db, "alpha", &g), "get alpha");
	is_str(g.infra, "ssh/p", "infra");
	is_int(g.status, CLUSTER_INIT, "INIT");
	is_int(g.num_nodes, 2, "num_nodes from the node list");
	is_str(g.resources, "1x(cpus=1)", "resources");
	is_int(g.autostop_minutes, -1, "autostop off");
	is_str(g.head_ip, "", "no head ip yet");
	is_str(g.last_task, "echo hi", "last task");
	ok(g.created_at > 0 && g.launched_at == g.created_at, "times");
	cluster_free(&g);
	is_int(st_cluster_get(db, "nope", &g), -ENOENT, "missing cluster");

	ok(!st_cluster_nodes(db, "alpha", &got, &n) && n == 2, "two nodes");
	is_str(got[0].node_key, "p/10.0.0.1:22", "rank 0 key");
	is_str(got[1].ip, "10.0.0.2", "rank 1 ip");
	is_str(got[1].cluster, "alpha", "cluster set");
	is_str(got[1].user, "alice", "user");
	is_int(got[1].port, 22, "port");
	is_str(got[1].proxy_jump, "", "no proxy jump is \"\"");
	is_str(got[1].skiff_exe, "", "not bootstrapped");
	cluster_nodes_free(got, n);

	ok(!st_cluster_set_status(db, "alpha", CLUSTER_MASK(CLUSTER_INIT), CLUSTER_UP),
	   "INIT -> UP");
	is_int(st_cluster_set_status(db, "alpha", CLUSTER_MASK(CLUSTER_INIT), CLUSTER_UP), -ESTALE,
	       "guarded: not INIT any more");
	is_int(st_cluster_set_status(db, "nope", CLUSTER_MASK_ALL, CLUSTER_UP), -ENOENT,
	       "status of a missing cluster");
	ok(!st_cluster_set_autostop(db, "alpha", 10, 1, "jobs"), "autostop 10 down");
	ok(!st_cluster_set_head_ip(db, "alpha", "10.0.0.1"), "head ip");
	ok(!st_cluster_set_last_task(db, "alpha", "task.yaml"), "last task");
	ok(!st_cluster_node_set_exe(db, "alpha", 1, "$HOME/.skiff/bin/skiff-ab"), "exe");
	is_int(st_cluster_node_set_exe(db, "alpha", 7, "x"), -ENOENT, "exe of a missing rank");
	is_int(st_cluster_set_autostop(db, "nope", 1, 0, NULL), -ENOENT,
	       "autostop of a missing cluster");
	ok(!st_cluster_get(db, "alpha", &g), "get");
	is_int(g.status, CLUSTER_UP, "UP");
	is_int(g.autostop_minutes, 10, "autostop minutes");
	is_int(g.autostop_down, 1, "autodown");
	is_str(g.autostop_wait_for, "jobs", "what autostop waits for");
	is_str(g.head_ip, "10.0.0.1", "head ip kept");
	is_str(g.last_task, "task.yaml", "last task kept");
	is_str(g.ports, "", "no ports yet");
	cluster_free(&g);
	ok(!st_cluster_set_ports(db, "alpha", "8080,9000-9002") && !st_cluster_get(db, "alpha", &g),
	   "ports set");
	is_str(g.ports, "8080,9000-9002", "ports kept");
	cluster_free(&g);
	is_int(st_cluster_set_ports(db, "nope", "1"), -ENOENT, "ports of a missing cluster");
	ok(!st_cluster_set_autostop(db, "alpha", -5, 1, "none") &&
	           !st_cluster_get(db, "alpha", &g) && g.autostop_minutes == -1 &&
	           g.autostop_down == 0 && !*g.autostop_wait_for,
	   "negative minutes turn autostop off");
	cluster_free(&g);
	ok(!st_cluster_nodes(db, "alpha", &got, &n) && n == 2, "nodes again");
	is_str(got[1].skiff_exe, "$HOME/.skiff/bin/skiff-ab", "exe kept");
	cluster_nodes_free(got, n);
	/* A node that moved (a container started again) loses the address it said before. */
	ok(!st_cluster_node_set_addr(db, "alpha", 0, "10.0.0.1") &&
	           !st_cluster_node_set_addr(db, "alpha", 1, "192.0.2.9"),
	   "addr of both ranks");
	ok(!st_cluster_node_set_ip(db, "alpha", 0, "10.0.0.7"), "rank 0 has a new ip");
	is_int(st_cluster_node_set_ip(db, "alpha", 9, "10.0.0.8"), -ENOENT, "ip of a missing rank");
	ok(!st_cluster_nodes(db, "alpha", &got, &n) && n == 2, "nodes after the move");
	is_str(got[0].ip, "10.0.0.7", "the new ip");
	is_str(got[0].addr, "", "its old addr is forgotten (jobs get the new ip)");
	is_str(got[1].addr, "192.0.2.9", "the other rank keeps its addr");
	cluster_nodes_free(got, n);

	c = cluster_spec("beta", "local");
	{
		struct cluster_node l = {0};

		l.rank = 0;
		l.node_key = "local/beta/0";
		l.ip = "127.0.0.1";
		l.home = "/x/local/beta/0";
		ok(!st_cluster_create(db, &c, &l, 1), "create beta (local)");
	}
	ok(!st_cluster_list(db, &list, &n) && n == 2, "list: 2 clusters");
	is_str(list[0].name, "alpha", "sorted by name");
	is_str(list[1].name, "beta", "second");
	clusters_free(list, n);

	ok(!st_cluster_delete(db, "alpha"), "delete alpha");
	is_int(st_cluster_delete(db, "alpha"), -ENOENT, "delete again: gone");
	is_int(st_cluster_nodes(db, "alpha", &got, &n), -ENOENT, "its nodes are gone");
	is_int(count_rows(db, "SELECT count(*) FROM cluster_nodes"), 1, "only beta's node left");
	ok(!st_cluster_list(db, &list, &n) && n == 1, "list: 1 cluster");
	clusters_free(list, n);
	ok(!st_cluster_delete(db, "beta"), "delete beta");
	ok(!st_cluster_list(db, &list, &n) && n == 0 && !list, "empty list is NULL, 0");
	is_str(cluster_status_name(CLUSTER_STOPPED), "STOPPED", "status name");
	is_int(cluster_status_parse("UP"), CLUSTER_UP, "status parse");
	is_int(cluster_status_parse("up"), -1, "status names are upper-case");
	ok(!st_integrity_check(db), "integrity ok");
	st_close(db);
}

static void test_bad_create(void)
{
	struct st_db *db;
	struct cluster c = cluster_spec("gamma", "ssh/p");
	struct cluster_node nodes[2] = {pool_node(0, "10.0.1.1"), pool_node(0, "10.0.1.2")};
	struct cluster g;

	ok(!st_open(db_path, &st_launcher_schema, 0, &db), "open");
	is_int(st_cluster_create(db, &c, nodes, 2), -EINVAL, "ranks out of order refused");
	is_int(st_cluster_create(db, &c, nodes, 0), -EINVAL, "no nodes refused");
	c.name = "";
	is_int(st_cluster_create(db, &c, nodes, 1), -EINVAL, "empty name refused");
	is_int(st_cluster_get(db, "gamma", &g), -ENOENT, "nothing was created");
	/* The same key twice in one cluster: SQL refuses, the transaction rolls back. */
	c.name = "gamma";
	nodes[1] = pool_node(1, "10.0.1.1");
	is_int(st_cluster_create(db, &c, nodes, 2), -EINVAL, "the same node twice refused");
	/* A failure after the cluster and its first node are in: all of it is rolled back. */
	ok(!st_exec(db, "CREATE TEMP TRIGGER fail_node BEFORE INSERT ON cluster_nodes "
	                "WHEN NEW.rank = 1 BEGIN SELECT RAISE(ABORT, 'injected'); END"),
	   "inject a failure on rank 1");
	nodes[1] = pool_node(1, "10.0.1.2");
	ok(st_cluster_create(db, &c, nodes, 2) < 0, "create fails at rank 1");
	is_int(st_cluster_get(db, "gamma", &g), -ENOENT, "rolled back: no cluster");
	is_int(count_rows(db, "SELECT count(*) FROM cluster_nodes"), 0, "rolled back: no nodes");
	ok(!st_exec(db, "DROP TRIGGER fail_node"), "drop the trigger");
	ok(!st_cluster_create(db, &c, nodes, 2), "now it works");
	ok(!st_cluster_delete(db, "gamma"), "clean up");
	st_close(db);
}

static void test_double_booking(void)
{
	struct st_db *db;
	struct cluster a = cluster_spec("a", "ssh/p"), b = cluster_spec("b", "ssh/p"), g;
	struct cluster_node an[2] = {pool_node(0, "10.0.2.1"), pool_node(1, "10.0.2.2")};
	struct cluster_node bn[2] = {pool_node(0, "10.0.2.3"), pool_node(1, "10.0.2.2")};
	char *holder;
	sqlite3_stmt *q;

	ok(!st_open(db_path, &st_launcher_schema, 0, &db), "open");
	ok(!st_cluster_create(db, &a, an, 2), "a books .1 and .2");
	is_int(st_cluster_create(db, &b, bn, 2), -EBUSY, "b cannot book .2 (a holds it)");
	is_int(st_cluster_get(db, "b", &g), -ENOENT, "b was not created");
	ok(!st_node_holder(db, "p/10.0.2.3:22", NULL, 0, 0, &holder) && !holder,
	   "b's other node was not booked either");
	ok(!st_node_holder(db, "p/10.0.2.2:22", NULL, 0, 0, &holder) && holder &&
	           !strcmp(holder, "a"),
	   "holder of .2 is a");
	free(holder);
	ok(!st_node_holder(db, "other/10.0.2.1:22", "10.0.2.1", 22, 0, &holder) && holder &&
	           !strcmp(holder, "a"),
	   "the same address via another pool is held by a");
	free(holder);
	ok(!st_node_holder(db, "other/10.0.2.1:2222", "10.0.2.1", 2222, 0, &holder) && !holder,
	   "another port of the same address is free");

	/* Bypassing the C checks: the UNIQUE constraint in SQL refuses it too. */
	q = st_prepare(db, "INSERT INTO clusters (name, infra, status, num_nodes, created_at) "
	                   "VALUES ('c', 'ssh/p', 0, 1, 0)");
	ok(q && !st_step_done(db, q), "raw insert of cluster c");
	q = st_prepare(db, "INSERT INTO cluster_nodes (cluster, rank, node_key, ip) "
	                   "VALUES ('c', 0, 'p/10.0.2.1:22', '10.0.2.1')");
	ok(q && st_step_done(db, q) < 0, "SQL refuses a booked node_key (UNIQUE)");
	q = st_prepare(db, "INSERT INTO cluster_nodes (cluster, rank, node_key, ip) "
	                   "VALUES ('nosuch', 0, 'p/10.9.9.9:22', '10.9.9.9')");
	ok(q && st_step_done(db, q) < 0, "SQL refuses a node of no cluster (foreign key)");

	ok(!st_cluster_delete(db, "a"), "down a");
	ok(!st_cluster_create(db, &b, bn, 2), "now b can book .2");
	ok(!st_cluster_delete(db, "b") && !st_cluster_delete(db, "c"), "clean up");
	st_close(db);
}

static void test_jobs(void)
{
	struct st_db *db;
	struct cluster a = cluster_spec("ja", "local"), b = cluster_spec("jb", "local");
	struct cluster_node na = {0}, nb = {0};
	struct cluster_job j = {0}, g, *list;
	size_t n;
	int i;

	na.node_key = "local/ja/0";
	na.ip = "127.0.0.1";
	nb.node_key = "local/jb/0";
	nb.ip = "127.0.0.1";
	ok(!st_open(db_path, &st_launcher_schema, 0, &db), "open");
	ok(!st_cluster_create(db, &a, &na, 1) && !st_cluster_create(db, &b, &nb, 1),
	   "two clusters");
	j.name = "train";
	j.num_nodes = 1;
	j.entrypoint = "train.yaml";
	for (i = 1; i <= 3; i++)
		ok(!st_cluster_job_add(db, "ja", &j) && j.id == i, "ja job %d", i);
	ok(j.submitted_at > 0, "submitted_at set");
	ok(!st_cluster_job_add(db, "jb", &j) && j.id == 1, "jb's ids start at 1");
	is_int(st_cluster_job_add(db, "nope", &j), -ENOENT, "job on a missing cluster");
	j.num_nodes = 0;
	ok(st_cluster_job_add(db, "ja", &j) < 0, "a job of 0 nodes refused");

	ok(!st_cluster_job_set_node_ids(db, "ja", 2, "17,3,5"), "set node job ids");
	ok(!st_cluster_job_set_log_dir(db, "ja", 2, "/logs/ja/2"), "set log dir");
	is_int(st_cluster_job_set_node_ids(db, "ja", 9, "1"), -ENOENT, "node ids of a missing job");
	ok(!st_cluster_job_get(db, "ja", 2, &g), "get ja job 2");
	is_str(g.cluster, "ja", "cluster");
	is_str(g.name, "train", "name");
	is_str(g.node_job_ids, "17,3,5", "node job ids");
	is_str(g.log_dir, "/logs/ja/2", "log dir");
	is_str(g.entrypoint, "train.yaml", "entrypoint");
	is_int(g.num_nodes, 1, "num_nodes");
	is_int(g.final_status, -1, "no outcome yet");
	cluster_job_free(&g);
	ok(!st_cluster_job_set_final(db, "ja", 2, NULL, JOB_FAILED_DRIVER) &&
	           !st_cluster_job_set_final(db, "ja", 2, NULL, JOB_CANCELLED),
	   "an outcome, then another");
	ok(!st_cluster_job_get(db, "ja", 2, &g) && g.final_status == JOB_FAILED_DRIVER,
	   "the first outcome stands");
	cluster_job_free(&g);
	ok(!st_cluster_job_delete(db, "ja", 3) && st_cluster_job_list(db, "ja", &list, &n) == 0 &&
	           n == 2,
	   "a job deleted (its submit failed)");
	cluster_jobs_free(list, n);
	is_int(st_cluster_job_delete(db, "ja", 3), -ENOENT, "deleting it again: -ENOENT");
	j.num_nodes = 1;
	ok(!st_cluster_job_add(db, "ja", &j) && j.id == 4, "ids go on past a deleted job");
	is_int(st_cluster_job_get(db, "jb", 2, &g), -ENOENT, "jb has no job 2");
	ok(!st_cluster_job_list(db, "ja", &list, &n) && n == 3, "list ja: 3 jobs");
	ok(list[0].id == 1 && list[2].id == 4, "oldest first");
	cluster_jobs_free(list, n);
	ok(!st_cluster_job_list(db, "nope", &list, &n) && n == 0 && !list, "no jobs: empty");

	/* Ids are never reused while the cluster lives; a new cluster starts again. */
	ok(!st_cluster_delete(db, "ja"), "down ja");
	is_int(count_rows(db, "SELECT count(*) FROM cluster_jobs WHERE cluster = 'ja'"), 0,
	       "its jobs went with it");
	ok(!st_cluster_create(db, &a, &na, 1), "relaunch ja");
	j.num_nodes = 1;
	j.submit_key = "key-of-the-new-job";
	ok(!st_cluster_job_add(db, "ja", &j) && j.id == 1, "new ja starts at 1");
	/* A watcher of the old ja's job 1 holds that job's key: the new job 1 is not its. */
	ok(!st_cluster_job_set_final(db, "ja", 1, "key-of-the-old-job", JOB_FAILED_DRIVER) &&
	           !st_cluster_job_get(db, "ja", 1, &g) && g.final_status == -1,
	   "an outcome for another key: not recorded");
	cluster_job_free(&g);
	ok(!st_cluster_job_set_final(db, "ja", 1, "key-of-the-new-job", JOB_CANCELLED) &&
	           !st_cluster_job_get(db, "ja", 1, &g) && g.final_status == JOB_CANCELLED,
	   "an outcome for its own key: recorded");
	cluster_job_free(&g);
	ok(!st_cluster_delete(db, "ja") && !st_cluster_delete(db, "jb"), "clean up");
	st_close(db);
}

#define CHILD_JOBS 40

static int child_add_jobs(const char *cluster)
{
	struct st_db *db;
	struct cluster_job j = {0};
	int i, bad = 0;

	if (st_open(db_path, &st_launcher_schema, 0, &db))
		return 1;
	j.num_nodes = 1;
	j.entrypoint = "echo";
	for (i = 0; i < CHILD_JOBS; i++)
		if (st_cluster_job_add(db, cluster, &j))
			bad++;
	st_close(db);
	return bad ? 1 : 0;
}

static void test_concurrent_writers(void)
{
	struct st_db *db;
	struct cluster c = cluster_spec("busy", "local");
	struct cluster_node nn = {0};
	struct cluster_job *list;
	pid_t pids[4];
	size_t n, i;
	int k, status, all_ok = 1, in_order = 1;

	nn.node_key = "local/busy/0";
	nn.ip = "127.0.0.1";
	ok(!st_open(db_path, &st_launcher_schema, 0, &db), "open");
	ok(!st_cluster_create(db, &c, &nn, 1), "create busy");
	st_close(db);
	fflush(stdout);
	for (k = 0; k < 4; k++) {
		pids[k] = fork();
		if (pids[k] == 0)
			_exit(child_add_jobs("busy"));
	}
	for (k = 0; k < 4; k++)
		if (pids[k] < 0 || waitpid(pids[k], &status, 0) != pids[k] || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			all_ok = 0;
	ok(all_ok, "4 processes added %d jobs each without an error", CHILD_JOBS);
	ok(!st_open(db_path, &st_launcher_schema, 0, &db), "reopen");
	ok(!st_cluster_job_list(db, "busy", &list, &n), "list");
	is_int(n, 4 * CHILD_JOBS, "every job is there");
	for (i = 0; i < n; i++)
		if (list[i].id != (int64_t)i + 1)
			in_order = 0;
	ok(in_order, "ids are 1..%d: none taken twice, none skipped", 4 * CHILD_JOBS);
	cluster_jobs_free(list, n);

	/* Two launchers booking the same node at once: exactly one wins. */
	fflush(stdout);
	for (k = 0; k < 4; k++) {
		pids[k] = fork();
		if (pids[k] == 0) {
			struct st_db *cdb;
			char name[16];
			struct cluster cc;
			struct cluster_node node = pool_node(0, "10.7.7.7");
			int r;

			log_set_level(LOG_QUIET);
			xsnprintf(name, sizeof(name), "racer%d", k);
			cc = cluster_spec(name, "ssh/p");
			if (st_open(db_path, &st_launcher_schema, 0, &cdb))
				_exit(2);
			r = st_cluster_create(cdb, &cc, &node, 1);
			st_close(cdb);
			_exit(r == 0 ? 0 : r == -EBUSY ? 1 : 2);
		}
	}
	{
		int won = 0, lost = 0, other = 0;

		for (k = 0; k < 4; k++) {
			if (pids[k] < 0 || waitpid(pids[k], &status, 0) != pids[k] ||
			    !WIFEXITED(status))
				other++;
			else if (WEXITSTATUS(status) == 0)
				won++;
			else if (WEXITSTATUS(status) == 1)
				lost++;
			else
				other++;
		}
		ok(won == 1 && lost == 3 && !other,
		   "one racer booked the node, 3 got -EBUSY "
		   "(won %d, lost %d, other %d)",
		   won, lost, other);
	}
	is_int(count_rows(db,
	                  "SELECT count(*) FROM cluster_nodes WHERE node_key = 'p/10.7.7.7:22'"),
	       1, "the node is booked once");
	st_close(db);
}

static void test_launcher_open(void)
{
	struct st_db *db;
	char *home = xasprintf("%s/home", dir);
	char *path = xasprintf("%s/launcher.db", home);
	struct stat st;

	setenv("SKIFF_HOME", home, 1);
	is_int(st_launcher_open(ST_READONLY, &db), -ENOENT, "read-only open of no db: -ENOENT");
	ok(!db, "*out NULL");
	ok(!st_launcher_open(0, &db) && db, "open creates $SKIFF_HOME/launcher.db");
	is_str(st_path(db), path, "path");
	st_close(db);
	ok(!stat(home, &st) && (st.st_mode & 0777) == 0700, "home is 0700");
	ok(!st_launcher_open(ST_READONLY, &db) && db, "read-only open now works");
	st_close(db);
	free(home);
	free(path);
}

/* A node that outlives its cluster says so (stays); a v12 db's ssh nodes do after 12 -> 13. */
static void test_stays(void)
{
	struct st_schema v12 = st_launcher_schema;
	char *path = xasprintf("%s/stays.db", dir);
	struct cluster s = cluster_spec("s", "ssh/p"), l = cluster_spec("l", "local"),
	               c = cluster_spec("c", "podman/pool");
	struct cluster_node sn = pool_node(0, "10.0.9.1"), ln = pool_node(0, "10.0.9.2"),
	                    cn = pool_node(0, "10.0.9.3");
	struct cluster_node *got;
	struct st_db *db;
	size_t n;

	v12.n_migrations = 12;
	ok(!st_open(path, &v12, 0, &db) && st_version(db) == 12, "a db at schema 12");
	ok(!st_exec(db, "INSERT INTO clusters (name, infra, status, num_nodes, created_at) VALUES "
	                "('s', 'ssh/p', 1, 1, 1), ('l', 'local', 1, 1, 1);"
	                "INSERT INTO cluster_nodes (cluster, rank, node_key, ip) VALUES "
	                "('s', 0, 'p/h:22', 'h'), ('l', 0, 'local/l/0', '127.0.0.1');"),
	   "an ssh cluster and a local one in it");
	st_close(db);
	ok(!st_open(path, &st_launcher_schema, 0, &db) && st_version(db) == 16, "migrated to 16");
	ok(!st_cluster_nodes(db, "s", &got, &n) && n == 1 && got[0].stays == 1,
	   "the ssh host stays (its down releases it, as before)");
	cluster_nodes_free(got, n);
	ok(!st_cluster_nodes(db, "l", &got, &n) && n == 1 && got[0].stays == 0,
	   "the local node does not");
	cluster_nodes_free(got, n);
	ok(!st_exec(db, "DELETE FROM clusters;"), "emptied");
	sn.stays = 1;
	cn.stays = 1;
	s.name = "s2";
	l.name = "l2";
	ok(!st_cluster_create(db, &s, &sn, 1) && !st_cluster_create(db, &l, &ln, 1) &&
	           !st_cluster_create(db, &c, &cn, 1),
	   "created: an ssh host, a local node, a pool's container");
	ok(!st_cluster_nodes(db, "s2", &got, &n) && got[0].stays == 1, "the host: stays");
	cluster_nodes_free(got, n);
	ok(!st_cluster_nodes(db, "l2", &got, &n) && got[0].stays == 0, "the local node: not");
	cluster_nodes_free(got, n);
	ok(!st_cluster_nodes(db, "c", &got, &n) && got[0].stays == 1, "the container: stays");
	cluster_nodes_free(got, n);
	st_close(db);
	free(path);
}

/* Shares of one host (cluster_node.share): booked beside each other, never with the whole. */
static void test_shares(void)
{
	struct st_db *db;
	struct cluster w = cluster_spec("w", "ssh/p"), s1 = cluster_spec("s1", "ssh/p"),
	               s2 = cluster_spec("s2", "ssh/p");
	struct cluster_node n1 = pool_node(0, "10.0.7.1"), n2 = pool_node(0, "10.0.7.1"),
	                    nw = pool_node(0, "10.0.7.1"), *got;
	char *holder;
	size_t n;

	ok(!st_open(db_path, &st_launcher_schema, 0, &db), "open");
	n1.node_key = "p/10.0.7.1:22#s1";
	n1.share = "cpus=1 memory=0 gpus=0";
	n2.node_key = "p/10.0.7.1:22#s2";
	n2.share = "cpus=1 memory=0 gpus=0";
	ok(!st_cluster_create(db, &s1, &n1, 1), "s1 books a share of .1");
	ok(!st_node_holder(db, "p/10.0.7.1:22#s2", "10.0.7.1", 22, 1, &holder) && !holder,
	   "for a share, another share does not hold the host");
	ok(!st_node_holder(db, "p/10.0.7.1:22", "10.0.7.1", 22, 0, &holder) && holder &&
	           !strcmp(holder, "s1"),
	   "for the host whole, s1's share holds it");
	free(holder);
	ok(!st_cluster_create(db, &s2, &n2, 1), "s2 books a share of .1 beside it");
	ok(!st_node_holder(db, "p/10.0.7.1:22", "10.0.7.1", 22, 0, &holder) && holder &&
	           !strcmp(holder, "s1, s2"),
	   "for the host whole, both hold it (\"s1, s2\")");
	free(holder);
	ok(!st_cluster_nodes(db, "s2", &got, &n) && n == 1 &&
	           !strcmp(got[0].share, "cpus=1 memory=0 gpus=0"),
	   "its share is kept");
	cluster_nodes_free(got, n);
	ok(!st_cluster_delete(db, "s1") && !st_cluster_delete(db, "s2"), "both go");
	ok(!st_cluster_create(db, &w, &nw, 1), "w books .1 whole");
	ok(!st_node_holder(db, "p/10.0.7.1:22#s1", "10.0.7.1", 22, 1, &holder) && holder &&
	           !strcmp(holder, "w"),
	   "then a share is held by w");
	free(holder);
	ok(!st_cluster_delete(db, "w"), "w goes");
	st_close(db);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	db_path = xasprintf("%s/launcher.db", dir);
	plan_run(test_row_tables);
	plan_run(test_create_list_delete);
	plan_run(test_bad_create);
	plan_run(test_double_booking);
	plan_run(test_jobs);
	plan_run(test_concurrent_writers);
	plan_run(test_launcher_open);
	plan_run(test_stays);
	plan_run(test_shares);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(db_path);
	return done_testing();
}
