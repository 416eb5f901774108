#!/bin/bash
# The hardened unit, without systemd: a pair of daemons runs under the
# restrictions of the built systemd/ctsyncd.service (tests/package/sandbox.sh
# reads them from the unit and refuses a directive it cannot apply), as
# started by the unit's own ExecCondition and ExecStart lines, and does all
# its work: the notify socket (Type=notify, READY and WATCHDOG), states
# replicated from A to B, a commit into B's kernel, -s, the Scheduler,
# UNIX { Group }, the log file with the unit's UMask, journald priorities
# on a stderr that is the journal, ExecReload.  Negative controls show that
# the sandbox bites: a unit without CAP_NET_ADMIN, CAP_SYS_NICE or
# CAP_CHOWN, or without the system calls it adds back, breaks the daemon.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
require_root
require_cmd conntrack systemd-analyze setpriv unshare chrt python3

here=$(cd "$(dirname "$0")" && pwd)
UNIT=$(built_tool systemd/ctsyncd.service)
SANDBOX=$here/sandbox.sh
export SECCOMP_EXEC=$(built_tool tests/package/seccomp-exec)
[[ -f $UNIT ]] || { echo "$TEST_NAME: $UNIT is not built" >&2; exit 99; }
[[ -x $SECCOMP_EXEC ]] || {
	echo "$TEST_NAME: $SECCOMP_EXEC is not built: configure found no libseccomp (apt-get install libseccomp-dev)" >&2
	exit 99
}

# LeakSanitizer stops the process with ptrace, which the unit's filter
# refuses as it should; a sanitizer build still checks every access.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0

