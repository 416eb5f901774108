#!/bin/bash
# tests/package/install.sh DEB: the Debian package, installed with dpkg into
# a throwaway root (an overlay of / on a tmpfs, in a mount namespace of its
# own: the machine's own files and dpkg database are never written).  The
# installed binary, man pages, unit, conffile and logrotate file are there;
# the unit's ExecCondition skips the service with the shipped conffile and
# the unit scores <= 3.5 in `systemd-analyze security`; the example
# keepalived.conf names the installed hook and keepalived accepts it; the
# installed hook runs against the installed daemon (backup: it starts it;
# primary: commit, flush, reload, bulk); purge removes what the package and
# its daemon made.  scripts/test-all.sh runs it on the .deb it builds.
. "$(dirname "$0")/../lib/common.sh"
require_root
require_cmd dpkg unshare systemd-analyze keepalived

deb=${1:-}
[[ -f $deb ]] || { echo "usage: $0 ctsyncd_VERSION_ARCH.deb" >&2; exit 99; }
deb=$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")

# Inside: the throwaway root is $ROOT; in_root runs a command there.
if [[ -z ${INSTALL_TEST_INSIDE:-} ]]; then
	INSTALL_TEST_INSIDE=1 WORK=$WORK unshare --mount --propagation private "$0" "$deb"
	exit $?
fi

ROOT=$WORK/root
mkdir -p "$WORK/layers" "$ROOT"
mount -t tmpfs -o mode=0755 layers "$WORK/layers" || { fail "a tmpfs for the layers"; finish; }
mkdir -p "$WORK/layers/upper" "$WORK/layers/work"
mount -t overlay overlay -o "lowerdir=/,upperdir=$WORK/layers/upper,workdir=$WORK/layers/work" "$ROOT" ||
	{ fail "the overlay root"; finish; }
# The root's mounts go before the work directory does (nothing of the
# machine may be reached through them by the cleanup).
inside_cleanup() {
	local rc=$?
	umount -R "$ROOT" 2>/dev/null
	umount "$WORK/layers" 2>/dev/null
	if mountpoint -q "$ROOT" || mountpoint -q "$WORK/layers"; then
		echo "$TEST_NAME: cannot unmount the throwaway root; $WORK kept" >&2
		rc=1
	fi
	(exit $rc)
	_cleanup
}
trap inside_cleanup EXIT
# Fresh proc and sysfs, and a /dev of bound pseudo-devices only.
mount -t proc proc "$ROOT/proc" && mount -t sysfs sysfs "$ROOT/sys" &&
	mount -t tmpfs -o mode=0755 dev "$ROOT/dev" || { fail "the root's /proc, /sys, /dev"; finish; }
for node in null zero full random urandom tty; do
	touch "$ROOT/dev/$node" && mount --bind "/dev/$node" "$ROOT/dev/$node"
done
# A /run of its own: the machine's daemons' sockets are not the package's business.
mount -t tmpfs -o mode=0755 run "$ROOT/run"
in_root() { chroot "$ROOT" "$@"; }
# The machine may have ctsyncd installed: the root must start without it.
in_root dpkg-query -W ctsyncd >/dev/null 2>&1 && in_root dpkg --purge ctsyncd >/dev/null 2>&1

cp "$deb" "$ROOT/tmp/ctsyncd.deb"
out=$(in_root dpkg -i /tmp/ctsyncd.deb 2>&1); rc=$?
check "dpkg -i installs the package (rc=$rc)" test $rc -eq 0
((rc == 0)) || { echo "$out"; finish; }
out=$(in_root ctsyncd --version)
version=$(dpkg-deb -f "$deb" Version)
check "the installed ctsyncd runs: $out" contains "$out" "^ctsyncd $version "
for f in /usr/sbin/ctsyncd /lib/systemd/system/ctsyncd.service /etc/ctsyncd/ctsyncd.conf \
	/etc/logrotate.d/ctsyncd /usr/libexec/ctsyncd/primary-backup.sh \
	/usr/share/doc/ctsyncd/examples/keepalived/keepalived.conf /usr/share/doc/ctsyncd/copyright; do
	check "$f is installed" test -e "$ROOT$f"
done
check "the man pages are found: $(in_root man -w ctsyncd ctsyncd.conf 2>&1 | tr '\n' ' ')" \
	test "$(in_root man -w ctsyncd ctsyncd.conf 2>/dev/null | wc -l)" -eq 2
conffiles=$(in_root dpkg-query -W -f='${Conffiles}' ctsyncd)
check "ctsyncd.conf and the logrotate file are conffiles" \
	contains "$(tr '\n' ' ' <<<"$conffiles")" '/etc/ctsyncd/ctsyncd.conf .*/etc/logrotate.d/ctsyncd '
check "nothing of the package is under /usr/local" test -z "$(in_root dpkg -L ctsyncd | grep '^/usr/local')"

# --- the unit on a fresh install ----------------------------------------------
unit=$ROOT/lib/systemd/system/ctsyncd.service
out=$(in_root ctsyncd -C /etc/ctsyncd/ctsyncd.conf --check 2>&1); rc=$?
check "the shipped conffile is valid (--check rc=$rc)" test $rc -eq 0
cond=$(sed -n 's/^ExecCondition=//p' "$unit")
cond=${cond:-/bin/false no ExecCondition}
out=$(in_root $cond 2>&1); rc=$?
check "the unit's ExecCondition ($cond) skips the service: rc=$rc, '$out'" \
	test $rc -eq 1 -a -n "$(grep 'no Sync or Stats block' <<<"$out")"
