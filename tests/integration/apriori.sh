#!/bin/bash
# A-priori (confirmed) mode, doc/apriori.md: a connection's first reply
# (the TCP SYN-ACK) waits in an NFQUEUE until the backup has acknowledged
# the connection's state.
#
#   client 198.18.10.10 ── br-lan ─┬─ lan0 fw1 wan0 ─┬─ br-wan ── server 198.18.20.10
#                                  └─ lan0 fw2 wan0 ─┘
#   fw1 sync0 198.18.30.1 ──────── sync0 fw2 198.18.30.2
#
# Both firewalls forward with a strict policy (nf_conntrack_tcp_loose=0,
# invalid dropped): the backup passes a connection's packets only if it has
# its state.  A takeover here is the client's and the server's routes moving
# to fw2 and `ctsyncd -c` on fw2, with fw1's sync datagrams dropped from
# then on (fw1 "crashed").  Each connection is opened with fw1's sync
# datagrams dropped (a link failure just before connect()):
#   1. no peer yet: the SYN-ACK passes at once, counted accepted_no_peer;
#   2. a-priori: connect() does not complete while the link is down; the
#      link comes back, the state is confirmed, connect() returns, fw1
#      crashes: the connection lives on through fw2; then a UDP flow's
#      first reply, held the same way;
#   3. a-priori, ConfirmTimeout 300 ms (a reload): the link stays down,
#      connect() completes after the timeout, counted timed_out;
#   4. a-priori, ConfirmHeldMax 1 (a reload) with the link down: one
#      SYN-ACK is held, the next connection's passes at once, counted
#      accepted_over_limit;
#   5. asynchronous (no ConfirmQueue, the same queue rule: `bypass` lets
#      the packets through): connect() completes at once, fw1 crashes, and
#      the connection dies on fw2, which never got its state.
# About 15 s.
. "$(dirname "$0")/../lib/common.sh"

require_root
require_cmd nft conntrack python3 iptables

QNUM=7
PORT=5001
CLIENT=198.18.10.10
SERVER=198.18.20.10

setup() {
	NS_SW=$(make_netns sw) && NS_CL=$(make_netns client) && NS_SV=$(make_netns server) &&
		NS_FW1=$(make_netns fw1) && NS_FW2=$(make_netns fw2) || return 1
	local br n ns
	for br in br-lan br-wan; do
		ip -n "$NS_SW" link add "$br" type bridge && ip -n "$NS_SW" link set "$br" up || return 1
	done
	port() {
		ip link add "$2" netns "$1" type veth peer name "$3" netns "$NS_SW" || return 1
		ip -n "$NS_SW" link set "$3" master "$4" up && ip -n "$1" link set "$2" up
	}
	port "$NS_CL" eth0 cl-lan br-lan && port "$NS_SV" eth0 sv-wan br-wan || return 1
	ip -n "$NS_CL" addr add "$CLIENT/24" dev eth0
	ip -n "$NS_SV" addr add "$SERVER/24" dev eth0
	for n in 1 2; do
		ns=$(fw "$n")
		port "$ns" lan0 "fw$n-lan" br-lan && port "$ns" wan0 "fw$n-wan" br-wan || return 1
		ip -n "$ns" addr add "198.18.10.$n/24" dev lan0
		ip -n "$ns" addr add "198.18.20.$n/24" dev wan0
		ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1 net.netfilter.nf_conntrack_tcp_loose=0 \
			net.netfilter.nf_conntrack_events=1 net.netfilter.nf_conntrack_acct=1 || return 1
		policy "$ns" || return 1
		ip netns exec "$ns" nft add table inet apriori_cut \; \
			add chain inet apriori_cut out "{ type filter hook output priority 0; }" || return 1
	done
	ip link add sync0 netns "$NS_FW1" type veth peer name sync0 netns "$NS_FW2" || return 1
	ip -n "$NS_FW1" addr add 198.18.30.1/24 dev sync0
	ip -n "$NS_FW2" addr add 198.18.30.2/24 dev sync0
	ip -n "$NS_FW1" link set sync0 up && ip -n "$NS_FW2" link set sync0 up
	via 1
}

fw() { if [[ $1 == 1 ]]; then echo "$NS_FW1"; else echo "$NS_FW2"; fi; }

# via N: the client and the server route through fwN.
via() {
	ip -n "$NS_CL" route replace default via "198.18.10.$1" &&
		ip -n "$NS_SV" route replace 198.18.10.0/24 via "198.18.20.$1" &&
		ip -n "$NS_CL" neigh flush all && ip -n "$NS_SV" neigh flush all
}