# The unit's command lines: the binary is the one under test, the arguments are the unit's.
unit_args() { sed -n "s/^$1=[^ ]* //p" "$UNIT"; }
read -ra START_ARGS <<<"$(unit_args ExecStart)"
read -ra COND_ARGS <<<"$(unit_args ExecCondition)"
CONF_PATH=
for ((i = 0; i < ${#START_ARGS[@]} - 1; i++)); do
	[[ ${START_ARGS[i]} == -C ]] && CONF_PATH=${START_ARGS[i + 1]}
done
[[ $CONF_PATH ]] || { fail "ExecStart names the configuration with -C"; finish; }
RUNDIR=/run/$(sed -n 's/^RuntimeDirectory=//p' "$UNIT")
# all_of COMMAND...: each of the commands, given as single words, succeeds.
all_of() { local c; for c in "$@"; do eval "$c" || return 1; done; }
check "Type=notify, WatchdogSec and ExecReload are in the unit" \
	all_of "grep -q '^Type=notify' '$UNIT'" "grep -q '^WatchdogSec=' '$UNIT'" "grep -q '^ExecReload=' '$UNIT'"

# --- what the unit leaves out, whole ------------------------------------------
# ProtectClock, ProtectHostname, ProtectKernelModules and ProtectKernelLogs
# filter calls under systemd; the allow-list must not hold them, nor the
# bounding set their capabilities.
mkdir -p "$WORK/probe"
ip netns add "${NS_PREFIX}probe" && echo "${NS_PREFIX}probe" >>"$WORK/.namespaces"
ip netns exec "${NS_PREFIX}probe" "$SANDBOX" "$UNIT" "$WORK/probe" -- /bin/true
check "the sandbox runs a program under the unit's restrictions" test $? -eq 0
allowed=$WORK/probe/syscalls.allowed
bad=$(grep -xE 'clock_settime|clock_adjtime|settimeofday|adjtimex|init_module|finit_module|delete_module|syslog|sethostname|setdomainname|ptrace|mount|reboot|swapon|kexec_load|setuid|setgid|setresuid|setgroups|capset|chroot|bpf|ioperm|iopl' "$allowed" | tr '\n' ' ')
check "the allow-list ($(wc -l <"$allowed") calls) holds no clock, module, kernel log, hostname, mount, debug, setuid, setgid call: '$bad'" test -z "$bad"
check "fchown and sched_setscheduler are allowed (UNIX Group, Scheduler)" \
	all_of "grep -qx fchown '$allowed'" "grep -qx sched_setscheduler '$allowed'"
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT")
check "the bounding set is CAP_NET_ADMIN CAP_SYS_NICE CAP_CHOWN ('$caps')" test "$caps" = "CAP_NET_ADMIN CAP_SYS_NICE CAP_CHOWN"
sed 's/^\(ProtectSystem=.*\)/\1\nPrivateNetwork=yes/' "$UNIT" >"$WORK/unknown.service"
ip netns exec "${NS_PREFIX}probe" "$SANDBOX" "$WORK/unknown.service" "$WORK/probe" -- /bin/true 2>"$WORK/unknown.err"
rc=$?
check "a directive the sandbox does not apply fails it (rc=$rc: $(cat "$WORK/unknown.err"))" \
	test $rc -eq 125 -a -n "$(grep PrivateNetwork "$WORK/unknown.err")"

# --- the pair ---------------------------------------------------------------------
pair_setup || { echo "cannot create the namespaces" >&2; exit 99; }
# sandbox_conf SIDE: the daemon's configuration at the unit's path, with the
# defaults of a packaged install (lock file and socket in the runtime
# directory, LogFile on, Systemd on) plus UNIX { Group } and the pair's
# Scheduler { Type FIFO Priority 1 }; and $WORK/SIDE.conf for the clients
# outside, pointing at the socket through DIR/runtime.
sandbox_conf() {
	local side=$1 d=$WORK/$1
	pair_conf "$side" FTFW
	mkdir -p "$d/files$(dirname "$CONF_PATH")"
	sed -e "s|LogFile $WORK/$side.log|LogFile on|" -e "/LockFile /d" \
		-e "s|UNIX { Path $WORK/$side.ctl }|UNIX { Group nogroup }|" \
		-e "s|Systemd off|Systemd on|" "$WORK/$side.conf" >"$d/files$CONF_PATH"
	sed -i "s|UNIX { Path $WORK/$side.ctl }|UNIX { Path $d/runtime/ctsyncd.sock }|" "$WORK/$side.conf"
}
# sandbox_start SIDE UNIT: the daemon of SIDE, under UNIT, in the foreground
# as systemd runs it, with a notify socket and a stderr that is the journal
# (JOURNAL_STREAM names it).  Sets PID_<SIDE>.
sandbox_start() {
	local side=$1 unit=$2 d=$WORK/$1 ns pid stream
	[[ $side == A ]] && ns=$NS_A || ns=$NS_B
	mkdir -p "$d/runtime"
	python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a") as out:
    while True:
        out.write(s.recv(4096).decode() + "\n")
        out.flush()
' "$d/runtime/notify.sock" "$d/notify.log" &
	track_pid $!
	wait_until 5 test -S "$d/runtime/notify.sock" || return 1
	: >"$d/stderr"
	stream=$(stat -c '%d:%i' "$d/stderr")
	ip netns exec "$ns" env NOTIFY_SOCKET=$RUNDIR/notify.sock WATCHDOG_USEC=2000000 \
		JOURNAL_STREAM="$stream" "$SANDBOX" "$unit" "$d" -- "$CTSYNCD" "${START_ARGS[@]}" \
		>/dev/null 2>>"$d/stderr" &
	pid=$!
	track_pid $pid
	printf -v "PID_$side" %s "$pid"
}
notified() { grep -qx "$2" "$WORK/$1/notify.log" 2>/dev/null; }

sandbox_conf A
sandbox_conf B
# ExecCondition, under the same sandbox: the configured file passes.
for side in A B; do
	ip netns exec "$NS_A" "$SANDBOX" "$UNIT" "$WORK/$side" -- "$CTSYNCD" "${COND_ARGS[@]}" 2>"$WORK/cond.err"
	rc=$?
	check "ExecCondition passes a configured file ($side: rc=$rc $(cat "$WORK/cond.err"))" test $rc -eq 0
done
# and the shipped file, which configures nothing, skips the service.
mkdir -p "$WORK/shipped/files$(dirname "$CONF_PATH")"
cp "${top_srcdir:-$here/../..}/ctsyncd.conf" "$WORK/shipped/files$CONF_PATH"
ip netns exec "$NS_A" "$SANDBOX" "$UNIT" "$WORK/shipped" -- "$CTSYNCD" "${COND_ARGS[@]}" 2>"$WORK/cond.err"
rc=$?
check "ExecCondition skips the service with the shipped file (rc=$rc $(cat "$WORK/cond.err"))" \
	all_of "test $rc -eq 1" "grep -q 'nothing to run' '$WORK/cond.err'"
sandbox_start A "$UNIT" && sandbox_start B "$UNIT" || { fail "the daemons start"; finish; }
check "A says READY=1 on the notify socket (Type=notify)" wait_until 10 notified A READY=1
check "B says READY=1 on the notify socket" wait_until 10 notified B READY=1
check "A pings the watchdog (WatchdogSec)" wait_until 5 notified A WATCHDOG=1

st=/proc/$PID_A/status
check "A runs with the unit's bounding set (CapBnd $(awk '/^CapBnd/ {print $2}' "$st"))" \
	test "$(awk '/^CapBnd/ {print $2}' "$st")" = 0000000000801001
check "A runs with no_new_privs and its seccomp filters" \
	all_of "grep -qx 'NoNewPrivs:.1' '$st'" "grep -qx 'Seccomp:.2' '$st'"
check "A has a mount namespace of its own" test "$(readlink "/proc/$PID_A/ns/mnt")" != "$(readlink /proc/self/ns/mnt)"

ext_has() { ctl B -e | grep -q -- "$1"; }
ct_in A -I -s 10.0.0.1 -d 10.0.0.2 -p tcp --sport 1234 --dport 80 --state ESTABLISHED -u SEEN_REPLY,ASSURED -t 300 -m 7
ct_in A -I -s 2001:db8::1 -d 2001:db8::2 -p udp --sport 5353 --dport 53 -t 120
check "a TCP state created on A reaches B's external cache" wait_until 10 ext_has 'src=10.0.0.1 dst=10.0.0.2 sport=1234 dport=80 .*mark=7'
check "an IPv6 state reaches B too" wait_until 5 ext_has 'src=2001:db8::1'
out=$(ctl B -c); rc=$?
check "B commits into its kernel (rc=$rc): $out" contains "$out" 'commit: 2 states written'
check "B's kernel has the TCP state" contains "$(ct_in B -L)" 'src=10.0.0.1 dst=10.0.0.2 sport=1234 dport=80'
out=$(ctl A -s); rc=$?
check "-s answers on the control socket (rc=$rc)" contains "$out" 'cache'
check "the Scheduler is in force: SCHED_FIFO priority 1 ($(chrt -p "$PID_A" | tr '\n' ' '))" \
	contains "$(chrt -p "$PID_A" | tr '\n' ' ')" 'SCHED_FIFO .*priority: 1 '
sock=$WORK/A/runtime/ctsyncd.sock
check "the control socket belongs to UNIX { Group } nogroup ($(stat -c '%G %a' "$sock"))" \
	test "$(stat -c '%G %a' "$sock")" = "nogroup 660"
log_a=$WORK/A/rw/var/log/ctsyncd.log
check "LogFile on writes /var/log/ctsyncd.log (ReadWritePaths)" test -s "$log_a"
check "the log file has the unit's UMask: mode $(stat -c %a "$log_a")" test "$(stat -c %a "$log_a")" = 600
check "no warning in A's log ($(grep -E 'WARNING|ERROR' "$log_a" | head -n 2 | tr '\n' ' '))" \
	test -z "$(grep -E 'WARNING|ERROR' "$log_a")"
first=$(head -n 1 "$WORK/A/stderr")
check "stderr, the journal, gets lines with a priority prefix: '$first'" contains "$first" '^<[0-7]>[^[]'
check "no line of stderr lacks its prefix" test -z "$(grep -v '^<[0-7]>' "$WORK/A/stderr")"
# ExecReload: the unit's command with $MAINPID.
reload=$(sed -n 's/^ExecReload=//p' "$UNIT")
${reload//\$MAINPID/$PID_A}
check "A's log shows the SIGHUP of ExecReload" wait_until 5 grep -Eqi 'SIGHUP|reload' "$log_a"
check "after ExecReload A still runs and answers" all_of "pid_alive $PID_A" "wait_until 5 ctl A -s"

# --- negative controls: the sandbox bites -------------------------------------------
# One daemon at a time in namespace C, on a link of its own; each unit
# variant drops one thing that the unit grants.
NS_C=$(make_netns C) && give_sync_link "$NS_C" || { fail "namespace C"; finish; }
ip netns exec "$NS_C" sysctl -qw net.netfilter.nf_conntrack_events=1
mkdir -p "$WORK/C/files$(dirname "$CONF_PATH")"
sed -e 's/198\.18\.1\.1/198.18.0.1/; s/198\.18\.1\.2/198.18.0.2/; s/Interface syncA/Interface sync0/' \
	"$WORK/A/files$CONF_PATH" >"$WORK/C/files$CONF_PATH"
# variant NAME SED: runs C's daemon under the unit edited by SED for at most
# 3 s; leaves its log and stderr in $WORK/C.NAME.*.
variant() {
	local name=$1 edit=$2 d=$WORK/C pid
	sed "$edit" "$UNIT" >"$WORK/$name.service"
	rm -rf "$d/runtime" "$d/rw"
	mkdir -p "$d/runtime"
	ip netns exec "$NS_C" "$SANDBOX" "$WORK/$name.service" "$d" -- "$CTSYNCD" "${START_ARGS[@]}" \
		>/dev/null 2>"$WORK/C.$name.stderr" &
	pid=$!
	track_pid $pid
	wait_until 3 test -S "$d/runtime/ctsyncd.sock"
	sleep 0.3
	if pid_alive "$pid"; then echo running >"$WORK/C.$name.state"; else echo exited >"$WORK/C.$name.state"; fi
	kill -TERM "$pid" 2>/dev/null
	wait_until 3 pid_gone "$pid" || kill -KILL "$pid" 2>/dev/null
	cp "$d/rw/var/log/ctsyncd.log" "$WORK/C.$name.log" 2>/dev/null || : >"$WORK/C.$name.log"
}
variant full ''
check "control: C runs under the unit as it is" test "$(cat "$WORK/C.full.state")" = running
variant no-net-admin 's/^CapabilityBoundingSet=.*/CapabilityBoundingSet=CAP_SYS_NICE CAP_CHOWN/'
check "without CAP_NET_ADMIN the daemon cannot start ($(grep -m1 ERROR "$WORK/C.no-net-admin.log"))" \
	test "$(cat "$WORK/C.no-net-admin.state")" = exited
variant no-sys-nice 's/^CapabilityBoundingSet=.*/CapabilityBoundingSet=CAP_NET_ADMIN CAP_CHOWN/'
check "without CAP_SYS_NICE the Scheduler is refused" grep -q 'cannot set scheduler' "$WORK/C.no-sys-nice.log"
variant no-chown 's/^CapabilityBoundingSet=.*/CapabilityBoundingSet=CAP_NET_ADMIN CAP_SYS_NICE/'
check "without CAP_CHOWN UNIX { Group } fails ($(grep -m1 ERROR "$WORK/C.no-chown.log"))" \
	test "$(cat "$WORK/C.no-chown.state")" = exited
variant no-sched-call 's/^SystemCallFilter=fchown fchownat sched_setscheduler/SystemCallFilter=fchown fchownat/'
check "without sched_setscheduler in the filter the Scheduler is refused" \
	grep -q 'cannot set scheduler' "$WORK/C.no-sched-call.log"
variant no-chown-call 's/^SystemCallFilter=fchown fchownat sched_setscheduler/SystemCallFilter=sched_setscheduler/'
check "without fchown in the filter UNIX { Group } fails" test "$(cat "$WORK/C.no-chown-call.state")" = exited
variant no-netlink 's/^RestrictAddressFamilies=.*/RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6/'
check "without AF_NETLINK the daemon cannot start" test "$(cat "$WORK/C.no-netlink.state")" = exited

finish
