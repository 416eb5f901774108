#!/bin/bash
# The daemon's life: start in the foreground and with -d, the control socket
# with our client and with Debian's conntrackd 1.4.7 client, JSON statistics,
# "not available" answers, -k, SIGTERM/SIGINT, a stale lock after SIGKILL, a
# second instance refused, systemd notification, and start-up errors.
. "$(dirname "$0")/../lib/common.sh"
require_root
require_cmd conntrackd python3

CONF=$WORK/ctsyncd.conf
LOCK=$WORK/ctsyncd.lock
SOCK=$WORK/ctsyncd.ctl
LOGF=$WORK/ctsyncd.log

write_conf() {
	cat >"$CONF" <<CONF
# Upstream grammar only, so that conntrackd's own client reads this file too.
General {
	Systemd ${1:-off}
	LogFile $LOGF
	Syslog off
	LockFile $LOCK
	UNIX { Path $SOCK }
	Scheduler { Type FIFO Priority 1 }
}
Sync {
	Mode FTFW { }
	UDP {
		IPv4_address 198.18.0.1
		IPv4_Destination_Address 198.18.0.2
		Port 3780
		Interface sync0
	}
}
CONF
}

lock_pid() { head -n1 "$LOCK" 2>/dev/null; }
# The daemon follows the kernel's conntrack table: give it a namespace of its own.
NS=$(make_netns fw)
give_sync_link "$NS"
in_ns() { ip netns exec "$NS" "$@"; }
socket_ready() { [[ -S $SOCK ]] && "$CTSYNCD" -C "$CONF" -s >/dev/null 2>&1; }

write_conf off

# --- configuration check --------------------------------------------------
out=$("$CTSYNCD" -C "$CONF" --check 2>&1); rc=$?
check "--check accepts a valid file (rc=$rc)" test $rc -eq 0
check "--check prints the effective config with defaults" contains "$out" 'ResendQueueSize 131072' 

printf 'General {\n\tHashSize 10\n\tBogus 1\n}\n' >"$WORK/bad.conf"
out=$("$CTSYNCD" -C "$WORK/bad.conf" 2>&1); rc=$?
check "a bad config stops the daemon with status 1 (rc=$rc)" test $rc -eq 1
check "the error names file, line, column and token: $out" contains "$out" "bad\.conf:3:2: .*'Bogus'"
check "no lock file left by a refused start" test ! -e "$LOCK"

out=$("$CTSYNCD" -C "$WORK/missing.conf" -s 2>&1); rc=$?
check "a missing config file is an error (rc=$rc)" test $rc -eq 1
check "naming the file: $out" contains "$out" 'missing\.conf' 

# --- no daemon yet -----------------------------------------------------------
out=$("$CTSYNCD" -C "$CONF" -s 2>&1); rc=$?
check "client without a daemon fails with status 1 (rc=$rc)" test $rc -eq 1
check "and says it cannot connect: $out" contains "$out" connect

# --- start with -d: returns only once the socket answers ---------------------
in_ns "$CTSYNCD" -C "$CONF" -d; rc=$?
check "-d returns 0 once the daemon is ready (rc=$rc)" test $rc -eq 0
pid=$(lock_pid)
[[ -n $pid ]] && track_pid "$pid"
check "the lock file holds the daemon's pid ($pid)" pid_alive "${pid:-0}"
check "the socket is there as soon as -d returned" test -S "$SOCK"

out=$("$CTSYNCD" -C "$CONF" -s 2>&1); rc=$?
check "-s answers (rc=$rc)" test $rc -eq 0
check "-s is conntrackd 1.4.7's text" contains "$out" '^current active connections:'$'\t'' +[0-9]+$'
out=$("$CTSYNCD" -C "$CONF" -s --verbose 2>&1); rc=$?
check "-s --verbose answers (rc=$rc)" test $rc -eq 0
check "-s --verbose shows the uptime" contains "$out" uptime
check "-s --verbose shows the pid" contains "$out" "$pid"

json=$("$CTSYNCD" -C "$CONF" -s --json 2>&1); rc=$?
check "-s --json answers (rc=$rc)" test $rc -eq 0
check "-s --json is one JSON object with the daemon's pid" python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["daemon"]["pid"] == int(sys.argv[2]), d
assert d["control_socket"]["requests"] >= 1, d
' "$json" "$pid"

out=$(conntrackd -C "$CONF" -s 2>&1); rc=$?
check "Debian's conntrackd client talks to ctsyncd (rc=$rc)" test $rc -eq 0
check "and prints ctsyncd's statistics, as 1.4.7 would" contains "$out" '^current active connections:'
out=$(conntrackd -C "$CONF" -s runtime 2>&1)
check "conntrackd -s runtime works too" contains "$out" '^daemon uptime: [0-9]+ min$'

# As conntrackd 1.4.7: without ExpectationSync there are no expectations,
# and asking for them is no error (exit 0) -- the dumps are empty, the
# rest says why.
out=$("$CTSYNCD" -C "$CONF" -i expect 2>&1); rc=$?
check "-i expect without ExpectationSync exits 0, as 1.4.7 (rc=$rc)" test $rc -eq 0
check "and prints no line (a script reads the dump): '$out'" test -z "$out"
out=$("$CTSYNCD" -C "$CONF" -c expect 2>&1); rc=$?
check "-c expect exits 0 too (rc=$rc)" test $rc -eq 0
check "and says why: $out" contains "$out" 'no expectations, expectation sync is off'
out=$(conntrackd -C "$CONF" -c expect 2>&1); rc=$?
check "conntrackd's client gets the same explanation: $out" contains "$out" 'expectation sync is off' 

