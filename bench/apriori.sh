#!/bin/bash
# bench/apriori.sh: what a-priori mode (doc/apriori.md) costs a new
# connection.  A client connects to a server through a firewall namespace
# (conntrack, nf_conntrack_tcp_loose=0, a strict forward policy, the queue
# rule of doc/apriori.md) whose ctsyncd replicates to a backup over a veth
# sync link; the client times each connect() (SYN out to SYN-ACK in), one
# connection at a time, and prints the median and the 99th percentile for:
#
#   none      no daemon, no queue rule
#   async     ctsyncd FTFW (ACKWindowSize 1), the queue rule without a reader (bypass)
#   apriori   ctsyncd FTFW (ACKWindowSize 1) with ConfirmQueue: the SYN-ACK waits
#             for the backup's ACK
#
# and the sync link's round trip (ping, median) for the target "a-priori
# costs at most one sync-link round trip plus 0.2 ms at the median".
#
# Usage: bench/apriori.sh [--count N] [--build DIR]
#   --count N   connections per kind (default 2000)
#   --build DIR where ctsyncd was built (default build/default)
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
COUNT=2000
BUILD=$TOP/build/default
while (($#)); do
	case $1 in
	--count) COUNT=${2:?}; shift 2 ;;
	--build) BUILD=${2:?}; shift 2 ;;
	*) echo "apriori: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
[[ $COUNT =~ ^[0-9]+$ ]] && ((COUNT > 0 && COUNT <= 100000)) ||
	{ echo "apriori: --count '$COUNT' is not a number of connections in 1..100000" >&2; exit 2; }
CTSYNCD=$BUILD/ctsyncd
[[ -x $CTSYNCD ]] || { echo "apriori: $CTSYNCD is not built" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "apriori: needs root" >&2; exit 2; }

P="ctsap$$-"
WORK=$(mktemp -d /tmp/ctsyncd-apriori-bench.XXXXXX)
NS_CL=${P}cl NS_FW=${P}fw NS_BK=${P}bk NS_SV=${P}sv
cleanup() {
	local ns pid
	for ns in "$NS_CL" "$NS_FW" "$NS_BK" "$NS_SV"; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
		ip netns del "$ns" 2>/dev/null
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for ns in "$NS_CL" "$NS_FW" "$NS_BK" "$NS_SV"; do ip netns add "$ns" && ip -n "$ns" link set lo up || exit 1; done
ip link add eth0 netns "$NS_CL" type veth peer name lan0 netns "$NS_FW"
ip link add eth0 netns "$NS_SV" type veth peer name wan0 netns "$NS_FW"
ip link add sync0 netns "$NS_FW" type veth peer name sync0 netns "$NS_BK"
ip -n "$NS_CL" addr add 198.18.40.2/24 dev eth0
ip -n "$NS_FW" addr add 198.18.40.1/24 dev lan0
ip -n "$NS_FW" addr add 198.18.41.1/24 dev wan0
ip -n "$NS_SV" addr add 198.18.41.2/24 dev eth0
ip -n "$NS_FW" addr add 198.18.42.1/24 dev sync0
ip -n "$NS_BK" addr add 198.18.42.2/24 dev sync0
for l in "$NS_CL eth0" "$NS_SV eth0" "$NS_FW lan0" "$NS_FW wan0" "$NS_FW sync0" "$NS_BK sync0"; do
	set -- $l; ip -n "$1" link set "$2" up
done
ip -n "$NS_CL" route add default via 198.18.40.1
ip -n "$NS_SV" route add default via 198.18.41.1
for ns in "$NS_FW" "$NS_BK"; do
	ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1 net.netfilter.nf_conntrack_tcp_loose=0 \
		net.netfilter.nf_conntrack_events=1
done
ip netns exec "$NS_FW" nft -f - <<'NFT' || exit 1
table inet bench_fw {
	chain forward {
		type filter hook forward priority filter; policy drop;
		ct state invalid drop
		ct state established,related accept
		tcp dport 5001 tcp flags & (fin | syn | rst | ack) == syn ct state new accept
	}
}
NFT

queue_rule() {
	ip netns exec "$NS_FW" nft -f - 2>/dev/null <<'NFT' ||
table inet bench_q {
	chain pre {
		type filter hook prerouting priority mangle;
		ct direction reply tcp flags & (syn | ack) == syn | ack queue num 7 bypass
	}
}
NFT
	ip netns exec "$NS_FW" iptables -t mangle -A PREROUTING -p tcp --tcp-flags SYN,ACK SYN,ACK \
		-m conntrack --ctstate ESTABLISHED --ctdir REPLY -j NFQUEUE --queue-num 7 --queue-bypass
}

conf() { # NAME ME PEER EXTRA
	cat >"$WORK/$1.conf" <<CONF
Sync {
	Mode FTFW { ACKWindowSize 1 $4 }
	UDP { IPv4_address 198.18.42.$2 IPv4_Destination_Address 198.18.42.$3 Port 3780 Interface sync0 }
}
General {
	Systemd off
	LogFile $WORK/$1.log
	LockFile $WORK/$1.lock
	UNIX { Path $WORK/$1.ctl }
	Filter From Userspace { Address Ignore { IPv4_address 198.18.42.0/24 } }
}
CONF
}
start_pair() { # EXTRA mode options of the firewall
	conf fw 1 2 "$1"
	conf bk 2 1 ""
	ip netns exec "$NS_BK" "$CTSYNCD" -C "$WORK/bk.conf" -d 2>/dev/null &&
		ip netns exec "$NS_FW" "$CTSYNCD" -C "$WORK/fw.conf" -d 2>/dev/null || exit 1
	sleep 3         # peers heard, HELLO over
}
stop_pair() {
	"$CTSYNCD" -C "$WORK/fw.conf" -k >/dev/null 2>&1
	"$CTSYNCD" -C "$WORK/bk.conf" -k >/dev/null 2>&1
	sleep 0.5
}

cat >"$WORK/server.py" <<'PY'
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("198.18.41.2", 5001)); s.listen(1024)
while True:
    c, _ = s.accept(); c.close()
