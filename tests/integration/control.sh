#!/bin/bash
# The control socket against a hostile local user (uid 65534, through
# setpriv) and hostile clients: the socket is 0600 even when the daemon
# starts under umask 000, so that user cannot run -F or -k, and with the
# socket opened to everybody by hand the peer credentials still refuse
# them (counted, logged at most once per 10 s); UNIX { Group } lets that
# group in, as primary or supplementary group; 200 idle clients that keep
# reconnecting do not lock root out of -s; 64 clients that ask for -e over
# 200k external states and never read cost neither the loop's time nor
# memory; a lock file created (or opened) and flocked by that user in a
# world-writable directory does not keep ctsyncd from starting; without
# LockFile and UNIX Path, the daemon makes /run/ctsyncd 0700 (in a private
# mount namespace here) and refuses one that others may write.
#
# SUITE_SCALE=small (the sanitizer runs of scripts/test-all.sh) uses 40k states.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
require_root
require_cmd setpriv nsenter unshare conntrack python3 /usr/bin/python3

CTLOAD=${CTLOAD:-$(built_tool bench/ctload)}
require_built "$CTLOAD"
if [[ ${SUITE_SCALE:-} == small ]]; then STATES=${CONTROL_STATES:-40000}; else STATES=${CONTROL_STATES:-200000}; fi
STALLED=64

# The unprivileged local user; /usr/bin/python3, since root's may be in /root.
# (An array, not a function, so that "${NOBODY[@]}" CMD & is CMD's own pid.)
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
as_nobody() { "${NOBODY[@]}" "$@"; }
# The work directory must be reachable by that user: the socket's mode is what is tested.
chmod 0755 "$WORK"

pair_setup || { echo "cannot create the namespaces" >&2; exit 99; }
pair_conf A FTFW
pair_conf B FTFW
chmod 0644 "$WORK/A.conf" "$WORK/B.conf"
SOCK=$WORK/B.ctl
pid_of() { head -n1 "$WORK/$1.lock"; }
mode_of() { stat -c %a "$1"; }
jget() { python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(eval("d"+sys.argv[1]))' "$1"; }
ctl_stat() { ctl B -s --json | jget "$1"; }
kernel_has_probe() { ct_in B -L 2>/dev/null | grep -q 'sport=4242 dport=4343'; }
# ms_of COMMAND...: how long COMMAND took, in milliseconds (its output
# discarded, its error shown on stderr if it fails); fails with it.
ms_of() {
	local t0 rc
	t0=$(date +%s%N)
	"$@" >/dev/null 2>"$WORK/ms_of.err"; rc=$?
	((rc == 0)) || log "$* failed: $(cat "$WORK/ms_of.err")" >&2
	echo $((($(date +%s%N) - t0) / 1000000))
	return $rc
}
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
quiet() { "$@" >/dev/null 2>&1; }

# --- the socket's mode, whatever the umask -------------------------------------------
pair_start A || { fail "A starts"; finish; }
(umask 000 && pair_start B) || { fail "B starts under umask 000"; finish; }
B_PID=$(pid_of B)
check "under umask 000 the socket is 0600 ($(mode_of "$SOCK"))" test "$(mode_of "$SOCK")" = 600
check "and the lock file is 0600 ($(mode_of "$WORK/B.lock"))" test "$(mode_of "$WORK/B.lock")" = 600
ct_in B -I -s 10.9.0.1 -d 10.9.0.2 -p tcp --sport 4242 --dport 4343 --state ESTABLISHED -t 600 >/dev/null
check "a probe state is in B's kernel table" kernel_has_probe

out=$(as_nobody "$CTSYNCD" -C "$WORK/B.conf" -F 2>&1); rc=$?
check "uid 65534 cannot run -F (rc=$rc): $out" test $rc -eq 1
check "...the socket's mode refuses it" contains "$out" 'Permission denied'
out=$(as_nobody "$CTSYNCD" -C "$WORK/B.conf" -k 2>&1); rc=$?
check "uid 65534 cannot run -k (rc=$rc)" test $rc -eq 1
check "the kernel table was not flushed" kernel_has_probe
check "the daemon is alive" pid_alive "$B_PID"

# --- peer credentials, with the socket opened to everybody by hand -----------------------
chmod 0666 "$SOCK"
refused=0
for req in -F -k -s; do
	out=$(as_nobody "$CTSYNCD" -C "$WORK/B.conf" $req 2>&1) || refused=$((refused + 1))
done
check "on a 0666 socket uid 65534 still gets no answer to -F, -k, -s ($refused of 3 refused): $out" \
	test $refused -eq 3
check "...the kernel table was not flushed" kernel_has_probe
check "...the daemon is alive" pid_alive "$B_PID"
for ((i = 0; i < 20; i++)); do
	as_nobody /usr/bin/python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.send(b"\x15\0\0\0"); s.recv(1)' "$SOCK" 2>/dev/null
done
n=$(ctl_stat '["control_socket"]["refused_credentials"]')
check "-s counts the 23 refused peers (refused_credentials=$n)" test "$n" -eq 23
lines=$(grep -c 'refused .* of users who may not control' "$WORK/B.log")
check "the refusals are logged once, not 23 times ($lines line)" test "$lines" -eq 1
log "$(grep -m1 'refused .* of users who may not control' "$WORK/B.log")"
REFUSALS_LOGGED_AT=$SECONDS
chmod 0600 "$SOCK"

# --- 200 idle clients that keep reconnecting ---------------------------------------------------
/usr/bin/python3 - "$SOCK" 200 6 >"$WORK/idle.out" 2>&1 <<'PY' &
import select, socket, sys, time
path, want, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
end, socks, opened = time.time() + secs, {}, 0
while time.time() < end:
    while len(socks) < want:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_NONBLOCK)
        try:
            s.connect(path)
        except (BlockingIOError, ConnectionRefusedError):
            s.close()
            break
        socks[s.fileno()] = s
        opened += 1
    r, _, _ = select.select(list(socks.values()), [], [], 0.05)
    for s in r:                      # closed by the daemon: connect again
        del socks[s.fileno()]
        s.close()
