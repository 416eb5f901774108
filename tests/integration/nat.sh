#!/bin/bash
# NAT made by real traffic: A routes between a client and a server with
# nftables SNAT (masquerade into ports 61000-61999: address and port
# rewritten) and DNAT (a port forward, also masqueraded); ctsyncd carries the NAT'ed states to B, whose commit must
# give the same entries as A's kernel, field by field: original and reply
# tuples (so the NAT addresses and ports), state, flags, mark.  FTP through
# the SNAT adds a NAT'ed expectation, and in active mode a control stream
# that the helper rewrites, so that A adjusts its TCP sequence numbers: B
# must have the same adjustment (read with tests/integration/kernel-driver).
# A destroy made on A with conntrack -D leaves B's external cache.  IPv6
# traffic to a server on A, over link-local addresses, reaches B too.
# bpf-events.sh runs all of it with EventSource bpf on both sides, and then
# floods A's tap while its daemon is stopped: the lost records are repaired.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
require_root
require_cmd conntrack nft python3
modprobe nf_nat_ftp 2>/dev/null
DRIVER=${DRIVER:-$(built_tool tests/integration/kernel-driver)}
require_built "$DRIVER"

pair_setup || { echo "cannot create the namespaces" >&2; exit 99; }
NS_C=$(make_netns C) && NS_S=$(make_netns S) || exit 99
ip link add lan netns "$NS_A" type veth peer name eth0 netns "$NS_C"
ip link add wan netns "$NS_A" type veth peer name eth0 netns "$NS_S"
ip -n "$NS_A" addr add 198.18.40.1/24 dev lan
ip -n "$NS_A" addr add 198.18.41.1/24 dev wan
ip -n "$NS_C" addr add 198.18.40.10/24 dev eth0
ip -n "$NS_S" addr add 198.18.41.10/24 dev eth0
for l in "$NS_A lan" "$NS_A wan" "$NS_C eth0" "$NS_S eth0"; do set -- $l; ip -n "$1" link set "$2" up; done
ip -n "$NS_C" route add default via 198.18.40.1
ip -n "$NS_S" route add default via 198.18.41.1
ip netns exec "$NS_A" sysctl -qw net.ipv4.ip_forward=1
ip netns exec "$NS_A" nft -f - <<'NFT' || { echo "nft failed" >&2; exit 99; }
table ip nat {
	ct helper ftp-std { type "ftp" protocol tcp; }
	chain dnat_in {
		type nat hook prerouting priority dstnat;
		iifname "lan" tcp dport 8080 dnat to 198.18.41.10:80
	}
	chain helpers {
		type filter hook forward priority filter;
		tcp dport 21 ct helper set "ftp-std"
	}
	chain snat_out {
		type nat hook postrouting priority srcnat;
		oifname "wan" meta l4proto { tcp, udp } masquerade to :61000-61999
		oifname "wan" masquerade
	}
}
NFT
# NAT_CT_EVENTS: the policy asks the kernel for only these conntrack
# events (nftables' ct event set), as doc/bpf-events.md suggests with
# EventSource bpf
if [[ -n ${NAT_CT_EVENTS:-} ]]; then
	ip netns exec "$NS_A" nft -f - <<NFT || { echo "nft failed (ct event set)" >&2; exit 99; }
table inet ctevents {
	chain pre { type filter hook prerouting priority -150; ct state new ct event set $NAT_CT_EVENTS; }
	chain out { type filter hook output priority -150; ct state new ct event set $NAT_CT_EVENTS; }
}
NFT
fi
# A's IPv6 conntrack (needed by the IPv6 step below) is on before its
# daemon starts: its confirmation at IPv6 input is at INT_MAX - 1, a
# priority the tap must not take (the kernel would refuse it).
ip netns exec "$NS_A" nft -f - <<'NFT' || { echo "nft failed (ip6)" >&2; exit 99; }
table ip6 v6 {
	chain input { type filter hook input priority filter; ct state new counter; }
}
NFT
pair_conf A FTFW "Options { ExpectationSync on }" "Filter { Address Ignore { IPv4_address 198.18.1.0/24 } }"
pair_conf B FTFW "Options { ExpectationSync on }" "Filter { Address Ignore { IPv4_address 198.18.1.0/24 } }"
pair_start A && pair_start B || { fail "the daemons start"; finish; }

