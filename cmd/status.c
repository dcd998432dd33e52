/* `skiff status`: the clusters, as SkyPilot's table or JSON, refreshed from the nodes with -r. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/launch/engine.h"
#include "cmd/cmd.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/task.h"
#include "lib/util.h"
#include "lib/banned.h"

const char cmd_status_usage[] =
        "usage: skiff status [--json] [-r] [-v] [CLUSTER...]\n"
        "       skiff status --ip | --endpoints | --endpoint PORT  CLUSTER\n"
        "\n"
        "Lists this machine's clusters (CLUSTER: names or globs such as 'dev-*'): NAME,\n"
        "INFRA, RESOURCES, STATUS (INIT, UP, STOPPED; ENDED: a Slurm cluster whose\n"
        "allocation ended), AUTOSTOP and LAUNCHED; -v adds HEAD_IP and PORTS. A named\n"
        "cluster that does not exist is an error (exit 1).\n"
        "\n"
        "  -r, --refresh     ask every node of each UP cluster; one that does not answer\n"
        "                    makes the cluster INIT (the warning names it)\n"
        "  --ip              the head's address\n"
        "  --endpoints       each open port (resources.ports) as PORT: ADDRESS:PORT\n"
        "  --endpoint PORT   ADDRESS:PORT of one open port\n"
        "  -a, -u            accepted: every cluster here is this user's\n"
        "\n"
        "--json gives per cluster name, status, infra, resources, num_nodes, head, nodes\n"
        "(rank, ip, address, user, port, node, supervisor: with -r, what the node's\n"
        "supervisor said, {answers, pid, version} or {answers, why}; else null), autostop\n"
        "(null or {idle_minutes, down, wait_for}), launched_at, last_task and ports.\n";

/* -r: what a node's supervisor said ({answers, pid, version} or {answers, why}); null. */
static void supervisor_json(const struct cl_ping *p, struct json *j)
{
	if (!p) {
		json_null(j);
		return;
	}
	json_obj_begin(j);
	json_key(j, "answers");
	json_bool(j, p->answered);
	if (p->answered) {
		json_key(j, "pid");
		json_int(j, p->pid);
		json_key(j, "version");
		json_str(j, p->version);
	} else {
		json_key(j, "why");
		json_str(j, p->why);
	}
	json_obj_end(j);
}

