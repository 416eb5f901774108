#!/bin/bash
# bench/compare.sh: ctsyncd against Debian's conntrackd 1.4.7, side by side,
# in one run, on this machine's kernel (issue 6), and ctsyncd keyed against
# ctsyncd unkeyed (issue 15).
#
# Two network namespaces, A (primary) and B (backup), joined by a veth sync
# link (198.18.1.1 <-> 198.18.1.2).  For each size N and each repetition, a
# fresh pair of daemons of one kind runs with the same configuration (FTFW
# over UDP port 3780); ctload injects N conntrack entries into A's kernel and
# the harness measures how they reach B's external cache, what that costs
# (CPU, memory, bytes on the link), then update and delete bursts, the
# commit into B's kernel against the raw create rate, and a bulk resync.
# Separate runs measure convergence under random loss on the link and the
# replication lag under a steady paced load.  The kinds are "ctsyncd",
# "conntrackd" and "ctsyncd-keyed" (ctsyncd with `Key` in its Sync block:
# every datagram sealed, a key made for the run in the out directory); the
# same trials run each kind in turn.  See bench/README.md.
#
# Usage: bench/compare.sh [--quick|--full] [--repeat K] [--build DIR] [--out DIR]
#                         [--sizes 10k,100k] [--phases core,loss,lag]
#                         [--kinds ctsyncd,conntrackd,ctsyncd-keyed]
#                         [--overrun-resync SECONDS|default] [--netlink-buffer BYTES]
#
#   --quick (default)  N = 10k and 100k, 20 % loss only, short lag run; < 5 min
#   --full             N = 10k, 100k, 500k (and 1M if the budget allows),
#                      5/20/50 % loss at 100k, lag at 50k/s for 10 s; < 20 min
#   --repeat K         repetitions of each measurement (default 3)
#   --build DIR        where ctsyncd and bench/ctload are (default build/default,
#                      built with scripts/build.sh when missing)
#   --out DIR          results (default: a new /tmp/ctsyncd-compare.* directory)
#   --sizes, --phases  run a subset (for development)
#   --kinds            the daemon kinds to run (default all three; the keyed
#                      columns need ctsyncd and ctsyncd-keyed)
#   --overrun-resync   NetlinkOverrunResync of both daemons' configs (default 2 s;
#                      'default' leaves conntrackd's 30 s)
#   --netlink-buffer   NetlinkBufferSize of both daemons' configs (default 2 MiB,
#                      growing to 128 MiB); a larger one avoids the overrun at
#                      the start of a burst, and so the resync after it
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
REPORT="$HERE/compare-report.py"
BENCH_NAME=compare
. "$HERE/lib.sh"

MODE=quick
REPEAT=3
BUILD=""
OUT=""
SIZES=""
PHASES="core,loss,lag"
KINDS="ctsyncd,conntrackd,ctsyncd-keyed"
OVERRUN_RESYNC=2   # NetlinkOverrunResync of both configs (see below)
NETLINK_BUFFER=2097152

usage() {
	sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
	exit "${1:-0}"
}

while (($#)); do
	case $1 in
	--quick) MODE=quick ;;
	--full) MODE=full ;;
	--repeat) REPEAT=${2:?--repeat needs a number}; shift ;;
	--build) BUILD=${2:?--build needs a directory}; shift ;;
	--out) OUT=${2:?--out needs a directory}; shift ;;
	--sizes) SIZES=${2:?--sizes needs a list}; shift ;;
	--phases) PHASES=${2:?--phases needs a list}; shift ;;
	--kinds) KINDS=${2:?--kinds needs a list}; shift ;;
	--overrun-resync) OVERRUN_RESYNC=${2:?--overrun-resync needs seconds or 'default'}; shift ;;
	--netlink-buffer) NETLINK_BUFFER=${2:?--netlink-buffer needs a size in bytes}; shift ;;
	-h | --help) usage 0 ;;
	*) echo "compare: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done
[[ $NETLINK_BUFFER =~ ^[0-9]+$ ]] ||
	{ echo "compare: --netlink-buffer '$NETLINK_BUFFER' is not a size in bytes" >&2; exit 2; }
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || { echo "compare: --repeat wants a positive number, not '$REPEAT'" >&2; exit 2; }
[[ $OVERRUN_RESYNC == default || $OVERRUN_RESYNC =~ ^[1-9][0-9]*$ ]] ||
	{ echo "compare: --overrun-resync wants seconds or 'default', not '$OVERRUN_RESYNC'" >&2; exit 2; }
# the kinds, always in this order (see order() below)
KIND_LIST=()
for k in ctsyncd ctsyncd-keyed conntrackd; do
	[[ ",$KINDS," == *",$k,"* ]] && KIND_LIST+=("$k")
done
IFS=, read -r -a raw_kinds <<<"$KINDS"
for k in "${raw_kinds[@]}"; do
	[[ $k == ctsyncd || $k == conntrackd || $k == ctsyncd-keyed ]] ||
		{ echo "compare: unknown kind '$k' in --kinds (ctsyncd, conntrackd, ctsyncd-keyed)" >&2; exit 2; }
done
((${#KIND_LIST[@]})) || { echo "compare: --kinds names no kind" >&2; exit 2; }
has_kind() { [[ " ${KIND_LIST[*]} " == *" $1 "* ]]; }
[[ $(id -u) -eq 0 ]] || { echo "compare: must run as root (namespaces, conntrack)" >&2; exit 2; }

# "10k" -> 10000, "1M" -> 1000000
num() {
	local v=$1
	case $v in
	*k) echo $((${v%k} * 1000)) ;;
	*M) echo $((${v%M} * 1000000)) ;;
	*) echo "$v" ;;
	esac
}

