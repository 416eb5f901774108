/*
 * lockfile.h - the daemon's lock file.
 *
 * The file holds the owner's PID and an flock() that lives exactly as long
 * as the owner process: a live daemon blocks a second start, while the file
 * a crashed daemon left behind is simply taken over.
 */
#ifndef CTSYNCD_LOCKFILE_H
#define CTSYNCD_LOCKFILE_H

#include <sys/types.h>

struct lockfile {
	int fd;
	char path[256];
};

/*
 * Take the lock.  Returns 0; -EWOULDBLOCK when a live process holds it
 * (its pid in *owner, 0 if unreadable); or another -errno.  *stale_pid is
 * set to the pid recorded by a dead previous owner (0 if none).
 */
int lockfile_acquire(struct lockfile *lf, const char *path, pid_t *owner, pid_t *stale_pid);
/* Record the current pid (call again after fork: the lock follows the fd). */
int lockfile_write_pid(struct lockfile *lf);
/* Unlink and unlock. */
void lockfile_release(struct lockfile *lf);

#endif
