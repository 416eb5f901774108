/*
 * daemon.c - start-up, signals, readiness, the loop and a clean exit.
 *
 * Errors before the daemon is ready go to stderr (and the log), and the
 * start fails with status 1; once ready, errors are logged and the daemon
 * carries on unless it truly cannot.
 */
#include "build-config.h"
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cache/cache.h"
#include "config/config.h"
#include "control/server.h"
#include "lockfile.h"
#include "loop/log.h"
#include "loop/loop.h"
#include "notify.h"
#include "health.h"
#include "reload.h"
#include "replication.h"
#include "requests.h"
#include "rundir.h"

struct daemon {
	struct config *cfg;         /* the running configuration: a reload changes it in place */
	char config_path[PATH_MAX]; /* absolute: the daemon may chdir */
	bool detached;
	struct loop *loop;
	struct control_server *ctl;
	struct cache *cache;
	struct replication *replication;
	struct health *health;
	struct lockfile lock;
	struct loop_timer *watchdog;
	struct requests_ctx requests;
	int ready_fd;               /* write end of the -d readiness pipe, or -1 */
};

static void on_terminate(struct loop *loop, int signo, void *arg)
{
	log_notice("received signal %d (%s), exiting", signo, strsignal(signo));
	loop_stop(loop);
}

/*
 * SIGHUP (logrotate, systemctl reload): the log files are reopened, then
 * the configuration file is read again and what can change live is
 * applied (reload.c).
 */
static void on_hangup(struct loop *loop, int signo, void *arg)
{
	struct daemon *d = arg;
	struct reload_ctx x = {
		.running = d->cfg, .path = d->config_path, .log_to_stderr = !d->detached,
		.cache = d->cache, .replication = d->replication, .ctl = d->ctl,
	};
	int err = log_reopen();

	if (err < 0)
		log_error("cannot reopen the log file after SIGHUP: %s", strerror(-err));
	else
		log_notice("log file reopened (SIGHUP)");
	if (d->cache && (err = cache_reopen_logs(d->cache)) < 0)
		log_error("cannot reopen the Stats log file after SIGHUP: %s", strerror(-err));
	reload_run(&x);
}

static void on_watchdog(struct loop *loop, struct loop_timer *timer, void *arg)
{
	uint64_t period = notify_watchdog_ms();

	notify_watchdog();
	loop_timer_arm(timer, period / 2 ? period / 2 : 1000);
}

/*
 * Fork for -d.  The parent waits on a pipe for one byte from the child:
 * it arrives when the child is ready; EOF means the child failed (its
 * reasons are already on stderr).  Returns in the child; exits in the parent.
 */
static int daemonize(struct daemon *d)
{
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int err = errno;

		close(fds[0]);
		close(fds[1]);
		return -err;
	}
	if (pid > 0) {
		char ok;
		ssize_t n;

		close(fds[1]);
		do
			n = read(fds[0], &ok, 1);
		while (n < 0 && errno == EINTR);
		/* Leave the lock to the child: closing our copy of the fd keeps its flock. */
		_exit(n == 1 ? 0 : 1);
	}
	close(fds[0]);
	d->ready_fd = fds[1];
	d->detached = true;
	if (setsid() < 0)
		log_warning("setsid failed: %s", strerror(errno));
	if (chdir("/") < 0)
		log_warning("chdir / failed: %s", strerror(errno));
	return lockfile_write_pid(&d->lock);
}

static void become_ready(struct daemon *d)
{
	if (d->cfg->general.systemd)
		notify_ready();
	if (d->ready_fd >= 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (write(d->ready_fd, "", 1) != 1)
			log_warning("cannot tell the parent process that the daemon is ready");
		close(d->ready_fd);
		d->ready_fd = -1;
		log_detach_stderr();
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
			close(null);
		}
	}
}

static gid_t control_group(const struct config *cfg)
{
	return cfg->general.unix_group[0] ? cfg->general.unix_gid : CONTROL_NO_GROUP;
}

