/*
 * rundir.c - the runtime directory, made and checked before anything is
 * created in it: a lock file or socket in a directory that others may
 * write could be taken or replaced by them.
 */
#include "rundir.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loop/log.h"

bool rundir_holds(const char *dir, const char *path)
{
	size_t n = strlen(dir);

	return strncmp(path, dir, n) == 0 && path[n] == '/' && path[n + 1] != '\0' &&
	       strchr(path + n + 1, '/') == NULL;
}

int rundir_prepare(const char *dir, gid_t group)
{
	mode_t mode = group == (gid_t)-1 ? 0700 : 0710;
	struct stat st;
	int fd, err;

	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		err = -errno;
		log_error("cannot create the runtime directory %s: %s", dir, strerror(-err));
		return err;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		if (err == -ENOTDIR || err == -ELOOP)
			log_error("%s exists and is not a directory; ctsyncd keeps its lock file and "
				  "control socket there: remove it, or set LockFile and UNIX { Path } "
				  "elsewhere", dir);
		else
			log_error("cannot open the runtime directory %s: %s", dir, strerror(-err));
		return err;
	}
	if (fstat(fd, &st) < 0) {
		err = -errno;
		log_error("cannot read the runtime directory %s: %s", dir, strerror(-err));
		goto out;
	}
	err = -EPERM;
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		log_error("the runtime directory %s belongs to uid %u, not to root: refusing to keep "
			  "the lock file and control socket there", dir, (unsigned)st.st_uid);
		goto out;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		log_error("the runtime directory %s is writable by other users (mode %04o): any of "
			  "them could take the lock or replace the socket; refusing it (chmod 0700 it)",
			  dir, (unsigned)(st.st_mode & 07777));
		goto out;
	}
	/* The group first: at 0710 the directory must already be the right group's. */
	if (group != (gid_t)-1 && st.st_gid != group && fchown(fd, (uid_t)-1, group) < 0) {
		err = -errno;
		log_error("cannot give the runtime directory %s to group %u: %s", dir,
			  (unsigned)group, strerror(-err));
		goto out;
	}
	if ((st.st_mode & 07777) != mode && fchmod(fd, mode) < 0) {
		err = -errno;
		log_error("cannot set the mode of the runtime directory %s to %04o: %s", dir,
			  (unsigned)mode, strerror(-err));
		goto out;
	}
	err = 0;
out:
	close(fd);
	return err;
}