# Servers on S: a line server on 80 and 5001 (UDP too), and an FTP server on 21.
ip netns exec "$NS_S" timeout 60 python3 -c '
import socket, threading, time
def tcp(port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("198.18.41.10", port)); s.listen(8)
    while True:
        c, _ = s.accept(); c.sendall(b"hello\n"); threading.Thread(target=lambda c=c: (time.sleep(55), c.close())).start()
def udp():
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("198.18.41.10", 5353))
    while True:
        d, a = u.recvfrom(100); u.sendto(d, a)
for p in (80, 5001): threading.Thread(target=tcp, args=(p,), daemon=True).start()
threading.Thread(target=udp, daemon=True).start()
time.sleep(58)
' &
track_pid $!
ip netns exec "$NS_S" python3 "$(dirname "$0")/../lib/ftp.py" server --bind 198.18.41.10 --data-port 40021 \
	--pid-file "$WORK/ftpd.pid" --lifetime 50 &
track_pid $!
wait_until 5 test -s "$WORK/ftpd.pid"
# a client before a server listens would be refused
s_serving() { [[ $(ip netns exec "$NS_S" ss -Hltn '( sport = :80 or sport = :5001 )' | grep -c .) == 2 &&
	-n $(ip netns exec "$NS_S" ss -Hlun "sport = :5353") ]]; }
wait_until 10 s_serving || log "S's servers do not listen"

# Clients on C: two TCP connections, a port forward, UDP, and FTP in passive mode.
ip netns exec "$NS_C" timeout 60 python3 -c '
import socket, time
conns = []
for port in (5001, 80):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("198.18.40.10", 40000 if port == 5001 else 40001)); s.connect(("198.18.41.10", port)); s.recv(10); conns.append(s)
f = socket.create_connection(("198.18.40.1", 8080)); f.recv(10); conns.append(f)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("198.18.40.10", 40002))
u.sendto(b"x", ("198.18.41.10", 5353)); u.recvfrom(10)
open("'"$WORK"'/clients.ready", "w").close()
time.sleep(55)
' &
track_pid $!
ip netns exec "$NS_C" python3 "$(dirname "$0")/../lib/ftp.py" client --connect 198.18.41.10 \
	--go-file "$WORK/ftp.go" --result-file "$WORK/ftp.json" --lifetime 50 >/dev/null 2>&1 &
track_pid $!
check "the clients reach the server through A" wait_until 10 test -e "$WORK/clients.ready"
check "A's kernel has the NAT'ed FTP expectation" \
	wait_until 10 eval 'ct_in A -L expect | grep -q "dport=40021"'

# A kernel's line for a state, without what differs between two kernels (timeout, use, id).
kernel_line() { ct_in "$1" -L -o extended | grep -- "$2" | awk '{ $5 = ""; print }' | sed 's/ use=[0-9]*//; s/ id=[0-9]*//'; }
wanted=("sport=40000 dport=5001" "sport=40001 dport=80" "dport=8080" "sport=40002 dport=5353" "dport=21 ")
for w in "${wanted[@]}"; do
	check "B's external cache has A's state [$w]" wait_until 10 eval "ctl B -e | grep -q -- '$w'"
done
check "... and A's expectation" wait_until 10 eval 'ctl B -e expect | grep -q "dport=40021"'
out=$(ctl B -c)
check "B's commit writes them all: $out" contains "$out" '0 failed.*'
for w in "${wanted[@]}"; do
	a=$(kernel_line A "$w"); b=$(kernel_line B "$w")
	check "the same in both kernels: [$a] [$b]" eval '[[ -n $a && $a == "$b" ]]'
done
check "the SNAT is real: the reply goes to A's WAN address and a port of the range" \
	contains "$(kernel_line B 'dport=5001')" 'dst=198.18.41.1 sport=5001 dport=61[0-9]{3} '
check "the DNAT is real: the reply comes from the server's port 80" \
	contains "$(kernel_line B 'dport=8080')" 'src=198.18.41.10 dst=198.18.41.1 sport=80 dport=61[0-9]{3} '
a=$(ct_in A -L expect | grep -o 'proto=6 .*'); b=$(ct_in B -L expect | grep -o 'proto=6 .*')
check "the NAT'ed expectation is the same in both kernels: [$a] [$b]" eval '[[ -n $a && $a == "$b" ]]'
touch "$WORK/ftp.go"
wait_until 10 test -s "$WORK/ftp.json"
check "the FTP data connection works through A's NAT ($(cat "$WORK/ftp.json" 2>/dev/null))" \
	python3 -c 'import json,sys; sys.exit(not json.load(open(sys.argv[1]))["data_ok"])' "$WORK/ftp.json"