# The forwarding policy and the queue rule of doc/apriori.md (this kernel
# may lack nft's queue expression: iptables' NFQUEUE target then, which
# iptables-nft loads through nft_compat).
policy() {
	ip netns exec "$1" nft -f - <<'NFT' || return 1
table inet apriori_fw {
	counter invalid_dropped { }
	chain forward {
		type filter hook forward priority filter; policy drop;
		ct state invalid counter name invalid_dropped drop
		ct state established,related accept
		tcp dport 5001 tcp flags & (fin | syn | rst | ack) == syn ct state new accept
		udp dport 5001 ct state new accept
	}
}
NFT
	ip netns exec "$1" nft -f - 2>/dev/null <<NFT ||
table inet apriori_q {
	chain pre {
		type filter hook prerouting priority mangle;
		ct direction reply tcp flags & (syn | ack) == syn | ack queue num $QNUM bypass
		ct direction reply meta l4proto udp ct reply packets 1 queue num $QNUM bypass
	}
}
NFT
	{ ip netns exec "$1" iptables -t mangle -A PREROUTING -p tcp --tcp-flags SYN,ACK SYN,ACK \
		-m conntrack --ctstate ESTABLISHED --ctdir REPLY -j NFQUEUE --queue-num "$QNUM" --queue-bypass &&
	ip netns exec "$1" iptables -t mangle -A PREROUTING -p udp -m conntrack --ctdir REPLY \
		-m connbytes --connbytes 1:1 --connbytes-dir reply --connbytes-mode packets \
		-j NFQUEUE --queue-num "$QNUM" --queue-bypass; }
}

# sync_down N / sync_up N: drop (or not) what fwN's daemon sends on the sync
# link, by a rule in a chain that stays: unregistering a hook (deleting a
# base chain or its table) makes the kernel drop every packet queued in the
# namespace, the held ones too.
sync_down() { ip netns exec "$(fw "$1")" nft add rule inet apriori_cut out udp dport 3780 drop; }
sync_up() { ip netns exec "$(fw "$1")" nft flush chain inet apriori_cut out; }

# conf N EXTRA_MODE_OPTS: fwN's configuration.
conf() {
	local me=$1 peer=$((3 - $1))
	cat >"$WORK/fw$me.conf" <<CONF
Sync {
	Mode FTFW { ACKWindowSize 1 $2 }
	UDP { IPv4_address 198.18.30.$me IPv4_Destination_Address 198.18.30.$peer Port 3780 Interface sync0 }
}
General {
	Systemd off
	HashSize 16384
	HashLimit 65536
	LogFile $WORK/fw$me.log
	LockFile $WORK/fw$me.lock
	UNIX { Path $WORK/fw$me.ctl }
	Filter From Userspace { Address Ignore { IPv4_address 198.18.30.0/24 } }
}
CONF
}

start() { ip netns exec "$(fw "$1")" "$CTSYNCD" -C "$WORK/fw$1.conf" -d && track_pid "$(head -n1 "$WORK/fw$1.lock")"; }
stop() { "$CTSYNCD" -C "$WORK/fw$1.conf" -k >/dev/null 2>&1; wait_until 5 test ! -e "$WORK/fw$1.ctl"; }
ctl() { local n=$1; shift; "$CTSYNCD" -C "$WORK/fw$n.conf" "$@"; }

# counter N KEY: confirm.KEY of fwN's -s --json.
counter() {
	ctl "$1" -s --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["confirm"][sys.argv[1]])' "$2"
}
peer_up() { ctl 1 -s network --json | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["peers"][0]["up"] else 1)'; }
at_least() { local v; v=$(counter "$1" "$2") && ((v >= $3)); }

cat >"$WORK/echo.py" <<'PY'
import socket, sys, threading
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((sys.argv[1], int(sys.argv[2]))); srv.listen(64)
def udp_echo():
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind((sys.argv[1], int(sys.argv[2])))
    while True:
        d, a = u.recvfrom(100); u.sendto(d, a)
threading.Thread(target=udp_echo, daemon=True).start()
def serve(c):
    try:
        while True:
            d = c.recv(100)
            if not d: return
            c.sendall(d)
    except OSError: pass
while True:
    c, _ = srv.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
