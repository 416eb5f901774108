#!/bin/bash
# Connlabels between two ctsyncd: added, one removed, the last removed, and
# after -B.  The kernel leaves all-zero labels out of its events, and puts
# labels in a packet's event only when they changed; "the last label went"
# is told only by the UPDATE of a process's request, which reports every
# attribute the request could change (KERNEL_ORIGIN_REQUEST).
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
require_root
require_cmd conntrack nft unshare

pair_setup || { echo "cannot create the namespaces" >&2; exit 99; }
pair_labels || { echo "nft failed" >&2; exit 99; }
pair_conf A FTFW
pair_conf B FTFW
pair_start A && pair_start B || { fail "the daemons start"; finish; }

# ct_labels SIDE CONNTRACK-ARGS...: conntrack(8) with labels lbl-a (bit 3)
# and lbl-b (bit 70) (with_labels, common.sh)
ct_labels() { local ns; [[ $1 == A ]] && ns=$NS_A || ns=$NS_B; shift; with_labels "$ns" conntrack "$@"; }
# line SIDE -i|-e: the dump line of the test's state
line() { ctl "$1" "$2" | grep 'sport=4444 dport=80'; }
has_labels() { [[ $(line "$1" "$2") =~ labels=0x0*$3( |$) ]]; }
no_labels() { local l; l=$(line "$1" "$2") && [[ -n $l && $l != *labels=* ]]; }

TUPLE=(-s 10.0.0.9 -d 10.0.0.2 -p tcp --sport 4444 --dport 80)
ct_in A -I "${TUPLE[@]}" --state ESTABLISHED -u SEEN_REPLY,ASSURED -t 300 >/dev/null
check "a state without labels reaches B" wait_until 10 no_labels B -e
check "two labels added (conntrack -U)" ct_labels A -U "${TUPLE[@]}" --label-add lbl-a,lbl-b
check "... reach B" wait_until 5 has_labels B -e 400000000000000008
check "one removed" ct_labels A -U "${TUPLE[@]}" --label-del lbl-b
check "... B follows" wait_until 5 has_labels B -e 8
check "the last removed" ct_labels A -U "${TUPLE[@]}" --label-del lbl-a
check "... A's internal cache has none" wait_until 5 no_labels A -i
check "... nor has B's external cache" wait_until 5 no_labels B -e
check "a mark set afterwards goes across, still without labels" eval \
	'ct_in A -U "${TUPLE[@]}" -m 5 >/dev/null && wait_until 5 eval "line B -e | grep -q mark=5" && no_labels B -e'
ctl B -f external >/dev/null
ctl A -B >/dev/null
check "after -f external and -B, B's state has no labels" wait_until 5 no_labels B -e
check "a label added again goes across" eval \
	'ct_labels A -U "${TUPLE[@]}" --label-add lbl-b && wait_until 5 has_labels B -e 400000000000000000'
finish