check "... and its related state reaches B" \
	wait_until 10 eval 'ctl B -e | grep -q "dport=40021 .*master="'

# Active mode: the client's PORT carries 198.18.40.10, which A rewrites to
# 198.18.41.1.  The rewrite changes the control connection's sequence
# adjustment without an event; the expectation it makes is ctsyncd's cue to
# read the master back, so B has the adjustment before any data connection
# (a takeover between PORT and RETR keeps the control connection).
ip netns exec "$NS_C" python3 "$(dirname "$0")/../lib/ftp.py" client --connect 198.18.41.10 --active \
	--go-file "$WORK/active.go" --result-file "$WORK/active.json" --lifetime 30 --linger 30 >/dev/null 2>&1 &
track_pid $!
dump() { ip netns exec "$1" "$DRIVER" dump 2>/dev/null | sed 's/ tmo=[0-9]*//'; }
ctl_seqadj() { dump "$NS_A" | grep 'dport=21 ' | grep 'seqadj='; }
check "A adjusts the sequence numbers of the active control connection" wait_until 10 ctl_seqadj
la=$(ctl_seqadj)
sport=$(grep -o 'sport=[0-9]*' <<<"$la" | head -n1)
same_seqadj() { ctl B -c >/dev/null; lb=$(dump "$NS_B" | grep "$sport dport=21 "); [[ -n $la && $la == "$lb" ]]; }
check "before the data connection, B's commit gives it the same adjustment: [$la]" wait_until 5 same_seqadj
[[ $la == "$lb" ]] || log "B: [$lb]"
touch "$WORK/active.go"
wait_until 10 test -s "$WORK/active.json"
check "active FTP through A's NAT works ($(cat "$WORK/active.json" 2>/dev/null))" \
	python3 -c 'import json,sys; sys.exit(not json.load(open(sys.argv[1]))["data_ok"])' "$WORK/active.json"
check "its data connection's related state reaches B" \
	wait_until 10 eval '(( $(ctl B -e | grep -c "master=tcp:198.18.40.10-198.18.41.10") >= 2 ))'
la=$(ctl_seqadj)
check "after it, B's commit still gives the same adjustment: [$la]" wait_until 5 same_seqadj

ct_in A -D -p udp --orig-port-src 40002 >/dev/null
check "a state destroyed on A leaves B's external cache" \
	wait_until 10 eval '! ctl B -e | grep -q "sport=40002 dport=5353"'
check "... and the other states stay" eval 'ctl B -e | grep -q "sport=40000 dport=5001"'

# IPv6: C talks to a server on A itself over the LAN's link-local addresses
# (these links route no IPv6), a TCP connection and a UDP flow: A's input
# and output paths, which EventSource bpf taps for IPv6 too.  B must have
# both, and its commit the same TCP entry as A's kernel.
ip -n "$NS_A" addr add fe80::c:1/64 dev lan nodad
ip -n "$NS_C" addr add fe80::c:10/64 dev eth0 nodad
ip netns exec "$NS_A" timeout 40 python3 -c '
import socket, time
s = socket.socket(socket.AF_INET6); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("fe80::c:1", 5002, 0, socket.if_nametoindex("lan"))); s.listen(4)
u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); u.bind(("fe80::c:1", 5354, 0, socket.if_nametoindex("lan")))
c, _ = s.accept(); c.sendall(b"hello\n")
d, a = u.recvfrom(10); u.sendto(d, a)
time.sleep(38)
' &
track_pid $!
v6_serving() { [[ -n $(ip netns exec "$NS_A" ss -Hltn "sport = :5002") && -n $(ip netns exec "$NS_A" ss -Hlun "sport = :5354") ]]; }
wait_until 10 v6_serving || log "A's IPv6 server does not listen"
ip netns exec "$NS_C" timeout 40 python3 -c '
import socket, time
scope = socket.if_nametoindex("eth0")
s = socket.socket(socket.AF_INET6); s.bind(("fe80::c:10", 40003, 0, scope))
s.connect(("fe80::c:1", 5002, 0, scope)); s.recv(10)
u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); u.bind(("fe80::c:10", 40004, 0, scope))
u.sendto(b"x", ("fe80::c:1", 5354, 0, scope)); u.recvfrom(10)
open("'"$WORK"'/v6.ready", "w").close()
time.sleep(38)
' &
track_pid $!
check "IPv6: C reaches A's server over link-local addresses" wait_until 10 test -e "$WORK/v6.ready"
for w in "src=fe80::c:10 dst=fe80::c:1 sport=40003 dport=5002" "src=fe80::c:10 dst=fe80::c:1 sport=40004 dport=5354"; do
	check "IPv6: B's external cache has A's state [$w]" wait_until 10 eval "ctl B -e | grep -q -- '$w'"
