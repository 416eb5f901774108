#!/bin/bash
# Three nodes in one multicast group (FTFW): each tracks the sequence space
# of each of the other two (1.4.7 mixes them), so every node's external
# cache ends up with the states of both others, also with loss on the way,
# after updates and deletes, and after one node restarts.
. "$(dirname "$0")/../lib/common.sh"
require_root
require_cmd conntrack python3 nft
CTLOAD=${CTLOAD:-$(built_tool bench/ctload)}
require_built "$CTLOAD"
N=${MULTINODE_STATES:-2000}

NODES=(1 2 3)
declare -A NS
HUB=$(make_netns hub) || exit 99
ip -n "$HUB" link add br0 type bridge
ip -n "$HUB" link set br0 up
for i in "${NODES[@]}"; do
	NS[$i]=$(make_netns "n$i") || exit 99
	ip link add sync netns "${NS[$i]}" type veth peer name "p$i" netns "$HUB"
	ip -n "$HUB" link set "p$i" master br0 up
	ip -n "${NS[$i]}" addr add "198.18.3.$i/24" dev sync
	ip -n "${NS[$i]}" link set sync up
	ip netns exec "${NS[$i]}" sysctl -qw net.netfilter.nf_conntrack_events=1
	cat >"$WORK/n$i.conf" <<CONF
Sync {
	Mode FTFW { }
	Multicast { IPv4_address 225.0.0.51 IPv4_interface 198.18.3.$i Group 3780 Interface sync }
}
General {
	Systemd off
	HashSize 16384
	LogFile $WORK/n$i.log
	LockFile $WORK/n$i.lock
	UNIX { Path $WORK/n$i.ctl }
	NetlinkBufferSize 8388608
	NetlinkBufferSizeMaxGrowth 16777216
	Filter { Address Ignore { IPv4_address 198.18.3.0/24 } }
}
CONF
done

start() { ip netns exec "${NS[$1]}" "$CTSYNCD" -C "$WORK/n$1.conf" -d && track_pid "$(head -n1 "$WORK/n$1.lock")"; }
ctl() { local i=$1; shift; "$CTSYNCD" -C "$WORK/n$i.conf" "$@"; }
load() { local i=$1; shift; ip netns exec "${NS[$i]}" "$CTLOAD" "$@" --base-addr "10.$i.0.1" >/dev/null; }
# ext_count NODE ORIGIN [MARK]: states of ORIGIN's range in NODE's external cache (with that mark).
ext_count() { ctl "$1" -e | grep "src=10\.$2\." | grep -c -- "${3:-}"; }
all_have() {    # all_have COUNT [MARK]: every node holds COUNT states of each other node
	local i j
	for i in "${NODES[@]}"; do
		for j in "${NODES[@]}"; do
			((i == j)) && continue
			(($(ext_count "$i" "$j" "${2:-}") == $1)) || return 1
		done
	done
}
report() {
	local i j
	for i in "${NODES[@]}"; do
		for j in "${NODES[@]}"; do ((i != j)) && printf 'n%s has %s of n%s; ' "$i" "$(ext_count "$i" "$j")" "$j"; done
	done
}
loss() {        # loss PERCENT: on every node's sending side
	local i
	for i in "${NODES[@]}"; do
		ip netns exec "${NS[$i]}" nft delete table inet loss 2>/dev/null
		(($1 == 0)) && continue
		ip netns exec "${NS[$i]}" nft add table inet loss
		ip netns exec "${NS[$i]}" nft "add chain inet loss out { type filter hook output priority 0; }"
		ip netns exec "${NS[$i]}" nft add rule inet loss out udp dport 3780 numgen random mod 100 \< "$1" drop
	done
}

for i in "${NODES[@]}"; do start "$i" || { fail "node $i starts"; finish; }; done
for i in "${NODES[@]}"; do load "$i" create "$N" --proto mixed & done; wait
check "every node has the $N states of each other node: $(report)" wait_until 30 all_have "$N"

loss 20
for i in "${NODES[@]}"; do load "$i" update "$N" --proto mixed --mark 7 & done; wait
check "with 20 % loss, the updates of all three reach the two others" wait_until 60 all_have "$N" 'mark=7'
for i in "${NODES[@]}"; do load "$i" delete $((N / 2)) --proto mixed & done; wait
check "... and the deletes: $(report)" wait_until 60 all_have $((N - N / 2))
loss 0

# Node 2 restarts with 100 new states: its HELLO tells the others, which ask
# it for its table; its -n gets theirs.
ctl 2 -k >/dev/null
wait_until 5 eval '! ctl 2 -s >/dev/null 2>&1'
load 2 create 100 --proto udp --offset "$N"
start 2 || { fail "node 2 restarts"; finish; }
ctl 2 -n >/dev/null
M=$((N - N / 2))
agree() {
	(($(ext_count 2 1) == M && $(ext_count 2 3) == M && $(ext_count 1 3) == M && $(ext_count 3 1) == M &&
	  $(ext_count 1 2) == M + 100 && $(ext_count 3 2) == M + 100))
}
wait_until 30 agree; rc=$?
check "after node 2's restart all caches agree, its new states included: $(report)" test $rc -eq 0
for i in "${NODES[@]}"; do
	j=$(ctl "$i" -s network --json)
	check "node $i counts no malformed message and no datagram of an unknown peer" python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["sync"]["malformed"] == 0 and d["sync"]["datagrams_from_untracked_peers"] == 0, d["sync"]
assert d["sync"]["states_received"] > 0, d["sync"]
' "$j"
done
finish
