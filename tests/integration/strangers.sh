#!/bin/bash
# An attacker on the sync segment: A, B and X share one bridge.  Over UDP,
# TCP and multicast, what X sends (a forged restart, RESYNC requests, a
# connection to B's TCP port, multicast from outside the link's networks)
# reaches neither B's sync engine nor its caches: it is dropped, counted
# (-s link: strangers_dropped) and logged, and A's replication goes on.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
require_root
require_cmd conntrack nft python3

setup() {
	pair_segment_setup || return 1
	# X also has an address outside the link's network, for multicast.
	ip -n "$NS_X" addr add 198.19.9.9/24 dev syncX &&
		ip -n "$NS_X" route add 224.0.0.0/4 dev syncX
}
setup || { echo "cannot create the namespaces" >&2; exit 99; }

# x_send DST PORT SRC COUNT KIND: COUNT forged messages from X (SRC bound).
#   restart: ALIVE|HELLO with a sequence number far from the peer's
#   resync:  RESYNC requests, each with another number
x_send() {
	ip netns exec "$NS_X" python3 -c '
import random, socket, struct, sys
dst, port, src, count, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
s.bind((src, 0))
seq = random.getrandbits(32)
for i in range(count):
    seq = (seq + 0x40000000) & 0xffffffff
    if kind == "restart":
        msg = struct.pack(">BBHI", 0x1A, 0x30, 8, seq)
    else:
        msg = struct.pack(">BBHIII", 0x1A, 0x02, 16, seq, 0, 0xffffffff)
    s.sendto(msg, (dst, port))
' "$@"
}

# seen_seq: the sequence number of a datagram from A to B, as a sniffer on
# B's port of the segment reads it.
seen_seq() {
	ip netns exec "$NS_B" timeout 5 python3 -c '
import socket, struct
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.bind(("syncB", 0))
while True:
    f = s.recv(65535)
    ip = f[14:]
    ihl = (ip[0] & 15) * 4
    if ip[9] != 17 or socket.inet_ntoa(ip[12:16]) != "198.18.1.1":
        continue
    if struct.unpack(">H", ip[ihl + 2:ihl + 4])[0] != 3780:
        continue
    print(struct.unpack(">I", ip[ihl + 8 + 4:ihl + 8 + 8])[0])
    break
'
}

# x_forge_as_peer DST PORT SRC SECONDS BASE: from X but in the peer's name
# (SRC, an address X does not have), one ALIVE|HELLO 2^30 ahead of the
# peer's number BASE, then one ALIVE every half second continuing that
# forged space: the peer's real numbers all look old in it.
x_forge_as_peer() {
	ip netns exec "$NS_X" python3 -c '
import socket, struct, sys, time
dst, port, src, secs = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_IP, 19, 1)          # IP_TRANSPARENT: send from SRC
s.bind((src, 0))
seq = (int(sys.argv[5]) + (1 << 30)) & 0xffffffff
s.sendto(struct.pack(">BBHI", 0x1A, 0x30, 8, seq), (dst, port))
end = time.time() + secs
while time.time() < end:
    time.sleep(0.5)
    seq = (seq + 1) & 0xffffffff
    s.sendto(struct.pack(">BBHI", 0x1A, 0x10, 8, seq), (dst, port))
' "$@"
}

link_json() { ctl "$1" -s link --json; }
sync_json() { # sync_json SIDE KEY
	ctl "$1" -s --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["sync"][sys.argv[1]])' "$2"
}
strangers() {
	link_json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["links"][0]["strangers_dropped"])'
}
# strangers_at_least SIDE N: for wait_until, which must read the counter anew each time.
strangers_at_least() { (( $(strangers "$1") >= $2 )); }
restarts() {
	ctl "$1" -s --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["sync"]["peer_restarts"])'
}
ext_is() { [[ $(ext_active B) == "$1" ]]; }
load() { # load N FIRST: N UDP states on A, sports FIRST...
	local i
	for ((i = $2; i < $2 + $1; i++)); do
		ct_in A -I -s 10.7.0.1 -d 10.7.0.2 -p udp --sport "$i" --dport 53 -t 600 >/dev/null
	done
}
stop_both() {
	pair_stop A; pair_stop B
	wait_until 5 test ! -e "$WORK/A.lock" && wait_until 5 test ! -e "$WORK/B.lock"
	ct_in A -F >/dev/null; ct_in B -F >/dev/null
}

for kind in UDP TCP Multicast; do
	LINK_KIND=$kind pair_conf A FTFW
	LINK_KIND=$kind pair_conf B FTFW
	pair_start A && pair_start B || { fail "$kind: the daemons start"; continue; }
	load 200 1000
	check "$kind: A's 200 states reach B" wait_until 20 ext_is 200
	r0=$(restarts B)
	case $kind in
	UDP)
		x_send 198.18.1.2 3780 198.18.1.66 50 restart
		x_send 198.18.1.2 3780 198.18.1.66 50 resync
		check "$kind: B counts X's 100 datagrams as strangers" wait_until 5 strangers_at_least B 100
		;;
	TCP)
		for i in 1 2 3; do
			ip netns exec "$NS_X" timeout 5 python3 -c '
import socket, struct, sys
c = socket.create_connection(("198.18.1.2", 3780), timeout=2)
c.sendall(struct.pack(">BBHI", 0x1A, 0x30, 8, 12345))
c.settimeout(2)
try:
    sys.exit(0 if c.recv(1) == b"" else 1)
except OSError:
    sys.exit(0)
' || fail "$kind: B closes X's connection"
		done
		check "$kind: B counts X's 3 connections as strangers" wait_until 5 strangers_at_least B 3
		;;
	Multicast)
		x_send 225.0.0.50 3780 198.19.9.9 50 restart
		x_send 225.0.0.50 3780 198.19.9.9 50 resync
		check "$kind: B counts X's 100 datagrams from outside the link's network" \
			wait_until 5 strangers_at_least B 100
		;;
	esac
	check "$kind: no forged restart reached B's engine ($(restarts B) restarts, $r0 before)" \
		test "$(restarts B)" -eq "$r0"
	check "$kind: B's external cache kept its 200 states" ext_is 200
	check "$kind: B logs the strangers" grep -q 'which is not the peer' "$WORK/B.log"
	load 20 2000
	check "$kind: A's replication goes on (220 states on B)" wait_until 20 ext_is 220
	if [[ $kind == UDP ]]; then
		# Spoofed from A's own address, the forgery passes the address
		# check; it must not make B drop A's real messages (deviation 24).
		base=$(seen_seq)
		check "$kind: the sniffer read A's sequence number ($base)" test -n "$base"
		x_forge_as_peer 198.18.1.2 3780 198.18.1.1 12 "${base:-0}" &
		forger=$!
		sleep 1
		load 300 3000
		check "$kind: with X forging A's restart and space, A's 300 new states reach B" \
			wait_until 10 ext_is 520
		check "$kind: B took A's messages in its own space ($(sync_json B peer_space_switches) switches)" \
			test "$(sync_json B peer_space_switches)" -gt 0
		check "$kind: B logs the two spaces" grep -q 'sends in two sequence spaces' "$WORK/B.log"
		wait "$forger"
		check "$kind: nothing lost after the forgery (520 states on B)" wait_until 10 ext_is 520
	fi
	stop_both
done
finish