done
ctl B -c >/dev/null
kernel_line6() { ct_in "$1" -L -f ipv6 -o extended | grep -- "$2" | awk '{ $5 = ""; print }' | sed 's/ use=[0-9]*//; s/ id=[0-9]*//'; }
a=$(kernel_line6 A 'sport=40003 dport=5002'); b=$(kernel_line6 B 'sport=40003 dport=5002')
check "IPv6: the same TCP entry in both kernels: [$a] [$b]" eval '[[ -n $a && $a == "$b" ]]'

if [[ ${EVENT_SOURCE:-} == bpf ]]; then
	kernel_stat() { ctl A -s --json | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["kernel"][sys.argv[1]]))' "$1"; }
	if [[ $(kernel_stat bpf_event_tap) == 1 ]]; then
		check "A read its states from the BPF tap ($(kernel_stat bpf_tap_records) records)" \
			eval '(( $(kernel_stat bpf_tap_records) > 10 ))'
		check "... the FTP states (helper, master) read whole from the kernel ($(kernel_stat bpf_tap_partial))" \
			eval '(( $(kernel_stat bpf_tap_partial) > 0 ))'
		# /proc/net/netlink: protocol 12 is netfilter; groups 1 and 2 (NEW, UPDATE) are bits 0 and 1
		ct_groups() { ip netns exec "$NS_A" awk '$2 == 12 { g = or(g, strtonum("0x" $4)) } END { print and(g, 3) }' /proc/net/netlink; }
		check "... and no socket on A is in ctnetlink's NEW or UPDATE group" eval '[[ $(ct_groups) == 0 ]]'

		# A flood while A's daemon is stopped: 20000 new UDP flows (20
		# destination ports, within the SNAT range's 1000 ports each) make
		# 20000 records, more than the 2 MiB ring holds.  The loss must be
		# counted and repaired by one resync (NetlinkOverrunResync), not lost.
		apid=$(head -n1 "$WORK/A.lock")
		kill -STOP "$apid"
		ip netns exec "$NS_C" python3 -c '
import socket
for i in range(20000):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("198.18.40.10", 20000 + i)); u.sendto(b"x", ("198.18.41.10", 6000 + i % 20)); u.close()
'
		flood_in_kernel=$(ct_in A -L -p udp 2>/dev/null | grep -c "dport=60[01][0-9] ")
		kill -CONT "$apid"
		check "the flood is in A's kernel ($flood_in_kernel of 20000 flows)" test "$flood_in_kernel" -ge 19000
		check "A counts the records the full ring lost ($(kernel_stat bpf_tap_lost))" \
			wait_until 5 eval '(( $(kernel_stat bpf_tap_lost) > 0 ))'
		flood_in() { ctl "$1" "$2" | grep -c "dport=60[01][0-9] "; }
		check "A's resync brings every flood flow into its internal cache" \
			wait_until 20 eval '(( $(flood_in A -i) >= flood_in_kernel ))'
		check "... and to B ($(flood_in B -e) of $flood_in_kernel)" \
			wait_until 20 eval '(( $(flood_in B -e) >= flood_in_kernel ))'
		check "... by one resync, not one per lost batch ($(kernel_stat resyncs))" \
			eval '(( $(kernel_stat resyncs) >= 1 && $(kernel_stat resyncs) <= 2 ))'
	else
		# a kernel without netfilter BPF links (before 6.4, or no BTF): the fallback
		check "this kernel refuses the BPF tap: A says so and follows ctnetlink" \
			eval '[[ $(kernel_stat bpf_event_tap_refused) == 1 ]] && grep -q "EventSource bpf: .*following ctnetlink" "$WORK/A.log"'
	fi
fi
finish