# ---------------------------------------------------------------------------
# the plan of the run, per mode
# ---------------------------------------------------------------------------
if [[ $MODE == quick ]]; then
	DEF_SIZES="10k,100k"
	LOSS_N=10000; LOSS_RATES="20"; LOSS_CAP=60; LOSS_MARKS="60"
	LAG_RATE=10000; LAG_SECONDS=2; LAG_DRAIN=10
	OPTIONAL_SIZE=""
else
	DEF_SIZES="10k,100k,500k"
	LOSS_N=100000; LOSS_RATES="5 20 50"; LOSS_CAP=120; LOSS_MARKS="60,120"
	LAG_RATE=50000; LAG_SECONDS=10; LAG_DRAIN=30
	OPTIONAL_SIZE=1000000   # run only if the time budget allows it
fi
LOSS_REPEAT=1               # loss runs are long when a daemon stalls: once per rate
FULL_BUDGET=$((20 * 60))    # seconds the full mode must stay under
SIZE_LIST=()
IFS=, read -r -a raw_sizes <<<"${SIZES:-$DEF_SIZES}"
for s in "${raw_sizes[@]}"; do
	v=$(num "$s")
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "compare: bad size '$s' in --sizes" >&2; exit 2; }
	SIZE_LIST+=("$v")
done
[[ -n $SIZES ]] && OPTIONAL_SIZE=""
# a wait gives up when the count has not moved for STALL seconds (while the
# daemon answers): enough for a daemon's overrun resync (NetlinkOverrunResync),
# its retransmission timers, and a dump of the kernel table; set per N
stall_for() {
	local base=4
	[[ $OVERRUN_RESYNC == default ]] && base=$((base + 30)) || base=$((base + OVERRUN_RESYNC))
	echo $((base + $1 / 50000))
}
has_phase() { [[ ",$PHASES," == *",$1,"* ]]; }

# ---------------------------------------------------------------------------
# binaries and packages
# ---------------------------------------------------------------------------
BUILD=${BUILD:-$TOP/build/default}
CTSYNCD=$BUILD/ctsyncd
CTLOAD=$BUILD/bench/ctload
TASKCLOCK=$BUILD/bench/taskclock
if [[ ! -x $CTSYNCD || ! -x $CTLOAD || ! -x $TASKCLOCK ]]; then
	echo "compare: building ctsyncd and ctload in $BUILD" >&2
	"$TOP/scripts/build.sh" "$BUILD" >/dev/null || { echo "compare: the build in $BUILD failed" >&2; exit 1; }
fi
[[ -x $CTSYNCD && -x $CTLOAD && -x $TASKCLOCK ]] ||
	{ echo "compare: $CTSYNCD, $CTLOAD or $TASKCLOCK is missing" >&2; exit 1; }

need_pkg() { bench_need_pkg "$@"; }
need_pkg conntrackd || { echo "compare: cannot install conntrackd" >&2; exit 1; }
need_pkg gnuplot-nox || echo "compare: gnuplot-nox is missing; the figures will be skipped" >&2
need_pkg nftables || { echo "compare: cannot install nftables" >&2; exit 1; }
CONNTRACKD=$(command -v conntrackd || echo /usr/sbin/conntrackd)
for c in python3 ip nft "$CONNTRACKD"; do
	command -v "$c" >/dev/null || { echo "compare: '$c' is missing" >&2; exit 1; }
done
# the program of a kind: ctsyncd-keyed is the ctsyncd binary with a key
prog_of() { if [[ $1 == conntrackd ]]; then echo conntrackd; else echo ctsyncd; fi; }
client_of() { if [[ $(prog_of "$1") == ctsyncd ]]; then echo "$CTSYNCD"; else echo "$CONNTRACKD"; fi; }

# ---------------------------------------------------------------------------
# out directory, cleanup
# ---------------------------------------------------------------------------
OUT=${OUT:-$(mktemp -d /tmp/ctsyncd-compare.XXXXXX)}
mkdir -p "$OUT" || { echo "compare: cannot create $OUT" >&2; exit 1; }
OUT=$(cd "$OUT" && pwd)
CSV=$OUT/results.csv
LOG=$OUT/run.log
echo "metric,n,param,daemon,rep,value,ok,unit,note" >"$CSV"
: >"$LOG"
: >"$OUT/.pids"

NS_A="ctsb-A-$$"
NS_B="ctsb-B-$$"
NS_R="ctsb-R-$$"      # a spare namespace for the raw create rate
MAX_PATH=/proc/sys/net/netfilter/nf_conntrack_max
OLD_MAX=$(cat "$MAX_PATH")
SET_MAX=""
T_START=$(date +%s)

note() { printf '[%4ds] %s\n' $(($(date +%s) - T_START)) "$*" | tee -a "$LOG" >&2; }

cleanup() {
	local pid ns
	tc_stop
	if [[ -f $OUT/.pids ]]; then
		while read -r pid; do [[ -n $pid ]] && stop_pid "$pid"; done <"$OUT/.pids"
		rm -f "$OUT/.pids"
	fi
	for ns in "$NS_A" "$NS_B" "$NS_R"; do
		ip netns del "$ns" 2>/dev/null
	done
	# give nf_conntrack_max back, unless someone else changed it meanwhile
	if [[ -n $SET_MAX && $(cat "$MAX_PATH") == "$SET_MAX" ]]; then
		echo "$OLD_MAX" >"$MAX_PATH"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------------------
# machine set-up
# ---------------------------------------------------------------------------
largest=0
for n in "${SIZE_LIST[@]}" $OPTIONAL_SIZE $LOSS_N $((LAG_RATE * LAG_SECONDS)); do
	((n > largest)) && largest=$n
done
# A, B (after a commit) and the spare namespace may each hold N at once
want_max=$((3 * largest + 65536))
if ((OLD_MAX < want_max)); then
	echo "$want_max" >"$MAX_PATH" || { echo "compare: cannot raise nf_conntrack_max" >&2; exit 1; }
	SET_MAX=$want_max
fi
HASHLIMIT=$((2 * largest))
((HASHLIMIT < 262144)) && HASHLIMIT=262144

for ns in "$NS_A" "$NS_B" "$NS_R"; do
	ip netns add "$ns" || { echo "compare: cannot create namespace $ns" >&2; exit 1; }
	ip -n "$ns" link set lo up
done
bench_sync_link "$NS_A" "$NS_B" || { echo "compare: cannot create the veth pair" >&2; exit 1; }

# ---------------------------------------------------------------------------
# configurations: the same text for every kind, only the paths differ, and
# ctsyncd-keyed's Sync block has a Key
# ---------------------------------------------------------------------------
nsof() { case $1 in A) echo "$NS_A" ;; B) echo "$NS_B" ;; R) echo "$NS_R" ;; esac; }
conf() { echo "$OUT/$1-$2.conf"; }

