#!/bin/bash
# Active-active load sharing (doc/clusters.md): every firewall forwards the
# flows of the hash buckets it owns and replicates their states to all the
# others over one multicast group; keepalived runs one VRRP instance per
# bucket.  With the shipped nftables steering, keepalived.conf and hook
# (tests/lib/cluster.sh draws the cluster), with 2 and with 3 firewalls:
#
#   - long-lived TCP connections from client addresses chosen to cover every
#     bucket are split across the firewalls: each kernel table holds exactly
#     the connections of its own bucket, and every firewall's external cache
#     holds every other firewall's, by origin;
#   - one firewall crashes (freeze, links down, kill); the next one in its
#     bucket's order becomes the master, and its hook commits exactly the
#     failed firewall's states (counted: all of them created, none of the
#     third firewall's) before it lets the bucket's packets in;
#   - every connection survives, with no packet dropped as invalid on any
#     survivor; those of the other buckets flow on without a gap; a new
#     connection from the failed bucket goes through the new owner.
#
# AA_SIZES the cluster sizes to run (default "2 3"), AA_PER client
# addresses per bucket (default 2), AA_LONG long connections each (default
# 20); AA_ADVERT the VRRP interval (default 0.5 s).
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/failover.sh"
. "$(dirname "$0")/../lib/cluster.sh"
require_root
require_cmd conntrack nft python3 keepalived

PER=${AA_PER:-2}
LONG=${AA_LONG:-20}
# The clients' bound; the test ends them 4 s after the takeover.
SECS=60

sync_addr() { echo "198.18.30.$1"; }

# client_values EXPR BUCKETS: EXPR of every client whose bucket is in BUCKETS.
client_values() {
	local addr
	for addr in "${!AA_CLIENTS[@]}"; do
		[[ " $2 " == *" ${AA_CLIENTS[$addr]} "* ]] && aa_client_json "$addr" "$1"
	done | tr '\n' ' '
}