# --- a second instance with the same lock is refused ---------------------------
out=$(in_ns "$CTSYNCD" -C "$CONF" 2>&1); rc=$?
check "a second daemon with the same lock file is refused (rc=$rc)" test $rc -eq 1
check "naming the live owner: $out" contains "$out" "held by a running daemon \(pid $pid\)"
check "the first daemon is unharmed" socket_ready

# --- -k ------------------------------------------------------------------------
out=$("$CTSYNCD" -C "$CONF" -k 2>&1); rc=$?
check "-k answers and exits 0 (rc=$rc)" test $rc -eq 0
check "the daemon is gone after -k" wait_until 5 pid_gone "$pid"
check "-k removed the lock file" test ! -e "$LOCK"
check "-k removed the socket" test ! -e "$SOCK"
check "the log has conntrackd's line format" \
	grep -Eq '^\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]{2} [0-9:]{8} [0-9]{4}\] \(pid=[0-9]+\) \[notice\] ' "$LOGF"

# --- a crash leaves a stale lock and socket; the next start takes them over ------
in_ns "$CTSYNCD" -C "$CONF" -d
pid=$(lock_pid); track_pid "$pid"
kill -KILL "$pid"
wait_until 5 pid_gone "$pid"
check "SIGKILL leaves the lock file and socket behind" test -e "$LOCK" -a -S "$SOCK"
out=$(in_ns "$CTSYNCD" -C "$CONF" -k 2>&1); rc=$?
check "-k then finds no daemon (rc=$rc, as 1.4.7)" test $rc -eq 1
check "... and, the lock file held by nobody, removes the stale socket: $out" \
	eval '[[ ! -e $SOCK && $out == *"removed its stale socket"* ]]'
in_ns "$CTSYNCD" -C "$CONF" -d 2>"$WORK/restart.err"; rc=$?
check "a start after a crash succeeds (rc=$rc)" test $rc -eq 0
pid2=$(lock_pid); track_pid "$pid2"
check "and warns about the stale lock of pid $pid" grep -q "left by pid $pid" "$WORK/restart.err"
check "the restarted daemon answers" socket_ready
kill -TERM "$pid2"
check "SIGTERM stops it" wait_until 5 pid_gone "$pid2"
check "SIGTERM removed the lock file and socket" test ! -e "$LOCK" -a ! -e "$SOCK"

# --- foreground, SIGINT --------------------------------------------------------------
ip netns exec "$NS" "$CTSYNCD" -C "$CONF" 2>"$WORK/fg.err" &
fg=$!; track_pid "$fg"
check "the foreground daemon comes up" wait_until 5 socket_ready
kill -INT "$fg"
wait "$fg"; rc=$?
check "SIGINT ends the foreground daemon with status 0 (rc=$rc)" test $rc -eq 0
check "the foreground daemon logged to stderr" grep -q 'started' "$WORK/fg.err"

# --- systemd notification ----------------------------------------------------------
if grep -q 'systemd notification: yes' "${top_builddir:-.}/config.log" 2>/dev/null ||
	"$CTSYNCD" --version 2>/dev/null | grep -q '+systemd'; then
	write_conf on
	python3 - "$WORK/notify.sock" >"$WORK/notify.out" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(20)
seen = []
try:
    while not any("STOPPING=1" in m for m in seen):
        seen.append(s.recv(4096).decode())
        print(seen[-1], flush=True)
except socket.timeout:
    pass
PY
	listener=$!; track_pid "$listener"
	wait_until 5 test -S "$WORK/notify.sock"
	NOTIFY_SOCKET=$WORK/notify.sock ip netns exec "$NS" "$CTSYNCD" -C "$CONF" 2>/dev/null &
	fg=$!; track_pid "$fg"
	check "READY=1 is sent once the socket answers" wait_until 5 grep -q 'READY=1' "$WORK/notify.out"
	check "...and the daemon answers by then" socket_ready
	kill -TERM "$fg"; wait "$fg"
	check "STOPPING=1 is sent on SIGTERM" wait_until 5 grep -q 'STOPPING=1' "$WORK/notify.out"
	wait "$listener" 2>/dev/null
fi

# --- command line quirks kept from conntrackd ----------------------------------------
out=$("$CTSYNCD" -Q 2>&1); rc=$?
check "an unknown option letter exits 0, as conntrackd (rc=$rc)" test $rc -eq 0
check "and prints the usage" contains "$out" '[Uu]sage' 
out=$("$CTSYNCD" -C "$CONF" -s bogus 2>&1); rc=$?
check "an unknown word after -s is an error (rc=$rc)" test $rc -eq 1
check "naming the word: $out" contains "$out" bogus
out=$("$CTSYNCD" -d -s 2>&1); rc=$?
check "mixing -d with a client option is a usage error (rc=$rc)" test $rc -eq 1

finish
