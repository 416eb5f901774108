#!/bin/bash
# HotStandby: a backup writes what it receives into its kernel table at once
# (and keeps its external cache), so that a takeover finds every state in
# place.  -c makes the node the primary and stops the writing; -t makes it a
# backup again, and the purge it schedules keeps the mirrored states but
# removes the leftovers of the node's own time as the primary.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
require_root
require_cmd conntrack python3 nft unshare

pair_setup || { echo "cannot create the namespaces" >&2; exit 99; }
pair_labels || { echo "nft failed" >&2; exit 99; }
MODE_OPTS="HotStandby on PurgeTimeout 2" pair_conf A FTFW
MODE_OPTS="HotStandby on PurgeTimeout 2" pair_conf B FTFW
pair_start A && pair_start B || { fail "the daemons start"; finish; }

kernel_has() { ct_in "$1" -L -o extended | grep -q -- "$2"; }
kernel_lacks() { ! kernel_has "$@"; }
ext_has() { ctl "$1" -e | grep -q -- "$2"; }
mirroring() { ctl "$1" -s cache --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["hot_standby"]["mirroring"])'; }

check "both daemons start as backups: mirroring on" test "$(mirroring A)/$(mirroring B)" = True/True
ct_in A -I -s 10.1.0.1 -d 10.1.0.2 -p tcp --sport 1111 --dport 80 --state ESTABLISHED -u SEEN_REPLY,ASSURED -t 300 -m 4
ct_in A -I -s 10.1.0.3 -d 10.1.0.2 -p udp --sport 2222 --dport 53 -t 120 --src-nat 192.168.7.1:4000
check "a TCP state of A is in B's kernel without a commit" \
	wait_until 10 kernel_has B 'ESTABLISHED src=10.1.0.1 dst=10.1.0.2 sport=1111 dport=80 .*mark=4'
check "with its SNAT reply tuple" wait_until 5 kernel_has B 'src=10.1.0.2 dst=192.168.7.1 sport=53 dport=4000'
check "and in B's external cache" ext_has B 'sport=1111 dport=80'
ct_in A -U -s 10.1.0.1 -d 10.1.0.2 -p tcp --sport 1111 --dport 80 -m 5 >/dev/null
check "an update reaches B's kernel" wait_until 5 kernel_has B 'sport=1111 dport=80 .*mark=5'
ct_in A -D -s 10.1.0.3 >/dev/null
check "a delete reaches B's kernel" wait_until 5 kernel_lacks B 'sport=2222'
check "B's writes did not come back to A as states of B" test "$(ctl A -e | grep -c .)" -eq 0

# --- B takes over: the commit finds everything in place ---------------------------------
out=$(ctl B -c)
check "B's commit updates the state in place: $out" contains "$out" '1 updated in place'
check "after -c B no longer mirrors" test "$(mirroring B)" = False
ct_in A -I -s 10.1.0.5 -d 10.1.0.2 -p tcp --sport 3333 --dport 80 --state ESTABLISHED -u SEEN_REPLY,ASSURED -t 300
check "a state received by the primary goes to its external cache" wait_until 5 ext_has B 'sport=3333'
check "... and not into its kernel" kernel_lacks B 'sport=3333'

# --- B becomes a backup again: -t mirrors again, and the purge spares the mirror ----------
ctl A -c >/dev/null
ct_in B -I -s 10.1.0.9 -d 10.1.0.2 -p tcp --sport 4444 --dport 80 --state ESTABLISHED -u SEEN_REPLY,ASSURED -t 300
wait_until 5 ext_has A 'sport=4444'
out=$(ctl B -t)
check "-t on B turns the mirror back on: $out" contains "$out" 'written into the kernel again'
ctl B -n >/dev/null
check "the resync asked by B puts A's new state in B's kernel" wait_until 10 kernel_has B 'sport=3333'
check "the purge removes B's own leftover state" wait_until 10 kernel_lacks B 'sport=4444'
check "... and keeps the mirrored states" kernel_has B 'sport=1111 dport=80 .*mark=5'
check "... all of them" kernel_has B 'sport=3333'
# --- labels follow into the backup's kernel: at the create, added later (an
# update in place, which takes the labels from the external cache), and the
# last one removed (the state then carries an all-zero label word) -------------
# ct_labels SIDE CONNTRACK-ARGS...: conntrack(8) knowing labels lbl-a (bit 3)
# and lbl-b (bit 70) (with_labels, common.sh)
ct_labels() { local ns; [[ $1 == A ]] && ns=$NS_A || ns=$NS_B; shift; with_labels "$ns" conntrack "$@" 2>/dev/null; }
b_line() { ct_labels B -L -o extended,labels | grep -- 'sport=5555 dport=80'; }
TUPLE=(-s 10.1.0.7 -d 10.1.0.2 -p tcp --sport 5555 --dport 80)
ct_labels A -I "${TUPLE[@]}" --state ESTABLISHED -u SEEN_REPLY,ASSURED -t 300 --label-add lbl-a >/dev/null
check "a state created with a label is in B's kernel with it" wait_until 10 eval '[[ $(b_line) == *labels=lbl-a ]]'
ct_labels A -U "${TUPLE[@]}" --label-add lbl-b >/dev/null
check "a label added later reaches B's kernel" wait_until 10 eval '[[ $(b_line) == *labels=lbl-a,lbl-b ]]'
ct_labels A -U "${TUPLE[@]}" --label-del lbl-a >/dev/null
check "one label removed: B's kernel keeps the other" wait_until 10 eval '[[ $(b_line) == *labels=lbl-b ]]'
ct_labels A -U "${TUPLE[@]}" -m 9 --label-del lbl-b >/dev/null
check "the last label removed: B's kernel has none" \
	wait_until 10 eval 'l=$(b_line); [[ $l == *mark=9* && $l != *labels=* ]]'

j=$(ctl B -s cache --json)
check "B counts what it wrote into the kernel and no failure" python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["hot_standby"]["written_into_kernel"] >= 4, d["hot_standby"]
assert d["remote_states"]["injection_failures"] == 0, d["remote_states"]
' "$j"
finish