# client.py ADDR PORT OUT GO: connect (writes OUT.connect: the ms it took, or
# "failed"), wait for the file GO (at most 30 s), send a line and write
# OUT.result: "survived" if the echo comes within 3 s, else "lost".
cat >"$WORK/client.py" <<'PY'
import os, socket, sys, time
addr, port, out, go = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
s = socket.socket(); s.settimeout(8)
t0 = time.monotonic()
try:
    s.connect((addr, port))
except OSError:
    open(out + ".connect", "w").write("failed\n"); sys.exit(1)
open(out + ".connect", "w").write("%.1f\n" % ((time.monotonic() - t0) * 1000))
end = time.monotonic() + 30
while not os.path.exists(go) and time.monotonic() < end:
    time.sleep(0.02)
s.settimeout(3)
try:
    s.sendall(b"ping\n"); ok = s.recv(100) == b"ping\n"
except OSError:
    ok = False
open(out + ".result", "w").write("survived\n" if ok else "lost\n")
PY

# udp_client.py ADDR PORT OUT: send a datagram and write OUT.udp: the ms
# until the echo came back (at most 8 s), or "none".
cat >"$WORK/udp_client.py" <<'PY'
import socket, sys, time
addr, port, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(8)
t0 = time.monotonic()
u.sendto(b"ping", (addr, port))
try:
    u.recvfrom(100); r = "%.1f\n" % ((time.monotonic() - t0) * 1000)
except OSError:
    r = "none\n"
open(out + ".udp", "w").write(r)
PY

# open_conn NAME: a client connection in the background, recorded as $WORK/NAME.*
open_conn() {
	ip netns exec "$NS_CL" timeout 50 python3 "$WORK/client.py" "$SERVER" "$PORT" "$WORK/$1" "$WORK/$1.go" &
	track_pid $!
}
connected() { [[ -s $WORK/$1.connect ]]; }
connect_ms() { cat "$WORK/$1.connect" 2>/dev/null; }
result() { wait_until 6 test -s "$WORK/$1.result" && cat "$WORK/$1.result"; }

# takeover: fw1 crashes (its sync datagrams dropped from now on), the traffic
# moves to fw2, and fw2 commits the states it has from fw1.
takeover() {
	sync_down 1
	via 2 && ctl 2 -c >/dev/null
}

setup || { log "cannot build the topology"; exit 99; }
ip netns exec "$NS_SV" python3 "$WORK/echo.py" "$SERVER" "$PORT" &
track_pid $!
# a client before the server listens would be refused (a loaded machine
# can take a second to start python)
serving() { [[ -n $(ip netns exec "$NS_SV" ss -Hltn "sport = :$PORT") && -n $(ip netns exec "$NS_SV" ss -Hlun "sport = :$PORT") ]]; }
wait_until 10 serving || { log "the echo server does not listen"; exit 99; }

# ---- a-priori mode ----
conf 1 "ConfirmQueue $QNUM ConfirmTimeout 3000"
conf 2 "ConfirmQueue $QNUM ConfirmTimeout 3000"
start 1 || { log "fw1's ctsyncd did not start"; cat "$WORK/fw1.log"; exit 1; }

# 1. No peer heard yet: nothing to wait for.
open_conn c0
check "no peer yet: the connection is established at once" wait_until 6 connected c0
check "no peer yet: counted as accepted_no_peer" at_least 1 accepted_no_peer 1
touch "$WORK/c0.go"

start 2 || { log "fw2's ctsyncd did not start"; cat "$WORK/fw2.log"; exit 1; }
wait_until 10 peer_up || log "fw1 does not see fw2"
sleep 1.5       # the HELLO handshake settles

# 2. The link fails just before connect(): the SYN-ACK waits for it.  The
# hold is awaited, not slept for: a loaded machine can take over a second
# to start the client.
sync_down 1
open_conn c1
check "a-priori: the SYN-ACK is held" wait_until 6 at_least 1 held 1
sleep 1
check "a-priori: no connection while the backup cannot confirm it" test ! -s "$WORK/c1.connect"
sync_up 1
check "a-priori: the connection completes once the link is back" wait_until 5 connected c1
log "a-priori: connect() took $(connect_ms c1) ms (the link down for a second after the hold)"
check "a-priori: the SYN-ACK was confirmed" at_least 1 confirmed 1
takeover
touch "$WORK/c1.go"
r=$(result c1)
check "a-priori: the connection survives fw1's crash on fw2 (got: ${r:-nothing})" test "$r" = survived
via 1
sync_up 1

