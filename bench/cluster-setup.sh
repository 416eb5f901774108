#!/bin/bash
# bench/cluster-setup.sh: connection-setup time through a firewall that
# replicates to a cluster (issue 18, Performance).  A client connects to a
# server through the firewall, one connection at a time, and times each
# connect() (SYN out to SYN-ACK in); the firewall and N-1 nodes that only
# replicate share one multicast FTFW group on a sync bridge (as
# tests/integration/multinode.sh builds it).  For each cluster size and kind,
# side by side in one run, repeated:
#
#   none        no daemon (conntrack and the firewall's policy only)
#   conntrackd  Debian's conntrackd 1.4.7 on every node, FTFW, defaults
#   async       ctsyncd on every node, FTFW, defaults (asynchronous)
#   async-ack1  the same with ACKWindowSize 1 on every node: the ACK traffic
#               a-priori mode needs, without the hold
#   apriori     ctsyncd, ACKWindowSize 1 on every node and ConfirmQueue on the
#               firewall (doc/apriori.md): the SYN-ACK waits until every
#               other node has acknowledged the connection's state
#   listener    not in the default: no daemon, only `conntrack -E` reading
#               FW's events (what any event listener costs the packet path)
#
# It prints the median and 99th percentile of the setup time, the ratios
# against conntrackd of the same repetition, the daemons' CPU and the sync
# datagrams per connection, and the figures issue 18's targets speak of
# (async's cost at 3 nodes, the growth from 3 to 9 nodes, a-priori's cost
# against one sync-link round trip plus 0.2 ms).  It is a benchmark: it
# reports, it does not fail on a target.
#
# Usage: bench/cluster-setup.sh [--sizes 3,6,9] [--kinds LIST] [--count N]
#                               [--warm N] [--repeat K] [--gap US]
#                               [--scheduler rr|default] [--pin] [--build DIR] [--out DIR]
#
#   --sizes    cluster sizes, the firewall included, each 2..16 (default 3,6,9)
#   --kinds    a subset of the kinds above, comma-separated (default all
#              but listener)
#   --count N  measured connections per trial, 10..100000 (default 2000)
#   --warm N   connections before them, not measured, 0..10000 (default 200)
#   --repeat K repetitions, 1..50 (default 3; the kinds and the sizes
#              alternate their order from one repetition to the next)
#   --gap US   microseconds between two connections, 0..1000000 (default 0)
#   --scheduler rr: every configuration says Scheduler { Type RR Priority
#              99 }, as ctsyncd runs without it (default); default: no
#              Scheduler block, conntrackd then runs at the normal policy
#   --pin      the daemons on the last CPU, the client and the server on the
#              first (taskset): on a machine this small the client otherwise
#              waits for a CPU the daemons, woken by its own connection's
#              events at real-time priority, hold; a real firewall does not
#              host the client
#   --build    where ctsyncd was built (default build/default)
#   --out DIR  results (default a new /tmp/ctsyncd-cluster-setup.*)
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
BENCH_NAME=cluster-setup
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$HERE/lib.sh"

ALL_KINDS=(none conntrackd async async-ack1 apriori listener)
SIZES=3,6,9
KINDS=none,conntrackd,async,async-ack1,apriori
COUNT=2000
WARM=200
REPEAT=3
GAP=0
SCHED=rr
PIN=0
BUILD=""
OUT=""
MAX_SIZE_ALLOWED=16
die() { echo "cluster-setup: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
need() { [[ $# -ge 2 && -n $2 ]] || die "$1 needs a value (see --help)"; }
while (($#)); do
	case $1 in
	--sizes) need "$@"; SIZES=$2; shift ;;
	--kinds) need "$@"; KINDS=$2; shift ;;
	--count) need "$@"; COUNT=$2; shift ;;
	--warm) need "$@"; WARM=$2; shift ;;
	--repeat) need "$@"; REPEAT=$2; shift ;;
	--gap) need "$@"; GAP=$2; shift ;;
	--scheduler) need "$@"; SCHED=$2; shift ;;
	--pin) PIN=1 ;;
	--build) need "$@"; BUILD=$2; shift ;;
	--out) need "$@"; OUT=$2; shift ;;
	-h | --help) usage 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
	shift