write_conf() {   # write_conf DAEMON SIDE
	local d=$1 side=$2 me=1 peer=2 dev=syncA key_line="" general
	[[ $side == B ]] && me=2 peer=1 dev=syncB
	[[ $d == ctsyncd-keyed ]] && key_line="Key $KEY"
	general="HashSize 262144
HashLimit $HASHLIMIT
NetlinkBufferSize $NETLINK_BUFFER
NetlinkBufferSizeMaxGrowth 134217728"
	[[ $OVERRUN_RESYNC != default ]] && general+=$'\nNetlinkOverrunResync '"$OVERRUN_RESYNC"
	bench_write_conf "$(conf "$d" "$side")" "bench/compare.sh: $d, firewall $side" "$me" "$peer" "$dev" "" \
		"$key_line" "$general"
}
# ctsyncd-keyed: one key for both nodes, made for this run
KEY=$OUT/sync.key
if has_kind ctsyncd-keyed; then
	bench_make_key "$CTSYNCD" "$KEY" || exit 1
fi
for d in "${KIND_LIST[@]}"; do write_conf "$d" A; write_conf "$d" B; done
if has_kind ctsyncd-keyed; then
	for side in A B; do
		"$CTSYNCD" -C "$(conf ctsyncd-keyed "$side")" --check >/dev/null 2>>"$LOG" ||
			{ echo "compare: ctsyncd --check refuses $(conf ctsyncd-keyed "$side") (see $LOG)" >&2; exit 1; }
	done
fi

# client DAEMON SIDE ARGS...: the daemon's own client, run in its namespace
client() {
	local d=$1 side=$2
	shift 2
	ip netns exec "$(nsof "$side")" "$(client_of "$d")" -C "$(conf "$d" "$side")" "$@" 2>/dev/null
}
ctload_in() { local side=$1; shift; ip netns exec "$(nsof "$side")" "$CTLOAD" "$@"; }

# the PID of a daemon: ctsyncd writes it into its lock file; conntrackd 1.4.7
# leaves its lock file empty, so take the conntrackd process of the namespace
daemon_pid() { bench_daemon_pid "$OUT/$1-$2.lock" "$(prog_of "$1")" "$(nsof "$2")"; }

# start_daemon DAEMON SIDE: start it, wait until its control socket answers
# (at most 10 s); sets PID_<SIDE>
start_daemon() {
	local d=$1 side=$2 pid i
	rm -f "$OUT/$d-$side.lock" "$OUT/$d-$side.ctl"
	ip netns exec "$(nsof "$side")" "$(client_of "$d")" -C "$(conf "$d" "$side")" -d \
		>>"$OUT/$d-$side.stdout" 2>&1 || { note "$d on $side did not start (see $OUT/$d-$side.log)"; return 1; }
	for ((i = 0; i < 100; i++)); do
		pid=$(daemon_pid "$d" "$side") && break
		sleep 0.1
	done
	[[ -n ${pid:-} ]] || { note "no PID for $d on $side"; return 1; }
	echo "$pid" >>"$OUT/.pids"
	for ((i = 0; i < 100; i++)); do
		client "$d" "$side" -s cache >/dev/null && break
		sleep 0.1
	done
	printf -v "PID_$side" '%s' "$pid"
}

stop_daemons() {
	local pid
	for pid in ${PID_A:-} ${PID_B:-}; do stop_pid "$pid"; done
	# forget them in the cleanup list
	grep -vxF -e "${PID_A:-x}" -e "${PID_B:-x}" "$OUT/.pids" >"$OUT/.pids.new"
	mv "$OUT/.pids.new" "$OUT/.pids"
	PID_A="" PID_B=""
	tc_stop
}

# a fresh pair: both kernel tables empty, daemons of kind D started anew
# (ctsyncd-keyed: and both nodes have proven the other's session, see
# wait_proven)
fresh_pair() {
	local d=$1 side
	HANDSHAKE_S=""
	for side in A B R; do ctload_in "$side" flush >/dev/null; done
	start_daemon "$d" A && start_daemon "$d" B || return 1
	[[ $d == ctsyncd-keyed ]] && wait_proven "$d"
	return 0
}

# sessions of the peer a keyed ctsyncd has proven since its start
proven_of() {
	client "$1" "$2" -s network --json |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["envelope"]["sessions_accepted"])' 2>/dev/null ||
		echo 0
}

# A keyed node takes the peer's data only from a session it has proven by a
# challenge, and it challenges a session when that session's data arrives
# (doc/envelope.md, 3.2).  A, started first, sent its first datagram
# before B listened, so B proves A only at A's next datagram: the FTFW
# keepalive a second later, or the start of the burst, half of which B
# would then refuse (bench/README.md).  The trials measure the cost per
# state, not that of a start: wait (at most 5 s) until both have proven
# the other.  Sets HANDSHAKE_S: seconds from B's start, or "nan".
wait_proven() {
	local d=$1 i t0
	t0=$(date +%s.%N)
	HANDSHAKE_S=nan
	for ((i = 0; i < 50; i++)); do
		if (($(proven_of "$d" A) >= 1 && $(proven_of "$d" B) >= 1)); then
			HANDSHAKE_S=$(calc "$(date +%s.%N) - $t0")
			return 0
		fi
		sleep 0.1
	done
	note "$d: the nodes have not proven each other's session within 5 s (see the logs)"
	return 0
}

