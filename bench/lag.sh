#!/bin/bash
# bench/lag.sh: the replication lag of every state under a steady paced load,
# ctsyncd against conntrackd 1.4.7 side by side in one run (issue 19).
#
# A and B are the namespaces and sync link of bench/compare.sh, with the
# same daemon configuration, and B writes what it receives into its kernel
# (DisableExternalCache on B for both daemons; the kind ctsyncd-hs uses
# ctsyncd's HotStandby instead).  Both kernels stamp every entry they create
# (nf_conntrack_timestamp=1), and bench/ctlag matches the two stamps of each
# state after the run: lag = stamp on B - stamp on A, to the nanosecond, B's
# kernel write included.  With --wire, ctlag also captures the sync link on
# B (kernel receive stamps) and splits the lag into A's part (kernel event
# to the link) and B's part (link to B's kernel).  See bench/README.md.
#
# Usage: bench/lag.sh [--rates 10k,100k] [--seconds S] [--repeat K]
#                     [--burst N] [--kinds ctsyncd,conntrackd[,ctsyncd-hs]] [--wire]
#                     [--netlink-buffer BYTES|default] [--load-prio P]
#                     [--build DIR] [--alt NAME=DIR]... [--out DIR]
#
#   --rates          paced create rates of ctload, states/s (default 10k,100k);
#                    "max" is an unpaced burst of --burst states (ctload's
#                    256 KiB batches, as compare.sh: what an overrun costs)
#   --burst N        states of the "max" trials (default 100k)
#   --seconds        seconds of load per trial (default 3)
#   --repeat         trials of each kind and rate (default 3); the kinds
#                    alternate their order from one repetition to the next
#   --kinds          daemon kinds (default ctsyncd,conntrackd; also ctsyncd-hs;
#                    each --alt adds its own)
#   --wire           also capture the sync link and split the lag
#   --netlink-buffer both daemons' NetlinkBufferSize (default 2097152, as
#                    compare.sh; 'default' leaves the option out)
#   --load-prio P    run ctload as SCHED_FIFO priority P (default 1; 0: as a
#                    normal task).  The kernel makes real states in softirq,
#                    ahead of every task; a normal ctload on a busy machine is
#                    starved by other work and the load is no longer paced.
#                    Both daemons run SCHED_RR 99, above it.
#   --build DIR      where ctsyncd and the bench tools are (default build/default)
#   --alt NAME=DIR   the ctsyncd of another build as the kind "ctsyncd-NAME"
#                    (added to the kinds; B as for ctsyncd), to compare a
#                    change under the same load; may be given several times
#   --out DIR        results (default a new /tmp/ctsyncd-lag.* directory)
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
BENCH_NAME=lag
. "$HERE/lib.sh"

RATES=10k,100k
BURST=100k
SECONDS_LOAD=3
REPEAT=3
KINDS=ctsyncd,conntrackd
WIRE=0
NETLINK_BUFFER=2097152
LOAD_PRIO=1
ALTS=()
BUILD=$TOP/build/default
OUT=""
while (($#)); do
	case $1 in
	--rates) RATES=${2:?}; shift 2 ;;
	--burst) BURST=${2:?}; shift 2 ;;
	--seconds) SECONDS_LOAD=${2:?}; shift 2 ;;
	--repeat) REPEAT=${2:?}; shift 2 ;;
	--kinds) KINDS=${2:?}; shift 2 ;;
	--wire) WIRE=1; shift ;;
	--netlink-buffer) NETLINK_BUFFER=${2:?}; shift 2 ;;
	--alt) ALTS+=("${2:?}"); shift 2 ;;
	--load-prio) LOAD_PRIO=${2:?}; shift 2 ;;
	--build) BUILD=${2:?}; shift 2 ;;
	--out) OUT=${2:?}; shift 2 ;;
	-h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "lag: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
num() {   # num OPTION VALUE: 10k -> 10000
	local v=$2 m=1
	case $v in *k) m=1000 v=${v%k} ;; *M) m=1000000 v=${v%M} ;; esac
	[[ $v =~ ^[0-9]+$ ]] && ((v > 0)) || { echo "lag: $1 '$2' is not a positive number" >&2; exit 2; }
	echo $((v * m))
}
IFS=, read -r -a RATE_LIST <<<"$RATES"
for i in "${!RATE_LIST[@]}"; do
	[[ ${RATE_LIST[$i]} == max ]] && continue
	RATE_LIST[$i]=$(num --rates "${RATE_LIST[$i]}") || exit 2
