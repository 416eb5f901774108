/*
 * lockfile.c - lock file with liveness through flock().
 *
 * The lock may sit in a directory that every user can write (upstream's
 * /var/lock/conntrack.lock): anyone could then create the file first, or
 * open one we left readable, and hold an flock on it for ever.  So a file
 * is only trusted if it is a regular file of our own uid, and ours are
 * created 0600, which nobody else can open; an untrusted one is removed
 * and created anew (the other user's flock stays on the removed inode).
 */
#include "lockfile.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Attempts when the file changes under us (a racing start, a racing intruder). */
#define ATTEMPTS 4

static pid_t read_pid(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	long pid;
	char *end;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	pid = strtol(buf, &end, 10);
	if (end == buf || pid <= 0 || pid > 0x7fffffff)
		return 0;
	return (pid_t)pid;
}

/* Why an existing file is not ours to use, or NULL if it is. */
static const char *untrusted(const struct stat *st, struct lockfile_info *info)
{
	if (S_ISLNK(st->st_mode))
		snprintf(info->replaced_why, sizeof(info->replaced_why), "is a symbolic link");
	else if (!S_ISREG(st->st_mode))
		snprintf(info->replaced_why, sizeof(info->replaced_why), "is not a regular file");
	else if (st->st_uid != geteuid())
		snprintf(info->replaced_why, sizeof(info->replaced_why),
			 "belongs to uid %u, not to the daemon's uid %u",
			 (unsigned)st->st_uid, (unsigned)geteuid());
	else
		return NULL;
	return info->replaced_why;
}

/* Remove an untrusted file so that the next attempt creates ours. */
static int replace(const char *path, const struct stat *st, struct lockfile_info *info)
{
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	info->replaced = true;
	info->replaced_uid = st->st_uid;
	return 0;
}

/* A new file of ours, or -EEXIST if someone was faster. */
static int create_exclusive(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

	return fd < 0 ? -errno : fd;
}

/* The existing file of ours at `path`, if it is still the one lstat saw; -EAGAIN if not. */
static int open_existing(const char *path, const struct stat *seen)
{
	struct stat st;
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return errno == ENOENT || errno == ELOOP ? -EAGAIN : -errno;
	if (fstat(fd, &st) < 0 || st.st_ino != seen->st_ino || st.st_dev != seen->st_dev) {
		close(fd);
		return -EAGAIN;
	}
	return fd;
}

/*
 * One attempt.  Returns 0, -EAGAIN to try again (the file changed under
 * us), -EWOULDBLOCK (a live owner), or another -errno.
 */
static int attempt(struct lockfile *lf, const char *path, struct lockfile_info *info)
{
	struct stat st, held, named;
	int fd, err;

	if (lstat(path, &st) < 0) {
		if (errno != ENOENT)
			return -errno;
		fd = create_exclusive(path);
		if (fd == -EEXIST)
			return -EAGAIN;
		if (fd < 0)
			return fd;
	} else if (untrusted(&st, info)) {
		err = replace(path, &st, info);
		return err < 0 ? err : -EAGAIN;
	} else {
		fd = open_existing(path, &st);
		if (fd < 0)
			return fd;
	}

	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		err = errno;
		info->owner = read_pid(fd);
		/*
		 * A file of ours that others can read (an older version made
		 * it 0644) may be locked by anyone who opened it.  If the pid
		 * it names is gone, the holder is not that daemon.
		 */
		if (err == EWOULDBLOCK && fstat(fd, &held) == 0 && (held.st_mode & 077) &&
		    (info->owner == 0 || (kill(info->owner, 0) < 0 && errno == ESRCH))) {
			close(fd);
			snprintf(info->replaced_why, sizeof(info->replaced_why),
				 "is readable by other users (mode %04o) and locked by a process "
				 "other than the pid it names",
				 (unsigned)(held.st_mode & 07777));
			info->owner = 0;
			err = replace(path, &held, info);
			return err < 0 ? err : -EAGAIN;
		}
		close(fd);
		return err == EWOULDBLOCK ? -EWOULDBLOCK : -err;
	}
	/*
	 * A previous owner unlinks the file while it still holds the lock, so
	 * we may have locked an inode that no longer has this name.
	 */
	if (fstat(fd, &held) < 0 || stat(path, &named) < 0 ||
	    held.st_ino != named.st_ino || held.st_dev != named.st_dev) {
		close(fd);
		return -EAGAIN;
	}
	/* Ours from now on: nobody else may open it, whatever mode an older version gave it. */
	if ((held.st_mode & 07777) != 0600 && fchmod(fd, 0600) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	info->stale_pid = read_pid(fd);
	lf->fd = fd;
	snprintf(lf->path, sizeof(lf->path), "%s", path);
	return lockfile_write_pid(lf);
}

int lockfile_write_pid(struct lockfile *lf)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());

	if (ftruncate(lf->fd, 0) < 0 || pwrite(lf->fd, buf, (size_t)n, 0) != n)
		return -errno;
	return 0;
}

void lockfile_release(struct lockfile *lf)
{
	if (lf->fd < 0)
		return;
	/* Unlink while still holding the lock, so no one else's file is removed. */
	unlink(lf->path);
	close(lf->fd);
	lf->fd = -1;
}

int lockfile_acquire(struct lockfile *lf, const char *path, struct lockfile_info *info)
{
	int err = -EAGAIN;

	memset(info, 0, sizeof(*info));
	lf->fd = -1;
	if (strlen(path) >= sizeof(lf->path))
		return -ENAMETOOLONG;
	for (int i = 0; i < ATTEMPTS && err == -EAGAIN; i++)
		err = attempt(lf, path, info);
	return err;
}
