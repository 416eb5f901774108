#!/bin/bash
# Peer liveness and `-s health` (ctsyncd(8), HEALTH): over UDP, TCP and a
# multicast group of three, a peer killed (SIGKILL) or frozen (SIGSTOP) is
# down after PeerTimeout (3 s here): the survivor logs it once, -s shows it,
# -s health exits 2 naming it; back (restart, SIGCONT), it is logged up once
# and health is 0 again.  Also: no daemon is UNKNOWN (3), and a cache that
# hit HashLimit is CRITICAL.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
require_root
require_cmd conntrack python3

pair_setup || { echo "cannot create the namespaces" >&2; exit 99; }

HEALTH_CONF="PeerTimeout 3
	Health { PeerSilentWarning 2 }"

health_rc() { ctl "$1" -s health >/dev/null 2>&1; echo $?; }
health_is() { [[ $(health_rc "$1") == "$2" ]]; }
# peer SIDE KEY [INDEX]: a key of a peer in SIDE's `-s --json`.
peer() {
	ctl "$1" -s --json | python3 -c "import json,sys; print(json.load(sys.stdin)['peers'][${3:-0}]['$2'])"
}
peer_is() { [[ $(peer "$1" "$2" "${4:-0}") == "$3" ]]; }
logged() { grep -c -- "$2" "$WORK/$1.log"; }
pid_of() { head -n1 "$WORK/$1.lock"; }
# cpu_ms SIDE SECONDS: the CPU time (user + system) SIDE's daemon uses in SECONDS.
cpu_ms() {
	local pid t0 t1 hz
	pid=$(pid_of "$1") hz=$(getconf CLK_TCK)
	t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
	sleep "$2"
	t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
	echo $(((t1 - t0) * 1000 / hz))
}

# --- no daemon ---------------------------------------------------------------------
pair_conf A FTFW "$HEALTH_CONF"
out=$(ctl A -s health 2>/dev/null); rc=$?
check "no daemon: -s health exits 3 (UNKNOWN) (exit $rc)" test "$rc" -eq 3
check "... with one line saying so: $out" contains "$out" '^CTSYNCD UNKNOWN - cannot connect'
out=$(ctl A -s health --json 2>&1); rc=$?
check "-s health --json is a usage error, UNKNOWN too (exit $rc)" test "$rc" -eq 3

# kill_and_return KIND: A's view of B killed, restarted, frozen and resumed.
kill_and_return() {
	local kind=$1 b out rc
	rm -f "$WORK/A.log" "$WORK/B.log"
	pair_start A && pair_start B || { fail "$kind: the daemons start"; return; }
	check "$kind: -s health is OK once B is heard" wait_until 5 health_is A 0
	out=$(ctl A -s health)
	check "$kind: the line says so: $out" contains "$out" '^CTSYNCD OK - 1/1 peers up'
	check "$kind: -s shows B up" peer_is A state up
	check "$kind: -s shows when B was last heard" contains "$(peer A last_heard)" '^20[0-9-]+T[0-9:.]+Z$'
	# Past PeerTimeout (3 s) since its start, with B heard, an idle A sleeps:
	# its deadline for a peer never heard must not stay in the past and wake it.
	sleep 3
	local cpu
	cpu=$(cpu_ms A 2)
	check "$kind: an idle A past PeerTimeout uses no CPU to speak of (${cpu} ms in 2 s)" test "$cpu" -lt 200

	b=$(pid_of B)
	kill -KILL "$b"
	check "$kind: B killed: A says it is down within PeerTimeout + 2 s" wait_until 5 peer_is A state down
	out=$(ctl A -s health); rc=$?
	check "$kind: -s health exits 2 (exit $rc)" test "$rc" -eq 2
	check "$kind: ... naming B: $out" contains "$out" '^CTSYNCD CRITICAL - peer 198\.18\.1\.2 down \(silent for [34] s\)'
	check "$kind: A logged it once" test "$(logged A 'peer 198.18.1.2 is down: silent for')" -eq 1
	check "$kind: -s counts one transition down" peer_is A down_transitions 1
	rm -f "$WORK/B.lock"
	pair_start B || { fail "$kind: B restarts"; return; }
	check "$kind: B restarted: A says it is up" wait_until 5 peer_is A state up
	check "$kind: -s health is OK again" wait_until 5 health_is A 0
	check "$kind: A logged it up once" test "$(logged A 'peer 198.18.1.2 is up again after')" -eq 1

	b=$(pid_of B)
	kill -STOP "$b"
	check "$kind: B frozen: A says it is down" wait_until 5 peer_is A state down
	check "$kind: -s health exits 2" health_is A 2
	kill -CONT "$b"
	check "$kind: B resumed: A says it is up" wait_until 5 peer_is A state up
	check "$kind: -s health is OK again" wait_until 10 health_is A 0
	check "$kind: A logged two downs and two ups in all" \
		test "$(logged A 'peer 198.18.1.2 is down')$(logged A 'peer 198.18.1.2 is up again')" = 22
	check "$kind: -s counts them" test "$(peer A down_transitions)$(peer A up_transitions)" = 22
	pair_stop A; pair_stop B
	wait_until 5 test ! -e "$WORK/A.lock"; wait_until 5 test ! -e "$WORK/B.lock"
}

LINK_KIND=UDP pair_conf A FTFW "$HEALTH_CONF"
LINK_KIND=UDP pair_conf B FTFW "$HEALTH_CONF"
kill_and_return UDP

LINK_KIND=TCP pair_conf A NOTRACK "$HEALTH_CONF"
LINK_KIND=TCP pair_conf B NOTRACK "$HEALTH_CONF"
kill_and_return "TCP, NOTRACK"

# --- a peer never heard; a cache at its limit ------------------------------------------
pair_conf A FTFW "$HEALTH_CONF"
pair_conf B FTFW "$HEALTH_CONF"
sed -i "s/HashLimit 262144/HashLimit 10/" "$WORK/B.conf"
rm -f "$WORK/A.log" "$WORK/B.log"
pair_start B || { fail "B starts alone"; finish; }
check "B alone: -s health warns while it waits for A" health_is B 1
check "B alone: after PeerTimeout A is down, never heard" wait_until 5 health_is B 2
check "... and logged once" wait_until 2 test "$(logged B 'peer 198.18.1.1 is down: not heard since our start')" -eq 1
for ((i = 2000; i < 2030; i++)); do
	ct_in A -I -s 10.9.0.1 -d 10.9.0.2 -p udp --sport "$i" --dport 53 -t 600 >/dev/null
done
pair_start A || { fail "A starts"; finish; }
check "A comes: B logs it up" wait_until 5 test "$(logged B 'peer 198.18.1.1 is up again after')" -eq 1
incomplete() { ctl B -s health | grep -q 'external cache incomplete'; }
check "B's external cache hit HashLimit 10: -s health says so" wait_until 10 incomplete
out=$(ctl B -s health); rc=$?
check "... CRITICAL (exit $rc): $out" test "$rc" -eq 2
pair_stop A; pair_stop B
wait_until 5 test ! -e "$WORK/A.lock"; wait_until 5 test ! -e "$WORK/B.lock"
ct_in A -F >/dev/null

finish
