#include "supervisor/node.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/spawn.h"
#include "lib/util.h"
#include "lib/banned.h"

/* The paths under home; host: the node's own home (node_paths()). */
static void paths_fill(struct node_paths *p, const char *home, char *host)
{
	p->db = xasprintf("%s/node.db", home);
	p->sock = xasprintf("%s/" SUP_SOCK_NAME, home);
	p->lock = xasprintf("%s/supervisor.lock", home);
	p->log = xasprintf("%s/supervisor.log", home);
	p->logs = xasprintf("%s/logs", home);
	p->hooks = xasprintf("%s/hooks", home);
	p->taken_down = xasprintf("%s/taken-down", home);
	p->host = host;
	p->home = home;
}

const struct node_paths *node_paths(void)
{
	static struct node_paths p;
	const char *home;

	if (p.home)
		return &p;
	home = skiff_home();
	if (!home)
		return NULL;
	/* H/c/KEY: H. */
	paths_fill(&p, home,
	           skiff_home_is_cluster()
	                   ? xstrndup(home, strlen(home) - strlen(strrchr(home, '/')) -
	                                            strlen("/" CLUSTER_HOME_DIR))
	                   : xstrdup(home));
	return &p;
}

struct node_paths *node_paths_of(const char *home)
{
	struct node_paths *p = xcalloc(1, sizeof(*p));

	paths_fill(p, xstrdup(home), xstrdup(home));
	return p;
}

void node_paths_free(struct node_paths *p)
{
	if (!p)
		return;
	free((char *)p->home);
	free(p->host);
	free(p->db);
	free(p->sock);
	free(p->lock);
	free(p->log);
	free(p->logs);
	free(p->hooks);
	free(p->taken_down);
	free(p);
}

int node_ensure_dirs(void)
{
	const struct node_paths *p = node_paths();
	int r;

	if (!p)
		return -ENOENT;
	r = ensure_private_dir(p->home);
	if (r) {
		errno = -r;
		return error_errno("cannot use state directory '%s'", p->home);
	}
	if (mkdir(p->logs, 0700) < 0 && errno != EEXIST)
		return error_errno("cannot create '%s'", p->logs);
	if (mkdir(p->hooks, 0700) < 0 && errno != EEXIST)
		return error_errno("cannot create '%s'", p->hooks);
	return 0;
}

static double meminfo_gib(void)
{
	struct buf b = BUF_INIT(1 << 16);
	double gib = 0;
	const char *p;

	if (!buf_read_file(&b, "/proc/meminfo") && (p = strstr(b.p, "MemTotal:"))) {
		unsigned long long kb;

		if (sscanf(p + 9, "%llu", &kb) == 1)
			gib = (double)kb / (1024.0 * 1024.0);
	}
	buf_release(&b);
	return gib;
}

/*
 * GPUs: the NVIDIA driver lists one directory per GPU under /proc/driver/nvidia/gpus,
 * which needs no exec; nvidia-smi is asked only when that is missing (some containers).
 * No driver and no nvidia-smi means no GPUs, not an error.
 */
static int count_gpus(void)
{
	char *argv[] = {"nvidia-smi", "--query-gpu=index", "--format=csv,noheader", NULL};
	struct buf out = BUF_INIT(1 << 16);
	DIR *d = opendir("/proc/driver/nvidia/gpus");
	struct dirent *e;
	int n = 0, status;
	size_t i;

	if (d) {
		while ((e = readdir(d)))
			if (e->d_name[0] != '.')
				n++;
		closedir(d);
		if (n)
			return n;
	}
	/* Most machines have neither: no child only to fail its execs along the PATH. */
	if (!spawn_findable(argv[0], NULL))
		return 0;
	if (!run_capture(argv, NULL, NULL, &out, NULL, &status) && status == 0)
		for (i = 0; i < out.len; i++)
			n += out.p[i] == '\n';
	buf_release(&out);
	return n;
}

void node_detect_resources(struct node_resources *r)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	if (!sched_getaffinity(0, sizeof(set), &set))
		r->cpus = CPU_COUNT(&set);
	else
		r->cpus = (double)sysconf(_SC_NPROCESSORS_ONLN);
	r->memory = meminfo_gib();
	r->gpus = count_gpus();
}