print(opened)
PY
idle=$!; track_pid $idle
sleep 1
worst=0 ok=0
for ((i = 0; i < 4; i++)); do
	ms=$(ms_of ctl B -s) && ok=$((ok + 1))
	((ms > worst)) && worst=$ms
	sleep 0.5
done
wait $idle
evicted=$(ctl_stat '["control_socket"]["evicted_idle"]')
log "idle clients: $(cat "$WORK/idle.out") connections opened, $evicted evicted, -s answered $ok of 4 times, slowest ${worst} ms"
check "root's -s answers among 200 idle clients ($ok of 4, slowest ${worst} ms)" test $ok -eq 4 -a "$worst" -lt 1000
check "idle clients were evicted to make room ($evicted)" test "$evicted" -gt 0

# --- 64 stalled dumps of a large external cache ----------------------------------------------------
ip netns exec "$NS_A" "$CTLOAD" create "$STATES" --proto mixed --timeout 600 >/dev/null
ext_full() { [[ $(ext_active B) -ge $STATES ]]; }
check "B's external cache holds the $STATES states" wait_until 40 ext_full
rss0=$(rss_kb "$B_PID") cpu0=$(cpu_ticks "$B_PID")
/usr/bin/python3 - "$SOCK" "$STALLED" "$WORK/stalled.ready" <<'PY' &
import socket, struct, sys, time
path, n, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
socks = []
for i in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(struct.pack("=I", 17))    # -e, never read
    socks.append(s)
open(ready, "w").close()
time.sleep(60)
PY
stalled=$!; track_pid $stalled
check "the $STALLED clients asked for -e" wait_until 10 test -e "$WORK/stalled.ready"
sleep 1
worst=0 ok=0
for ((i = 0; i < 5; i++)); do
	ms=$(ms_of ctl B -s) && ok=$((ok + 1))
	((ms > worst)) && worst=$ms
	sleep 0.2
done
rss1=$(rss_kb "$B_PID") cpu1=$(cpu_ticks "$B_PID")
streams=$(ctl_stat '["control_socket"]["streams"]')
log "$STALLED stalled -e over $STATES states: RSS ${rss0} -> ${rss1} kB (+$((rss1 - rss0)) kB), CPU $(((cpu1 - cpu0) * 10)) ms, -s answered $ok of 5 times, slowest ${worst} ms, streams $streams"
check "-s answers within a second while $STALLED dumps are stalled ($ok of 5, slowest ${worst} ms)" \
	test $ok -eq 5 -a "$worst" -lt 1000
