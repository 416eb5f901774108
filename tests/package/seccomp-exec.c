/*
 * seccomp-exec - run a program under the system call restrictions of a
 * systemd unit, where systemd is not there to apply them (the tests of
 * tests/package/).  As systemd does, each restriction is a filter of its
 * own; the kernel applies the strictest answer of all of them.
 *
 *   seccomp-exec [options] -- PROGRAM [ARGS...]
 *     --allow FILE              SystemCallFilter: only the calls named in
 *                               FILE (one a line) are allowed, the others
 *                               fail with --errno (default: the process is
 *                               killed)
 *     --errno NAME              SystemCallErrorNumber (EPERM, EACCES, ...)
 *     --families LIST           RestrictAddressFamilies (AF_UNIX,AF_INET...)
 *     --restrict-namespaces     RestrictNamespaces=yes
 *     --restrict-suid-sgid      RestrictSUIDSGID=yes
 *     --lock-personality        LockPersonality=yes
 *     --deny-write-execute      MemoryDenyWriteExecute=yes
 *     --private-keyring         KeyringMode=private
 *
 * Every filter allows only the native architecture
 * (SystemCallArchitectures=native).  The caller must have set
 * no_new_privs (NoNewPrivileges=yes, setpriv --no-new-privs).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/personality.h>
#include <unistd.h>

static void die(const char *what, int err)
{
	fprintf(stderr, "seccomp-exec: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(127);
}

static scmp_filter_ctx new_filter(uint32_t dflt)
{
	scmp_filter_ctx ctx = seccomp_init(dflt);

	if (!ctx)
		die("seccomp_init", ENOMEM);
	/* SystemCallArchitectures=native: a call of another ABI kills. */
	if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) < 0)
		die("seccomp_attr_set", EINVAL);
	return ctx;
}

static void load(scmp_filter_ctx ctx, const char *what)
{
	int rc = seccomp_load(ctx);

	if (rc < 0)
		die(what, rc);
	seccomp_release(ctx);
}

static int syscall_nr(const char *name)
{
	return seccomp_syscall_resolve_name(name);
}

/* A rule on a call this kernel's libseccomp does not know is skipped, as systemd does. */
static void rule(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned n,
		 const struct scmp_arg_cmp *cmp)
{
	int nr = syscall_nr(name), rc;

	if (nr == __NR_SCMP_ERROR)
		return;
	rc = seccomp_rule_add_array(ctx, action, nr, n, cmp);
	if (rc < 0) {
		char what[96];

		snprintf(what, sizeof(what), "rule on %s", name);
		die(what, rc);
	}
}

static void allow_list(const char *path, uint32_t denied)
{
	scmp_filter_ctx ctx = new_filter(denied);
	char line[128];
	FILE *f = fopen(path, "r");
	unsigned count = 0;

	if (!f)
		die(path, errno);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, " \t\r\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		rule(ctx, SCMP_ACT_ALLOW, line, 0, NULL);
		count++;
	}
	fclose(f);
	if (count == 0)
		die("the allow-list is empty", EINVAL);
	/* The program must be started. */
	rule(ctx, SCMP_ACT_ALLOW, "execve", 0, NULL);
	load(ctx, "allow-list");
}

static const struct {
	const char *name;
	int family;
} family_names[] = {
	{ "AF_UNIX", AF_UNIX }, { "AF_INET", AF_INET }, { "AF_INET6", AF_INET6 },
	{ "AF_NETLINK", AF_NETLINK }, { "AF_PACKET", AF_PACKET },
};

static void restrict_families(char *list)
{
	scmp_filter_ctx ctx = new_filter(SCMP_ACT_ALLOW);
	bool allowed[AF_MAX] = { false };
	char *tok, *save = NULL;
	int f;

	for (tok = strtok_r(list, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		size_t i;

		for (i = 0; i < sizeof(family_names) / sizeof(family_names[0]); i++)
			if (strcmp(family_names[i].name, tok) == 0)
				break;
		if (i == sizeof(family_names) / sizeof(family_names[0])) {
			fprintf(stderr, "seccomp-exec: unknown address family '%s'\n", tok);
			exit(127);
		}
		allowed[family_names[i].family] = true;
	}
	for (f = 0; f < AF_MAX; f++) {
		struct scmp_arg_cmp cmp = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)f);

		if (!allowed[f])
			rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), "socket", 1, &cmp);
	}
	{
		struct scmp_arg_cmp cmp = SCMP_A0(SCMP_CMP_GE, AF_MAX);

		rule(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), "socket", 1, &cmp);
	}
	load(ctx, "address families");
}

static void restrict_namespaces(void)
{
	static const unsigned long flags[] = {
		CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
		CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
	};
	scmp_filter_ctx ctx = new_filter(SCMP_ACT_ALLOW);
	size_t i;

	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		struct scmp_arg_cmp cmp = SCMP_A0(SCMP_CMP_MASKED_EQ, flags[i], flags[i]);

		rule(ctx, SCMP_ACT_ERRNO(EPERM), "clone", 1, &cmp);
		rule(ctx, SCMP_ACT_ERRNO(EPERM), "unshare", 1, &cmp);
	}
	rule(ctx, SCMP_ACT_ERRNO(EPERM), "setns", 0, NULL);
	/* clone3's flags are in memory, out of a filter's reach: ENOSYS makes libc use clone. */
	rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL);
	load(ctx, "namespaces");
}