done
# in_range NAME VALUE LO HI: VALUE is a decimal integer in LO..HI
in_range() {
	[[ $2 =~ ^[0-9]{1,9}$ ]] && ((10#$2 >= $3 && 10#$2 <= $4)) ||
		die "$1 '$2' is not a whole number in $3..$4"
}
in_range --count "$COUNT" 10 100000
in_range --warm "$WARM" 0 10000
in_range --repeat "$REPEAT" 1 50
in_range --gap "$GAP" 0 1000000
[[ $SCHED == rr || $SCHED == default ]] || die "--scheduler '$SCHED' is neither rr nor default"
COUNT=$((10#$COUNT)) WARM=$((10#$WARM)) REPEAT=$((10#$REPEAT)) GAP=$((10#$GAP))
IFS=, read -r -a SIZE_LIST <<<"$SIZES"
((${#SIZE_LIST[@]})) || die "--sizes names no size"
MAXN=0
for i in "${!SIZE_LIST[@]}"; do
	in_range "size in --sizes" "${SIZE_LIST[$i]}" 2 "$MAX_SIZE_ALLOWED"
	SIZE_LIST[i]=$((10#${SIZE_LIST[$i]}))
	((SIZE_LIST[i] > MAXN)) && MAXN=${SIZE_LIST[$i]}
done
IFS=, read -r -a KIND_LIST <<<"$KINDS"
((${#KIND_LIST[@]})) || die "--kinds names no kind"
for k in "${KIND_LIST[@]}"; do
	[[ " ${ALL_KINDS[*]} " == *" $k "* ]] || die "unknown kind '$k' in --kinds (${ALL_KINDS[*]})"
done
[[ $(id -u) -eq 0 ]] || die "must run as root (namespaces, conntrack, nftables)"
for c in ip nft conntrack python3; do command -v "$c" >/dev/null || die "'$c' is not installed"; done

BUILD=${BUILD:-$TOP/build/default}
CTSYNCD=$BUILD/ctsyncd
[[ -x $CTSYNCD ]] || die "$CTSYNCD is not built (scripts/build.sh $BUILD)"
if [[ " ${KIND_LIST[*]} " == *" conntrackd "* ]]; then
	bench_need_pkg conntrackd || die "cannot install conntrackd"
fi
CONNTRACKD=$(command -v conntrackd || echo /usr/sbin/conntrackd)
prog_of() { if [[ $1 == conntrackd ]]; then echo conntrackd; else echo ctsyncd; fi; }
bin_of() { if [[ $1 == conntrackd ]]; then echo "$CONNTRACKD"; else echo "$CTSYNCD"; fi; }
# --pin: where the daemons and where the client and server run
LAST_CPU=$(($(nproc) - 1))
if ((PIN)); then
	((LAST_CPU > 0)) || die "--pin needs two CPUs at least"
	command -v taskset >/dev/null || die "--pin needs taskset (util-linux)"
	ON_DAEMON_CPU=(taskset -c "$LAST_CPU")
	ON_CLIENT_CPU=(taskset -c 0)
else
	ON_DAEMON_CPU=()
	ON_CLIENT_CPU=()
fi

OUT=${OUT:-$(mktemp -d /tmp/ctsyncd-cluster-setup.XXXXXX)}
mkdir -p "$OUT" || die "cannot create --out '$OUT'"
OUT=$(cd "$OUT" && pwd)
CSV=$OUT/results.csv
LOG=$OUT/run.log
: >"$LOG"
: >"$OUT/.pids"
T_START=$(date +%s)
note() { printf '[%4ds] %s\n' $(($(date +%s) - T_START)) "$*" | tee -a "$LOG" >&2; }

# ---------------------------------------------------------------------------
# topology: client 198.18.40.2 -- lan0 FW wan0 -- 198.18.41.2 server:5001;
# FW is node 1; nodes 1..MAXN have "sync" 198.18.44.i on the hub's bridge
# ---------------------------------------------------------------------------
P="ctcs$$-"
NS_CL=${P}cl NS_SV=${P}sv NS_HUB=${P}hub
NODE_NS=()
for ((i = 1; i <= MAXN; i++)); do NODE_NS[i]=${P}n$i; done
NS_FW=${NODE_NS[1]}
SERVER=198.18.41.2
PORT=5001
GROUP=225.0.0.51
SYNC_NET=198.18.44
QNUM=7
cleanup() {
	local pid ns
	while read -r pid; do [[ -n $pid ]] && stop_pid "$pid"; done <"$OUT/.pids"
	rm -f "$OUT/.pids" "$OUT/.pids.new"
	for ns in "$NS_CL" "$NS_SV" "$NS_HUB" "${NODE_NS[@]}"; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
		ip netns del "$ns" 2>/dev/null
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for ns in "$NS_CL" "$NS_SV" "$NS_HUB" "${NODE_NS[@]}"; do
	ip netns add "$ns" && ip -n "$ns" link set lo up || die "cannot create namespace $ns"
done
ip link add lan0 netns "$NS_FW" type veth peer name eth0 netns "$NS_CL" &&
	ip link add wan0 netns "$NS_FW" type veth peer name eth0 netns "$NS_SV" ||
	die "cannot create the client's and server's veth pairs"
ip -n "$NS_CL" addr add 198.18.40.2/24 dev eth0
ip -n "$NS_FW" addr add 198.18.40.1/24 dev lan0
ip -n "$NS_FW" addr add 198.18.41.1/24 dev wan0
ip -n "$NS_SV" addr add "$SERVER/24" dev eth0
for l in "$NS_CL eth0" "$NS_SV eth0" "$NS_FW lan0" "$NS_FW wan0"; do ip -n "${l% *}" link set "${l#* }" up; done
ip -n "$NS_CL" route add default via 198.18.40.1
ip -n "$NS_SV" route add default via 198.18.41.1
ip -n "$NS_HUB" link add br0 type bridge && ip -n "$NS_HUB" link set br0 up || die "cannot create the sync bridge"
for ((i = 1; i <= MAXN; i++)); do
	ns=${NODE_NS[$i]}
	ip link add sync netns "$ns" type veth peer name "p$i" netns "$NS_HUB" || die "cannot connect node $i to the bridge"
	ip -n "$NS_HUB" link set "p$i" master br0 up
	ip -n "$ns" addr add "$SYNC_NET.$i/24" dev sync
	ip -n "$ns" link set sync up
	ip netns exec "$ns" sysctl -qw net.netfilter.nf_conntrack_events=1 || die "cannot set the sysctls of $ns"
done
# The firewall: established and related pass, a new connection only as a
# TCP SYN to the service, invalid packets dropped; with tcp_loose=0 it
# never picks up a connection in the middle (doc/apriori.md's setting).
# Closed connections (RST) stay 120 s instead of 10: none ends, and no
# DESTROY is replicated, within a trial.
ip netns exec "$NS_FW" sysctl -qw net.ipv4.ip_forward=1 net.netfilter.nf_conntrack_tcp_loose=0 \
	net.netfilter.nf_conntrack_tcp_timeout_close=120 ||
	die "cannot set the firewall's sysctls"
ip netns exec "$NS_FW" nft -f - <<NFT || die "cannot load the firewall's policy"
table inet bench_fw {
	counter invalid { }
	chain forward {
		type filter hook forward priority filter; policy drop;
		ct state invalid counter name "invalid" drop
		ct state established,related accept
		iifname "lan0" oifname "wan0" ip daddr $SERVER tcp dport $PORT tcp flags & (fin | syn | rst | ack) == syn ct state new accept
	}
}
NFT
# the bridge forwards once it is up (at most 5 s)
for ((t = 0; t < 50; t++)); do
	[[ $(ip -n "$NS_HUB" -o link show br0) == *"state UP"* ]] && break
	sleep 0.1
done

# The queue rule of doc/apriori.md, only while the apriori kind runs (bypass:
# without a reader the kernel lets the SYN-ACK through).  iptables-nft
# (NFQUEUE through nft_compat) where the kernel has no nft_queue.
QUEUE_BY=""
queue_rule_on() {
	if ip netns exec "$NS_FW" nft -f - 2>/dev/null <<NFT; then
table inet bench_q {
	chain pre {
		type filter hook prerouting priority mangle;
		ct direction reply tcp flags & (syn | ack) == syn | ack queue num $QNUM bypass
	}
}
NFT
		QUEUE_BY=nft
	elif ip netns exec "$NS_FW" iptables -t mangle -A PREROUTING -p tcp --tcp-flags SYN,ACK SYN,ACK \
		-m conntrack --ctstate ESTABLISHED --ctdir REPLY -j NFQUEUE --queue-num "$QNUM" --queue-bypass; then
		QUEUE_BY=iptables
	else
		return 1
	fi
}
queue_rule_off() {
	case $QUEUE_BY in
	nft) ip netns exec "$NS_FW" nft delete table inet bench_q ;;
	iptables) ip netns exec "$NS_FW" iptables -t mangle -F PREROUTING ;;
	esac
	QUEUE_BY=""
}

# ---------------------------------------------------------------------------
# the client, the server and the sync link's round trip
# ---------------------------------------------------------------------------
cat >"$OUT/server.py" <<'PY'
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(4096)
while True:
    c, _ = s.accept(); c.close()
PY
# connect() times in us, one connection at a time, RST on close (no
# TIME_WAIT build-up); at most 20 failures (2 s each), then it stops
cat >"$OUT/client.py" <<'PY'
import json, socket, struct, sys, time
host, port, n, warm, gap = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
t, k, fails = [], [], {}
for i in range(warm + n):
    if sum(fails.values()) >= 20:
        break
    s = socket.socket(); s.settimeout(2)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    t0 = time.perf_counter()
    try:
        s.connect((host, port))
    except OSError as e:
        fails[type(e).__name__] = fails.get(type(e).__name__, 0) + 1
        s.close()
        continue
    dt = (time.perf_counter() - t0) * 1e6
    # the kernel's own SYN -> SYN-ACK time (tcpi_rtt, us), taken when the
    # SYN-ACK is processed, before the client is woken
    rtt = struct.unpack_from("I", s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104), 68)[0]
    s.close()
    if i >= warm:
        t.append(dt)
        k.append(rtt)
    if gap:
        time.sleep(gap / 1e6)
t.sort(); k.sort()
def pct(p, v=t):
    return round(v[min(len(v) - 1, int(p * (len(v) - 1) + 0.5))], 1) if v else float("nan")
print(json.dumps({"n": len(t), "p50_us": pct(0.5), "p90_us": pct(0.9), "p99_us": pct(0.99),
                  "krtt_p50_us": pct(0.5, k), "krtt_p99_us": pct(0.99, k),
                  "max_us": round(t[-1], 1) if t else float("nan"),
                  "mean_us": round(sum(t) / len(t), 1) if t else float("nan"),
                  "failed": sum(fails.values()), "fail_kinds": fails}))
PY
cat >"$OUT/rtt.py" <<'PY'
import socket, sys, time
if sys.argv[1] == "echo":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((sys.argv[2], 9999))
    while True:
        d, a = s.recvfrom(64); s.sendto(d, a)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(1); t = []
for i in range(500):
    t0 = time.perf_counter(); s.sendto(b"x", (sys.argv[2], 9999))
    try:
        s.recv(64)
    except OSError:
        continue
    t.append((time.perf_counter() - t0) * 1e6)
t.sort(); print("%.1f" % t[len(t) // 2] if t else "nan")
PY
"${ON_CLIENT_CPU[@]}" ip netns exec "$NS_SV" python3 "$OUT/server.py" "$SERVER" "$PORT" 2>>"$LOG" &
echo $! >>"$OUT/.pids"
ip netns exec "${NODE_NS[2]}" python3 "$OUT/rtt.py" echo "$SYNC_NET.2" 2>>"$LOG" &
echo $! >>"$OUT/.pids"
for ((t = 0; t < 50; t++)); do
	ip netns exec "$NS_SV" ss -Hltn "sport = :$PORT" | grep -q . && break
	sleep 0.1
done
((t < 50)) || die "the server does not listen on $SERVER:$PORT (see $LOG)"

# ---------------------------------------------------------------------------
# daemons
# ---------------------------------------------------------------------------
conf() { echo "$OUT/$1-n$2.conf"; }
# write_conf KIND NODE: every node the same but its address; the Filter
# keeps the sync traffic itself (and the round-trip probe) out.  ctsyncd
# runs at SCHED_RR 99 without a Scheduler block, conntrackd 1.4.7 at the
# default policy: the block gives both the same (--scheduler rr).
write_conf() {
	local k=$1 i=$2 mode_opts="" sched_line=""
	[[ $SCHED == rr ]] && sched_line=$'\tScheduler { Type RR Priority 99 }'
	case $k in
	async-ack1) mode_opts="ACKWindowSize 1" ;;
	apriori) mode_opts="ACKWindowSize 1"
		((i == 1)) && mode_opts+=" ConfirmQueue $QNUM ConfirmTimeout 1000" ;;
	esac
	cat >"$(conf "$k" "$i")" <<CONF
# bench/cluster-setup.sh: $k, node $i
Sync {
	Mode FTFW { $mode_opts }
	Multicast {
		IPv4_address $GROUP
		IPv4_interface $SYNC_NET.$i
		Group 3780
		Interface sync
		SndSocketBuffer 1249280
		RcvSocketBuffer 1249280
	}
}
General {
	Systemd off
	HashSize 16384
	HashLimit 262144
	LogFile $OUT/$k-n$i.log
	LockFile $OUT/$k-n$i.lock
	UNIX { Path $OUT/$k-n$i.ctl }
	NetlinkBufferSize 2097152
	NetlinkBufferSizeMaxGrowth 8388608
$sched_line
	Filter From Userspace { Address Ignore { IPv4_address $SYNC_NET.0/24 } }
}
CONF
}
for k in "${KIND_LIST[@]}"; do
	[[ $k == none || $k == listener ]] && continue
	for ((i = 1; i <= MAXN; i++)); do write_conf "$k" "$i"; done
	if [[ $k != conntrackd ]]; then
		"$CTSYNCD" -C "$(conf "$k" 1)" --check >/dev/null 2>>"$LOG" ||
			die "ctsyncd --check refuses $(conf "$k" 1) (see $LOG)"
	fi
done
declare -a PIDS=()
ctl() { # ctl KIND NODE ARGS...: the daemon's own client
	local k=$1 i=$2
	shift 2
	ip netns exec "${NODE_NS[$i]}" "$(bin_of "$k")" -C "$(conf "$k" "$i")" "$@" 2>/dev/null
}
start_daemon() { # start_daemon KIND NODE: sets PIDS[NODE]
	local k=$1 i=$2 pid="" t
	rm -f "$OUT/$k-n$i.lock" "$OUT/$k-n$i.ctl"
	"${ON_DAEMON_CPU[@]}" ip netns exec "${NODE_NS[$i]}" "$(bin_of "$k")" -C "$(conf "$k" "$i")" -d \
		>>"$OUT/$k-n$i.stdout" 2>&1 ||
		{ note "$k on node $i did not start (see $OUT/$k-n$i.log)"; return 1; }
	for ((t = 0; t < 100; t++)); do
		pid=$(bench_daemon_pid "$OUT/$k-n$i.lock" "$(prog_of "$k")" "${NODE_NS[$i]}") && break
		sleep 0.1
	done
	[[ -n $pid ]] || { note "no PID for $k on node $i"; return 1; }
	echo "$pid" >>"$OUT/.pids"
	PIDS[i]=$pid
	for ((t = 0; t < 100; t++)); do
		ctl "$k" "$i" -s cache >/dev/null && return 0
		sleep 0.1
	done
	note "$k on node $i does not answer on its control socket"
	return 1
}
stop_daemons() {
	local pid
	((${#PIDS[@]})) || return 0
	for pid in "${PIDS[@]}"; do stop_pid "$pid"; done
	grep -vxF "${PIDS[@]/#/-e}" "$OUT/.pids" >"$OUT/.pids.new"
	mv "$OUT/.pids.new" "$OUT/.pids"
	PIDS=()
}
# members_up KIND N: the firewall's ctsyncd waits for the acknowledgements of
# N-1 peers, and each other node has heard the firewall
members_up() {
	local k=$1 n=$2 i
	ctl "$k" 1 -s network --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if sum(1 for p in d["peers"] if p["member"] and p["up"]) == int(sys.argv[1]) - 1 else 1)
' "$n" || return 1
	for ((i = 2; i <= n; i++)); do
		ctl "$k" "$i" -s network --json | python3 -c '
import json, sys
sys.exit(0 if any(p["address"] == sys.argv[1] and p["up"] for p in json.load(sys.stdin)["peers"]) else 1)
' "$SYNC_NET.1" || return 1
	done
}
# CPU seconds of a process, all its threads, by the scheduler's runtime in
# ns (/proc/PID/task/*/schedstat; the tick counts of /proc/PID/stat are
# 10 ms, too coarse for a few thousand connections); 0 when gone
cpu_s() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.6f\n", s / 1e9 }'
}
# datagrams the nodes 1..N sent on the sync bridge: "FW OTHERS" (the
# bridge receives what a node sends)
sync_packets() {
	local n=$1 i fw=0 others=0 v
	for ((i = 1; i <= n; i++)); do
		v=$(ip netns exec "$NS_HUB" cat "/sys/class/net/p$i/statistics/rx_packets")
		if ((i == 1)); then fw=$v; else others=$((others + v)); fi
	done
	echo "$fw $others"
}

# ---------------------------------------------------------------------------
# trials
# ---------------------------------------------------------------------------
echo "kind,size,rep,metric,value,unit" >"$CSV"
row() { echo "$1,$2,$3,$4,$5,$6" >>"$CSV"; }
{
	echo "machine: $(nproc) CPUs, kernel $(uname -r), load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "ctsyncd: $("$CTSYNCD" --version 2>&1 | head -n1) ($(git -C "$TOP" rev-parse --short HEAD 2>/dev/null || echo "no git")$(git -C "$TOP" diff --quiet HEAD -- src 2>/dev/null || echo ", src modified"))"
	echo "conntrackd: $("$CONNTRACKD" -v 2>&1 | head -n1)"
	echo "command: $0 --sizes $SIZES --kinds $KINDS --count $COUNT --warm $WARM --repeat $REPEAT --gap $GAP --scheduler $SCHED"
} | tee "$OUT/machine.txt" >&2

run_one() { # run_one KIND SIZE REP
	local k=$1 n=$2 rep=$3 i t js want got ok=1 fw0 ot0 fw1 ot1 cpu_fw0=0 cpu_ot0=0 cpu_fw1=0 cpu_ot1=0 inv0 inv1 conns
	note "$k, $n nodes, rep $rep"
	row "$k" "$n" "$rep" loadavg "$(cut -d' ' -f1 /proc/loadavg)" 1min
	PIDS=()
	for ((i = 1; i <= n; i++)); do ip netns exec "${NODE_NS[$i]}" conntrack -F >/dev/null 2>&1; done
	if [[ $k == listener ]]; then
		ip netns exec "$NS_FW" conntrack -E >/dev/null 2>&1 &
		PIDS[1]=$!
		echo "${PIDS[1]}" >>"$OUT/.pids"
		sleep 0.5
	elif [[ $k != none ]]; then
		if [[ $k == apriori ]]; then queue_rule_on || { note "cannot load the queue rule"; return; }; fi
		# the others first: the firewall's first messages then find them
		for ((i = n; i >= 1; i--)); do start_daemon "$k" "$i" || { ok=0; break; }; done
		if ((ok)) && [[ $k != conntrackd ]]; then
			for ((t = 0; t < 100; t++)); do members_up "$k" "$n" && break; sleep 0.1; done
			((t < 100)) || { note "$k: not every node heard within 10 s, measured anyway"; row "$k" "$n" "$rep" members_late 1 flag; }
		fi
		# conntrackd has no view of its peers: its ALIVE timer (1 s) and
		# the HELLO exchange are over after 2 s
		((ok)) && sleep 2
	fi
	if ((ok)); then
		read -r fw0 ot0 <<<"$(sync_packets "$n")"
		inv0=$(ip netns exec "$NS_FW" nft list counter inet bench_fw invalid | awk '/packets/ { print $2 }')
		if ((${#PIDS[@]})); then
			cpu_fw0=$(cpu_s "${PIDS[1]}")
			for ((i = 2; i <= n; i++)); do cpu_ot0=$(calc "$cpu_ot0 + $(cpu_s "${PIDS[$i]}")"); done
		fi
		js=$("${ON_CLIENT_CPU[@]}" ip netns exec "$NS_CL" timeout 600 python3 "$OUT/client.py" "$SERVER" "$PORT" \
			"$COUNT" "$WARM" "$GAP" 2>>"$LOG")
		if ((${#PIDS[@]})); then
			cpu_fw1=$(cpu_s "${PIDS[1]}")
			for ((i = 2; i <= n; i++)); do cpu_ot1=$(calc "$cpu_ot1 + $(cpu_s "${PIDS[$i]}")"); done
		fi
		read -r fw1 ot1 <<<"$(sync_packets "$n")"
		inv1=$(ip netns exec "$NS_FW" nft list counter inet bench_fw invalid | awk '/packets/ { print $2 }')
		echo "$k size=$n rep=$rep $js" >>"$LOG"
		python3 - "$js" "$k" "$n" "$rep" >>"$CSV" <<'PY'
import json, sys
d = json.loads(sys.argv[1]) if sys.argv[1] else {}
for key, unit in (("p50_us", "us"), ("p90_us", "us"), ("p99_us", "us"), ("max_us", "us"), ("mean_us", "us"),
                  ("krtt_p50_us", "us"), ("krtt_p99_us", "us"),
                  ("n", "count"), ("failed", "count")):
    print("%s,%s,%s,%s,%s,%s" % (*sys.argv[2:5], key, d.get(key, "nan"), unit))
PY
		conns=$((COUNT + WARM))
		row "$k" "$n" "$rep" invalid_drops $((${inv1:-0} - ${inv0:-0})) packets
		row "$k" "$n" "$rep" sync_dgrams_fw "$(calc "($fw1 - $fw0) / $conns")" per_connection
		row "$k" "$n" "$rep" sync_dgrams_others "$(calc "($ot1 - $ot0) / $conns")" per_connection
		if ((${#PIDS[@]})); then
			row "$k" "$n" "$rep" cpu_fw "$(calc "1e6 * ($cpu_fw1 - $cpu_fw0) / $conns")" us_per_connection
			row "$k" "$n" "$rep" cpu_others "$(calc "1e6 * ($cpu_ot1 - $cpu_ot0) / $conns")" us_per_connection
		fi
		if [[ $k != none && $k != listener ]]; then
			# did the cluster keep up?  The last node's external cache holds every
			# connection of FW's table (flushed before the trial; a few of the
			# client's connections may reuse a 4-tuple, which ends the old
			# entry), at most 5 s after the client's end; a daemon starved of
			# the CPU (other real-time work on the machine) shows here
			want=$(ip netns exec "$NS_FW" conntrack -L -p tcp --dport "$PORT" 2>/dev/null | grep -c "dport=$PORT ")
			got=$(ctl "$k" "$n" -e | grep -c "dport=$PORT ")
			for ((t = 0; t < 25 && got < want; t++)); do
				sleep 0.2
				got=$(ctl "$k" "$n" -e | grep -c "dport=$PORT ")
			done
			row "$k" "$n" "$rep" fw_table "$want" states
			row "$k" "$n" "$rep" replicated_pct "$(calc "100 * $got / ($want > 0 ? $want : 1)")" "%"
			row "$k" "$n" "$rep" replication_wait_ms $((t * 200)) ms
			((got < want)) && note "$k, $n nodes: node $n holds $got of FW's $want states 5 s after the client's end"
		fi
		# the daemons' own view, for the log: ctsyncd's JSON, conntrackd's text
		if [[ $k == conntrackd ]]; then
			for i in 1 2; do
				{ echo "== $k size=$n rep=$rep node $i -s network"; ctl "$k" "$i" -s network; } >>"$OUT/stats.log"
				# its sequence tracking: "Packets lost" (gaps it saw) and
				# "Packets before" (messages it dropped as old)
				ctl "$k" "$i" -s network | awk -v k="$k" -v n="$n" -v r="$rep" -v i="$i" '
					/Packets lost:/ { printf "%s,%s,%s,n%d_seq_lost,%s,count\n", k, n, r, i, $NF }
					/Packets before:/ { printf "%s,%s,%s,n%d_seq_before,%s,count\n", k, n, r, i, $NF }' >>"$CSV"
			done
		elif [[ $k != none && $k != listener ]]; then
			for i in 1 2; do
				{ echo "== $k size=$n rep=$rep node $i"; ctl "$k" "$i" -s --json; echo; } >>"$OUT/stats.log"
			done
			for i in 1 2; do
				ctl "$k" "$i" -s network --json | python3 -c '
import json, sys
s = json.load(sys.stdin).get("sync", {}); k, n, rep, i = sys.argv[1:5]
print("%s,%s,%s,n%s_seq_lost,%s,count" % (k, n, rep, i, s.get("sequence_lost", "nan")))
print("%s,%s,%s,n%s_seq_before,%s,count" % (k, n, rep, i, s.get("sequence_before", "nan")))
' "$k" "$n" "$rep" "$i" >>"$CSV"
			done
			ctl "$k" 1 -s --json | python3 -c '
import json, sys
d = json.load(sys.stdin); k, n, rep = sys.argv[1:4]
s, c = d.get("sync", {}), d.get("confirm", {})
print("%s,%s,%s,fw_kernel_overruns,%s,count" % (k, n, rep, d.get("kernel", {}).get("overruns", "nan")))
for key in ("retransmitted", "nack_sent", "nack_received", "retransmission_timeouts"):
    print("%s,%s,%s,fw_%s,%s,count" % (k, n, rep, key, s.get(key, "nan")))
for key in ("confirmed", "timed_out", "accepted_no_peer", "accepted_unknown", "accepted_over_limit",
            "hold_p50_us", "hold_p99_us"):
    if key in c:
        print("%s,%s,%s,confirm_%s,%s,%s" % (k, n, rep, key, c[key], "us" if key.endswith("_us") else "count"))
' "$k" "$n" "$rep" >>"$CSV"
		fi
	fi
	stop_daemons
	[[ $k == apriori ]] && queue_rule_off
	for ((i = 1; i <= n; i++)); do ip netns exec "${NODE_NS[$i]}" conntrack -F >/dev/null 2>&1; done
}

for ((rep = 1; rep <= REPEAT; rep++)); do
	row all 0 "$rep" sync_rtt_us "$(ip netns exec "$NS_FW" python3 "$OUT/rtt.py" send "$SYNC_NET.2")" us
	if ((rep % 2)); then sizes=("${SIZE_LIST[@]}") order=("${KIND_LIST[@]}")
	else
		sizes=() order=()
		for ((i = ${#SIZE_LIST[@]} - 1; i >= 0; i--)); do sizes+=("${SIZE_LIST[$i]}"); done
		for ((i = ${#KIND_LIST[@]} - 1; i >= 0; i--)); do order+=("${KIND_LIST[$i]}"); done
	fi
	for n in "${sizes[@]}"; do
		for k in "${order[@]}"; do run_one "$k" "$n" "$rep"; done
	done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt" >&2

# ---------------------------------------------------------------------------
# the table: medians [min-max] over the repetitions
# ---------------------------------------------------------------------------
python3 - "$CSV" <<'PY' | tee "$OUT/results.txt"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
nan = float("nan")
def vals(k, n, m):
    return {r["rep"]: float(r["value"]) for r in rows if r["kind"] == k and r["size"] == str(n)
            and r["metric"] == m and r["value"] not in ("nan", "")}
def med(k, n, m):
    v = list(vals(k, n, m).values())
    return statistics.median(v) if v else nan
def rng(k, n, m, f="%.0f"):
    v = list(vals(k, n, m).values())
    if not v:
        return "-"
    return (f + " [" + f + "-" + f + "]") % (statistics.median(v), min(v), max(v))
def per_rep_ratio(k, n, base, m="p50_us"):
    a, b = vals(k, n, m), vals(base, n, m)
    return " ".join("%.2f" % (a[r] / b[r]) for r in sorted(a, key=int) if r in b and b[r] > 0) or "-"
kinds = list(dict.fromkeys(r["kind"] for r in rows if r["kind"] != "all"))
sizes = sorted({int(r["size"]) for r in rows if r["kind"] != "all"})
rtt = list(vals("all", 0, "sync_rtt_us").values())
rtt_med = statistics.median(rtt) if rtt else nan
print("sync link round trip (UDP echo firewall -> node 2, median of each repetition): %s us"
      % " ".join("%.1f" % x for x in rtt))
print()
print("| nodes | kind | p50 us | p99 us | kernel SYN->SYN-ACK p50 us | p50 / conntrackd | p50 / conntrackd, each rep | p50 / none |"
      " failed | invalid | replicated % (lowest) | CPU fw us/conn | CPU others us/conn | sync dgrams/conn fw | others |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for n in sizes:
    for k in kinds:
        c = med("conntrackd", n, "p50_us")
        none = med("none", n, "p50_us")
        p50 = med(k, n, "p50_us")
        rep_pct = list(vals(k, n, "replicated_pct").values())
        print("| %d | %s | %s | %s | %s | %s | %s | %s | %.0f | %.0f | %s | %s | %s | %s | %s |" % (
            n, k, rng(k, n, "p50_us", "%.1f"), rng(k, n, "p99_us", "%.0f"), rng(k, n, "krtt_p50_us", "%.0f"),
            "%.2f" % (p50 / c) if c == c and c > 0 else "-",
            per_rep_ratio(k, n, "conntrackd") if "conntrackd" in kinds else "-",
            "%.2f" % (p50 / none) if none == none and none > 0 else "-",
            sum(vals(k, n, "failed").values()), sum(vals(k, n, "invalid_drops").values()),
            "%.1f" % min(rep_pct) if rep_pct else "-",
            rng(k, n, "cpu_fw", "%.1f"), rng(k, n, "cpu_others", "%.1f"),
            rng(k, n, "sync_dgrams_fw", "%.2f"), rng(k, n, "sync_dgrams_others", "%.2f")))
loads = [float(r["value"]) for r in rows if r["metric"] == "loadavg"]
if loads:
    print()
    print("1-minute load average at the trials' starts: median %.1f, %.1f-%.1f" % (
        statistics.median(loads), min(loads), max(loads)))
over = [(n, k, r) for n in sizes for k in kinds for r, v in vals(k, n, "fw_kernel_overruns").items() if v > 0]
if over:
    print("trials whose firewall daemon lost kernel events (overrun): " +
          ", ".join("%s %d nodes rep %s" % (k, n, r) for n, k, r in over))
print()
print("sequence tracking, medians of the repetitions: gaps seen (lost) and messages dropped as old (before),"
      " on the firewall (n1) and on node 2")
for n in sizes:
    for k in kinds:
        if vals(k, n, "n1_seq_lost"):
            print("  %d nodes, %s: n1 lost %.0f before %.0f; n2 lost %.0f before %.0f" % (
                n, k, med(k, n, "n1_seq_lost"), med(k, n, "n1_seq_before"),
                med(k, n, "n2_seq_lost"), med(k, n, "n2_seq_before")))
conf = [(n, k) for n in sizes for k in kinds if vals(k, n, "confirm_confirmed")]
if conf:
    print()
    print("a-priori, the firewall's own count (median of the repetitions): confirmed / timed out / "
          "no peer / unknown; hold p50 / p99 us")
    for n, k in conf:
        print("  %d nodes: %.0f / %.0f / %.0f / %.0f; %.0f / %.0f" % (n, med(k, n, "confirm_confirmed"),
              med(k, n, "confirm_timed_out"), med(k, n, "confirm_accepted_no_peer"),
              med(k, n, "confirm_accepted_unknown"), med(k, n, "confirm_hold_p50_us"),
              med(k, n, "confirm_hold_p99_us")))
print()
print("Issue 18's targets (medians of the repetitions; reported, not enforced):")
if 3 in sizes and "async" in kinds and "none" in kinds:
    a, z = med("async", 3, "p50_us"), med("none", 3, "p50_us")
    print("  async adds %+.1f %% to the median setup time at 3 nodes (target < 5 %%); each rep: %s"
          % (100 * (a / z - 1), per_rep_ratio("async", 3, "none")))
    print("    (the kernel's SYN -> SYN-ACK alone: %+.1f %%)"
          % (100 * (med("async", 3, "krtt_p50_us") / med("none", 3, "krtt_p50_us") - 1)))
if 3 in sizes and 9 in sizes:
    for k in kinds:
        if k == "none":
            continue
        a3, a9 = med(k, 3, "p50_us"), med(k, 9, "p50_us")
        k3, k9 = med(k, 3, "krtt_p50_us"), med(k, 9, "krtt_p50_us")
        print("  %s: median setup time 3 -> 9 nodes %+.1f %% (kernel SYN -> SYN-ACK %+.1f %%; target for async < 10 %%)"
              % (k, 100 * (a9 / a3 - 1), 100 * (k9 / k3 - 1)))
if "apriori" in kinds and "async" in kinds:
    for n in sizes:
        d = med("apriori", n, "p50_us") - med("async", n, "p50_us")
        dk = med("apriori", n, "krtt_p50_us") - med("async", n, "krtt_p50_us")
        print("  apriori - async at %d nodes: %+.1f us at the median (kernel SYN -> SYN-ACK: %+.1f us),"
              " the bound is RTT + 200 us = %.1f us" % (n, d, dk, rtt_med + 200))
PY
note "done in $(($(date +%s) - T_START)) s: $OUT"
