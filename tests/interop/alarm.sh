#!/bin/bash
# Mode ALARM (doc/protocol.md §4: every state re-sent on its own timer, the
# peer's states expire CacheTimeout after their last refresh) between
# ctsyncd and Debian's conntrackd 1.4.7, both directions, with RefreshTime
# 2 and CacheTimeout 5: states appear on the other side and deletions
# follow; under 20 % loss every state still appears within a few refresh
# periods; the states of a sender killed with SIGKILL expire from the
# receiver's external cache; -n and -B answer "not available".
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
. "$(dirname "$0")/../lib/interop.sh"
require_root
require_cmd conntrack conntrackd nft python3

CONNTRACKD=$(command -v conntrackd)
pair_setup || { echo "cannot create the namespaces" >&2; exit 99; }
MODE_OPTS="RefreshTime 2 CacheTimeout 5"
pair_conf A ALARM   # conntrackd 1.4.7
pair_conf B ALARM   # ctsyncd
pair_start A "$CONNTRACKD" || { fail "conntrackd 1.4.7 starts in ALARM"; finish; }
pair_start B || { fail "ctsyncd starts in ALARM"; finish; }
PID_A=$(ns_pid "$NS_A" conntrackd) || { fail "conntrackd 1.4.7's PID"; finish; }
PID_B=$(head -n1 "$WORK/B.lock")

old() { old_ctl A "$@"; }
# ext_count SIDE PATTERN: external cache lines of SIDE matching PATTERN
ext_count() {
	if [[ $1 == A ]]; then old -e; else ctl B -e 2>/dev/null; fi | grep -c -- "$2" || true
}
ext_is() { [[ $(ext_count "$1" "$2") -eq $3 ]]; }
# make_states SIDE NET COUNT: COUNT established TCP states NET.0.x -> NET.1.1 in SIDE's kernel
make_states() {
	local i
	for ((i = 1; i <= $3; i++)); do
		ct_in "$1" -I -s "$2.$((i / 250)).$((i % 250 + 1))" -d 10.250.1.1 -p tcp --sport 1000 --dport 22 \
			--state ESTABLISHED -u SEEN_REPLY,ASSURED -t 600 >/dev/null
	done
}
# seen_all SIDE PATTERN COUNT SECONDS: every one of COUNT states matching PATTERN
# showed up in SIDE's external cache at least once (not necessarily at once)
seen_all() {
	local side=$1 pat=$2 want=$3 limit=$(($4 * 2)) i
	: >"$WORK/seen"
	for ((i = 0; i < limit; i++)); do
		if [[ $side == A ]]; then old -e; else ctl B -e 2>/dev/null; fi |
			grep -o -- "src=$pat[0-9.]*" >>"$WORK/seen"
		(($(sort -u "$WORK/seen" | wc -l) >= want)) && return 0
		sleep 0.5
	done
	echo "seen $(sort -u "$WORK/seen" | wc -l) of $want" >&2
	return 1
}

# --- conntrackd 1.4.7 -> ctsyncd -------------------------------------------------------
make_states A 10.61 3
check "1.4.7's ALARM states reach ctsyncd's external cache" wait_until 10 ext_is B 'src=10\.61\.' 3
ct_in A -U -s 10.61.0.2 -d 10.250.1.1 -p tcp --sport 1000 --dport 22 -m 9 >/dev/null
check "an update from 1.4.7 arrives" wait_until 10 bash -c "'$CTSYNCD' -C '$WORK/B.conf' -e | grep -q 'src=10.61.0.2 .*mark=9'"
ct_in A -D -s 10.61.0.3 >/dev/null
check "a delete from 1.4.7 arrives" wait_until 10 ext_is B 'src=10\.61\.0\.3 ' 0
check "the other two stay (refreshed within CacheTimeout)" \
	bash -c "sleep 7; [[ \$('$CTSYNCD' -C '$WORK/B.conf' -e | grep -c 'src=10\.61\.') -eq 2 ]]"

