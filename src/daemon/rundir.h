/*
 * rundir.h - the daemon's runtime directory (CONFIG_RUNTIME_DIR), where
 * the default lock file and control socket live.
 */
#ifndef CTSYNCD_RUNDIR_H
#define CTSYNCD_RUNDIR_H

#include <stdbool.h>
#include <sys/types.h>

/* Is `path` a file directly in `dir`? */
bool rundir_holds(const char *dir, const char *path);

/*
 * Create `dir` if missing, and check that only its owner (root or the
 * daemon's uid) may write it: a path that is not a directory, belongs to
 * someone else, or is writable by its group or others is refused with a
 * logged reason.  Its mode becomes 0700; with a `group` (not (gid_t)-1)
 * whose members must reach the socket inside, that group and 0710.
 * Returns 0 or -errno.
 */
int rundir_prepare(const char *dir, gid_t group);

#endif
