/*
 * lockfile.h - the daemon's lock file.
 *
 * The file holds the owner's PID and an flock() that lives exactly as long
 * as the owner process: a live daemon blocks a second start, while the file
 * a crashed daemon left behind is simply taken over.
 */
#ifndef CTSYNCD_LOCKFILE_H
#define CTSYNCD_LOCKFILE_H

#include <stdbool.h>
#include <sys/types.h>

struct lockfile {
	int fd;
	char path[256];
};

/* What lockfile_acquire() found, for the log. */
struct lockfile_info {
	pid_t owner;                /* with -EWOULDBLOCK: the live holder's pid, 0 if unreadable */
	pid_t stale_pid;            /* the pid recorded by a dead previous owner, 0 if none */
	bool replaced;              /* a file we did not trust was removed and created anew */
	uid_t replaced_uid;         /* its owner */
	char replaced_why[128];     /* why it was not trusted ("belongs to uid 65534, ...") */
};

/*
 * Take the lock.  Returns 0; -EWOULDBLOCK when a live process holds it; or
 * another -errno.  An existing file that is not a regular file of our
 * uid, or one of ours that others could open and that is locked by
 * someone other than the pid it names, is not trusted: it is removed and
 * created anew, 0600: info->replaced says so, and replaced_why is set
 * even when the removal failed.
 */
int lockfile_acquire(struct lockfile *lf, const char *path, struct lockfile_info *info);
/* Record the current pid (call again after fork: the lock follows the fd). */
int lockfile_write_pid(struct lockfile *lf);
/* Unlink and unlock. */
void lockfile_release(struct lockfile *lf);

#endif