PY
# connect() times in us, one connection at a time; RST on close (no TIME_WAIT build-up).
cat >"$WORK/client.py" <<'PY'
import json, socket, struct, sys, time
n = int(sys.argv[1]); t = []
for i in range(n):
    s = socket.socket(); s.settimeout(5)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    t0 = time.perf_counter()
    s.connect(("198.18.41.2", 5001))
    t.append((time.perf_counter() - t0) * 1e6)
    s.close()
t.sort()
print(json.dumps({"n": n, "p50_us": round(t[(n - 1) // 2], 1), "p99_us": round(t[(n - 1) * 99 // 100], 1),
                  "max_us": round(t[-1], 1)}))
PY
ip netns exec "$NS_SV" python3 "$WORK/server.py" &
disown
sleep 0.5
measure() { ip netns exec "$NS_CL" python3 "$WORK/client.py" "$COUNT"; }

# The sync link's round trip: UDP datagrams echoed by the backup's namespace (no ping here).
cat >"$WORK/rtt.py" <<'PY'
import socket, sys, time
if sys.argv[1] == "echo":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("198.18.42.2", 9999))
    while True:
        d, a = s.recvfrom(64); s.sendto(d, a)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(1); t = []
for i in range(500):
    t0 = time.perf_counter(); s.sendto(b"x", ("198.18.42.2", 9999)); s.recv(64)
    t.append((time.perf_counter() - t0) * 1e6)
t.sort(); print("%.1f" % t[len(t) // 2])
PY
ip netns exec "$NS_BK" python3 "$WORK/rtt.py" echo &
disown
sleep 0.3
echo "sync link round trip (UDP echo, median): $(ip netns exec "$NS_FW" python3 "$WORK/rtt.py" send) us"
echo "none:    $(measure)"
queue_rule || exit 1
start_pair ""
echo "async:   $(measure)"
stop_pair
start_pair "ConfirmQueue 7 ConfirmTimeout 1000"
echo "apriori: $(measure)"
"$CTSYNCD" -C "$WORK/fw.conf" -s --json | python3 -c 'import json,sys; print("apriori -s: " + json.dumps(json.load(sys.stdin)["confirm"]))'
stop_pair