# CPU seconds of a process by the scheduler: the runtime of its threads
# (se.sum_exec_runtime in /proc/PID/task/*/sched, kernel and user time, ns
# resolution) plus the user+system time of its reaped children in ticks
# (conntrackd 1.4.7 commits in a forked child).  utime+stime of
# /proc/PID/stat count in 10 ms ticks, too coarse for 10k states.
# The CPU rows come from the task clock (tc_read) instead: on a kernel
# that does not preempt kernel code, the scheduler charges a woken daemon
# with time that ctload spent in its system calls (doc/benchmarks.md).
# These figures are kept as the *_sched rows, for comparison.
cpu_of() {
	local pid=$1 hz
	hz=$(getconf CLK_TCK)
	awk -v hz="$hz" -v stat="/proc/$pid/stat" '
		/^se.sum_exec_runtime/ { ms += $NF; have = 1 }
		END {
			getline line < stat
			sub(/.*\) /, "", line); split(line, f, " ")
			if (!have) ms = (f[12] + f[13]) * 1000 / hz
			printf "%.6f\n", ms / 1000 + (f[14] + f[15]) / hz
		}' /proc/"$pid"/task/*/sched 2>/dev/null || echo 0
}
# The CPU seconds of the two daemons by the kernel's task clock: a
# bench/taskclock coprocess holds counters on every thread of PID_A and
# PID_B (and on the children they fork) from tc_start on.  tc_read sets
# CPU_A and CPU_B, "nan" when the task clock is not available.
TC_IN="" TC_OUT="" TC_CHILD=""
tc_start() {
	local line
	tc_stop
	coproc TC { exec "$TASKCLOCK" "$PID_A" "$PID_B" 2>>"$LOG"; }
	TC_CHILD=$TC_PID TC_OUT=${TC[0]} TC_IN=${TC[1]}
	if ! read -r -t 5 line <&"$TC_OUT" || [[ $line != ready ]]; then
		note "the task clock is not available (see $LOG): CPU rows are nan"
		tc_stop
		return 1
	fi
}
tc_read() {
	CPU_A=nan CPU_B=nan
	[[ -n $TC_CHILD ]] || return 1
	{ echo >&"$TC_IN" && read -r -t 5 CPU_A CPU_B <&"$TC_OUT"; } 2>/dev/null && return 0
	CPU_A=nan CPU_B=nan
	return 1
}
tc_stop() {
	[[ -n $TC_CHILD ]] || return 0
	# bash closes the coprocess's ends itself when it has reaped it
	if [[ -n ${TC[1]:-} ]]; then exec {TC_IN}>&-; fi
	if [[ -n ${TC[0]:-} ]]; then exec {TC_OUT}<&-; fi
	wait "$TC_CHILD" 2>/dev/null
	TC_IN="" TC_OUT="" TC_CHILD=""
}
# per 1000 states in ms, from two CPU readings in seconds ("nan" stays nan)
per_k() { [[ $1 == nan || $2 == nan ]] && echo nan || calc "1e6 * ($2 - $1) / $3"; }

