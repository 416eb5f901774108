#!/bin/bash
# The text of every -s word is conntrackd 1.4.7's.  ctsyncd and Debian's
# conntrackd 1.4.7 run as the two peers of a pair (1.4.7 is A, ctsyncd is
# B), in each mode and link kind (FTFW over UDP, TCP and multicast; NOTRACK;
# ALARM; FTFW with ExpectationSync, with DisableExternalCache; NOTRACK with
# DisableInternalCache), and side by side in Stats mode.  For each word,
# the two daemons' answers must be equal line by line once every number is
# masked (a number right-aligned in its column keeps its column's width, so
# labels, tabs, alignment, order and blank lines all count); ctsyncd's
# answer is the same through its own client and through 1.4.7's (FTFW over
# UDP, Stats).  The
# resend queue's entries (under total loss, so that it holds some) have
# 1.4.7's line shapes.  --verbose still gives ctsyncd's own text.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
. "$(dirname "$0")/../lib/interop.sh"
require_root
require_cmd conntrack conntrackd nft python3

CONNTRACKD=$(command -v conntrackd)
# (multicast, the old name of link, only in the first round)
WORDS=("" network cache runtime link rsqueue process queue ct expect)
pair_setup || { echo "cannot create the namespaces" >&2; exit 99; }
untrack_sync

# mask: the text on stdin with each number masked: a number with the
# spaces before it that fill a column (12 characters or more) becomes as
# many N, any other number one N; the sync devices' names are one name.
mask() {
	python3 -c '
import re, sys
t = re.sub(r"sync[AB]", "syncX", sys.stdin.read())
print(re.sub(r" *\d+", lambda m: "N" * len(m.group()) if len(m.group()) >= 12 else "N", t), end="")'
}

# old_s SIDE WORD / new_s SIDE WORD: SIDE's answer to -s WORD through 1.4.7's
# client / ctsyncd's client.
old_s() { local ns=$NS_A; [[ $1 == B ]] && ns=$NS_B; timeout 10 ip netns exec "$ns" conntrackd -C "$WORK/$1.conf" -s $2 2>/dev/null; }
new_s() { timeout 10 "$CTSYNCD" -C "$WORK/$1.conf" -s $2 2>/dev/null; }

# same_text WHAT TEXT1 TEXT2: equal once masked; shows the difference if not.
same_text() {
	local a b
	a=$(mask <<<"$2") b=$(mask <<<"$3")
	if [[ $a == "$b" ]]; then
		pass "$1"
		return 0
	fi
	fail "$1"
	diff <(echo "$a") <(echo "$b") | sed 's/^/	/' | head -40
	return 1
}

# compare LABEL OLD_SIDE NEW_SIDE [WORDS...]: every word, 1.4.7's text
# against ctsyncd's; with BOTH_CLIENTS=1 ctsyncd's answer through 1.4.7's
# client too.
compare() {
	local label=$1 old=$2 new=$3 w ref ours
	shift 3
	for w in "$@"; do
		ref=$(old_s "$old" "$w")
		ours=$(new_s "$new" "$w")
		# Masked: the counters move between the two requests (ALIVEs, the requests).
		if [[ ${BOTH_CLIENTS:-0} == 1 && $(mask <<<"$ours") != "$(old_s "$new" "$w" | mask)" ]]; then
			fail "$label: -s ${w:-(none)}: ctsyncd's client and 1.4.7's get the same text"
		fi
		[[ $w == rsqueue ]] && { rsq_shapes "$label: -s rsqueue" "$ref" "$ours"; continue; }
		same_text "$label: -s ${w:-(none)} is 1.4.7's ($(grep -c . <<<"$ref") lines)" "$ref" "$ours"
	done
}

# rsq_shapes WHAT OLD NEW: the resend queue's heading as 1.4.7's, and each
# line after it one of the two shapes 1.4.7 prints.
rsq_shapes() {
	local head_old head_new bad
	head_old=$(head -n1 <<<"$2" | mask) head_new=$(head -n1 <<<"$3" | mask)
	bad=$(tail -n +2 <<<"$3" | mask | grep -Ev '^(object -> seq:N|control -> seq:N flags:N)$')
	check "$1: heading '$head_new' and entry lines as 1.4.7's${bad:+ (not: $bad)}" \
		test "$head_old" = "$head_new" -a -z "$bad"
}

# states: a few states made, updated and deleted on each side.
states() {
	ct_in A -I -s 10.0.0.1 -d 10.0.0.2 -p tcp --sport 1234 --dport 80 --state ESTABLISHED -u SEEN_REPLY,ASSURED -t 300 -m 7
	ct_in A -I -s 10.0.0.3 -d 10.0.0.2 -p udp --sport 1234 --dport 53 -t 120
	ct_in B -I -s 10.0.1.1 -d 10.0.0.2 -p tcp --sport 1234 --dport 80 --state ESTABLISHED -u SEEN_REPLY,ASSURED -t 300
	ct_in B -I -s 10.0.1.3 -d 10.0.0.2 -p udp --sport 1234 --dport 53 -t 120
	ct_in A -U -s 10.0.0.1 -m 9
	ct_in A -D -s 10.0.0.3
	ct_in B -D -s 10.0.1.3
} >/dev/null