check "the stalled dumps cost less than 32 MiB of RSS (+$((rss1 - rss0)) kB)" test $((rss1 - rss0)) -lt 32768
check "and less than 5 s of CPU ($(((cpu1 - cpu0) * 10)) ms)" test $((cpu1 - cpu0)) -lt 500
check "all $STALLED were streamed ($streams)" test "$streams" -ge "$STALLED"
kill "$stalled"; wait "$stalled" 2>/dev/null
t0=$SECONDS
lines=$(ctl B -e | grep -c 'active since')
check "a client that reads gets the whole dump ($lines lines of $STATES, $((SECONDS - t0)) s)" test "$lines" -eq "$STATES"
lines=$(ctl B -e -x | grep -c '<flow>')
check "in XML too ($lines lines)" test "$lines" -eq "$STATES"
ip netns exec "$NS_A" "$CTLOAD" flush >/dev/null

# The refusals after the first line are logged when its 10 s are over.
wait_until $((REFUSALS_LOGGED_AT + 12 - SECONDS)) grep -q 'refused 22 connections' "$WORK/B.log"
check "the other 22 refusals are logged in one line after 10 s" \
	grep -Eq 'refused 22 connections .*\(the last: uid 65534, pid [0-9]+\)' "$WORK/B.log"
pair_stop A; pair_stop B

# --- a lock file of another user in a world-writable directory ------------------------------------
# A daemon without Sync or Stats only serves its socket: no namespace needed.
mkdir -m 1777 "$WORK/lockdir"
lone_conf() {  # lone_conf NAME LOCKFILE [extra UNIX lines]
	cat >"$WORK/$1.conf" <<CONF
General {
	Systemd off
	LogFile $WORK/$1.log
	LockFile $2
	UNIX { Path $WORK/$1.ctl ${3:-} }
	Scheduler { Type FIFO Priority 1 }
}
CONF
	chmod 0644 "$WORK/$1.conf"
}
hold_lock() {  # hold_lock FILE: uid 65534 opens (creating if needed) and flocks FILE
	local ready=$WORK/lockdir/held.$$
	rm -f "$ready"
	"${NOBODY[@]}" /usr/bin/python3 -c '
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
open(sys.argv[2], "w").close()
time.sleep(60)' "$1" "$ready" 2>/dev/null &
	HOLDER=$!; track_pid $HOLDER
	wait_until 5 test -e "$ready"
}
LOCK=$WORK/lockdir/ct.lock
lone_conf lone "$LOCK"
hold_lock "$LOCK"
check "uid 65534 created and flocked $LOCK" test "$(stat -c %u "$LOCK")" = 65534
out=$("$CTSYNCD" -C "$WORK/lone.conf" -d 2>&1); rc=$?
[[ -s $LOCK ]] && track_pid "$(head -n1 "$LOCK")"
check "ctsyncd starts anyway (rc=$rc)" test $rc -eq 0
check "and says why: $(grep -m1 'not trusted' <<<"$out")" contains "$out" "lock file $LOCK belongs to uid 65534.*not trusted"
check "the lock file is root's now, 0600" test "$(stat -c '%u %a' "$LOCK")" = "0 600"
"$CTSYNCD" -C "$WORK/lone.conf" -k >/dev/null 2>&1
kill "$HOLDER" 2>/dev/null; wait "$HOLDER" 2>/dev/null

# A root file that others can read (as older versions made it), naming a
# dead pid, and flocked by uid 65534 through a read-only descriptor.
printf '999999\n' >"$LOCK" && chmod 0644 "$LOCK"
hold_lock "$LOCK"
out=$("$CTSYNCD" -C "$WORK/lone.conf" -d 2>&1); rc=$?
[[ -s $LOCK ]] && track_pid "$(head -n1 "$LOCK")"
check "a readable lock file flocked by another user does not block the start either (rc=$rc)" test $rc -eq 0
check "...and is replaced: $(grep -m1 'not trusted' <<<"$out")" contains "$out" 'locked by a process other than the pid it names'
"$CTSYNCD" -C "$WORK/lone.conf" -k >/dev/null 2>&1
kill "$HOLDER" 2>/dev/null; wait "$HOLDER" 2>/dev/null

# --- UNIX { Group } -------------------------------------------------------------------------------
lone_conf grp "$WORK/grp.lock" "Group nogroup"
"$CTSYNCD" -C "$WORK/grp.conf" -d 2>"$WORK/grp.err" || fail "a daemon with Group nogroup starts: $(cat "$WORK/grp.err")"
track_pid "$(head -n1 "$WORK/grp.lock")"
check "with Group the socket is 0660 and of that group ($(stat -c '%a %G' "$WORK/grp.ctl"))" \
	test "$(stat -c '%a %G' "$WORK/grp.ctl")" = "660 nogroup"