# VmRSS of a process, in bytes
rss_of() { awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$1/status" 2>/dev/null || echo 0; }

# bytes and datagrams sent on side S's sync device (kernel counters)
link_tx() {
	ip netns exec "$(nsof "$1")" cat /sys/class/net/"sync$1"/statistics/tx_bytes \
		/sys/class/net/"sync$1"/statistics/tx_packets | paste -sd' '
}

# ctsyncd's own counters of side S's sync traffic, from `-s network --json`:
# "LINK_BYTES LINK_PACKETS SYNC_BYTES" -- what the links handed to the kernel
# (UDP payloads: sealed datagrams when keyed) and the sync messages inside
# them; "nan nan nan" for conntrackd or when the request fails.  The JSON
# goes to the log (the envelope's counters tell how the handshake went).
net_counters() {
	local d=$1 side=$2 what=$3 js
	if [[ $(prog_of "$d") != ctsyncd ]] || ! js=$(client "$d" "$side" -s network --json); then
		echo "nan nan nan"
		return
	fi
	python3 -c 'import json, sys
d = json.loads(sys.argv[1])
links = d["links"]
print(sum(l["bytes_sent"] for l in links), sum(l["packets_sent"] for l in links), d["sync"]["bytes_sent"])
keep = ("messages_sent", "states_sent", "states_received", "retransmitted", "nack_sent",
        "nack_received", "resync_sent", "resync_received", "hello_resends", "peer_restarts")
sy = {k: v for k, v in d["sync"].items() if k in keep and v}
e = {k: v for k, v in d.get("envelope", {}).items() if v and k not in ("keyed", "session", "keys")}
print("%s %s: sync %s%s" % (sys.argv[2], sys.argv[3], json.dumps(sy),
      " envelope " + json.dumps(e) if d.get("envelope", {}).get("keyed") else ""), file=sys.stderr)
' "$js" "$side" "$what" 2>>"$LOG" || echo "nan nan nan"
}

# netlink overruns of one daemon since its start
overruns_of() {
	local d=$1 side=$2
	if [[ $(prog_of "$d") == ctsyncd ]]; then
		client "$d" "$side" -s --json | grep -o '"overruns":[0-9]*' | head -n1 | cut -d: -f2 | grep . || echo nan
	else
		client "$d" "$side" -s runtime | awk -F: '/netlink overrun/ { gsub(/[ \t]/, "", $2); print $2; f = 1 } END { if (!f) print "nan" }'
	fi
}

# measure SIDE DAEMON ARGS... [-- CMD...]: compare-report.py measure, run in
# SIDE's namespace (so that `--what kernel` counts that kernel table), about
# the daemon D on B.  Sets M_JSON (logged) and M_REACHED (1/0), M_TDONE,
# M_T99, M_LAST, M_FRAC, M_ELAPSED and M_AT (fractions at the --marks);
# '-' where there is no value.
measure() {
	local side=$1 d=$2 out
	shift 2
	out=$(ip netns exec "$(nsof "$side")" python3 "$REPORT" measure --daemon "$(prog_of "$d")" \
		--client "$(client_of "$d")" --conf "$(conf "$d" B)" --ctload "$CTLOAD" "$@")
	M_JSON=$(head -n1 <<<"$out")
	read -r M_REACHED M_TDONE M_T99 M_LAST M_FRAC M_ELAPSED M_STALLED M_AT <<<"$(sed -n 2p <<<"$out")"
	M_REACHED=${M_REACHED:-0} M_FRAC=${M_FRAC:-0} M_ELAPSED=${M_ELAPSED:-0} M_LAST=${M_LAST:--}
}


# row METRIC N PARAM DAEMON REP VALUE OK UNIT [NOTE]: one line of results.csv
row() {
	local note=${9:-}
	echo "$1,$2,$3,$4,$5,$6,$7,$8,\"${note//\"/}\"" >>"$CSV"
}

# time_row METRIC N DAEMON REP [RATE_METRIC]: the time at which the last
# `measure` converged (and N divided by it), or where it stalled
time_row() {
	local m=$1 n=$2 d=$3 rep=$4 rm=${5:-} why
	if [[ $M_REACHED == 1 ]]; then
		row "$m" "$n" "" "$d" "$rep" "$M_TDONE" 1 s
		[[ -n $rm ]] && row "$rm" "$n" "" "$d" "$rep" "$(calc "$n / ($M_TDONE + 1e-6)")" 1 states/s
	else
		if [[ $M_STALLED == 1 ]]; then
			why="stalled at $(calc "100 * $M_FRAC") % (no progress for ${STALL}s)"
		else
			why="at $(calc "100 * $M_FRAC") % after $(calc "int($M_ELAPSED + 0.5)") s"
		fi
		row "$m" "$n" "" "$d" "$rep" nan 0 s "$why"
		[[ -n $rm ]] && row "$rm" "$n" "" "$d" "$rep" nan 0 states/s "$why"
	fi
	return 0
}

# ---------------------------------------------------------------------------
# one trial: daemon D, size N, repetition REP, on a fresh pair
# ---------------------------------------------------------------------------
run_trial() {
	local d=$1 n=$2 rep=$3
	local tmo=$((20 + n / 10000))   # per wait; an overrun costs NetlinkOverrunResync more
	[[ $OVERRUN_RESYNC == default ]] && tmo=$((tmo + 30))
	STALL=$(stall_for "$n")
	local ident=(--proto tcp --base-addr 198.18.128.1)   # which entries
	local entry=("${ident[@]}" --timeout 600)
	local cpuA0 cpuB0 rssA0 rssB0 txA0 txB0 pA0 pB0 cpuA1 cpuB1 rssA1 rssB1 txA1 txB1 pA1 pB1
	local schedA0 schedB0 schedA1 schedB1
	note "$d N=$n rep $rep"
	if ! fresh_pair "$d"; then
		row repl_time "$n" "" "$d" "$rep" nan 0 s "daemons did not start"
		stop_daemons
		return
	fi
	tc_start
	if [[ $d == ctsyncd-keyed ]]; then
		if [[ $HANDSHAKE_S == nan ]]; then
			row handshake_time "$n" "" "$d" "$rep" nan 0 s "not proven within 5 s"
		else
			row handshake_time "$n" "" "$d" "$rep" "$HANDSHAKE_S" 1 s
		fi
	fi

	# --- replication: `ctload create N` on A until B's external cache holds N;
	# the costs are read before and 0.3 s after (the last ACKs, timers)
	# (ctsyncd's counters are read outside the CPU readings: the answer
	# costs the daemon CPU)
	local lbA0 lpA0 sbA0 lbA1 lpA1 sbA1
	read -r lbA0 lpA0 sbA0 <<<"$(net_counters "$d" A "$d N=$n rep=$rep before")"
	net_counters "$d" B "$d N=$n rep=$rep before" >/dev/null
	tc_read; cpuA0=$CPU_A cpuB0=$CPU_B
	read -r schedA0 schedB0 rssA0 rssB0 <<<"$(cpu_of "$PID_A") $(cpu_of "$PID_B") $(rss_of "$PID_A") $(rss_of "$PID_B")"
	read -r txA0 pA0 <<<"$(link_tx A)"
	read -r txB0 pB0 <<<"$(link_tx B)"
	measure A "$d" --what active --target "$n" --stall "$STALL" --timeout "$tmo" -- "$CTLOAD" create "$n" "${entry[@]}"
	echo "$d N=$n rep=$rep replication $M_JSON" >>"$LOG"
	sleep 0.3
	tc_read; cpuA1=$CPU_A cpuB1=$CPU_B
	read -r schedA1 schedB1 rssA1 rssB1 <<<"$(cpu_of "$PID_A") $(cpu_of "$PID_B") $(rss_of "$PID_A") $(rss_of "$PID_B")"
	read -r txA1 pA1 <<<"$(link_tx A)"
	read -r txB1 pB1 <<<"$(link_tx B)"
	read -r lbA1 lpA1 sbA1 <<<"$(net_counters "$d" A "$d N=$n rep=$rep after")"
	net_counters "$d" B "$d N=$n rep=$rep after" >/dev/null
	time_row repl_time "$n" "$d" "$rep" repl_rate
	if [[ $M_T99 != - ]]; then
		row repl_99 "$n" "" "$d" "$rep" "$M_T99" 1 s
	else
		row repl_99 "$n" "" "$d" "$rep" nan 0 s "never reached 99 %"
	fi
	[[ $M_LAST == - ]] && M_LAST=0
	row repl_lost "$n" "" "$d" "$rep" "$((n - M_LAST))" 1 states
	row cpu_a "$n" "" "$d" "$rep" "$(per_k "$cpuA0" "$cpuA1" "$n")" 1 ms
	row cpu_b "$n" "" "$d" "$rep" "$(per_k "$cpuB0" "$cpuB1" "$n")" 1 ms
	row cpu_a_sched "$n" "" "$d" "$rep" "$(per_k "$schedA0" "$schedA1" "$n")" 1 ms
	row cpu_b_sched "$n" "" "$d" "$rep" "$(per_k "$schedB0" "$schedB1" "$n")" 1 ms
	row rss_start_a "$n" "" "$d" "$rep" "$(calc "$rssA0 / 1024")" 1 KiB
	row rss_start_b "$n" "" "$d" "$rep" "$(calc "$rssB0 / 1024")" 1 KiB
	row rss_a "$n" "" "$d" "$rep" "$(calc "($rssA1 - $rssA0) / $n")" 1 B
	row rss_b "$n" "" "$d" "$rep" "$(calc "($rssB1 - $rssB0) / $n")" 1 B
	row wire_ab "$n" "" "$d" "$rep" "$(calc "($txA1 - $txA0) / $n")" 1 B
	row wire_both "$n" "" "$d" "$rep" "$(calc "($txA1 - $txA0 + $txB1 - $txB0) / $n")" 1 B
	row dgram_ab "$n" "" "$d" "$rep" "$(calc "1000 * ($pA1 - $pA0) / $n")" 1 dgrams
	if ((pA1 > pA0)); then
		row dgram_size_ab "$n" "" "$d" "$rep" "$(calc "($txA1 - $txA0) / ($pA1 - $pA0)")" 1 B
	else
		row dgram_size_ab "$n" "" "$d" "$rep" nan 0 B "no datagram"
	fi
	# what each frame on the link carried beyond the sync messages: the
	# device's bytes less ctsyncd's count of the message bytes it sent, per
	# frame.  Unlike the mean frame it does not depend on how full the
	# datagrams were: 42 B of Ethernet, IP and UDP headers, and keyed the
	# envelope's 38 B more
	if [[ $sbA0 != nan && $sbA1 != nan ]] && ((pA1 > pA0)); then
		row dgram_over_ab "$n" "" "$d" "$rep" "$(calc "($txA1 - $txA0 - ($sbA1 - $sbA0)) / ($pA1 - $pA0)")" 1 B
	fi
	# the same from ctsyncd's own counters: what its links sent beyond the
	# messages (0 unkeyed, 38 B a datagram keyed), to the log
	if [[ $lbA0 != nan && $lbA1 != nan ]] && ((lpA1 > lpA0)); then
		echo "$d N=$n rep=$rep envelope bytes per datagram by ctsyncd's counters:" \
			"$(calc "($lbA1 - $lbA0 - ($sbA1 - $sbA0)) / ($lpA1 - $lpA0)")" \
			"($((lpA1 - lpA0)) datagrams, link $((txA1 - txA0)) B in $((pA1 - pA0)) frames)" >>"$LOG"
	fi

	# --- update burst: every entry gets a new mark; B has converged when its
	# external cache has counted N more updates (an update of a state B
	# lacks creates it, so the count is updates + active states)
	measure A "$d" --what updated --target "$n" --stall "$STALL" --timeout "$tmo" -- "$CTLOAD" update "$n" "${entry[@]}" --mark 1
	echo "$d N=$n rep=$rep update $M_JSON" >>"$LOG"
	time_row update_time "$n" "$d" "$rep" update_rate

	# --- commit of B's external cache into B's kernel: from the request
	# until the client has returned and B's kernel holds N entries
	local cpuC0 cpuC1 raw rr
	tc_read; cpuC0=$CPU_B
	measure B "$d" --what kernel --target "$n" --stall "$STALL" --wait-cmd --timeout $((30 + n / 5000)) -- \
		"$(client_of "$d")" -C "$(conf "$d" B)" -c
	tc_read; cpuC1=$CPU_B
	echo "$d N=$n rep=$rep commit $M_JSON" >>"$LOG"
	time_row commit_time "$n" "$d" "$rep" commit_rate
	row commit_cpu "$n" "" "$d" "$rep" "$(per_k "$cpuC0" "$cpuC1" "$n")" 1 ms
	# the kernel's own create rate, right now, with the same tables around
	# (A's N entries; B's committed ones flushed first)
	ctload_in B flush >/dev/null
	raw=$(ctload_in R raw-rate "$n" "${entry[@]}" --json 2>>"$LOG")
	echo "$d N=$n rep=$rep raw $raw" >>"$LOG"
	rr=$(sed -n 's/.*"rate_per_s":\([0-9.]*\).*/\1/p' <<<"$raw")
	if [[ -n $rr ]]; then
		row raw_rate "$n" "" "$d" "$rep" "$rr" 1 states/s
		if [[ $M_REACHED == 1 ]]; then
			row commit_ratio "$n" "" "$d" "$rep" "$(calc "$n / ($M_TDONE + 1e-6) / $rr")" 1 x
		else
			row commit_ratio "$n" "" "$d" "$rep" nan 0 x "commit incomplete"
		fi
	fi

	# --- bulk resync: B forgets its external cache and asks A (-n) for
	# everything; until B holds N again.  CPU as for the replication: from
	# the request to 0.3 s after B holds N
	client "$d" B -f external >/dev/null
	measure A "$d" --what active --target 0 --down --timeout 10
	tc_read; cpuA0=$CPU_A cpuB0=$CPU_B
	measure A "$d" --what active --stall "$STALL" --target "$n" --timeout "$tmo" -- \
		ip netns exec "$NS_B" "$(client_of "$d")" -C "$(conf "$d" B)" -n
	echo "$d N=$n rep=$rep resync $M_JSON" >>"$LOG"
	sleep 0.3
	tc_read; cpuA1=$CPU_A cpuB1=$CPU_B
	time_row resync_time "$n" "$d" "$rep" resync_rate
	row resync_cpu_a "$n" "" "$d" "$rep" "$(per_k "$cpuA0" "$cpuA1" "$n")" 1 ms
	row resync_cpu_b "$n" "" "$d" "$rep" "$(per_k "$cpuB0" "$cpuB1" "$n")" 1 ms
	if [[ $cpuA0 == nan || $cpuA1 == nan || $cpuB0 == nan || $cpuB1 == nan ]]; then
		row resync_cpu "$n" "" "$d" "$rep" nan 1 ms
	else
		row resync_cpu "$n" "" "$d" "$rep" "$(calc "1e6 * ($cpuA1 - $cpuA0 + $cpuB1 - $cpuB0) / $n")" 1 ms
	fi

	# --- delete burst: until B's external cache is empty
	measure A "$d" --what active --target 0 --stall "$STALL" --down --timeout "$tmo" -- "$CTLOAD" delete "$n" "${ident[@]}"
	echo "$d N=$n rep=$rep delete $M_JSON" >>"$LOG"
	time_row delete_time "$n" "$d" "$rep" delete_rate

	local oa ob
	net_counters "$d" A "$d N=$n rep=$rep end" >/dev/null
	net_counters "$d" B "$d N=$n rep=$rep end" >/dev/null
	oa=$(overruns_of "$d" A)
	ob=$(overruns_of "$d" B)
	row overruns "$n" "" "$d" "$rep" "$(calc "$oa + $ob")" 1 count "A=$oa B=$ob"
	stop_daemons
}

# ---------------------------------------------------------------------------
# convergence under loss: nftables drops P % of the sync datagrams leaving
# each namespace (so both directions, data and ACK/NACK alike); N entries are
# created on A
# ---------------------------------------------------------------------------
loss_on() {
	local p=$1 ns
	for ns in "$NS_A" "$NS_B"; do
		ip netns exec "$ns" nft -f - <<NFT || note "cannot install the loss rule in $ns"
table inet ctsb_loss {
	chain out {
		type filter hook output priority 0;
		udp dport 3780 numgen random mod 100 < $p drop
	}
}
NFT
	done
}
loss_off() {
	local ns
	for ns in "$NS_A" "$NS_B"; do ip netns exec "$ns" nft delete table inet ctsb_loss 2>/dev/null; done
	return 0
}

run_loss() {
	local d=$1 p=$2 rep=$3 n=$LOSS_N m f i marks
	note "$d under $p % loss, N=$n"
	if ! fresh_pair "$d"; then
		row loss_time "$n" "$p% loss" "$d" "$rep" nan 0 s "daemons did not start"
		stop_daemons
		return
	fi
	loss_on "$p"
	measure A "$d" --what active --target "$n" --timeout "$LOSS_CAP" --marks "$LOSS_MARKS" -- \
		"$CTLOAD" create "$n" --proto tcp --timeout 600 --base-addr 198.18.128.1
	echo "$d loss=$p rep=$rep $M_JSON" >>"$LOG"
	loss_off
	if [[ $M_REACHED == 1 ]]; then
		row loss_time "$n" "$p% loss" "$d" "$rep" "$M_TDONE" 1 s
	else
		row loss_time "$n" "$p% loss" "$d" "$rep" nan 0 s "stalled at $(calc "100 * $M_FRAC") % after $LOSS_CAP s"
	fi
	IFS=, read -r -a marks <<<"$LOSS_MARKS"
	read -r -a f <<<"$M_AT"
	for i in "${!marks[@]}"; do
		row "loss_frac${marks[$i]}" "$n" "$p% loss" "$d" "$rep" "$(calc "100 * ${f[$i]:-0}")" 1 %
	done
	stop_daemons
}

# ---------------------------------------------------------------------------
# replication lag under a steady paced load (the method is explained in
# compare-report.py, cmd_lag)
# ---------------------------------------------------------------------------
run_lag() {
	local d=$1 rep=$2 m=$((LAG_RATE * LAG_SECONDS)) out p50 p99 frac
	local param="$((LAG_RATE / 1000))k/s"
	note "$d lag under $LAG_RATE/s for $LAG_SECONDS s"
	if ! fresh_pair "$d"; then
		row lag_p50 "$m" "$param" "$d" "$rep" nan 0 ms "daemons did not start"
		stop_daemons
		return
	fi
	out=$(ip netns exec "$NS_A" python3 "$REPORT" lag --daemon "$(prog_of "$d")" --client "$(client_of "$d")" \
		--conf "$(conf "$d" B)" --ctload "$CTLOAD" --target "$m" --drain "$LAG_DRAIN" \
		--hard-timeout $((LAG_SECONDS + LAG_DRAIN + 10)) --curves "$OUT/lag-$d-$rep.dat" -- \
		"$CTLOAD" create "$m" --rate "$LAG_RATE" --proto tcp --timeout 600 --base-addr 198.18.128.1)
	echo "$d lag rep=$rep $(head -n1 <<<"$out")" >>"$LOG"
	read -r p50 p99 frac <<<"$(sed -n 2p <<<"$out")"
	if [[ ${frac:-0} != 0 && $p50 != nan ]]; then
		row lag_p50 "$m" "$param" "$d" "$rep" "$p50" 1 ms
		row lag_p99 "$m" "$param" "$d" "$rep" "$p99" 1 ms
	else
		row lag_p50 "$m" "$param" "$d" "$rep" nan 0 ms "no samples"
	fi
	row lag_reached "$m" "$param" "$d" "$rep" "$(calc "100 * ${frac:-0}")" 1 %
	stop_daemons
}

# ---------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------
# the kinds alternate: odd repetitions run ctsyncd, ctsyncd-keyed,
# conntrackd, even ones the reverse, so no kind always runs first, and the
# keyed and unkeyed ctsyncd always run one right after the other (they
# share the machine's noise best; their ratios are the finest ones)
order() {
	local i
	if (($1 % 2)); then
		echo "${KIND_LIST[*]}"
	else
		for ((i = ${#KIND_LIST[@]} - 1; i >= 0; i--)); do printf '%s ' "${KIND_LIST[$i]}"; done
		echo
	fi
}

# How this kernel accounts a task that is woken often (bench/wakeburn):
# 500 wakeups of known work on CPU 0, while ctload creates entries on the
# same CPU.  When the scheduler runtime is far above the task clock, the
# scheduler charges woken tasks with time they spent waiting, and the CPU
# rows, which come from the task clock, are the ones to trust.
accounting_check() {
	local cpu out wpid
	cpu=$(taskset -pc $$ 2>/dev/null | sed 's/.*: *//; s/[-,].*//')
	[[ $cpu =~ ^[0-9]+$ ]] || { echo "not run (no CPU list)"; return; }
	"$BUILD/bench/wakeburn" "$cpu" >"$OUT/wakeburn.json" 2>>"$LOG" &
	wpid=$!
	ip netns exec "$NS_R" taskset -c "$cpu" "$CTLOAD" create 200000 --proto tcp \
		--base-addr 198.18.128.1 --timeout 600 >/dev/null 2>>"$LOG"
	wait "$wpid"
	ctload_in R flush >/dev/null
	out=$(cat "$OUT/wakeburn.json" 2>/dev/null)
	[[ -n $out ]] || { echo "failed (see $LOG)"; return; }
	python3 -c 'import json, sys
d = json.loads(sys.argv[1])
print("%d wakeups with %.1f ms of work on one CPU beside ctload: task clock %.1f ms, "
      "scheduler runtime %.1f ms" % (d["wakeups"], d["work_ms"], d["task_clock_ms"], d["sched_runtime_ms"]))' "$out"
}

{
	echo "machine: $(nproc) CPUs, $(uname -r), $(awk '/MemTotal/ { printf "%.1f GiB RAM", $2 / 1048576 }' /proc/meminfo)"
	echo "cpu: $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "nf_conntrack_max: $(cat "$MAX_PATH") (was $OLD_MAX), nf_conntrack_buckets: $(cat /proc/sys/net/netfilter/nf_conntrack_buckets)"
	echo "ctsyncd: $("$CTSYNCD" --version 2>&1 | head -n1), conntrackd: $("$CONNTRACKD" -v 2>&1 | head -n1)"
	echo "CPU accounting: $(accounting_check)"
	echo "mode: $MODE, repeat: $REPEAT, sizes: ${SIZE_LIST[*]} ${OPTIONAL_SIZE:+(+$OPTIONAL_SIZE if time allows)}, phases: $PHASES"
	echo "kinds: ${KIND_LIST[*]}"
	if has_kind ctsyncd-keyed; then
		echo "key of ctsyncd-keyed: $KEY ($(stat -c '%U:%G %a' "$KEY"), made by ctsyncd --genkey for this run)"
	fi
} | tee "$OUT/machine.txt" >&2

if has_phase core; then
	for ((rep = 1; rep <= REPEAT; rep++)); do
		for n in "${SIZE_LIST[@]}"; do
			for d in $(order "$rep"); do run_trial "$d" "$n" "$rep"; done
		done
	done
fi
if has_phase loss; then
	for ((rep = 1; rep <= LOSS_REPEAT; rep++)); do
		for p in $LOSS_RATES; do
			for d in $(order "$rep"); do run_loss "$d" "$p" "$rep"; done
		done
	done
fi
if has_phase lag; then
	for ((rep = 1; rep <= REPEAT; rep++)); do
		for d in $(order "$rep"); do run_lag "$d" "$rep"; done
	done
fi
# the largest size only when it fits in the budget: a trial pair at N costs
# about as much as the pair at the previous size times the size ratio
if has_phase core && [[ -n $OPTIONAL_SIZE ]]; then
	elapsed=$(($(date +%s) - T_START))
	prev=${SIZE_LIST[-1]}
	t_prev=$(python3 - "$LOG" "$prev" <<'PY'
import re, sys, json
# time spent by the trials at the previous size (replication to delete)
tot = 0.0
for line in open(sys.argv[1]):
    m = re.match(r'\S+ N=(\d+) rep=\d+ \w+ (\{.*\})$', line)
    if m and int(m.group(1)) == int(sys.argv[2]):
        tot += json.loads(m.group(2)).get('elapsed', 0)
print(int(tot))
PY
)
	# measured time of one repetition at the previous size, scaled to the
	# new size, plus half again for the daemons' start, stop and the raw rate
	estimate=$((t_prev / REPEAT * OPTIONAL_SIZE / prev * 3 / 2 + 30))
	if ((elapsed + estimate < FULL_BUDGET - 60)); then
		note "budget: ${elapsed}s used, N=$OPTIONAL_SIZE estimated ${estimate}s: running it once"
		for d in $(order 1); do run_trial "$d" "$OPTIONAL_SIZE" 1; done
	else
		note "budget: ${elapsed}s used, N=$OPTIONAL_SIZE estimated ${estimate}s: skipped"
		echo "N=$OPTIONAL_SIZE skipped: estimated ${estimate}s with ${elapsed}s used of ${FULL_BUDGET}s" >>"$OUT/machine.txt"
	fi
fi

note "done in $(($(date +%s) - T_START)) s; results in $OUT"
python3 "$REPORT" report --csv "$CSV" --plots "$OUT" | tee "$OUT/results.txt"
echo "total time: $(($(date +%s) - T_START)) s" >>"$OUT/machine.txt"
echo "results: $OUT (results.csv, results.txt, *.conf, *.log, figures)" >&2