static void status_json(const struct eng_cluster *v, size_t n, struct buf *out)
{
	struct json j;
	size_t i, k;

	json_init(&j, out, 1);
	json_arr_begin(&j);
	for (i = 0; i < n; i++) {
		const struct cluster *c = &v[i].c;

		json_obj_begin(&j);
		json_key(&j, "name");
		json_str(&j, c->name);
		json_key(&j, "status");
		json_str(&j, v[i].shown);
		json_key(&j, "infra");
		json_str(&j, c->infra);
		json_key(&j, "resources");
		json_str(&j, c->resources);
		json_key(&j, "num_nodes");
		json_int(&j, c->num_nodes);
		json_key(&j, "head");
		json_str(&j, v[i].nnodes ? v[i].nodes[0].ip : c->head_ip);
		json_key(&j, "nodes");
		json_arr_begin(&j);
		for (k = 0; k < v[i].nnodes; k++) {
			const struct cluster_node *nd = &v[i].nodes[k];

			json_obj_begin(&j);
			json_key(&j, "rank");
			json_int(&j, nd->rank);
			json_key(&j, "ip");
			json_str(&j, nd->ip);
			/* What jobs get in SKYPILOT_NODE_IPS: where the node was reached at. */
			json_key(&j, "address");
			json_str(&j, *nd->addr ? nd->addr : nd->ip);
			json_key(&j, "user");
			json_str(&j, nd->user);
			json_key(&j, "port");
			json_int(&j, nd->port);
			json_key(&j, "node");
			json_str(&j, nd->node_key);
			json_key(&j, "supervisor");
			supervisor_json(v[i].asked ? &v[i].asked[k] : NULL, &j);
			json_obj_end(&j);
		}
		json_arr_end(&j);
		json_key(&j, "autostop");
		if (c->autostop_minutes < 0) {
			json_null(&j);
		} else {
			json_obj_begin(&j);
			json_key(&j, "idle_minutes");
			json_int(&j, c->autostop_minutes);
			json_key(&j, "down");
			json_bool(&j, c->autostop_down);
			json_key(&j, "wait_for");
			json_str(&j, c->autostop_wait_for && *c->autostop_wait_for
			                     ? c->autostop_wait_for
			                     : "jobs_and_ssh");
			json_obj_end(&j);
		}
		json_key(&j, "launched_at");
		json_double(&j, c->launched_at);
		json_key(&j, "last_task");
		json_str(&j, c->last_task);
		json_key(&j, "ports");
		json_str(&j, c->ports);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_finish(&j);
}

static void status_table(const struct eng_cluster *v, size_t n, int verbose, struct buf *out)
{
	double now = now_wall();
	size_t i;

	buf_addf(out, "%-20s %-16s %-24s %-8s %-10s %s\n", "NAME", "INFRA", "RESOURCES", "STATUS",
	         "AUTOSTOP", verbose ? "LAUNCHED   HEAD_IP         PORTS" : "LAUNCHED");
	for (i = 0; i < n; i++) {
		const struct cluster *c = &v[i].c;
		char as[32], launched[32];

		if (c->autostop_minutes < 0)
			xsnprintf(as, sizeof(as), "-");
		else
			xsnprintf(as, sizeof(as), "%dm%s", c->autostop_minutes,
			          c->autostop_down ? " (down)" : "");
		cmd_fmt_ago(c->launched_at, now, launched, sizeof(launched));
		buf_addf(out, "%-20s %-16s %-24s %-8s %-10s ", c->name, c->infra, c->resources,
		         v[i].shown, as);
		if (verbose)
			buf_addf(out, "%-10s %-15s %s\n", launched, *c->head_ip ? c->head_ip : "-",
			         *c->ports ? c->ports : "-");
		else
			buf_addf(out, "%s\n", launched);
	}
}

/* --ip, --endpoints, --endpoint PORT: about one cluster. */
static int status_one(const struct eng_cluster *ec, int ip, long port, struct buf *out)
{
	const struct cluster *c = &ec->c;
	const char *head = ec->nnodes ? ec->nodes[0].ip : c->head_ip;
	const char *p = c->ports;

	if (strcmp(ec->shown, "UP") || !*head)
		return error("cluster %s is %s: it has no address", c->name, ec->shown);
	if (ip) {
		buf_addf(out, "%s\n", head);
		return 0;
	}
	if (port > 0) {
		if (!task_ports_has(c->ports, port))
			return error("port %ld is not open on cluster %s (%s); launch a task with "
			             "'resources.ports: [%ld]' (or -p %ld) on it",
			             port, c->name, *c->ports ? c->ports : "no ports", port, port);
		buf_addf(out, "%s:%ld\n", head, port);
		return 0;
	}
	if (!*p)
		info("cluster %s has no ports open (resources.ports)", c->name);
	while (*p) {
		size_t len = strcspn(p, ",");

		buf_addf(out, "%.*s: %s:%.*s\n", (int)len, p, head, (int)len, p);
		p += len + (p[len] == ',');
	}
	return 0;
}

int cmd_status(int argc, char **argv)
{
	struct st_db *ldb;
	struct eng_cluster *v = NULL;
	struct buf out = BUF_INIT(0);
	char **names = xcalloc((size_t)argc, sizeof(*names));
	size_t n = 0, nnames = 0;
	int as_json = 0, verbose = 0, ip = 0, endpoints = 0, a, r, missing;
	unsigned flags = 0;
	long port = 0;

	for (a = 1; a < argc; a++) {
		const char *arg = argv[a];

		if (!strcmp(arg, "--json")) {
			as_json = 1;
		} else if (!strcmp(arg, "-r") || !strcmp(arg, "--refresh")) {
			flags |= ENG_STATUS_REFRESH;
		} else if (!strcmp(arg, "-v") || !strcmp(arg, "--verbose")) {
			verbose = 1;
		} else if (!strcmp(arg, "--ip")) {
			ip = 1;
		} else if (!strcmp(arg, "--endpoints")) {
			endpoints = 1;
		} else if (!strcmp(arg, "--endpoint") || !strncmp(arg, "--endpoint=", 11)) {
			const char *pv = arg[10] == '=' ? arg + 11 : a + 1 < argc ? argv[++a] : "";

			if (parse_long(pv, 1, 65535, &port))
				return free(names), usage_error("status",
				                                "--endpoint needs a port "
				                                "(1-65535), not '%s'",
				                                pv);
		} else if (!strcmp(arg, "-a") || !strcmp(arg, "--all-users") ||
		           !strcmp(arg, "-u")) {
			continue; /* every cluster here is this user's */
		} else if (arg[0] == '-') {
			return free(names), usage_error("status", "unknown option '%s'", arg);
		} else {
			names[nnames++] = argv[a];
		}
	}
	if ((ip || endpoints || port) && nnames != 1)
		return free(names), usage_error("status", "%s needs exactly one cluster",
		                                ip          ? "--ip"
		                                : endpoints ? "--endpoints"
		                                            : "--endpoint");
	if (cmd_open_ldb(&ldb)) {
		free(names);
		return EXIT_FAIL;
	}
	missing = cmd_find_clusters(ldb, names, nnames, flags, &v, &n);
	free(names);
	if (missing < 0) {
		st_close(ldb);
		return EXIT_FAIL;
	}
	r = 0;
	if (ip || endpoints || port)
		r = n == 1 ? status_one(&v[0], ip, port, &out) : -1;
	else if (as_json)
		status_json(v, n, &out);
	else if (!n && !missing)
		buf_adds(&out, "No existing clusters.\n");
	else if (n)
		status_table(v, n, verbose, &out);
	if (print_out(out.p, out.len))
		r = -1;
	buf_release(&out);
	eng_clusters_free(v, n);
	st_close(ldb);
	return r || missing ? EXIT_FAIL : EXIT_OK;
}
