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

# Node 2 restarts with 100 new states, and 50 of its states ended while it
# was down: its HELLO tells the others, which ask it for its table and,
# once it has sent it, sweep what it did not send again, and only its
# states (they know each state's sender); its -n gets theirs.
ctl 2 -k >/dev/null
wait_until 5 eval '! ctl 2 -s >/dev/null 2>&1'
sleep 1.1       # the sweep's mark has whole seconds: the last update is before it
load 2 create 100 --proto udp --offset "$N"
load 2 delete 50 --proto mixed --offset $((N / 2))
start 2 || { fail "node 2 restarts"; finish; }
ctl 2 -n >/dev/null
M=$((N - N / 2))
agree() {
	(($(ext_count 2 1) == M && $(ext_count 2 3) == M && $(ext_count 1 3) == M && $(ext_count 3 1) == M &&
	  $(ext_count 1 2) == M + 50 && $(ext_count 3 2) == M + 50))
}
wait_until 30 agree; rc=$?
check "after node 2's restart all caches agree: its new states in, those that ended while it was down swept, the others' kept: $(report)" test $rc -eq 0

# The external cache knows each state's sender: node 1 lists and commits
# node 3's states alone, and says which peers it knows when asked for another.
check "-e --origin lists exactly node 3's states on node 1" \
	test "$(ctl 1 -e --origin 198.18.3.3 | grep -c 'src=10\.3\.')" -eq "$M" -a \
	"$(ctl 1 -e --origin 198.18.3.3 | grep -vc 'src=10\.3\.')" -eq 0
check "-s --json counts each peer's external states" python3 -c '
import json, sys
peers = {p["address"]: p for p in json.loads(sys.argv[1])["peers"]}
assert peers["198.18.3.2"]["external_states"] == int(sys.argv[2]) + 50, peers
assert peers["198.18.3.3"]["external_states"] == int(sys.argv[2]), peers
assert all(p["member"] and p["unacknowledged"] >= 0 and p["last_sequence"] > 0 for p in peers.values()), peers
' "$(ctl 1 -s --json)" "$M"
kernel_from() { ip netns exec "${NS[1]}" conntrack -L 2>/dev/null | grep -c "src=10\.$1\."; }
out=$(ctl 1 -c --origin 198.18.3.3 2>&1)
check "-c --origin commits node 3's states into node 1's kernel: $out" \
	test "$(kernel_from 3)" -eq "$M" -a "$(kernel_from 2)" -eq 0
out=$(ctl 1 -c --origin 198.18.3.9 2>&1); rc=$?
check "-c --origin with an address no peer sent from fails and names it: $out" \
	test $rc -ne 0 -a "${out#*198.18.3.9}" != "$out" -a "${out#*198.18.3.2}" != "$out"
# A member that dies never holds the group back: with ALIVEs every 100 ms
# and a 300 ms PeerTimeout (applied by a reload), node 3 frozen is down
# within a second on node 1, whose new states reach node 2 and leave its
# window at once; the timeouts resend none of them to node 2 (it has
# them), only a probe for node 3; thawed, node 3 gets them all.
pid_of() { head -n1 "$WORK/n$1.lock"; }
for i in "${NODES[@]}"; do
	sed -i 's/^Sync {$/Sync {\n\tAliveInterval 100\n\tPeerTimeout 300ms/' "$WORK/n$i.conf"
	kill -HUP "$(pid_of "$i")"
done
wait_until 5 eval "grep -q 'PeerTimeout' '$WORK/n1.log'" || true
sleep 0.5
net1() { ctl 1 -s network --json; }
json_get() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(eval(sys.argv[2], {}, d))' "$1" "$2"; }
kill -STOP "$(pid_of 3)"
frozen_at=$(date +%s%N)
load 1 create 500 --proto tcp --offset $((2 * N))
peer3_down() { [[ $(json_get "$(net1)" '[p["state"] for p in peers if p["address"] == "198.18.3.3"][0]') == down ]]; }
check "node 3 frozen: node 1 says it is down within 2 s" wait_until 2 peer3_down
log "node 3 down on node 1 after $(( ($(date +%s%N) - frozen_at) / 1000000 )) ms"
window_empty() { (($(ctl 1 -s queue --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["queues"]["in_flight"])') == 0)); }
check "node 1's window drains without node 3" wait_until 3 window_empty
check "node 2 has node 1's 500 new states" wait_until 5 eval '(($(ext_count 2 1) == M + 500))'
before=$(json_get "$(net1)" 'sync["retransmitted"]')
sleep 2
after=$(json_get "$(net1)" 'sync["retransmitted"]')
check "while node 3 is down node 1 resends nothing to speak of ($before -> $after)" test $((after - before)) -le 5
kill -CONT "$(pid_of 3)"
check "node 3 thawed gets node 1's new states" wait_until 15 eval '(($(ext_count 3 1) == M + 500))'

for i in "${NODES[@]}"; do
	j=$(ctl "$i" -s network --json)
	check "node $i counts no malformed message and no datagram of an unknown peer" python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["sync"]["malformed"] == 0 and d["sync"]["datagrams_from_untracked_peers"] == 0, d["sync"]
assert d["sync"]["states_received"] > 0, d["sync"]
' "$j"
done

# Node 3 dies; one forged datagram in its name says it restarted (HELLO, a
# new sequence space).  Node 1 marks node 3's states, but node 3 sends
# nothing again, so nothing is swept: a takeover still finds them all.
ctl 3 -k >/dev/null
wait_until 5 eval '! ctl 3 -s >/dev/null 2>&1'
sleep 1
restarts_of_3() { grep -c 'peer 198.18.3.3 restarted' "$WORK/n1.log"; }
r0=$(restarts_of_3)
ip netns exec "${NS[3]}" python3 -c '
import random, socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("198.18.3.3"))
s.bind(("198.18.3.3", 0))
s.sendto(struct.pack(">BBHI", 0x1A, 0x30, 8, random.getrandbits(32)), ("225.0.0.51", 3780))
'
check "the forged restart of the dead node 3 reaches node 1" wait_until 5 eval '(($(restarts_of_3) > r0))'
sleep 4         # past PeerTimeout, the answered resync and the sweep's 2 s of quiet
check "node 1 still holds node 3's $M states: a restart nothing followed sweeps nothing" \
	test "$(ext_count 1 3)" -eq "$M"
finish
