#!/bin/bash
# The daemon's internal cache against the real kernel, in a namespace of its
# own: states present at start-up are loaded, events add, update and remove
# states, the Filter drops what it ignores, -R re-reads the table, -F flushes
# the kernel table, HashLimit refuses and counts without harm, -s cache and
# its JSON agree, and after an event overrun (a tiny netlink buffer and a
# burst of creates, updates and deletes) the internal cache equals the
# kernel table again, also when the burst stops right after the overrun.
. "$(dirname "$0")/../lib/common.sh"
require_root
require_cmd conntrack python3

CTLOAD=${top_builddir:+$top_builddir/bench/ctload}
CTLOAD=${CTLOAD:-$(cd "$(dirname "$0")/../.." && pwd)/bench/ctload}
NS=$(make_netns fw)
give_sync_link "$NS"
ct() { ip netns exec "$NS" conntrack "$@" 2>/dev/null; }
ctload() { ip netns exec "$NS" "$CTLOAD" "$@"; }
ip netns exec "$NS" sysctl -qw net.netfilter.nf_conntrack_events=1

# start NAME [extra General lines]: a daemon with its own files; sets C (client args).
start() {
	local name=$1 extra=${2:-}
	cat >"$WORK/$name.conf" <<CONF
General {
	Systemd off
	LogFile $WORK/$name.log
	LockFile $WORK/$name.lock
	UNIX { Path $WORK/$name.ctl }
	Scheduler { Type FIFO Priority 1 }
	$extra
}
Sync {
	Mode FTFW { }
	UDP { IPv4_address 198.18.0.1 IPv4_Destination_Address 198.18.0.2 Port 3780 Interface sync0 }
}
CONF
	C=(-C "$WORK/$name.conf")
	ip netns exec "$NS" "$CTSYNCD" "${C[@]}" -d || return 1
	track_pid "$(head -n1 "$WORK/$name.lock")"
}
stop() { "$CTSYNCD" "${C[@]}" -k >/dev/null; }
internal_count() { "$CTSYNCD" "${C[@]}" -i | grep -c .; }
kernel_count() { ct -C; }
json() { "$CTSYNCD" "${C[@]}" -s cache --json; }
jget() { python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(eval("d"+sys.argv[1]))' "$1"; }
counts_equal() { [[ $(internal_count) -eq $(kernel_count) ]]; }

# --- start-up load and events ------------------------------------------------
ct -I -s 10.0.0.1 -d 10.0.0.2 -p tcp --sport 1234 --dport 80 --state ESTABLISHED -u SEEN_REPLY,ASSURED -t 300 -m 7
ct -I -s 10.0.0.3 -d 10.0.0.2 -p udp --sport 1234 --dport 53 -t 60 --src-nat 192.168.1.1:4000
start basic
out=$("$CTSYNCD" "${C[@]}" -i)
check "states present before the start are loaded: $(wc -l <<<"$out")" test "$(grep -c . <<<"$out")" -eq 2
check "the TCP state with its mark" contains "$out" 'ESTABLISHED src=10.0.0.1 dst=10.0.0.2 sport=1234 dport=80 .*\[ASSURED\] mark=7'
check "the UDP state with its SNAT reply tuple" contains "$out" 'src=10.0.0.2 dst=192.168.1.1 sport=53 dport=4000'

ct -I -s 10.0.0.5 -d 10.0.0.2 -p icmp --icmp-type 8 --icmp-code 0 --icmp-id 4660 -t 30 --zone 5
check "a new state arrives by event" wait_until 5 bash -c "'$CTSYNCD' ${C[*]} -i | grep -q 'id=4660 .*zone=5'"
ct -U -s 10.0.0.1 -d 10.0.0.2 -p tcp --sport 1234 --dport 80 -m 9 >/dev/null
check "an update by event changes the mark" wait_until 5 bash -c "'$CTSYNCD' ${C[*]} -i | grep -q 'sport=1234 dport=80 .*mark=9'"
out=$("$CTSYNCD" "${C[@]}" -i)
check "an update keeps the TCP state the event did not repeat" contains "$out" 'ESTABLISHED src=10.0.0.1 .*mark=9'
ct -D -s 10.0.0.3 >/dev/null
check "a destroy event removes the state" wait_until 5 bash -c "! '$CTSYNCD' ${C[*]} -i | grep -q 10.0.0.3"

# --- -R after the table changed behind our back, and -F -------------------------
out=$("$CTSYNCD" "${C[@]}" -R); rc=$?
check "-R answers when the table is re-read (rc=$rc): $out" contains "$out" 're-read: 2 states'
out=$("$CTSYNCD" "${C[@]}" -F); rc=$?
check "-F flushes the kernel table and says how much (rc=$rc): $out" contains "$out" 'kernel flush: 2 of 2'
check "the kernel table is empty after -F" test "$(kernel_count)" -eq 0
check "the internal cache follows by events" wait_until 5 bash -c "[[ \$('$CTSYNCD' ${C[*]} -i | grep -c .) -eq 0 ]]"
stop

# --- the Filter -------------------------------------------------------------------
start filtered "Filter { Protocol Ignore { UDP } Address Ignore { IPv4_address 10.9.0.0/16 } }"
ct -I -s 10.0.0.1 -d 10.0.0.2 -p udp --sport 1 --dport 2 -t 60
ct -I -s 10.9.1.1 -d 10.0.0.2 -p tcp --sport 1 --dport 2 --state ESTABLISHED -t 60
ct -I -s 10.0.0.1 -d 10.0.0.2 -p tcp --sport 3 --dport 4 --state ESTABLISHED -t 60
wait_until 5 bash -c "'$CTSYNCD' ${C[*]} -i | grep -q 'sport=3 dport=4'"
out=$("$CTSYNCD" "${C[@]}" -i)
check "Protocol Ignore UDP keeps UDP out" test "$(grep -c 'udp' <<<"$out")" -eq 0
check "Address Ignore 10.9.0.0/16 keeps that network out" test "$(grep -c '10.9.1.1' <<<"$out")" -eq 0
check "other states pass the Filter" contains "$out" 'sport=3 dport=4'
out=$("$CTSYNCD" "${C[@]}" -F)
check "-F leaves what the Filter excludes: $out" contains "$out" 'kernel flush: 1 of 3'
stop
ct -F >/dev/null

# --- HashLimit ------------------------------------------------------------------------
start limited "HashLimit 100"
"$CTLOAD" --help >/dev/null 2>&1 || { fail "bench/ctload is not built"; finish; }
ctload create 150 --timeout 600 >/dev/null
check "the daemon keeps the first 100 states" wait_until 5 bash -c "[[ \$('$CTSYNCD' ${C[*]} -i | grep -c .) -eq 100 ]]"
j=$(json)
check "the 50 refused are counted as limit hits" test "$(jget '["internal_cache"]["limit_hits"]' <<<"$j")" -eq 50
check "and the daemon still answers" "$CTSYNCD" "${C[@]}" -s
stop
ctload flush >/dev/null

# --- overrun and recovery ----------------------------------------------------------------
start overrun "NetlinkBufferSize 4096
	NetlinkBufferSizeMaxGrowth 4096
	NetlinkOverrunResync on"
ctload create 30000 --timeout 600 >/dev/null
ctload update 20000 --mark 3 >/dev/null
ctload delete 10000 >/dev/null
check "after the burst the internal cache equals the kernel table ($(kernel_count) states)" \
	wait_until 30 counts_equal
j=$(json)
overruns=$(jget '["kernel"]["overruns"]' <<<"$j")
resyncs=$(jget '["kernel"]["resyncs"]' <<<"$j")
check "the burst overran the tiny buffer ($overruns) and a resync followed ($resyncs)" \
	test "$overruns" -ge 1 -a "$resyncs" -ge 1
log "$(grep -m1 'resynchronised' "$WORK/overrun.log" || true)"
out=$("$CTSYNCD" "${C[@]}" -i | grep -c 'mark=3')
check "updated states carry the new mark after recovery ($out)" test "$out" -eq 10000
stop
ctload flush >/dev/null

# --- an overrun while the burst goes on ------------------------------------------------------
# The kernel drops every event for a socket that overran until its queue is
# read empty, and reports ENOBUFS only once: a resync dump started before
# the queue is drained misses the states created during the drain.  The
# daemon is stopped (SIGSTOP) so that its buffer overflows, and let go
# while more states are being created.
start drain "EventIterationLimit 1
	NetlinkBufferSize 4194304
	NetlinkBufferSizeMaxGrowth 4194304
	NetlinkOverrunResync on"
pid=$(head -n1 "$WORK/drain.lock")
for round in 1 2 3; do
	kill -STOP "$pid"
	ctload create 20000 --proto mixed --timeout 600 --base-addr "198.18.$((100 + round)).1" >/dev/null
	ctload create 40000 --proto mixed --timeout 600 --base-addr "198.18.$((110 + round)).1" >/dev/null &
	bg=$!
	kill -CONT "$pid"
	wait "$bg"
	check "round $round: states created while the overrun is drained reach the cache ($(kernel_count))" \
		wait_until 10 counts_equal
done
j=$(json)
check "the daemon saw the overruns ($(jget '["kernel"]["overruns"]' <<<"$j"))" \
	test "$(jget '["kernel"]["overruns"]' <<<"$j")" -ge 3
stop

finish