# --- ctsyncd -> conntrackd 1.4.7 -------------------------------------------------------
make_states B 10.62 3
check "ctsyncd's ALARM states reach 1.4.7's external cache" wait_until 10 ext_is A 'src=10\.62\.' 3
ct_in B -U -s 10.62.0.2 -d 10.250.1.1 -p tcp --sport 1000 --dport 22 -m 5 >/dev/null
check "an update from ctsyncd arrives" wait_until 10 bash -c "ip netns exec '$NS_A' conntrackd -C '$WORK/A.conf' -e 2>/dev/null | grep -q 'src=10.62.0.2 .*mark=5'"
ct_in B -D -s 10.62.0.3 >/dev/null
check "a delete from ctsyncd arrives" wait_until 10 ext_is A 'src=10\.62\.0\.3 ' 0
check "ctsyncd's other two stay in 1.4.7's cache" \
	bash -c "sleep 7; [[ \$(ip netns exec '$NS_A' conntrackd -C '$WORK/A.conf' -e 2>/dev/null | grep -c 'src=10\.62\.') -eq 2 ]]"
net=$(old -s network)
check "1.4.7 counts no malformed message from ctsyncd" old_net_clean "$net"
net=$(ctl B -s network --json 2>&1)
check "ctsyncd refreshes (-s network)" contains "$net" '"refreshes": *[1-9]'
check "ctsyncd sent no control message" \
	bash -c 'for k in ack_sent nack_sent resync_sent; do grep -Eq "\"$k\": *0[,}]" <<<"$1" || exit 1; done' _ "$net"
check "ctsyncd ignored 1.4.7's messages with flags: none" contains "$net" '"flagged_ignored": *0[,}]'

# --- -n and -B ----------------------------------------------------------------------------
# Nothing to do in ALARM, and no error: as 1.4.7 (A here) answers them.
for opt in -n -B; do
	out=$(ctl B $opt 2>&1); rc=$?
	ip netns exec "$NS_A" conntrackd -C "$WORK/A.conf" $opt >/dev/null 2>&1; rc147=$?
	check "$opt in ALARM does nothing and exits as 1.4.7 does ($rc; 1.4.7: $rc147): $out" \
		bash -c "[[ $rc -eq 0 && $rc147 -eq 0 ]] && grep -q 'nothing to do in Mode ALARM' <<<\"\$1\"" _ "$out"
done

# --- 20 % loss, each direction ----------------------------------------------------------------
pair_loss 20
make_states A 10.63 150
check "150 states from 1.4.7 all appear in ctsyncd under 20 % loss" seen_all B '10\.63\.' 150 30
make_states B 10.64 150
check "150 states from ctsyncd all appear in 1.4.7 under 20 % loss" seen_all A '10\.64\.' 150 30
pair_loss 0
check "without loss, all of 1.4.7's states are there at once" wait_until 10 ext_is B 'src=10\.63\.' 150
check "without loss, all of ctsyncd's states are there at once" wait_until 10 ext_is A 'src=10\.64\.' 150

# --- a sender killed with SIGKILL: its states expire after CacheTimeout ---------------------
kill -KILL "$PID_A"
t0=$SECONDS
wait_until 5 pid_gone "$PID_A" 
check "1.4.7 killed: its states expire from ctsyncd's external cache" wait_until 15 ext_is B 'src=10\.6[13]\.' 0
check "... after CacheTimeout, not at once ($((SECONDS - t0)) s)" test $((SECONDS - t0)) -ge 2
cache=$(ctl B -s cache --json 2>&1)
check "-s cache counts the expirations (152 at least)" \
	contains "$cache" '"expired": *(15[2-9]|1[6-9][0-9]|[2-9][0-9]{2}|[0-9]{4,})[,}]'
# 1.4.7 again, as the receiver this time, and ctsyncd killed
rm -f "$WORK/A.lock"
pair_start A "$CONNTRACKD" || fail "conntrackd 1.4.7 starts again"
track_pid "$(ns_pid "$NS_A" conntrackd)"
check "1.4.7 learns ctsyncd's states again from the refreshes" wait_until 10 ext_is A 'src=10\.6[24]\.' 152
kill -KILL "$PID_B"
check "ctsyncd killed: its states expire from 1.4.7's external cache" wait_until 15 ext_is A 'src=10\.6[24]\.' 0
old -k >/dev/null
finish
