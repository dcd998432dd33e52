/*
 * The pause process of the test cluster's sandbox image (tests/lib/k8s.sh builds it with
 * musl-gcc -static; no registry can be reached, so there is no upstream pause image).
 * It holds the pod's namespaces open, reaps what is re-parented to it, and exits on
 * SIGINT or SIGTERM, as registry.k8s.io/pause does.
 */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_quit(int sig)
{
	(void)sig;
	_exit(0);
}

static void on_child(int sig)
{
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

int main(void)
{
	struct sigaction sa = { 0 };

	sa.sa_handler = on_quit;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_child;
	sa.sa_flags = SA_NOCLDSTOP | SA_RESTART;
	sigaction(SIGCHLD, &sa, NULL);
	for (;;)
		pause();
}