printf 'Sync {\n' >"$ROOT/tmp/broken.conf"
out=$(in_root "${cond%% *}" -C /tmp/broken.conf --check-configured 2>&1); rc=$?
check "a broken file fails the condition loudly (rc=$rc: $out)" test $rc -eq 255
# Uncommenting the shipped Sync block, as its comments say, gives a file that runs.
sed -e 's/^#\([^ #]\)/\1/' -e 's/^#\t/\t/' "$ROOT/etc/ctsyncd/ctsyncd.conf" >"$ROOT/tmp/uncommented.conf"
out=$(in_root "${cond%% *}" -C /tmp/uncommented.conf --check-configured 2>&1); rc=$?
check "the shipped Sync block, uncommented, is configured (rc=$rc $out)" test $rc -eq 0
score=$(systemd-analyze security --offline=true --root="$ROOT" ctsyncd.service 2>/dev/null |
	sed -n 's/.*Overall exposure level for ctsyncd.service: \([0-9.]*\).*/\1/p')
check "systemd-analyze security: exposure $score <= 3.5" awk -v s="$score" 'BEGIN { exit !(s != "" && s <= 3.5) }'
out=$(cd "$ROOT" && in_root systemd-analyze verify /lib/systemd/system/ctsyncd.service 2>&1)
check "systemd-analyze verify finds nothing to say: '$out'" test -z "$out"
check "the unit is enabled by the package" test -L "$ROOT/etc/systemd/system/multi-user.target.wants/ctsyncd.service"

# --- keepalived ---------------------------------------------------------------------
example=$ROOT/usr/share/doc/ctsyncd/examples/keepalived/keepalived.conf
hooks=$(grep -o '"[^" ]*primary-backup.sh' "$example" | tr -d '"' | sort -u)
check "the example keepalived.conf names the installed hook ($hooks)" \
	test "$hooks" = /usr/libexec/ctsyncd/primary-backup.sh -a -x "$ROOT$hooks"
# keepalived checks the interfaces too: eth0 and eth1 as the example has them.
KA=$(make_netns keepalived) && ip -n "$KA" link add eth0 type veth peer name eth1 ||
	fail "a namespace with eth0 and eth1"
out=$(ip netns exec "$KA" chroot "$ROOT" keepalived --config-test \
	-f /usr/share/doc/ctsyncd/examples/keepalived/keepalived.conf 2>&1); rc=$?
check "keepalived --config-test accepts the example (rc=$rc): $(head -c 300 <<<"$out")" test $rc -eq 0

# The hook against the installed daemon, in a network namespace with a sync link.
NS=$(make_netns hook) && give_sync_link "$NS" || { fail "the hook's namespace"; finish; }
ip netns exec "$NS" sysctl -qw net.netfilter.nf_conntrack_events=1
cat >"$ROOT/etc/ctsyncd/ctsyncd.conf" <<'CONF'
Sync {
	Mode FTFW { }
	UDP { IPv4_address 198.18.0.1 IPv4_Destination_Address 198.18.0.2 Port 3780 Interface sync0 }
}
General { LogFile on }
CONF
hook() { ip netns exec "$NS" chroot "$ROOT" env HOOK_LOG=/tmp/hook.log HOOK_SYSLOG=off \
	/usr/libexec/ctsyncd/primary-backup.sh "$@"; }
hook backup >"$WORK/hook.out" 2>&1; rc=$?
check "the installed hook, as backup, starts the installed daemon and asks for a resync (rc=$rc)" test $rc -eq 0
answers() { ip netns exec "$NS" chroot "$ROOT" ctsyncd -s >/dev/null 2>&1; }
check "the daemon the hook started answers" answers
pid=$(ip netns pids "$NS" | head -n1)
[[ $pid ]] && track_pid "$pid"
check "it is the installed binary ($(readlink "/proc/$pid/exe"))" \
	test "$(readlink "/proc/$pid/exe")" = "$ROOT/usr/sbin/ctsyncd"
hook primary >>"$WORK/hook.out" 2>&1; rc=$?
check "the installed hook, as primary, commits, flushes, reloads and sends (rc=$rc)" test $rc -eq 0
check "its log has the four steps: $(grep -c 'primary \[info\]' "$ROOT/tmp/hook.log")" \
	test "$(grep -c 'primary \[info\]' "$ROOT/tmp/hook.log")" -eq 4
check "the daemon logs to /var/log/ctsyncd.log" test -s "$ROOT/var/log/ctsyncd.log"
ip netns exec "$NS" chroot "$ROOT" ctsyncd -k >/dev/null
check "the daemon stops" wait_until 5 pid_gone "$pid"
touch "$ROOT/var/log/ctsyncd.log.1" "$ROOT/var/log/ctsyncd-stats.log"

# --- purge ------------------------------------------------------------------------------
out=$(in_root dpkg --purge ctsyncd 2>&1); rc=$?
check "dpkg --purge removes the package (rc=$rc)" test $rc -eq 0
for f in /usr/sbin/ctsyncd /lib/systemd/system/ctsyncd.service /etc/ctsyncd /etc/logrotate.d/ctsyncd \
	/usr/libexec/ctsyncd /run/ctsyncd /run/ctsyncd-hook.lock /var/log/ctsyncd.log /var/log/ctsyncd.log.1 \
	/var/log/ctsyncd-stats.log /etc/systemd/system/multi-user.target.wants/ctsyncd.service \
	/usr/share/doc/ctsyncd; do
	check "purge leaves no $f" test ! -e "$ROOT$f" -a ! -L "$ROOT$f"
done
finish
