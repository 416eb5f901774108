#!/bin/bash
# Redundant sync links at the daemon level: two UDP links between A and B
# (two veth pairs).  While 50k states are being replicated, A's active link
# goes down; A moves to the other link and every state still reaches B, then
# updates and deletes do too, and B's external cache equals A's internal
# cache.  The same with the link coming back and the other one going down.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
require_root
require_cmd conntrack python3

CTLOAD=${CTLOAD:-$(built_tool bench/ctload)}
require_built "$CTLOAD"
N=50000

pair_setup || { echo "cannot create the namespaces" >&2; exit 99; }
ip link add syncA2 netns "$NS_A" type veth peer name syncB2 netns "$NS_B" || exit 99
ip -n "$NS_A" addr add 198.18.2.1/24 dev syncA2
ip -n "$NS_B" addr add 198.18.2.2/24 dev syncB2
ip -n "$NS_A" link set syncA2 up
ip -n "$NS_B" link set syncB2 up
pair_conf A FTFW "UDP { IPv4_address 198.18.2.1 IPv4_Destination_Address 198.18.2.2 Port 3780 Interface syncA2 }"
pair_conf B FTFW "UDP { IPv4_address 198.18.2.2 IPv4_Destination_Address 198.18.2.1 Port 3780 Interface syncB2 }"
pair_start A && pair_start B || { fail "the daemons start"; finish; }

active() { ctl "$1" -s link --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["channel"]["active"])'; }
count_is() { [[ $(ext_active B) -eq $1 ]]; }
marks_are() { [[ $(ctl B -e | grep -c "mark=$1 ") -eq $N ]]; }

check "A sends on its first link" test "$(active A)" = syncA
# a burst, and the active link goes down in the middle of it
ip netns exec "$NS_A" "$CTLOAD" create "$N" --proto mixed --timeout 900 --rate 100000 >/dev/null &
load=$!
sleep 0.2
ip -n "$NS_A" link set syncA down
wait "$load"
check "A moved to the other link" wait_until 5 bash -c "[[ \$('$CTSYNCD' -C '$WORK/A.conf' -s link --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"channel\"][\"active\"])') == syncA2 ]]"
check "all $N states reach B although the link went down mid-burst" wait_until 60 count_is "$N"
ip -n "$NS_A" link set syncA up
ip netns exec "$NS_A" "$CTLOAD" update "$N" --proto mixed --mark 7 --timeout 900 --rate 100000 >/dev/null &
load=$!
sleep 0.2
ip -n "$NS_A" link set syncA2 down
wait "$load"
check "the other link down mid-burst: A is back on the first" wait_until 5 bash -c "[[ \$('$CTSYNCD' -C '$WORK/A.conf' -s link --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"channel\"][\"active\"])') == syncA ]]"
check "all $N updates reach B" wait_until 60 marks_are 7
j=$(ctl A -s link --json)
check "A counts the failovers" python3 -c 'import json,sys; assert json.loads(sys.argv[1])["channel"]["failovers"] >= 2, sys.argv[1]' "$j"
ip -n "$NS_A" link set syncA2 up
ip netns exec "$NS_A" "$CTLOAD" delete "$N" --proto mixed >/dev/null
check "all $N deletes reach B" wait_until 60 count_is 0
finish