static void mode_rule(scmp_filter_ctx ctx, const char *name, unsigned arg)
{
	const scmp_datum_t bits[] = { S_ISUID, S_ISGID };
	size_t i;

	for (i = 0; i < 2; i++) {
		struct scmp_arg_cmp cmp = { arg, SCMP_CMP_MASKED_EQ, bits[i], bits[i] };

		rule(ctx, SCMP_ACT_ERRNO(EPERM), name, 1, &cmp);
	}
}

static void restrict_suid_sgid(void)
{
	scmp_filter_ctx ctx = new_filter(SCMP_ACT_ALLOW);

	mode_rule(ctx, "chmod", 1);
	mode_rule(ctx, "fchmod", 1);
	mode_rule(ctx, "fchmodat", 2);
	mode_rule(ctx, "mkdir", 1);
	mode_rule(ctx, "mkdirat", 2);
	mode_rule(ctx, "mknod", 1);
	mode_rule(ctx, "mknodat", 2);
	mode_rule(ctx, "creat", 1);
	mode_rule(ctx, "open", 2);
	mode_rule(ctx, "openat", 3);
	load(ctx, "suid/sgid");
}

static void lock_personality(void)
{
	scmp_filter_ctx ctx = new_filter(SCMP_ACT_ALLOW);
	unsigned long current = (unsigned long)personality(0xffffffff);
	/* Only the current personality, as systemd allows (a query too is refused). */
	struct scmp_arg_cmp cmp = SCMP_A0(SCMP_CMP_NE, current);

	rule(ctx, SCMP_ACT_ERRNO(EPERM), "personality", 1, &cmp);
	load(ctx, "personality");
}

static void deny_write_execute(void)
{
	scmp_filter_ctx ctx = new_filter(SCMP_ACT_ALLOW);
	struct scmp_arg_cmp wx = SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_WRITE | PROT_EXEC,
					 PROT_WRITE | PROT_EXEC);
	struct scmp_arg_cmp x = SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC);
	struct scmp_arg_cmp shm = SCMP_A2(SCMP_CMP_MASKED_EQ, SHM_EXEC, SHM_EXEC);

	rule(ctx, SCMP_ACT_ERRNO(EPERM), "mmap", 1, &wx);
	rule(ctx, SCMP_ACT_ERRNO(EPERM), "mprotect", 1, &x);
	rule(ctx, SCMP_ACT_ERRNO(EPERM), "pkey_mprotect", 1, &x);
	rule(ctx, SCMP_ACT_ERRNO(EPERM), "shmat", 1, &shm);
	load(ctx, "write-execute");
}

static int errno_by_name(const char *name)
{
	static const struct {
		const char *name;
		int value;
	} names[] = { { "EPERM", EPERM }, { "EACCES", EACCES }, { "ENOSYS", ENOSYS } };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(names[i].name, name) == 0)
			return names[i].value;
	fprintf(stderr, "seccomp-exec: unknown errno name '%s'\n", name);
	exit(127);
}

int main(int argc, char *argv[])
{
	const char *allow = NULL;
	char *families = NULL;
	bool namespaces = false, suid = false, pers = false, wx = false, keyring = false;
	uint32_t denied = SCMP_ACT_KILL_PROCESS;
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--allow") == 0 && i + 1 < argc)
			allow = argv[++i];
		else if (strcmp(argv[i], "--errno") == 0 && i + 1 < argc)
			denied = SCMP_ACT_ERRNO(errno_by_name(argv[++i]));
		else if (strcmp(argv[i], "--families") == 0 && i + 1 < argc)
			families = argv[++i];
		else if (strcmp(argv[i], "--restrict-namespaces") == 0)
			namespaces = true;
		else if (strcmp(argv[i], "--restrict-suid-sgid") == 0)
			suid = true;
		else if (strcmp(argv[i], "--lock-personality") == 0)
			pers = true;
		else if (strcmp(argv[i], "--deny-write-execute") == 0)
			wx = true;
		else if (strcmp(argv[i], "--private-keyring") == 0)
			keyring = true;
		else {
			fprintf(stderr, "seccomp-exec: unknown option '%s'\n", argv[i]);
			return 127;
		}
	}
	if (i + 1 >= argc) {
		fprintf(stderr, "usage: seccomp-exec [options] -- PROGRAM [ARGS...]\n");
		return 127;
	}
	/* KeyringMode=private: a new anonymous session keyring, as systemd gives. */
	if (keyring && syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0)
		die("keyctl(JOIN_SESSION_KEYRING)", errno);
	if (families)
		restrict_families(families);
	if (namespaces)
		restrict_namespaces();
	if (suid)
		restrict_suid_sgid();
	if (pers)
		lock_personality();
	if (wx)
		deny_write_execute();
	if (allow)
		allow_list(allow, denied);
	execv(argv[i + 1], &argv[i + 1]);
	die(argv[i + 1], errno);
	return 127;
}
