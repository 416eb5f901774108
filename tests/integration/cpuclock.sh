#!/bin/bash
# The benchmark's CPU clocks.  bench/taskclock counts a busy process's CPU
# (about its run time, and not for a sleeping one), the CPU of a child the
# process forks after the counters were opened (conntrackd 1.4.7 commits in
# a child), and names a bad argument.  bench/wakeburn reports its three
# figures as JSON, and the task clock it reads covers the work it did.
# The bounds are wide: these check that the clocks count, not how fast
# anything is.
. "$(dirname "$0")/../lib/common.sh"
require_cmd python3

TASKCLOCK=$(built_tool bench/taskclock)
WAKEBURN=$(built_tool bench/wakeburn)
require_built "$TASKCLOCK"
require_built "$WAKEBURN"

# between LO HI VALUE: LO <= VALUE <= HI (decimals)
between() { awk -v lo="$1" -v hi="$2" -v v="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'; }

# tc_twice DELAY PID...: the task clock of the PIDs over DELAY seconds,
# one "a b ..." line of differences
tc_twice() {
	local delay=$1
	shift
	{ echo; sleep "$delay"; echo; } | "$TASKCLOCK" "$@" | python3 -c '
import sys
lines = [l.split() for l in sys.stdin.read().splitlines()]
assert lines[0] == ["ready"], lines
print(" ".join("%.6f" % (float(b) - float(a)) for a, b in zip(lines[1], lines[2])))'
}

# --- a busy process and a sleeping one ---------------------------------------
# (a shell loop, bounded in count, killed after the reading; the busy
# process itself must be $!: a child forked before the counters were opened
# is not counted)
sh -c 'i=0; while [ $i -lt 50000000 ]; do i=$((i + 1)); done' &
busy=$!
track_pid "$busy"
sleep 30 &
idle=$!
track_pid "$idle"
read -r t_busy t_idle <<<"$(tc_twice 0.5 "$busy" "$idle")"
check "a busy process: $t_busy s of CPU in 0.5 s (0.05-0.6 expected)" between 0.05 0.6 "${t_busy:-x}"
check "a sleeping process: $t_idle s of CPU in 0.5 s (< 0.01 expected)" between 0 0.01 "${t_idle:-x}"
kill "$busy" "$idle" 2>/dev/null

# --- a child forked after the counters were opened ---------------------------
sh -c 'sleep 0.3; timeout 0.4 sh -c "while :; do :; done"; sleep 30' &
parent=$!
track_pid "$parent"
t_fork=$(tc_twice 1.2 "$parent")
check "a child's CPU counts for its parent: $t_fork s (0.05-0.6 expected)" between 0.05 0.6 "${t_fork:-x}"
kill "$parent" 2>/dev/null

# --- bad arguments ---------------------------------------------------------------
out=$("$TASKCLOCK" 12x 2>&1 </dev/null); rc=$?
check "taskclock 12x: exit 1 naming it ($out)" eval '[[ $rc -eq 1 && $out == *"'"'"'12x'"'"'"* ]]'
out=$("$TASKCLOCK" 2147483646 2>&1 </dev/null); rc=$?
check "taskclock on a missing process: exit 1 naming it ($out)" eval '[[ $rc -eq 1 && $out == *2147483646* ]]'
out=$("$TASKCLOCK" 2>&1 </dev/null); rc=$?
check "taskclock without a PID: usage, exit 2" eval '[[ $rc -eq 2 && $out == usage:* ]]'

# --- wakeburn ------------------------------------------------------------------
cpu=$(taskset -pc $$ | sed 's/.*: *//; s/[-,].*//')
json=$("$WAKEBURN" "$cpu" 50 20000 1000 2>&1); rc=$?
check "wakeburn on CPU $cpu: exit 0 ($json)" test "$rc" -eq 0
verdict=$(python3 -c '
import json, sys
d = json.loads(sys.argv[1])
ok = d["wakeups"] == 50 and d["work_ms"] > 0 and d["task_clock_ms"] >= 0.5 * d["work_ms"] \
     and d["sched_runtime_ms"] >= 0.5 * d["work_ms"]
print("ok" if ok else "bad")' "$json" 2>&1)
check "wakeburn: both clocks cover the work ($json)" test "$verdict" = ok
out=$("$WAKEBURN" "$cpu" 0 2>&1); rc=$?
check "wakeburn with 0 wakeups: exit 2 naming it ($out)" eval '[[ $rc -eq 2 && $out == *"'"'"'0'"'"'"* ]]'
out=$("$WAKEBURN" 4096 2>&1); rc=$?
check "wakeburn on CPU 4096: exit 2 naming it ($out)" eval '[[ $rc -eq 2 && $out == *4096* ]]'

finish
