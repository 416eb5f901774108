#!/bin/bash
# Honest limits: a cache that refuses states for HashLimit says so (-s cache:
# complete false, refused N; the log names the limit and its value) and is
# repaired by itself once there is room: the external cache by a RESYNC
# request to the peer, the internal one by a re-read of the kernel table.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
require_root
require_cmd conntrack python3

pair_setup || { echo "cannot create the namespaces" >&2; exit 99; }

# limit SIDE N: HashLimit N in SIDE's configuration.
limit() { sed -i "s/HashLimit 262144/HashLimit $2/" "$WORK/$1.conf"; }
cache_field() { # cache_field SIDE SECTION KEY
	ctl "$1" -s cache --json | python3 -c "import json,sys; print(json.load(sys.stdin)['$2']['$3'])"
}
load() { # load SIDE FIRST N: N UDP states with sports FIRST..
	local i
	for ((i = $2; i < $2 + $3; i++)); do
		ct_in "$1" -I -s 10.9.0.1 -d 10.9.0.2 -p udp --sport "$i" --dport 53 -t 600 >/dev/null
	done
}
unload() { # unload SIDE FIRST N
	local i
	for ((i = $2; i < $2 + $3; i++)); do
		ct_in "$1" -D -s 10.9.0.1 -d 10.9.0.2 -p udp --sport "$i" --dport 53 >/dev/null
	done
}
ext_is() { [[ $(ext_active B) == "$1" ]]; }
int_is() { [[ $(cache_field A internal_cache active) == "$1" ]]; }

# --- the external cache at its limit ---------------------------------------------
pair_conf A FTFW
pair_conf B FTFW
limit B 100
pair_start A && pair_start B || { fail "the daemons start"; finish; }
load A 1000 150
check "B's external cache stops at HashLimit 100" wait_until 20 ext_is 100
check "and says it is incomplete" test "$(cache_field B external_cache complete)" = False
check "and counts the 50 refused" test "$(cache_field B external_cache refused)" -ge 50
check "B's log names the limit and its value" grep -q 'external cache full (HashLimit 100)' "$WORK/B.log"
# Room again: the peer's table is asked for, and what was refused comes.
unload A 1000 100
check "B gets the 50 states it refused once there is room" wait_until 30 ext_is 50
check "B's external cache is complete again" test "$(cache_field B external_cache complete)" = True
check "one repair or more counted" test "$(cache_field B external_cache repairs)" -ge 1
check "B holds exactly A's 50 states" test "$(ctl B -e | grep -c 'sport=11[0-4][0-9]')" -eq 50
pair_stop A; pair_stop B
wait_until 5 test ! -e "$WORK/A.lock"; wait_until 5 test ! -e "$WORK/B.lock"
ct_in A -F >/dev/null

# --- the internal cache at its limit -----------------------------------------------
pair_conf A FTFW
pair_conf B FTFW
limit A 100
pair_start A && pair_start B || { fail "the daemons start again"; finish; }
load A 2000 150
check "A's internal cache stops at HashLimit 100" wait_until 20 int_is 100
check "and says it is incomplete" test "$(cache_field A internal_cache complete)" = False
check "A's log names the limit" grep -q 'internal cache full (HashLimit 100)' "$WORK/A.log"
unload A 2000 100
check "A picks up the local states it refused once there is room" wait_until 30 int_is 50
check "A's internal cache is complete again" test "$(cache_field A internal_cache complete)" = True
check "and B has all of them" wait_until 20 ext_is 50
finish