# all_at_most LIMIT VALUES...: every value is a number <= LIMIT.
all_at_most() {
	local limit=$1 v
	shift
	(($# > 0)) || return 1
	for v in "$@"; do [[ $v =~ ^[0-9.]+$ ]] && python3 -c "import sys; sys.exit(not $v <= $limit)" || return 1; done
}

# holds_all N J: fwN's external cache has all of fwJ's connections, from
# fwJ, and nothing else from fwJ (-e --origin, and -s --json's peers[]).
holds_all() {
	(($(aa_external "$1" --origin "$(sync_addr "$2")") == PER * LONG)) &&
		[[ $(aa_peer_states "$1" "$(sync_addr "$2")") == $((PER * LONG)) ]]
}

# holds_text N J: what holds_all looks at.
holds_text() {
	echo "-e --origin: $(aa_external "$1" --origin "$(sync_addr "$2")")," \
		"peers[].external_states: $(aa_peer_states "$1" "$(sync_addr "$2")")"
}

# check_waited SECONDS "description" "shown after it" command...: check
# after waiting up to SECONDS for the command; the description ends with
# what the command "shown" prints at the end.
check_waited() {
	local secs=$1 what=$2 shown=$3
	shift 3
	wait_until "$secs" "$@"
	if "$@"; then
		pass "$what ($(eval "$shown"))"
	else
		fail "$what ($(eval "$shown"))"
		return 1
	fi
}

# kernel_is N BUCKETS: fwN's kernel holds the connections of BUCKETS, LONG
# per client, and no other; otherwise the difference goes to the log.
kernel_is() {
	local got want
	got=$(aa_kernel_clients "$1")
	want=$(aa_expected_clients "$2" "$LONG")
	[[ $got == "$want" ]] && return 0
	log "fw$1's kernel: $(echo $got) (ADDR COUNT), expected $(echo $want)"
	return 1
}
# kernel_settles N BUCKETS: kernel_is, given three tries: a conntrack dump can
# miss entries while other namespaces' tables (one hash table in the kernel)
# change fast.
kernel_settles() { kernel_is "$@" || { sleep 0.3; kernel_is "$@"; } || { sleep 0.3; kernel_is "$@"; }; }

# hook_ms N T0 PATTERN: milliseconds from T0 (seconds since the epoch) to
# the first line of fwN's hook log after T0 that matches PATTERN (its
# timestamp), or "none".
hook_ms() {
	python3 - "$WORK/fw$1.hook.log" "$2" "$3" <<'PY'
import datetime, re, sys
path, t0, pattern = sys.argv[1], float(sys.argv[2]), sys.argv[3]
start = datetime.datetime.fromtimestamp(t0)
for line in open(path):
    m = re.match(r"(\d\d):(\d\d):(\d\d)\.(\d{3}) ", line)
    if not m or not re.search(pattern, line):
        continue
    h, mi, s, ms = (int(x) for x in m.groups())
    t = start.replace(hour=h, minute=mi, second=s, microsecond=ms * 1000)
    if t < start - datetime.timedelta(hours=12):
        t += datetime.timedelta(days=1)
    if t >= start:
        print(int((t - start).total_seconds() * 1000))
        break
else:
    print("none")
PY
}

# commits_since N LINE: the hook's commit steps on fwN after line LINE of its log.
commits_since() { tail -n +"$(($2 + 1))" "$WORK/fw$1.hook.log" | grep -c 'commit the states of'; }

# run N VICTIM TAKER [THIRD]: a cluster of N; fwVICTIM crashes, fwTAKER
# takes its bucket; fwTHIRD (three firewalls) must not notice.
run() {
	local n=$1 victim=$2 taker=$3 third=${4:-} i j tag="$1 firewalls"
	local vb=$(($2 - 1)) tb=$(($3 - 1)) both t0 took line written created updated failed states
	local -a hook_lines
	aa_pick_clients "$n" "$PER" || { fail "$tag: $PER client addresses for each bucket"; return; }
	log "$tag: client addresses and their buckets: $(aa_clients_text)"
	aa_setup "$n" || { fail "$tag: the cluster is set up"; aa_teardown; return; }
	for ((i = 1; i <= n; i++)); do
		aa_ctsyncd_conf "$i"
		aa_start_ctsyncd "$i" || { fail "$tag: ctsyncd starts on fw$i"; aa_teardown; return; }
	done
	for ((i = 1; i <= n; i++)); do aa_keepalived_conf "$i" && aa_start_keepalived "$i"; done
	# (A busy machine can take more than fo_start_server's 5 s to start python.)
	fo_start_server || wait_until 15 test -s "$WORK/server.pid" || { fail "$tag: the server starts"; aa_teardown; return; }
	for ((i = 1; i <= n; i++)); do
		check_waited 15 "$tag: fw$i is the master of bucket $((i - 1)) and of no other" "aa_owned $i" \
			aa_owns "$i" "$((i - 1))"
	done

	aa_start_clients "$LONG" "$SECS"
	check "$tag: ${#AA_CLIENTS[@]} clients have their $LONG long connections each" wait_until 25 aa_clients_ready
	for ((i = 1; i <= n; i++)); do
		check "$tag: fw$i's kernel has the connections of bucket $((i - 1)), $LONG per client, and no other" \
			kernel_settles "$i" "$((i - 1))"
	done
	for ((i = 1; i <= n; i++)); do
		for ((j = 1; j <= n; j++)); do
			((i == j)) && continue
			check_waited 10 "$tag: fw$i holds fw$j's $((PER * LONG)) connections, from $(sync_addr "$j")" \
				"holds_text $i $j" holds_all "$i" "$j" ||
				"$CTSYNCD" -C "$WORK/fw$i.conf" -s network --verbose >"$WORK/fw$i.network.$n.txt" 2>&1
		done
	done
	check "$tag: fw$taker's external cache holds these $(((n - 1) * PER * LONG)) connections and no other ($(aa_external "$taker"))" \
		test "$(aa_external "$taker")" -eq $(((n - 1) * PER * LONG))

	# The hooks ran at the start-up elections: what counts is what they do from now on.
	for ((i = 1; i <= n; i++)); do hook_lines[$i]=$(wc -l <"$WORK/fw$i.hook.log"); done
	sleep 1
	t0=$(fo_now)
	echo "$t0" >"$WORK/clients.mark"
	aa_crash "$victim"
	both=$(printf '%s\n' "$tb" "$vb" | sort -n | tr '\n' ' ')
	both=${both% }
	wait_until 10 aa_owns "$taker" "$both"
	check "$tag: fw$victim crashed, fw$taker forwards buckets $both ($(aa_owned "$taker"))" aa_owns "$taker" "$both"
	took=$(hook_ms "$taker" "$t0" "master $vb \[info\] add bucket")
	log "$tag: fw$taker let bucket $vb's packets in $took ms after the crash"
	check "$tag: fw$taker's hook committed, then sent its table" \
		wait_until 10 grep -q "master $vb \[info\] send every state to the peers" "$WORK/fw$taker.hook.log"
	line=$(grep -o "commit the states of $(sync_addr "$victim"): .*" "$WORK/fw$taker.hook.log" | tail -n1)
	log "$tag: fw$victim crashed at $(date -d "@$t0" +%T.%3N); fw$taker's hook:"
	tail -n +"$((hook_lines[taker] + 1))" "$WORK/fw$taker.hook.log" | cut -c1-160
	if [[ $line =~ commit:\ ([0-9]+)\ states\ written\ in\ [0-9]+\ ms\ \(([0-9]+)\ created,\ ([0-9]+)\ updated\ in\ place,\ ([0-9]+)\ failed\) ]]; then
		written=${BASH_REMATCH[1]} created=${BASH_REMATCH[2]} updated=${BASH_REMATCH[3]} failed=${BASH_REMATCH[4]}
	else
		written=none created=none updated=none failed=none
	fi
	states=$(aa_external_all "$taker" "$(sync_addr "$victim")")
	check "$tag: the commit wrote exactly fw$victim's $states states ($written written; peers[].external_states $(aa_peer_states "$taker" "$(sync_addr "$victim")"), $PER x $LONG connections)" \
		test "$written" == "$states" -a "$states" -eq $((PER * LONG))
	check "$tag: ... all of them new in fw$taker's kernel ($created created, $updated updated, $failed failed)" \
		test "$created/$updated/$failed" == "$states/0/0"
	check "$tag: fw$taker's hook committed no other firewall's states" \
		test "$(commits_since "$taker" "${hook_lines[$taker]}")" -eq 1
	check "$tag: fw$taker's kernel now has the connections of buckets $both, and no other" \
		kernel_settles "$taker" "$both"
	for addr in "${!AA_CLIENTS[@]}"; do
		[[ ${AA_CLIENTS[$addr]} == "$vb" ]] || continue
		check "$tag: a new connection from $addr (bucket $vb) goes through fw$taker" aa_probe "$addr"
		break
	done
	if [[ $third ]]; then
		check "$tag: fw$third still forwards bucket $((third - 1)) alone ($(aa_owned "$third"))" aa_owns "$third" "$((third - 1))"
		check "$tag: fw$third's kernel still has only the connections of bucket $((third - 1))" \
			kernel_settles "$third" "$((third - 1))"
		check "$tag: fw$third committed nothing" test "$(commits_since "$third" "${hook_lines[$third]}")" -eq 0
	fi

	sleep 4
	aa_stop_clients
	local survived resumed gaps
	survived=$(client_values 'd["survived"]' "$(seq 0 $((n - 1)) | tr '\n' ' ')")
	check "$tag: every long connection survived ($survived of $LONG per client)" \
		test "$(echo "$survived" | tr ' ' '\n' | grep -c "^$LONG$")" -eq "${#AA_CLIENTS[@]}"
	resumed=$(client_values 'd["resume_ms_max"]' "$vb")
	log "$tag: bucket $vb's connections flowing again through fw$taker (a line sent after the crash echoed) after (ms): $resumed"
	for ((i = 1; i <= n; i++)); do
		((i == victim)) && continue
		check "$tag: fw$i dropped no packet as invalid ($(aa_invalid "$i"))" test "$(aa_invalid "$i")" -eq 0
	done
	local others again
	others=$(seq 0 $((n - 1)) | grep -vx "$vb" | tr '\n' ' ')
	again=$(client_values 'd["resume_ms_max"]' "$others")
	gaps=$(client_values 'd["max_gap_ms"]' "$others")
	# Timing on a shared machine is loose; what counts is that they did
	# not wait for the takeover.
	check "$tag: the other buckets' connections flowed on before fw$taker took bucket $vb ($took ms): after $again ms (largest gaps $gaps ms)" \
		all_at_most "$took" $again
	aa_teardown
}

for size in ${AA_SIZES:-2 3}; do
	case $size in
	# Two firewalls: fw1 crashes, fw2 takes bucket 0.
	2) run 2 1 2 ;;
	# Three: fw2 crashes, fw3 (next in bucket 1's order) takes it; fw1 goes on.
	3) run 3 2 3 1 ;;
	*) echo "$TEST_NAME: AA_SIZES: 2 or 3 firewalls, not '$size'" >&2; exit 99 ;;
	esac
done
finish
