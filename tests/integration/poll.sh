#!/bin/bash
# PollSecs: A polls its kernel table every second instead of following
# events (it opens no event socket), B follows events.  States created,
# updated (mark) and deleted on A, one by one and in a burst, reach B's
# external cache; A's -s shows the polls and no event; B's states that A
# commits into its kernel are not sent back to B (no echo), but a later
# change of one of them on A is; -R, -t, -f and -s runtime still answer;
# -F flushes A's kernel table without telling B, as in event mode.
# Then A is a HotStandby backup that polls: what it mirrors from B into its
# kernel is not sent back to B either, neither created nor updated.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
require_root
require_cmd conntrack python3

CTLOAD=${CTLOAD:-$(built_tool bench/ctload)}
require_built "$CTLOAD"
N=${POLL_STATES:-5000}

pair_setup || { echo "cannot create the namespaces" >&2; exit 99; }
pair_conf A FTFW "" "PollSecs 1"
pair_conf B FTFW
# present before the start: loaded, not sent (as conntrackd)
ct_in A -I -s 10.0.0.9 -d 10.0.0.2 -p tcp --sport 9 --dport 80 --state ESTABLISHED -t 300
pair_start A && pair_start B || { fail "the daemons start"; finish; }

ctload() { local ns=$1; shift; ip netns exec "$ns" "$CTLOAD" "$@" >/dev/null; }
jget() { python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(eval("d"+sys.argv[1]))' "$1"; }
ext_has() { ctl B -e | grep -Eq -- "$1"; }
ext_lacks() { ! ctl B -e | grep -Eq -- "$1"; }
ext_count() { ctl B -e | grep -Ec -- "$1"; }
ext_count_is() { [[ $(ext_count "$1") -eq $2 ]]; }
polls() { jget '["polling"]["polls"]' <<<"$(ctl A -s --json)"; }
polls_at_least() { [[ $(polls) -ge $1 ]]; }

check "the state present at the start is in A's internal cache" \
	contains "$(ctl A -i)" 'src=10.0.0.9 .*sport=9 '
out=$(grep -m1 PollSecs "$WORK/A.log")
check "A says it polls: $out" contains "$out" 'polling the kernel table every 1 s'

# --- one state: created, updated, deleted ------------------------------------------
ct_in A -I -s 10.0.0.1 -d 10.0.0.2 -p tcp --sport 1234 --dport 80 --state ESTABLISHED -u SEEN_REPLY,ASSURED -t 300 -m 7
check "a created state reaches B" wait_until 10 ext_has 'src=10.0.0.1 .*sport=1234 .*mark=7 '
ct_in A -U -s 10.0.0.1 -d 10.0.0.2 -p tcp --sport 1234 --dport 80 -m 9 >/dev/null
check "its new mark reaches B" wait_until 10 ext_has 'src=10.0.0.1 .*sport=1234 .*mark=9 '
ct_in A -D -s 10.0.0.1 >/dev/null
check "its deletion reaches B" wait_until 10 ext_lacks 'src=10.0.0.1 '

# --- a burst ----------------------------------------------------------------------------
t0=$(date +%s.%N)
ctload "$NS_A" create "$N" --proto mixed --timeout 600 --base-addr 10.20.0.1
check "$N created states reach B" wait_until 30 ext_count_is 'src=10\.20\.' "$N"
log "created: $(python3 -c "import time; print(round(time.time() - $t0, 2))") s"
t0=$(date +%s.%N)
ctload "$NS_A" update "$N" --proto mixed --timeout 600 --base-addr 10.20.0.1 --mark 5
check "their updates reach B" wait_until 30 ext_count_is 'src=10\.20\..* mark=5 ' "$N"
log "updated: $(python3 -c "import time; print(round(time.time() - $t0, 2))") s"
t0=$(date +%s.%N)
ctload "$NS_A" delete "$N" --proto mixed --base-addr 10.20.0.1
check "their deletions reach B" wait_until 30 ext_lacks 'src=10\.20\.'
log "deleted: $(python3 -c "import time; print(round(time.time() - $t0, 2))") s"

# --- what A's -s says ---------------------------------------------------------------------
j=$(ctl A -s --json)
check "A opened no event socket" test "$(jget '["kernel"]["event_socket"]' <<<"$j")" = False
events=$(jget '["kernel"]["events_new"] + d["kernel"]["events_update"] + d["kernel"]["events_destroy"]' <<<"$j")
check "A received no event ($events)" test "$events" -eq 0
polls=$(jget '["polling"]["polls"]' <<<"$j")
check "A counts its polls ($polls)" test "$polls" -ge 3
check "and shows when the last one ended" test "$(jget '["polling"]["last_poll_unix"]' <<<"$j")" -gt 0
log "last poll: $(jget '["polling"]' <<<"$j")"
out=$(ctl A -s --verbose)
check "-s --verbose shows the polling section" contains "$out" 'last poll states'
out=$(ctl A -s runtime --verbose)
check "-s runtime --verbose answers and shows the polling" contains "$out" 'poll secs'

# --- no echo of a commit -----------------------------------------------------------------------
# B's states reach A's external cache by B's events; A commits them into its
# kernel; its next polls must not send them back to B.
ct_in B -I -s 10.30.0.1 -d 10.0.0.2 -p tcp --sport 100 --dport 80 --state ESTABLISHED -u SEEN_REPLY,ASSURED -t 300
ct_in B -I -s 10.30.0.2 -d 10.0.0.2 -p udp --sport 100 --dport 53 -t 300
a_ext_two() { [[ $(ctl A -e | grep -c 'src=10\.30\.') -eq 2 ]]; }
check "B's states reach A's external cache" wait_until 10 a_ext_two
out=$(ctl A -c); rc=$?
check "A commits them (rc=$rc): $out" contains "$out" 'commit: 2 states written'
check "A polls twice more" wait_until 10 polls_at_least $(($(polls) + 2))
check "A's polls took the committed states in" test "$(ctl A -i | grep -c 'src=10.30.')" -eq 2
check "and did not send them back to B" test "$(ext_count 'src=10\.30\.')" -eq 0
ct_in A -U -s 10.30.0.1 -d 10.0.0.2 -p tcp --sport 100 --dport 80 -m 4 >/dev/null
check "a later change of a committed state on A is sent" wait_until 10 ext_has 'src=10.30.0.1 .*mark=4 '

# --- -R, -t, -f --------------------------------------------------------------------------
ct_in A -I -s 10.40.0.1 -d 10.0.0.2 -p udp --sport 7 --dport 53 -t 300
out=$(ctl A -R); rc=$?
check "-R re-reads the table (rc=$rc): $out" contains "$out" 're-read: [0-9]+ states'
check "-R took in the new state" contains "$(ctl A -i)" 'src=10.40.0.1 '
out=$(ctl A -t); rc=$?
check "-t schedules the purge (rc=$rc): $out" contains "$out" 'purge scheduled'
out=$(ctl A -f); rc=$?
check "-f flushes the caches (rc=$rc): $out" contains "$out" 'internal cache flushed'
check "and cancels the purge" test "$(jget '["commit"]["purge_scheduled"]' <<<"$(ctl A -s --json)")" = False
int_has() { ctl A -i | grep -Eq -- "$1"; }
check "the next polls fill the internal cache again" wait_until 10 int_has 'src=10\.40\.0\.1 ' 
ctload "$NS_A" create 20000 --proto mixed --timeout 600 --base-addr 10.60.0.1
check "20000 more states reach B" wait_until 30 ext_count_is 'src=10\.60\.' 20000
out=$(ctl A -F); rc=$?
check "-F flushes A's kernel table (rc=$rc): $out" contains "$out" 'kernel flush: [0-9]+ of [0-9]+ states deleted'
check "A polls twice more" wait_until 10 polls_at_least $(($(polls) + 2))
check "A's internal cache lost the flushed states" test "$(ctl A -i | grep -c 'src=10\.60\.')" -eq 0
check "B was not told: its external cache keeps them" test "$(ext_count 'src=10\.60\.')" -eq 20000
check "the daemons still run" pid_alive "$(head -n1 "$WORK/A.lock")"

# --- HotStandby: a polling backup does not echo its mirror ----------------------------------
pair_stop A
pair_stop B
wait_until 5 bash -c "[[ ! -e '$WORK/A.lock' && ! -e '$WORK/B.lock' ]]"
ct_in A -F >/dev/null
ct_in B -F >/dev/null
MODE_OPTS="HotStandby on" pair_conf A FTFW "" "PollSecs 1"
pair_conf B FTFW
pair_start A && pair_start B || { fail "the daemons start again"; finish; }
ct_in B -I -s 10.50.0.1 -d 10.0.0.2 -p tcp --sport 100 --dport 80 --state ESTABLISHED -u SEEN_REPLY,ASSURED -t 300 -m 1
a_kernel_has() { ct_in A -L | grep -Eq -- "$1"; }
check "A mirrors B's state into its kernel" wait_until 10 a_kernel_has 'src=10\.50\.0\.1 .*mark=1 '
check "A polls twice more" wait_until 10 polls_at_least $(($(polls) + 2))
check "A's polls took the mirrored state in" int_has 'src=10\.50\.0\.1 '
check "and did not send it back to B" test "$(ext_count 'src=10\.50\.')" -eq 0
ct_in B -U -s 10.50.0.1 -d 10.0.0.2 -p tcp --sport 100 --dport 80 -m 2 >/dev/null
check "A mirrors B's update" wait_until 10 a_kernel_has 'src=10\.50\.0\.1 .*mark=2 '
check "A polls twice more" wait_until 10 polls_at_least $(($(polls) + 2))
check "and does not send the update back to B" test "$(ext_count 'src=10\.50\.')" -eq 0

finish
