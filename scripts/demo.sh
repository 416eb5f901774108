#!/bin/bash
# README command (1): install what is needed, build, and show a failover.
#
# In network namespaces: a client, two firewalls (fw1 primary, fw2 backup)
# with keepalived moving two virtual addresses and ctsyncd replicating the
# connection states over a dedicated link, and a server.  The firewalls
# forward with a strict policy (only established/related packets, new TCP
# connections only by SYN, nf_conntrack_tcp_loose=0), so a firewall that
# has not got a connection's state drops its packets.
#
# Long-lived TCP connections go through fw1; fw1 crashes; keepalived moves
# the addresses to fw2.  With ctsyncd the connections keep flowing; then
# the same without ctsyncd, where they break.  Everything is removed at the
# end.  Set DEMO_CONNECTIONS to change the number of connections (50).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh" || exit 1
build=$("$top/scripts/build.sh" "$top/build/default" --enable-werror | tail -n1) || exit 1
export CTSYNCD=$build/ctsyncd FO_EXAMPLES=$build/examples/keepalived

# The test library gives the namespaces (named with this run's PID), the
# topology, and a cleanup that stops what it started and deletes them.
cd "$top/tests/failover" || exit 1
. ../lib/common.sh
. ../lib/failover.sh
TEST_NAME=demo
LONG=${DEMO_CONNECTIONS:-50}

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
tell() { printf '   %s\n' "$*"; }
die() { printf '\ndemo: %s (files kept in %s)\n' "$*" "$WORK"; TESTS_FAILED=1; exit 1; }

# run_case with|without: one failover; prints what happened.
run_case() {
	local mode=$1 n t0 vip
	fo_setup || die "cannot create the namespaces"
	for n in 1 2; do fo_ctsyncd_conf "$n"; done
	if [[ $mode == with ]]; then
		fo_start_ctsyncd 1 && fo_start_ctsyncd 2 || die "ctsyncd did not start"
		tell "ctsyncd runs on fw1 and fw2 (FTFW over the sync link, HotStandby on, sealed with a Key)"
	else
		export FO_NO_HOOK=1
		tell "no ctsyncd this time; keepalived alone"
	fi
	fo_keepalived_conf 1 150
	fo_keepalived_conf 2 100
	unset FO_NO_HOOK
	fo_start_keepalived 1
	wait_until 10 fo_has_vip 1 || die "fw1 did not become the primary"
	fo_start_keepalived 2
	tell "keepalived: fw1 holds the virtual addresses $FO_LAN_VIP and $FO_WAN_VIP, fw2 stands by"
	fo_start_server || die "the server did not start"
	fo_start_client "$mode" "$LONG" 14
	wait_until 20 test -e "$WORK/$mode.ready" || die "the client could not open its connections"
	tell "the client has $LONG long-lived TCP connections to the server through fw1,"
	tell "each sending a line every 100 ms, and opens 10 new short connections a second"
	if [[ $mode == with ]]; then
		wait_until 10 bash -c "(( \$(ip netns exec $NS_FW2 conntrack -L -p tcp --dport $FO_PORT --state ESTABLISHED 2>/dev/null | grep -c .) >= $LONG ))" &&
			tell "fw2's kernel already holds the $LONG connections, replicated by ctsyncd"
	else
		tell "fw2's kernel holds $(fo_kernel_count 2 "$FO_PORT") of the connections"
	fi
	sleep 1
	say "fw1 crashes: its processes freeze, its links go dark, then they are killed"
	t0=$(fo_now)
	fo_mark "$mode"
	fo_crash 1
	if wait_until 20 fo_has_vip 2; then
		vip=$(fo_ms_since "$t0")
		tell "keepalived on fw2 took the virtual addresses $vip ms after the crash"
	else
		tell "fw2 never took the virtual addresses"
	fi
	wait "$FO_CLIENT_PID"
	tell "$(python3 "$FO_FLOWS" summary "$WORK/$mode.json")"
	tell "packets fw2 dropped as invalid (no state for them): $(fo_invalid 2)"
	if [[ $mode == with ]]; then
		tell "fw2's hook ran: $(grep -c 'primary \[info\]' "$WORK/fw2.hook.log") steps (commit, flush, reload, bulk send)"
	fi
	fo_teardown
}

say "A client, two firewalls and a server in network namespaces (prefix $NS_PREFIX)"
tell "client $FO_CLIENT -> LAN bridge -> fw1 (primary) | fw2 (backup) -> WAN bridge -> server $FO_SERVER"
tell "the firewalls share a dedicated sync link, 198.18.30.1 <-> 198.18.30.2"

say "1. With ctsyncd"
run_case with
survived_with=$(fo_json with 'd["survived"]')

say "2. Without ctsyncd"
run_case without
survived_without=$(fo_json without 'd["survived"]')

say "Result"
tell "with ctsyncd:    $survived_with of $LONG long-lived connections survived the crash of the primary"
tell "without ctsyncd: $survived_without of $LONG"
tell "(the demo's files are in $WORK until it exits; tests/failover/failover.sh is the full test)"
if [[ $survived_with != "$LONG" ]]; then
	TESTS_FAILED=1
	exit 1
fi
exit 0
