/*
 * lockfile.c - lock file with liveness through flock().
 */
#include "lockfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

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

static int lockfile_acquire_attempt(struct lockfile *lf, const char *path, pid_t *owner,
				    pid_t *stale_pid, int attempt)
{
	struct stat held, named;
	int fd;

	*owner = 0;
	*stale_pid = 0;
	lf->fd = -1;
	if (strlen(path) >= sizeof(lf->path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int err = errno;

		*owner = read_pid(fd);
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
		if (attempt < 3)
			return lockfile_acquire_attempt(lf, path, owner, stale_pid, attempt + 1);
		return -EAGAIN;
	}
	*stale_pid = read_pid(fd);
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

int lockfile_acquire(struct lockfile *lf, const char *path, pid_t *owner, pid_t *stale_pid)
{
	return lockfile_acquire_attempt(lf, path, owner, stale_pid, 0);
}