done
BURST=$(num --burst "$BURST") || exit 2
count_of() { if [[ $1 == max ]]; then echo "$BURST"; else echo $(($1 * SECONDS_LOAD)); fi; }
SECONDS_LOAD=$(num --seconds "$SECONDS_LOAD") || exit 2
REPEAT=$(num --repeat "$REPEAT") || exit 2
((SECONDS_LOAD <= 60 && REPEAT <= 20)) || { echo "lag: --seconds at most 60, --repeat at most 20" >&2; exit 2; }
declare -A ALT_BIN=()
for a in "${ALTS[@]}"; do
	[[ $a =~ ^([a-z0-9]+)=(.+)$ && -x ${BASH_REMATCH[2]}/ctsyncd ]] ||
		{ echo "lag: --alt '$a' is not NAME=DIR with DIR/ctsyncd built (NAME: a-z0-9)" >&2; exit 2; }
	ALT_BIN[ctsyncd-${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}/ctsyncd
	[[ ",$KINDS," != *",ctsyncd-${BASH_REMATCH[1]},"* ]] && KINDS=$KINDS,ctsyncd-${BASH_REMATCH[1]}
done
IFS=, read -r -a KIND_LIST <<<"$KINDS"
for k in "${KIND_LIST[@]}"; do
	[[ $k == ctsyncd || $k == conntrackd || $k == ctsyncd-hs || -n ${ALT_BIN[$k]:-} ]] ||
		{ echo "lag: unknown kind '$k' (ctsyncd, conntrackd, ctsyncd-hs, or one of --alt)" >&2; exit 2; }
done
[[ $NETLINK_BUFFER == default || $NETLINK_BUFFER =~ ^[0-9]+$ ]] ||
	{ echo "lag: --netlink-buffer '$NETLINK_BUFFER' is not a size in bytes or 'default'" >&2; exit 2; }
[[ $LOAD_PRIO =~ ^[0-9]+$ ]] && ((LOAD_PRIO <= 98)) ||
	{ echo "lag: --load-prio '$LOAD_PRIO' is not a priority in 0..98" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "lag: needs root" >&2; exit 2; }
LOAD_CMD=()
((LOAD_PRIO > 0)) && LOAD_CMD=(chrt -f "$LOAD_PRIO")

CTSYNCD=$BUILD/ctsyncd
CTLOAD=$BUILD/bench/ctload
CTLAG=$BUILD/bench/ctlag
TASKCLOCK=$BUILD/bench/taskclock
for f in "$CTSYNCD" "$CTLOAD" "$CTLAG" "$TASKCLOCK"; do
	[[ -x $f ]] || { echo "lag: $f is not built (scripts/build.sh $BUILD)" >&2; exit 2; }
done
bench_need_pkg conntrackd || { echo "lag: cannot install conntrackd" >&2; exit 1; }
CONNTRACKD=$(command -v conntrackd || echo /usr/sbin/conntrackd)
prog_of() { if [[ $1 == conntrackd ]]; then echo conntrackd; else echo ctsyncd; fi; }
client_of() {
	if [[ $1 == conntrackd ]]; then echo "$CONNTRACKD"; else echo "${ALT_BIN[$1]:-$CTSYNCD}"; fi
}

OUT=${OUT:-$(mktemp -d /tmp/ctsyncd-lag.XXXXXX)}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || { echo "lag: cannot create $OUT" >&2; exit 1; }
CSV=$OUT/results.csv
LOG=$OUT/run.log
echo "kind,rate,rep,metric,value" >"$CSV"
: >"$LOG"
PIDS=()
NS_A="ctlag-A-$$"
NS_B="ctlag-B-$$"
MAX_PATH=/proc/sys/net/netfilter/nf_conntrack_max
OLD_MAX=$(cat "$MAX_PATH")
SET_MAX=""
T0=$(date +%s)
note() { printf '[%4ds] %s\n' $(($(date +%s) - T0)) "$*" | tee -a "$LOG" >&2; }

cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do stop_pid "$pid"; done
	ip netns del "$NS_A" 2>/dev/null
	ip netns del "$NS_B" 2>/dev/null
	if [[ -n $SET_MAX && $(cat "$MAX_PATH") == "$SET_MAX" ]]; then echo "$OLD_MAX" >"$MAX_PATH"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

largest=0
for r in "${RATE_LIST[@]}"; do (($(count_of "$r") > largest)) && largest=$(count_of "$r"); done
want_max=$((2 * largest + 65536))
if ((OLD_MAX < want_max)); then
	echo "$want_max" >"$MAX_PATH" || { echo "lag: cannot raise nf_conntrack_max" >&2; exit 1; }
	SET_MAX=$want_max
fi
HASHLIMIT=$((2 * largest))
((HASHLIMIT < 262144)) && HASHLIMIT=262144
for ns in "$NS_A" "$NS_B"; do
	ip netns add "$ns" || { echo "lag: cannot create namespace $ns" >&2; exit 1; }
	ip -n "$ns" link set lo up
done
bench_sync_link "$NS_A" "$NS_B" || { echo "lag: cannot create the veth pair" >&2; exit 1; }
for ns in "$NS_A" "$NS_B"; do
	ip netns exec "$ns" sysctl -qw net.netfilter.nf_conntrack_timestamp=1 ||
		{ echo "lag: cannot set nf_conntrack_timestamp in $ns" >&2; exit 1; }
done

nsof() { if [[ $1 == A ]]; then echo "$NS_A"; else echo "$NS_B"; fi; }
conf() { echo "$OUT/$1-$2.conf"; }
# The configuration of compare.sh; B writes received states into its kernel.
write_conf() {   # write_conf KIND SIDE
	local d=$1 side=$2 me=1 peer=2 dev=syncA mode="" general
	[[ $side == B ]] && me=2 peer=1 dev=syncB
	if [[ $side == B ]]; then
		if [[ $d == ctsyncd-hs ]]; then mode="HotStandby on"; else mode="DisableExternalCache on"; fi
	fi
	general="HashSize 262144
HashLimit $HASHLIMIT"
	[[ $NETLINK_BUFFER != default ]] &&
		general+=$'\nNetlinkBufferSize '"$NETLINK_BUFFER"$'\nNetlinkBufferSizeMaxGrowth 134217728'
	general+=$'\nNetlinkOverrunResync 2'
	bench_write_conf "$(conf "$d" "$side")" "bench/lag.sh: $d, firewall $side" "$me" "$peer" "$dev" "$mode" \
		"" "$general"
}
for d in "${KIND_LIST[@]}"; do write_conf "$d" A; write_conf "$d" B; done

client() { local d=$1 side=$2; shift 2; ip netns exec "$(nsof "$side")" "$(client_of "$d")" -C "$(conf "$d" "$side")" "$@" 2>/dev/null; }
ctload_in() { local side=$1; shift; ip netns exec "$(nsof "$side")" "$CTLOAD" "$@"; }
kcount() { ctload_in "$1" count --stats 2>/dev/null | grep -o 'entries=[0-9]*' | cut -d= -f2; }

start_daemon() {   # start_daemon KIND SIDE: sets PID_<SIDE>
	local d=$1 side=$2 pid="" i
	rm -f "$OUT/$d-$side.lock" "$OUT/$d-$side.ctl"
	ip netns exec "$(nsof "$side")" "$(client_of "$d")" -C "$(conf "$d" "$side")" -d \
		>>"$OUT/$d-$side.stdout" 2>&1 || { note "$d on $side did not start"; return 1; }
	for ((i = 0; i < 100; i++)); do
		pid=$(bench_daemon_pid "$OUT/$d-$side.lock" "$(prog_of "$d")" "$(nsof "$side")") && break
		sleep 0.1
	done
	[[ -n $pid ]] || { note "no PID for $d on $side"; return 1; }
	PIDS+=("$pid")
	for ((i = 0; i < 100; i++)); do
		client "$d" "$side" -s >/dev/null && break
		sleep 0.1
	done
	printf -v "PID_$side" '%s' "$pid"
}
forget_pid() {   # stop one of ours and drop it from the cleanup list
	local p keep=()
	[[ -n $1 ]] || return 0
	stop_pid "$1"
	for p in "${PIDS[@]}"; do [[ $p != "$1" ]] && keep+=("$p"); done
	PIDS=("${keep[@]}")
}
stop_daemons() { forget_pid "${PID_A:-}"; forget_pid "${PID_B:-}"; PID_A="" PID_B=""; }

overruns_of() {   # netlink event overruns of one daemon since its start
	if [[ $1 == conntrackd ]]; then
		client "$1" "$2" -s runtime | awk -F: '/netlink overrun/ { gsub(/[ \t]/, "", $2); print $2; f = 1 } END { if (!f) print "nan" }'
	else
		client "$1" "$2" -s --json | grep -o '"overruns":[0-9]*' | head -n1 | cut -d: -f2 | grep . || echo nan
	fi
}

row() { echo "$1,$2,$3,$4,$5" >>"$CSV"; }

# CPU seconds of both daemons by the kernel's task clock (bench/taskclock,
# as compare.sh): tc_start after the pair has started, tc_read sets CPU_A CPU_B
TC_CHILD=""
tc_start() {
	local line
	coproc TC { exec "$TASKCLOCK" "$PID_A" "$PID_B" 2>>"$LOG"; }
	TC_CHILD=$TC_PID TC_OUT=${TC[0]} TC_IN=${TC[1]}
	read -r -t 5 line <&"$TC_OUT" && [[ $line == ready ]] || { tc_stop; return 1; }
}
tc_read() {
	CPU_A=nan CPU_B=nan
	[[ -n $TC_CHILD ]] && { echo >&"$TC_IN" && read -r -t 5 CPU_A CPU_B <&"$TC_OUT"; } 2>/dev/null
}
tc_stop() {
	[[ -n $TC_CHILD ]] || return 0
	if [[ -n ${TC[1]:-} ]]; then exec {TC_IN}>&-; fi
	if [[ -n ${TC[0]:-} ]]; then exec {TC_OUT}<&-; fi
	wait "$TC_CHILD" 2>/dev/null
	TC_CHILD=""
}

trial() {   # trial KIND RATE REP
	local d=$1 rate=$2 rep=$3 m cap_pid="" got=0 last=0 still=0 i out ovA ovB cpu0_a cpu0_b
	local wire_args=() pace=()
	m=$(count_of "$rate")
	[[ $rate != max ]] && pace=(--rate "$rate")
	ctload_in A flush >/dev/null
	ctload_in B flush >/dev/null
	start_daemon "$d" A && start_daemon "$d" B || { stop_daemons; row "$d" "$rate" "$rep" failed 1; return; }
	sleep 1         # both idle, the FTFW handshake over
	tc_start
	if ((WIRE)); then
		rm -f "$OUT/wire.txt"
		ip netns exec "$NS_B" "$CTLAG" capture --dev syncB --out "$OUT/wire.txt" --seconds $((SECONDS_LOAD + 60)) \
			2>"$OUT/capture.err" &
		cap_pid=$!
		PIDS+=("$cap_pid")
		for ((i = 0; i < 50; i++)); do grep -q "capturing on syncB" "$OUT/capture.err" && break; sleep 0.1; done
		wire_args=(--wire "$OUT/wire.txt")
	fi
	tc_read
	cpu0_a=$CPU_A cpu0_b=$CPU_B
	ip netns exec "$NS_A" "${LOAD_CMD[@]}" "$CTLOAD" create "$m" "${pace[@]}" --proto tcp --timeout 600 \
		--base-addr 198.18.128.1 >"$OUT/load.out" 2>&1
	cat "$OUT/load.out" >>"$LOG"
	row "$d" "$rate" "$rep" load_rate "$(grep -o 'rate_per_s=[0-9]*' "$OUT/load.out" | cut -d= -f2)"
	# B's kernel: all of them, or no progress for 10 s
	for ((i = 0; i < 600; i++)); do
		got=$(kcount B)
		got=${got:-0}
		((got >= m)) && break
		if ((got == last)); then ((++still >= 100)) && break; else still=0 last=$got; fi
		sleep 0.1
	done
	sleep 0.2       # the last ACKs
	tc_read
	row "$d" "$rate" "$rep" cpu_us_per_state_A "$(calc "1e6 * ($CPU_A - $cpu0_a) / $m")"
	row "$d" "$rate" "$rep" cpu_us_per_state_B "$(calc "1e6 * ($CPU_B - $cpu0_b) / $m")"
	tc_stop
	if [[ -n $cap_pid ]]; then
		forget_pid "$cap_pid"
		cat "$OUT/capture.err" >>"$LOG"
	fi
	ovA=$(overruns_of "$d" A)
	ovB=$(overruns_of "$d" B)
	stop_daemons
	out=$("$CTLAG" report --a "$NS_A" --b "$NS_B" "${wire_args[@]}" --json --csv "$OUT/lag-$d-$rate-$rep.csv")
	echo "$d rate=$rate rep=$rep overruns_A=$ovA overruns_B=$ovB $out" >>"$LOG"
	python3 - "$d" "$rate" "$rep" "$ovA" "$ovB" "$out" >>"$CSV" <<'PY'
import json, sys
d, rate, rep, ova, ovb, js = sys.argv[1:]
j = json.loads(js)
print(f"{d},{rate},{rep},overruns_A,{ova}")
print(f"{d},{rate},{rep},overruns_B,{ovb}")
print(f"{d},{rate},{rep},missing,{j['missing']}")
print(f"{d},{rate},{rep},matched,{j['matched']}")
print(f"{d},{rate},{rep},a_span_s,{j['a_span_s']}")
for part in ("lag", "a_to_link", "link_to_b"):
    if part in j:
        for q in ("p50", "p90", "p99", "p999", "max", "mean"):
            print(f"{d},{rate},{rep},{part}_{q},{j[part][q]}")
PY
	note "$d $rate rep $rep: $(python3 -c 'import json,sys; j=json.loads(sys.argv[1]); l=j["lag"]; print("p50 %.3f p99 %.3f p999 %.3f max %.3f ms, missing %d" % (l["p50"], l["p99"], l["p999"], l["max"], j["missing"]))' "$out") overruns A=$ovA B=$ovB"
}

{
	echo "commit: $(git -C "$TOP" rev-parse --short HEAD 2>/dev/null)$(git -C "$TOP" diff --quiet 2>/dev/null || echo -dirty)"
	echo "kernel: $(uname -r); cpus: $(nproc); $(grep -m1 'model name' /proc/cpuinfo)"
	echo "conntrackd: $("$CONNTRACKD" -v 2>&1 | head -n1)"
	echo "command: bench/lag.sh --rates $RATES --burst $BURST --seconds $SECONDS_LOAD --repeat $REPEAT --kinds $KINDS$( ((WIRE)) && echo ' --wire') --netlink-buffer $NETLINK_BUFFER --load-prio $LOAD_PRIO${ALTS[*]:+ --alt ${ALTS[*]}}"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/machine.txt"

for ((rep = 1; rep <= REPEAT; rep++)); do
	order=("${KIND_LIST[@]}")
	if ((rep % 2 == 0)); then
		order=()
		for ((i = ${#KIND_LIST[@]} - 1; i >= 0; i--)); do order+=("${KIND_LIST[$i]}"); done
	fi
	for rate in "${RATE_LIST[@]}"; do
		for d in "${order[@]}"; do trial "$d" "$rate" "$rep"; done
	done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"

python3 - "$CSV" "${KIND_LIST[@]}" >"$OUT/results.txt" <<'PY'
import csv, statistics, sys
path, kinds = sys.argv[1], sys.argv[2:]
v = {}
for r in csv.DictReader(open(path)):
    try:
        x = float(r["value"])
    except ValueError:
        continue
    rate = 10**12 if r["rate"] == "max" else int(r["rate"])
    v.setdefault((r["metric"], rate, r["kind"]), []).append(x)
rates = sorted({k[1] for k in v})
metrics = [m for m in ("lag_p50", "lag_p90", "lag_p99", "lag_p999", "lag_max", "lag_mean",
                       "a_to_link_p50", "a_to_link_p99", "a_to_link_p999",
                       "link_to_b_p50", "link_to_b_p99", "link_to_b_p999",
                       "cpu_us_per_state_A", "cpu_us_per_state_B",
                       "missing", "overruns_A", "overruns_B", "load_rate", "a_span_s") if any(k[0] == m for k in v)]
def cell(m, r, k):
    xs = v.get((m, r, k))
    if not xs:
        return "-", None
    med = statistics.median(xs)
    f = (lambda y: "%.3f" % y) if m.startswith(("lag", "a_to", "link", "cpu")) else (lambda y: "%g" % y)
    return "%s [%s-%s]" % (f(med), f(min(xs)), f(max(xs))), med
head = ["metric (ms; counts)", "rate"] + kinds
if "ctsyncd" in kinds and "conntrackd" in kinds:
    head.append("ctsyncd/conntrackd")
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
for r in rates:
    for m in metrics:
        cells, meds = [], {}
        for k in kinds:
            c, meds[k] = cell(m, r, k)
            cells.append(c)
        row = [m, "burst" if r == 10**12 else "%gk/s" % (r / 1000)] + cells
        if "ctsyncd" in kinds and "conntrackd" in kinds:
            a, b = meds.get("ctsyncd"), meds.get("conntrackd")
            row.append("%.2f" % (a / b) if a is not None and b else "-")
        print("| " + " | ".join(row) + " |")
PY
cat "$OUT/machine.txt"
cat "$OUT/results.txt"
((${#KIND_LIST[@]} > 2)) && echo "(the ratio column is ctsyncd/conntrackd; compare the other kinds by their cells)"
echo "lag: results in $OUT" >&2
