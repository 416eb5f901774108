#!/bin/bash
# bench/session-rate.sh: how much replication slows the firewall (issue 19,
# part 1; the FT-FW paper's headline measure).  Real TCP sessions (connect,
# a one-line request, SIZE bytes of reply, close) from a client through a
# firewall namespace to a server, with conntrack, ctnetlink events and a
# strict nftables policy on the firewall, and a backup on a sync link; the
# sessions/s and the p50/p99 session time, for each kind side by side:
#
#   none              no daemon (conntrack and the policy only)
#   conntrackd        Debian's conntrackd 1.4.7, FTFW over UDP
#   ctsyncd           ctsyncd, the same configuration
#   ctsyncd-keyed     ctsyncd with a Key in Sync (every datagram sealed)
#   ctsyncd-hs        ctsyncd, HotStandby on: the backup mirrors into its kernel
#   ctsyncd-keyed-hs  both
#   ctsyncd-bpf       ctsyncd with EventSource bpf on the firewall (new states
#                     and changes from a netfilter BPF hook, doc/bpf-events.md)
#   ctsyncd-bpf-ctev  the same, with the firewall's policy asking the kernel
#                     for destroy events only (ct event set destroy), which
#                     the tap does not need for the changes it reports
#   ctsyncd-bpf-hs    EventSource bpf, HotStandby on
#   conntrackd-noext  conntrackd 1.4.7 with DisableExternalCache on (its way
#                     of writing received states straight into the backup's kernel)
#   listener          not in the default: `conntrack -E` alone reading the
#                     firewall's events, what any event reader costs it
#   event-floor       not in the default: bench/evtap reading all three
#                     ctnetlink groups every 0.5 ms, never woken by them:
#                     the kernel's cost of the events alone, the floor of
#                     any ctnetlink reader
#   bpf-tap           not in the default: bench/evtap's netfilter BPF hook
#                     (new entries and state changes through a ring buffer)
#                     with ctnetlink's destroy group alone: what that event
#                     path would cost a daemon (kernel >= 6.4; clang,
#                     bpftool and libbpf-dev, installed when missing)
#
# Usage: bench/session-rate.sh [--smoke] [--seconds T] [--sizes 64,4096,65536]
#                              [--repeat K] [--concurrency C] [--kinds LIST]
#                              [--pin] [--ct-events LIST] [--build DIR] [--out DIR]
#
#   --smoke        1 s per kind, one size, the four kinds without the mirror,
#                  no repetition: checks that it works (< 30 s), measures nothing
#   --seconds T    measured seconds per run (default 5; 1 s of warm-up before)
#   --sizes        reply sizes in bytes (default 64,4096,65536)
#   --repeat K     repetitions (default 3; the kinds alternate their order)
#   --concurrency  sessions open at once (default 32)
#   --kinds        a subset of the kinds above (default all)
#   --pin          the daemons on the last CPU, the load generator and the
#                  server on the first (taskset): what the daemons take from
#                  a firewall whose CPUs forward, not from a load generator
#                  that a firewall does not host
#   --ct-events LIST  the firewall's policy sets `ct event set LIST` on new
#                  connections (e.g. new,assured,destroy): the kernel then
#                  builds only those events for every reader
#   --build DIR    ctsyncd and bench/sessload (default build/default)
#   --out DIR      results (default a new /tmp/ctsyncd-session-rate.*)
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
BENCH_NAME=session-rate
. "$HERE/lib.sh"

SMOKE=0
PIN=0
SECONDS_RUN=5
SIZES=64,4096,65536
REPEAT=3
CONC=32
KINDS=none,conntrackd,ctsyncd,ctsyncd-keyed,ctsyncd-hs,ctsyncd-keyed-hs,conntrackd-noext
BUILD=""
OUT=""
CT_EVENTS=""
ALL_KINDS=" none conntrackd ctsyncd ctsyncd-bpf ctsyncd-bpf-ctev ctsyncd-bpf-hs ctsyncd-keyed ctsyncd-hs ctsyncd-keyed-hs conntrackd-noext listener event-floor bpf-tap "
die() { echo "session-rate: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while (($#)); do
	case $1 in
	--smoke) SMOKE=1 ;;
	--pin) PIN=1 ;;
	--seconds) SECONDS_RUN=${2:?--seconds needs a number}; shift ;;
	--sizes) SIZES=${2:?--sizes needs a list}; shift ;;
	--repeat) REPEAT=${2:?--repeat needs a number}; shift ;;
	--concurrency) CONC=${2:?--concurrency needs a number}; shift ;;
	--kinds) KINDS=${2:?--kinds needs a list}; shift ;;
	--ct-events) CT_EVENTS=${2:?--ct-events needs a list}; shift ;;
	--build) BUILD=${2:?--build needs a directory}; shift ;;
	--out) OUT=${2:?--out needs a directory}; shift ;;
	-h | --help) usage 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
	shift