# 2b. UDP: the first reply is held while the link is down (the rule queues
# a reply packet when it is the flow's first), and passes once confirmed.
wait_until 10 peer_up
c0=$(counter 1 confirmed)
sync_down 1
ip netns exec "$NS_CL" timeout 20 python3 "$WORK/udp_client.py" "$SERVER" "$PORT" "$WORK/u1" &
track_pid $!
check "a-priori, UDP: the first reply is held" wait_until 6 at_least 1 held 1
sleep 1
check "a-priori, UDP: no reply while the backup cannot confirm it" test ! -s "$WORK/u1.udp"
sync_up 1
check "a-priori, UDP: the reply comes once the link is back" wait_until 6 grep -q '^[0-9]' "$WORK/u1.udp"
log "a-priori, UDP: the echo took $(cat "$WORK/u1.udp" 2>/dev/null) ms"
check "a-priori, UDP: the reply was confirmed" at_least 1 confirmed $((c0 + 1))

# 3. The timeout path: ConfirmTimeout 300 ms by a reload, the link down.
conf 1 "ConfirmQueue $QNUM ConfirmTimeout 300"
kill -HUP "$(head -n1 "$WORK/fw1.lock")"
wait_until 5 grep -q "ConfirmTimeout" "$WORK/fw1.log"
sleep 0.3
sync_down 1
open_conn c2
check "timeout: the connection completes after ConfirmTimeout" wait_until 6 connected c2
log "timeout: connect() took $(connect_ms c2) ms"
check "timeout: counted as timed_out" at_least 1 timed_out 1
touch "$WORK/c2.go"
sync_up 1

# 4. ConfirmHeldMax 1 by a reload, the link down: with one SYN-ACK held,
# the next connection's goes through at once, counted accepted_over_limit
# (were it held too, ConfirmTimeout 8000 would keep it past the 6 s waited).
conf 1 "ConfirmQueue $QNUM ConfirmTimeout 8000 ConfirmHeldMax 1"
kill -HUP "$(head -n1 "$WORK/fw1.lock")"
wait_until 5 grep -q "ConfirmHeldMax" "$WORK/fw1.log"
sleep 0.3
sync_down 1
open_conn c4
check "over the limit: the first SYN-ACK is held" wait_until 6 at_least 1 held 1
open_conn c5
check "over the limit: the next connection completes at once" wait_until 6 connected c5
log "over the limit: connect() took $(connect_ms c5) ms"
check "over the limit: counted as accepted_over_limit" at_least 1 accepted_over_limit 1
check "over the limit: no more than ConfirmHeldMax packets held ($(counter 1 held))" \
	eval '(( $(counter 1 held) <= 1 ))'
sync_up 1
touch "$WORK/c4.go" "$WORK/c5.go"
# status.sh runs no a-priori daemon: the confirm rows are checked here.
confirm_keys_documented() {
	ctl 1 -s --json | python3 -c '
import json, re, sys
seen = set(json.load(sys.stdin)["confirm"])
doc = set(re.findall(r"^\| `confirm\.([a-z0-9_]+)`", open(sys.argv[1]).read(), re.M))
if seen != doc:
    print("undocumented:", sorted(seen - doc), "documented, not shown:", sorted(doc - seen)); sys.exit(1)
' "$(cd "$(dirname "$0")/../../doc" && pwd)/status-json.md"
}
check "the confirm section has exactly the keys doc/status-json.md documents" confirm_keys_documented
log "fw1: $(ctl 1 -s --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["confirm"])')"
stop 1
stop 2

# ---- asynchronous mode (the same queue rule, no reader: bypass) ----
conf 1 ""
conf 2 ""
start 1 && start 2 || { log "the daemons did not start"; exit 1; }
wait_until 10 peer_up || log "fw1 does not see fw2"
sleep 1.5
sync_down 1
open_conn c3
check "async: the connection is established at once" wait_until 6 connected c3
log "async: connect() took $(connect_ms c3) ms"
takeover
touch "$WORK/c3.go"
r=$(result c3)
check "async: the connection is lost on fw2, which never got its state (got: ${r:-nothing})" \
	test "$r" = lost
if ((TESTS_FAILED)); then
	for n in 1 2; do ctl "$n" -s --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin).get("confirm"))'; done
	for n in 1 2; do log "fw$n.log:"; tail -n 20 "$WORK/fw$n.log"; done
fi
finish