static int open_control(struct daemon *d)
{
	const char *path = d->cfg->general.unix_path;
	int err;

	err = control_server_open(&d->ctl, d->loop, path, d->cfg->general.unix_backlog,
				  control_group(d->cfg));
	switch (-err) {
	case 0:
		return requests_register(&d->requests, d->ctl);
	case EADDRINUSE:
		log_error("another daemon is listening on the control socket %s", path);
		break;
	case EEXIST:
		log_error("control socket path %s exists and is not a socket; not removing it", path);
		break;
	default:
		log_error("cannot open the control socket %s: %s", path, strerror(-err));
	}
	return err;
}

/*
 * The runtime directory, if the lock file or the socket is in it: made
 * root's alone before either is created; with a Group that may use a
 * socket there, its members may pass through it.
 */
static int prepare_runtime_dir(const struct config *cfg)
{
	bool lock = rundir_holds(CONFIG_RUNTIME_DIR, cfg->general.lockfile);
	bool sock = rundir_holds(CONFIG_RUNTIME_DIR, cfg->general.unix_path);

	if (!lock && !sock)
		return 0;
	return rundir_prepare(CONFIG_RUNTIME_DIR, sock ? control_group(cfg) : (gid_t)-1);
}

static int take_lock(struct daemon *d)
{
	const char *path = d->cfg->general.lockfile;
	struct lockfile_info info;
	int err = lockfile_acquire(&d->lock, path, &info);

	if (info.replaced)
		log_warning("lock file %s %s: not trusted, so it was replaced by a new one", path,
			    info.replaced_why);
	if (err == -EWOULDBLOCK) {
		if (info.owner)
			log_error("lock file %s is held by a running daemon (pid %d); not starting",
				  path, (int)info.owner);
		else
			log_error("lock file %s is held by a running daemon; not starting", path);
		return err;
	}
	if (err < 0 && info.replaced_why[0] && !info.replaced) {
		log_error("lock file %s %s: not trusted, and it cannot be replaced: %s", path,
			  info.replaced_why, strerror(-err));
		return err;
	}
	if (err < 0) {
		log_error("cannot take the lock file %s: %s", path, strerror(-err));
		return err;
	}
	if (info.stale_pid)
		log_warning("lock file %s was left by pid %d, which is gone (unclean stop?); taking it over",
			    path, (int)info.stale_pid);
	return 0;
}

/* The internal and external caches, and the kernel side that feeds them. */
static int start_caches(struct daemon *d)
{
	uint32_t seed;
	int err;

	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed))
		seed = (uint32_t)getpid() ^ (uint32_t)time(NULL);
	err = cache_new(&d->cache, d->cfg, d->loop, seed);
	if (err < 0) {
		log_error("cannot set up the caches: %s", strerror(-err));
		return err;
	}
	d->requests.cache = d->cache;
	if (d->ctl && (err = requests_register(&d->requests, d->ctl)) < 0)
		return err;
	err = cache_start(d->cache);
	if (err < 0) {
		log_error("cannot follow the kernel's connection tracking: %s", strerror(-err));
		return err;
	}
	if (d->cfg->role != CONFIG_ROLE_SYNC)
		return 0;
	err = replication_start(&d->replication, d->cfg, d->loop, d->cache);
	if (err < 0)
		return err;
	d->requests.replication = d->replication;
	err = health_start(&d->health, d->cfg, d->loop, d->cache, d->replication);
	if (err < 0) {
		log_error("cannot start the health watch: %s", strerror(-err));
		return err;
	}
	d->requests.health = d->health;
	if (d->ctl)
		err = requests_register(&d->requests, d->ctl);
	return err;
}