done
WARM=1
if ((SMOKE)); then
	SECONDS_RUN=1 SIZES=64 REPEAT=1 WARM=0 KINDS=none,conntrackd,ctsyncd,ctsyncd-keyed
fi
[[ $SECONDS_RUN =~ ^[1-9][0-9]*$ ]] || die "--seconds wants whole seconds, not '$SECONDS_RUN'"
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || die "--repeat wants a positive number, not '$REPEAT'"
[[ $CONC =~ ^[1-9][0-9]*$ ]] || die "--concurrency wants a positive number, not '$CONC'"
IFS=, read -r -a SIZE_LIST <<<"$SIZES"
for s in "${SIZE_LIST[@]}"; do [[ $s =~ ^[0-9]+$ ]] || die "bad size '$s' in --sizes (bytes)"; done
IFS=, read -r -a KIND_LIST <<<"$KINDS"
((${#KIND_LIST[@]})) || die "--kinds names no kind"
for k in "${KIND_LIST[@]}"; do [[ $ALL_KINDS == *" $k "* ]] || die "unknown kind '$k' in --kinds ($ALL_KINDS)"; done
[[ -z $CT_EVENTS || $CT_EVENTS =~ ^[a-z]+(,[a-z]+)*$ ]] || die "--ct-events wants a list like new,assured,destroy, not '$CT_EVENTS'"
[[ $(id -u) -eq 0 ]] || die "must run as root (namespaces, conntrack, nftables)"

BUILD=${BUILD:-$TOP/build/default}
CTSYNCD=$BUILD/ctsyncd
SESSLOAD=$BUILD/bench/sessload
# --pin: where the daemons, and where the load generator and the server, run
ON_DAEMON_CPU=() ON_LOAD_CPU=()
if ((PIN)); then
	(($(nproc) > 1)) || die "--pin needs two CPUs at least"
	command -v taskset >/dev/null || die "--pin needs taskset (util-linux)"
	ON_DAEMON_CPU=(taskset -c "$(($(nproc) - 1))")
	ON_LOAD_CPU=(taskset -c 0)
fi
[[ -x $CTSYNCD && -x $SESSLOAD ]] || die "$CTSYNCD or $SESSLOAD is missing (scripts/build.sh $BUILD)"
if [[ $KINDS == *conntrackd* ]]; then bench_need_pkg conntrackd || die "cannot install conntrackd"; fi
CONNTRACKD=$(command -v conntrackd || echo /usr/sbin/conntrackd)
prog_of() { if [[ $1 == conntrackd* ]]; then echo conntrackd; else echo ctsyncd; fi; }
bin_of() { if [[ $1 == conntrackd* ]]; then echo "$CONNTRACKD"; else echo "$CTSYNCD"; fi; }

OUT=${OUT:-$(mktemp -d /tmp/ctsyncd-session-rate.XXXXXX)}
mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
CSV=$OUT/results.csv
LOG=$OUT/run.log
EVTAP=$OUT/evtap/evtap
if [[ $KINDS == *event-floor* || $KINDS == *bpf-tap* ]]; then
	for pkg in clang bpftool libbpf-dev; do bench_need_pkg "$pkg" || die "cannot install $pkg (for bench/evtap)"; done
	"$HERE/evtap/build.sh" "$OUT/evtap" || die "cannot build bench/evtap"
fi
: >"$LOG"
: >"$OUT/.pids"
T_START=$(date +%s)
note() { printf '[%4ds] %s\n' $(($(date +%s) - T_START)) "$*" | tee -a "$LOG" >&2; }

NS_C="ctsr-C-$$" NS_F="ctsr-F-$$" NS_B="ctsr-B-$$" NS_S="ctsr-S-$$"
SERVER=198.18.41.2
PORT=8080
NSRC=16   # client source addresses 198.18.42.1-16: more 4-tuples
cleanup() {
	local pid ns
	while read -r pid; do [[ -n $pid ]] && stop_pid "$pid"; done <"$OUT/.pids"
	rm -f "$OUT/.pids"
	for ns in "$NS_C" "$NS_F" "$NS_B" "$NS_S"; do ip netns del "$ns" 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------------------
# client 198.18.40.2 (+ 198.18.42.1-16) -- lan F wan -- 198.18.41.2 server;
# F syncA 198.18.1.1 -- syncB 198.18.1.2 B
# ---------------------------------------------------------------------------
for ns in "$NS_C" "$NS_F" "$NS_B" "$NS_S"; do
	ip netns add "$ns" || die "cannot create namespace $ns"
	ip -n "$ns" link set lo up
done
ip link add lan netns "$NS_F" type veth peer name eth0 netns "$NS_C" &&
	ip link add wan netns "$NS_F" type veth peer name eth0 netns "$NS_S" || die "cannot create the veth pairs"
ip -n "$NS_C" addr add 198.18.40.2/24 dev eth0
for ((i = 1; i <= NSRC; i++)); do ip -n "$NS_C" addr add "198.18.42.$i/32" dev eth0; done
ip -n "$NS_F" addr add 198.18.40.1/24 dev lan
ip -n "$NS_F" addr add 198.18.41.1/24 dev wan
ip -n "$NS_S" addr add "$SERVER/24" dev eth0
for l in "$NS_C eth0" "$NS_F lan" "$NS_F wan" "$NS_S eth0"; do ip -n ${l% *} link set ${l#* } up; done
ip -n "$NS_C" route add 198.18.41.0/24 via 198.18.40.1
ip -n "$NS_S" route add default via 198.18.41.1
ip -n "$NS_F" route add 198.18.42.0/24 via 198.18.40.2
bench_sync_link "$NS_F" "$NS_B" || die "cannot create the sync link"
ip netns exec "$NS_C" sysctl -qw net.ipv4.ip_local_port_range="1024 65535"
# The firewall forwards with a strict policy: established and related pass,
# new ones only as TCP to the service, invalid ones are counted and dropped;
# with tcp_loose=0 it never picks up a connection in the middle.  TIME_WAIT
# entries live 1 s, so that every session's whole life (new, updates,
# destroy) reaches the daemons within a run and the table stays small.
for ns in "$NS_F" "$NS_B"; do
	ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1 net.netfilter.nf_conntrack_tcp_loose=0 \
		net.netfilter.nf_conntrack_tcp_timeout_time_wait=1 || die "cannot set the sysctls of $ns"
done
CT_EVENT_RULE=""
[[ -n $CT_EVENTS ]] && CT_EVENT_RULE=$'\n\t\tct state new ct event set '"$CT_EVENTS"
ip netns exec "$NS_F" nft -f - <<NFT || die "cannot load the firewall's policy"
table inet fw {
	counter invalid { }
	chain forward {
		type filter hook forward priority 0; policy drop;
		ct state established,related accept
		ct state invalid counter name "invalid" drop$CT_EVENT_RULE
		iifname "lan" oifname "wan" ip daddr $SERVER tcp dport $PORT tcp flags & (syn | ack) == syn ct state new accept
	}
}
NFT
MAX_PATH=/proc/sys/net/netfilter/nf_conntrack_max
(($(cat "$MAX_PATH") >= 262144)) || echo 262144 >"$MAX_PATH"

"${ON_LOAD_CPU[@]}" ip netns exec "$NS_S" "$SESSLOAD" serve "$SERVER" "$PORT" 2>>"$LOG" &
echo $! >>"$OUT/.pids"
sleep 0.3

# ---------------------------------------------------------------------------
# daemons
# ---------------------------------------------------------------------------
KEY=$OUT/sync.key
if [[ $KINDS == *keyed* ]]; then
	bench_make_key "$CTSYNCD" "$KEY" || exit 2
fi
conf() { echo "$OUT/$1-$2.conf"; }
write_conf() {   # write_conf KIND SIDE
	local k=$1 s=$2 me=1 peer=2 dev=syncA mode_opts="" key_line="" general
	[[ $s == B ]] && me=2 peer=1 dev=syncB
	[[ $k == *-hs ]] && mode_opts="HotStandby on"
	[[ $k == conntrackd-noext ]] && mode_opts="DisableExternalCache on"
	[[ $k == *keyed* ]] && key_line="Key $KEY"
	general="HashSize 65536
HashLimit 524288
NetlinkBufferSize 2097152
NetlinkBufferSizeMaxGrowth 134217728
NetlinkOverrunResync 2"
	# ctsyncd only: conntrackd rejects the option
	[[ $k == ctsyncd-bpf* ]] && general+=$'\nEventSource bpf'
	bench_write_conf "$(conf "$k" "$s")" "bench/session-rate.sh: $k, $s" "$me" "$peer" "$dev" "$mode_opts" \
		"$key_line" "$general"
}
for k in "${KIND_LIST[@]}"; do
	[[ $k == none || $k == listener ]] && continue
	write_conf "$k" F
	write_conf "$k" B
	if [[ $(prog_of "$k") == ctsyncd ]]; then
		"$CTSYNCD" -C "$(conf "$k" F)" --check >/dev/null 2>>"$LOG" || die "ctsyncd --check refuses $(conf "$k" F) (see $LOG)"
	fi
done
nsof() { if [[ $1 == F ]]; then echo "$NS_F"; else echo "$NS_B"; fi; }
start_daemon() {   # start_daemon KIND SIDE: sets PID_<SIDE>
	local k=$1 s=$2 pid="" i
	rm -f "$OUT/$k-$s.lock" "$OUT/$k-$s.ctl"
	"${ON_DAEMON_CPU[@]}" ip netns exec "$(nsof "$s")" "$(bin_of "$k")" -C "$(conf "$k" "$s")" -d \
		>>"$OUT/$k-$s.stdout" 2>&1 ||
		{ note "$k on $s did not start (see $OUT/$k-$s.log)"; return 1; }
	for ((i = 0; i < 100; i++)); do
		pid=$(bench_daemon_pid "$OUT/$k-$s.lock" "$(prog_of "$k")" "$(nsof "$s")") && break
		sleep 0.1
	done
	[[ -n $pid ]] || { note "no PID for $k on $s"; return 1; }
	echo "$pid" >>"$OUT/.pids"
	for ((i = 0; i < 100; i++)); do
		"$(bin_of "$k")" -C "$(conf "$k" "$s")" -s cache >/dev/null 2>&1 && break
		sleep 0.1
	done
	printf -v "PID_$s" '%s' "$pid"
}
stop_daemons() {
	local pid
	for pid in ${PID_F:-} ${PID_B:-}; do stop_pid "$pid"; done
	grep -vxF -e "${PID_F:-x}" -e "${PID_B:-x}" "$OUT/.pids" >"$OUT/.pids.new"
	mv "$OUT/.pids.new" "$OUT/.pids"
	PID_F="" PID_B=""
}
# nstat_of NS COUNTER: the absolute value of a kernel SNMP counter in NS
nstat_of() { ip netns exec "$1" nstat -asz "$2" 2>/dev/null | awk -v c="$2" '$1 == c { print $2; f = 1 } END { if (!f) print 0 }'; }
# CPU seconds (user + system, clock ticks) of a process; 0 when gone
cpu_s() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat" 2>/dev/null || echo 0
}

# ---------------------------------------------------------------------------
# runs
# ---------------------------------------------------------------------------
echo "kind,size,rep,metric,value,unit" >"$CSV"
row() { echo "$1,$2,$3,$4,$5,$6" >>"$CSV"; }
{
	echo "machine: $(nproc) CPUs, $(uname -r), load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "ctsyncd: $("$CTSYNCD" --version 2>&1 | head -n1); conntrackd: $("$CONNTRACKD" -v 2>&1 | head -n1)"
	echo "sizes ${SIZE_LIST[*]} B, $SECONDS_RUN s per run after ${WARM} s of warm-up, concurrency $CONC, repeat $REPEAT"
	echo "kinds: ${KIND_LIST[*]}"
} | tee "$OUT/machine.txt" >&2

run_one() {
	local k=$1 size=$2 rep=$3 js inv0 inv1 cF0 cB0 cF1 cB1 syn0 syn1 ld0 ld1 rt0 rt1
	note "$k, $size B, rep $rep"
	PID_F="" PID_B=""
	ip netns exec "$NS_F" conntrack -F >/dev/null 2>&1
	ip netns exec "$NS_B" conntrack -F >/dev/null 2>&1
	if [[ $k == listener ]]; then
		# what any reader of the firewall's events costs it: conntrack -E alone
		"${ON_DAEMON_CPU[@]}" ip netns exec "$NS_F" conntrack -E >/dev/null 2>&1 &
		PID_F=$! PID_B=$!
		echo "$PID_F" >>"$OUT/.pids"
		sleep 0.5
	elif [[ $k == event-floor || $k == bpf-tap ]]; then
		local tap=(ctnetlink)
		[[ $k == bpf-tap ]] && tap=(bpf --object "$OUT/evtap/evtap.bpf.o")
		rm -f "$OUT/evtap-$k.json"
		"${ON_DAEMON_CPU[@]}" ip netns exec "$NS_F" "$EVTAP" "${tap[@]}" --stats "$OUT/evtap-$k.json" 2>>"$LOG" &
		PID_F=$! PID_B=$!
		echo "$PID_F" >>"$OUT/.pids"
		sleep 0.5
		running "$PID_F" || { note "$k: evtap did not start (see $LOG)"; return; }
	elif [[ $k != none ]]; then
		if [[ $k == *-ctev ]]; then
			ip netns exec "$NS_F" nft -f - <<'NFT' || { note "$k: cannot add the ct event set rule"; return; }
table inet ctev {
	chain pre { type filter hook prerouting priority -150; ct state new ct event set destroy; }
}
NFT
		fi
		if ! start_daemon "$k" F || ! start_daemon "$k" B; then
			stop_daemons
			return
		fi
		# a keyed pair proves its sessions at the first datagrams: let the
		# keepalive do that before the measurement
		[[ $k == *keyed* ]] && sleep 1.5
	fi
	((WARM)) && "${ON_LOAD_CPU[@]}" ip netns exec "$NS_C" "$SESSLOAD" run "$SERVER" "$PORT" "$size" "$CONC" "$WARM" 198.18.42 "$NSRC" >/dev/null 2>>"$LOG"
	inv0=$(ip netns exec "$NS_F" nft list counter inet fw invalid | awk '/packets/ { print $2 }')
	syn0=$(nstat_of "$NS_C" TcpExtTCPSynRetrans) ld0=$(nstat_of "$NS_S" TcpExtListenDrops)
	rt0=$(($(nstat_of "$NS_C" TcpRetransSegs) + $(nstat_of "$NS_S" TcpRetransSegs)))
	[[ -n ${PID_F:-} ]] && cF0=$(cpu_s "$PID_F") cB0=$(cpu_s "$PID_B")
	js=$("${ON_LOAD_CPU[@]}" ip netns exec "$NS_C" "$SESSLOAD" run "$SERVER" "$PORT" "$size" "$CONC" "$SECONDS_RUN" 198.18.42 "$NSRC" 2>>"$LOG")
	[[ -n ${PID_F:-} ]] && cF1=$(cpu_s "$PID_F") cB1=$(cpu_s "$PID_B")
	inv1=$(ip netns exec "$NS_F" nft list counter inet fw invalid | awk '/packets/ { print $2 }')
	syn1=$(nstat_of "$NS_C" TcpExtTCPSynRetrans) ld1=$(nstat_of "$NS_S" TcpExtListenDrops)
	rt1=$(($(nstat_of "$NS_C" TcpRetransSegs) + $(nstat_of "$NS_S" TcpRetransSegs)))
	echo "$k size=$size rep=$rep $js" >>"$LOG"
	python3 - "$js" "$k" "$size" "$rep" >>"$CSV" <<'PY'
import json, sys
d = json.loads(sys.argv[1]) if sys.argv[1] else {}
k, size, rep = sys.argv[2:5]
for key, unit in (("sessions_per_s", "sessions/s"), ("p50_us", "us"), ("p90_us", "us"), ("p99_us", "us"),
                  ("failed_connect", "count"), ("failed_short", "count"), ("failed_other", "count")):
    print("%s,%s,%s,%s,%s,%s" % (k, size, rep, key, d.get(key, "nan"), unit))
PY
	row "$k" "$size" "$rep" invalid_drops $((${inv1:-0} - ${inv0:-0})) packets
	# a segment lost on the way costs its session a retransmission timeout
	# (1 s for a SYN): the client's SYN retransmissions, the server's
	# listen-queue drops and all retransmitted segments say whether and
	# where; none, with long sessions, means the endpoints waited for a CPU
	row "$k" "$size" "$rep" syn_retrans $((syn1 - syn0)) count
	row "$k" "$size" "$rep" listen_drops $((ld1 - ld0)) count
	row "$k" "$size" "$rep" retrans $((rt1 - rt0)) segments
	if [[ -n ${PID_F:-} ]]; then
		row "$k" "$size" "$rep" cpu_primary "$(calc "100 * ($cF1 - $cF0) / $SECONDS_RUN")" "%"
		row "$k" "$size" "$rep" cpu_backup "$(calc "100 * ($cB1 - $cB0) / $SECONDS_RUN")" "%"
	fi
	# EventSource bpf: that the tap was used, and lost nothing
	if [[ $k == ctsyncd-bpf* ]]; then
		"$CTSYNCD" -C "$(conf "$k" F)" -s --json 2>/dev/null | python3 -c '
import json, sys
k, size, rep = sys.argv[1:4]
d = json.load(sys.stdin)["kernel"]
for key in ("bpf_event_tap", "bpf_tap_records", "bpf_tap_lost", "overruns"):
    print("%s,%s,%s,%s,%d,count" % (k, size, rep, key, int(d[key])))' "$k" "$size" "$rep" >>"$CSV"
	fi
	stop_daemons
	[[ $k == *-ctev ]] && ip netns exec "$NS_F" nft delete table inet ctev
	# what the tap read, warm-up included: a check that it saw the sessions
	if [[ -s $OUT/evtap-$k.json ]]; then
		python3 - "$OUT/evtap-$k.json" "$k" "$size" "$rep" >>"$CSV" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
k, size, rep = sys.argv[2:5]
for key in ("new", "update", "netlink_messages", "ring_lost", "netlink_overruns"):
    print("%s,%s,%s,tap_%s,%s,count" % (k, size, rep, key, d[key]))
PY
	fi
}

for ((rep = 1; rep <= REPEAT; rep++)); do
	for size in "${SIZE_LIST[@]}"; do
		if ((rep % 2)); then order=("${KIND_LIST[@]}"); else order=(); for ((i = ${#KIND_LIST[@]} - 1; i >= 0; i--)); do order+=("${KIND_LIST[$i]}"); done; fi
		for k in "${order[@]}"; do run_one "$k" "$size" "$rep"; done
	done
done

# the table: medians over the repetitions; the drop is against "none"
python3 - "$CSV" <<'PY' | tee "$OUT/results.txt"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def med(k, s, m):
    v = [float(r["value"]) for r in rows if r["kind"] == k and r["size"] == s and r["metric"] == m
         and r["value"] not in ("nan", "")]
    return statistics.median(v) if v else float("nan")
kinds = list(dict.fromkeys(r["kind"] for r in rows))
sizes = list(dict.fromkeys(r["size"] for r in rows))
print("%-17s %7s %12s %8s %9s %9s %8s %8s %8s %8s %8s" % ("kind", "size", "sessions/s", "drop", "p50 ms", "p99 ms",
      "invalid", "SYN rtx", "lst drop", "cpu F %", "cpu B %") + "  retrans")
for s in sizes:
    base = med("none", s, "sessions_per_s")
    drops = {}
    for k in kinds:
        r = med(k, s, "sessions_per_s")
        drops[k] = 1 - r / base if base == base and base > 0 else float("nan")
        print("%-17s %7s %12.0f %7.1f%% %9.3f %9.3f %8.0f %8.0f %8.0f %8.1f %8.1f" % (
            k, s, r, 100 * drops[k], med(k, s, "p50_us") / 1000, med(k, s, "p99_us") / 1000,
            med(k, s, "invalid_drops"), med(k, s, "syn_retrans"), med(k, s, "listen_drops"),
            med(k, s, "cpu_primary"), med(k, s, "cpu_backup")) + "  %7.0f" % med(k, s, "retrans"))
    for k in ("ctsyncd", "ctsyncd-bpf", "ctsyncd-bpf-ctev", "ctsyncd-bpf-hs", "ctsyncd-keyed", "ctsyncd-hs", "ctsyncd-keyed-hs"):
        if k in drops and "conntrackd" in drops and drops["conntrackd"] == drops["conntrackd"]:
            c = drops["conntrackd"]
            ok = drops[k] <= 0.05 and (drops[k] <= c / 3 if c > 0 else drops[k] <= 0)
            print("  %s, %s B: drop %.1f%% against conntrackd's %.1f%% (target <= 1/3 of it and <= 5%%): %s"
                  % (k, s, 100 * drops[k], 100 * c, "met" if ok else "MISSED"))
            def by_rep(kind):
                return {r["rep"]: float(r["value"]) for r in rows if r["kind"] == kind and r["size"] == s
                        and r["metric"] == "sessions_per_s" and r["value"] not in ("nan", "")}
            mine, theirs = by_rep(k), by_rep("conntrackd")
            pairs = ["%.2f" % (mine[x] / theirs[x]) for x in sorted(mine) if x in theirs and theirs[x] > 0]
            print("    sessions/s of %s over conntrackd's, each repetition: %s" % (k, " ".join(pairs)))
    print()
PY
note "done in $(($(date +%s) - T_START)) s: $CSV"