old_gone() { ! ns_pid "$NS_A" conntrackd >/dev/null; }
stop_pair() {
	old_ctl A -k >/dev/null
	pair_stop B
	wait_until 10 old_gone
	wait_until 10 pid_gone "$PID_B"
	ct_in A -F >/dev/null; ct_in B -F >/dev/null
	rm -f "$WORK"/*.lock "$WORK"/*.ctl
}

# round LABEL MODE [extra Sync lines]: 1.4.7 as A, ctsyncd as B; then compare
# WORDS and EXTRA_WORDS.
round() {
	local label=$1 mode=$2
	pair_conf A "$mode" "${3:-}"
	pair_conf B "$mode" "${3:-}"
	pair_start A "$CONNTRACKD" || { fail "$label: conntrackd 1.4.7 starts"; return 1; }
	pair_start B || { fail "$label: ctsyncd starts"; return 1; }
	PID_B=$(head -n1 "$WORK/B.lock")
	wait_until 10 old_s A "" || { fail "$label: conntrackd 1.4.7 answers"; return 1; }
	if [[ ${LINK_KIND:-UDP} == TCP ]]; then
		connected() { [[ $(old_s "$1" link) == *"server=connected client=connected"* ||
				 $(old_s "$1" "") == *"server=connected client=connected"* ]]; }
		check "$label: both TCP connections up on each side" wait_until 15 eval 'connected A && connected B'
	fi
	states
	sleep 1
	compare "$label" A B "${WORDS[@]}" ${EXTRA_WORDS:-}
}

BOTH_CLIENTS=1 EXTRA_WORDS=multicast round "FTFW/UDP" FTFW
check "FTFW/UDP: -s --verbose is ctsyncd's own text" contains "$(new_s B --verbose)" '^internal cache:$'
check "FTFW/UDP: -s cache --verbose too" contains "$(new_s B "cache --verbose")" '^  max seen: +[0-9]+$'
# Total loss: each side's states stay in its resend queue.
drop_sync() {        # drop_sync on|off
	local ns
	for ns in "$NS_A" "$NS_B"; do
		if [[ $1 == on ]]; then
			ip netns exec "$ns" nft -f - <<<'table inet drop_sync { chain out { type filter hook output priority 0; udp dport 3780 drop; }; }'
		else
			ip netns exec "$ns" nft delete table inet drop_sync
		fi || return 1
	done
}
drop_sync on
ct_in A -I -s 10.0.2.1 -d 10.0.0.2 -p udp --sport 1 --dport 2 -t 120 >/dev/null
ct_in B -I -s 10.0.3.1 -d 10.0.0.2 -p udp --sport 1 --dport 2 -t 120 >/dev/null
sleep 1
check "FTFW/UDP under loss: ctsyncd's resend queue lists a state" \
	contains "$(new_s B rsqueue)" '^object -> seq:[0-9]+$'
compare "FTFW/UDP under loss" A B rsqueue queue
drop_sync off
stop_pair
LINK_KIND=TCP round "FTFW/TCP" FTFW; stop_pair
LINK_KIND=Multicast round "FTFW/Multicast" FTFW; stop_pair
round "NOTRACK/UDP" NOTRACK; stop_pair
round "ALARM/UDP" ALARM; stop_pair
round "FTFW/UDP ExpectationSync" FTFW "Options { ExpectationSync on }"; stop_pair
MODE_OPTS="DisableExternalCache on" round "FTFW/UDP DisableExternalCache" FTFW; stop_pair
MODE_OPTS="DisableInternalCache on" round "NOTRACK/UDP DisableInternalCache" NOTRACK; stop_pair

# Stats mode: both daemons in A's namespace, seeing the same events.
for side in S T; do
	cat >"$WORK/$side.conf" <<CONF
Stats { LogFile $WORK/$side-stats.log }
General {
	Systemd off
	LogFile $WORK/$side.log
	LockFile $WORK/$side.lock
	UNIX { Path $WORK/$side.ctl }
	NetlinkBufferSize 2097152
}
CONF
done
ip netns exec "$NS_A" "$CONNTRACKD" -C "$WORK/S.conf" -d 2>/dev/null || fail "Stats: conntrackd 1.4.7 starts"
ip netns exec "$NS_A" "$CTSYNCD" -C "$WORK/T.conf" -d || fail "Stats: ctsyncd starts"
track_pid "$(head -n1 "$WORK/T.lock")"
old_T() { timeout 10 ip netns exec "$NS_A" conntrackd -C "$WORK/T.conf" "$@" 2>/dev/null; }
wait_until 10 old_T -s
states
sleep 1
s_old() { timeout 10 ip netns exec "$NS_A" conntrackd -C "$WORK/S.conf" -s $1 2>/dev/null; }
for w in "${WORDS[@]}"; do
	ref=$(s_old "$w") ours=$(new_s T "$w")
	same_text "Stats: -s ${w:-(none)} is 1.4.7's ($(grep -c . <<<"$ref") lines)" "$ref" "$ours"
	[[ $(mask <<<"$ours") == "$(old_T -s $w | mask)" ]] ||
		fail "Stats: -s ${w:-(none)}: ctsyncd's client and 1.4.7's get the same text"
done
out=$(new_s T health); rc=$?
check "Stats: -s health still says it has no peer to judge (exit $rc: $out)" \
	test "$rc" -eq 3 -a -n "$out"
timeout 10 ip netns exec "$NS_A" conntrackd -C "$WORK/S.conf" -k >/dev/null 2>&1
finish