static int start(struct daemon *d, bool detach)
{
	const struct config *cfg = d->cfg;
	int err;

	if ((err = prepare_runtime_dir(cfg)) < 0 || (err = take_lock(d)) < 0)
		return err;

	if (detach) {
		err = daemonize(d);
		if (err < 0) {
			log_error("cannot become a daemon: %s", strerror(-err));
			return err;
		}
	}

	signal(SIGPIPE, SIG_IGN);
	d->loop = loop_new();
	if (!d->loop)
		return -errno;
	if ((err = loop_signal(d->loop, SIGTERM, on_terminate, d)) < 0 ||
	    (err = loop_signal(d->loop, SIGINT, on_terminate, d)) < 0 ||
	    (err = loop_signal(d->loop, SIGHUP, on_hangup, d)) < 0) {
		log_error("cannot set up signal handling: %s", strerror(-err));
		return err;
	}
	/* conntrackd switches itself to real-time scheduling. */
	reload_apply_scheduler(cfg);
	if (cfg->general.systemd && notify_supported()) {
		uint64_t period = notify_watchdog_ms();

		if (period) {
			d->watchdog = loop_timer_new(d->loop, on_watchdog, d);
			if (!d->watchdog)
				return -ENOMEM;
			loop_timer_arm(d->watchdog, period / 2 ? period / 2 : 1000);
		}
	}
	requests_init(&d->requests, cfg, d->loop);
	err = open_control(d);
	if (err < 0)
		return err;
	if (cfg->role != CONFIG_ROLE_NONE)
		return start_caches(d);
	return 0;
}

static void stop(struct daemon *d)
{
	if (d->cfg->general.systemd)
		notify_stopping();
	/* Subsystems first: they answer their waiting clients before the socket closes. */
	health_stop(d->health);
	d->health = NULL;
	d->requests.health = NULL;
	replication_stop(d->replication);
	d->replication = NULL;
	d->requests.replication = NULL;
	cache_free(d->cache);
	d->cache = NULL;
	d->requests.cache = NULL;
	control_server_close(d->ctl);
	d->ctl = NULL;
	loop_timer_free(d->watchdog);
	d->watchdog = NULL;
	if (d->loop)
		loop_free(d->loop);
	d->loop = NULL;
	lockfile_release(&d->lock);
}

/* The file to read again on SIGHUP, as an absolute path: -d changes the directory to /. */
static void absolute_path(const char *path, char *out, size_t len)
{
	char cwd[PATH_MAX];
	size_t n;

	snprintf(out, len, "%s", path);
	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return;
	n = strlen(cwd);
	if (n + 1 + strlen(path) >= len)
		return;
	memcpy(out, cwd, n);
	out[n] = '/';
	memcpy(out + n + 1, path, strlen(path) + 1);
}

int daemon_run(struct config *cfg, bool detach)
{
	struct daemon d = { .cfg = cfg, .ready_fd = -1, .lock = { .fd = -1 } };
	int err;

	absolute_path(cfg->path, d.config_path, sizeof(d.config_path));
	err = log_open("ctsyncd", cfg->general.logfile, cfg->general.syslog_facility, true);
	if (err < 0)
		log_error("cannot open the log file %s: %s; logging to stderr only",
			  cfg->general.logfile, strerror(-err));
	if (cfg->general.systemd && !notify_supported() && getenv("NOTIFY_SOCKET"))
		log_warning("Systemd on, but this ctsyncd was built without libsystemd: no notification");

	err = start(&d, detach);
	if (err < 0) {
		log_error("ctsyncd failed to start");
		stop(&d);
		log_close();
		return 1;
	}
	log_notice("ctsyncd %s started: pid %d, config %s, role %s", PACKAGE_VERSION, (int)getpid(),
		   cfg->path, requests_role_name(cfg));
	become_ready(&d);

	err = loop_run(d.loop);
	if (err < 0)
		log_error("event loop failed: %s", strerror(-err));
	log_notice("ctsyncd exiting");
	stop(&d);
	log_close();
	return err < 0 ? 1 : 0;
}