check "--check prints the Group" contains "$("$CTSYNCD" -C "$WORK/grp.conf" --check 2>/dev/null)" 'Group nogroup.*# gid 65534'
check "a member by primary group may use it" quiet as_nobody "$CTSYNCD" -C "$WORK/grp.conf" -s
check "a member by supplementary group may use it" \
	quiet setpriv --reuid=65534 --regid=4243 --groups=65534 "$CTSYNCD" -C "$WORK/grp.conf" -s
check "one outside the group may not" \
	bash -c "! setpriv --reuid=65534 --regid=4243 --clear-groups '$CTSYNCD' -C '$WORK/grp.conf' -s 2>/dev/null"
chmod 0666 "$WORK/grp.ctl"
check "...not even through a socket opened by hand" \
	bash -c "! setpriv --reuid=65534 --regid=4243 --clear-groups '$CTSYNCD' -C '$WORK/grp.conf' -s 2>/dev/null"
check "and is counted" test "$("$CTSYNCD" -C "$WORK/grp.conf" -s --json | jget '["control_socket"]["refused_credentials"]')" -eq 1
"$CTSYNCD" -C "$WORK/grp.conf" -k >/dev/null 2>&1
printf 'General { UNIX { Path %s Group ctsyncd-no-such-group } }\n' "$WORK/x.ctl" >"$WORK/badgrp.conf"
out=$("$CTSYNCD" -C "$WORK/badgrp.conf" --check 2>&1); rc=$?
check "an unknown Group is refused, naming it (rc=$rc): $out" contains "$out" "badgrp\.conf:1:[0-9]+: unknown group 'ctsyncd-no-such-group'"

# --- the default runtime directory, in a private mount namespace ------------------------------
printf 'General {\n\tSystemd off\n\tLogFile %s/rundir.log\n\tScheduler { Type FIFO Priority 1 }\n}\n' "$WORK" >"$WORK/rundir.conf"
# in_private_run SCRIPT: SCRIPT in a mount namespace whose /run is a fresh tmpfs.
in_private_run() { unshare -m --propagation private sh -c "mount -t tmpfs tmpfs /run && $1"; }
# (unshare, sh and the daemon are one process: $! is the daemon)
unshare -m --propagation private sh -c "mount -t tmpfs tmpfs /run && exec '$CTSYNCD' -C '$WORK/rundir.conf'" \
	2>"$WORK/rundir.err" &
rpid=$!; track_pid $rpid
inside() { nsenter -t "$rpid" -m "$@"; }
check "without LockFile and UNIX Path the daemon comes up" wait_until 5 inside test -S /run/ctsyncd/ctsyncd.sock
check "/run/ctsyncd is made root's, 0700 ($(inside stat -c '%U %a' /run/ctsyncd))" \
	test "$(inside stat -c '%U %a' /run/ctsyncd)" = "root 700"
check "the lock file and the socket are in it, 0600" \
	test "$(inside stat -c %a /run/ctsyncd/ctsyncd.lock /run/ctsyncd/ctsyncd.sock | sort -u)" = 600
check "the client finds the socket without a Path" quiet inside "$CTSYNCD" -C "$WORK/rundir.conf" -s
inside "$CTSYNCD" -C "$WORK/rundir.conf" -k >/dev/null
check "-k stops it" wait_until 5 pid_gone $rpid
out=$(in_private_run "mkdir -m 0777 /run/ctsyncd && exec '$CTSYNCD' -C '$WORK/rundir.conf'" 2>&1); rc=$?
check "a /run/ctsyncd that others may write is refused (rc=$rc): $(grep -m1 runtime <<<"$out")" \
	eval '[[ $rc -eq 1 ]] && contains "$out" "/run/ctsyncd is writable by other users \(mode 0777\)"'
out=$(in_private_run "touch /run/ctsyncd && exec '$CTSYNCD' -C '$WORK/rundir.conf'" 2>&1); rc=$?
check "so is one that is not a directory (rc=$rc)" \
	eval '[[ $rc -eq 1 ]] && contains "$out" "/run/ctsyncd exists and is not a directory"'

finish
