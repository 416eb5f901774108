#!/bin/bash
# Live reload (SIGHUP): a keyed pair replicates; A's file changes and A is
# sent SIGHUP.  (a) HashLimit below the count, a Filter and PurgeTimeout are
# applied with the caches and the peer session kept (no new sequence space,
# no resync, no bulk); (b) a broken file is refused with file:line:column
# and the old configuration stays; (c) a restart-only option is named and
# kept, the live one beside it applied; (d) a key roll by reloads on both
# nodes loses no state; (e) --check against the running daemon lists what
# a reload would change, and says so when no daemon answers.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
require_root
require_cmd conntrack python3
pair_setup || { echo "cannot create the namespaces" >&2; exit 99; }

umask 077
"$CTSYNCD" --genkey >"$WORK/k1" && "$CTSYNCD" --genkey >"$WORK/k2" ||
	{ echo "ctsyncd --genkey failed" >&2; exit 99; }

# conf SIDE "Key lines" [General extra]: the pair's file, keyed.
conf() { pair_conf "$1" FTFW "$2" "${3:-}"; }
pid_of() { head -n1 "$WORK/$1.lock"; }
hup() { kill -HUP "$(pid_of "$1")"; }
# reloaded SIDE N: the N-th "reloaded"/"reload of" line of SIDE's log is there.
reloads() { grep -cE 'reloaded |reload of .* failed' "$WORK/$1.log"; }
hup_wait() {
	local side=$1 before
	before=$(reloads "$side")
	hup "$side"
	wait_until 5 eval "[[ \$(reloads $side) -gt $before ]]"
}
# js SIDE REQUEST EXPR: EXPR of the JSON answer of -s REQUEST (d is the object).
js() { ctl "$1" -s $2 --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$3"; }
int_count() { js "$1" cache 'd["internal_cache"]["active"]'; }
# The session's marks: a new sequence space, a resync or a bulk would move one of them.
session() {
	js "$1" network '"/".join(str(d["sync"][k]) for k in ("peer_restarts", "peer_space_switches", "resync_sent", "resync_received", "bulk_walks")) + "/" + str(d["envelope"]["sessions_accepted"])'
}
add() { ct_in A -I -s "$1" -d 10.50.0.1 -p tcp --sport 1000 --dport 80 --state ESTABLISHED -t 600; }

conf A "Key $WORK/k1"
conf B "Key $WORK/k1"
pair_start A && pair_start B || { fail "the keyed pair starts"; finish; }
for i in $(seq 1 28); do add 10.1.0.$i; done
add 10.2.0.1
add 10.2.0.2
check "B holds A's 30 states" wait_until 10 eval '[[ $(ext_active B) -eq 30 ]]'
wait_until 5 eval '[[ $(js A queue "d[\"queues\"][\"idle\"]") == True ]]'
SESSION_A=$(session A) SESSION_B=$(session B)
echo "session marks before: A $SESSION_A, B $SESSION_B" >&2

# ---- (a) live: HashLimit below the count, a Filter, a timer ----
conf A "Key $WORK/k1" "PurgeTimeout_placeholder"
sed -i -e 's/HashLimit 262144/HashLimit 20/' -e 's/PurgeTimeout_placeholder/Filter From Kernelspace { Address Ignore { IPv4_address 10.2.0.0\/16 IPv4_address 10.3.0.0\/16 } }/' "$WORK/A.conf"
sed -i 's/Mode FTFW {/Mode FTFW { PurgeTimeout 7/' "$WORK/A.conf"
hup_wait A
check "(a) each live change is logged as applied" \
	eval 'grep -q "HashLimit: changed from 262144 to 20; applied" "$WORK/A.log" &&
	      grep -q "Filter Address: changed from none to Ignore { 10.2.0.0/16 10.3.0.0/16 }; applied" "$WORK/A.log" &&
	      grep -q "PurgeTimeout: changed from 60 to 7; applied" "$WORK/A.log"'
check "(a) the summary counts them" \
	grep -q "reloaded $WORK/A.conf: 4 options applied, 0 need a restart" "$WORK/A.log"
check "(a) log files were reopened too (logrotate)" grep -q "log file reopened (SIGHUP)" "$WORK/A.log"
check "(a) -s shows the new limit" test "$(js A cache 'd["internal_cache"]["limit"]')" = 20
check "(a) the states the new Filter ignores left A's cache and B's; the other 28 stay" \
	wait_until 10 eval '[[ $(int_count A) -eq 28 && $(ext_active B) -eq 28 ]]'
add 10.3.0.1
add 10.1.0.99
sleep 1
check "(a) a newly filtered address is not synced, and above HashLimit nothing new is taken" \
	eval '[[ $(int_count A) -eq 28 && $(ext_active B) -eq 28 ]] && ! ctl B -e | grep -q "src=10.3.0.1"'
check "(a) the refusal names the limit" grep -q "internal cache full (HashLimit 20)" "$WORK/A.log"
check "(a) -t uses the new PurgeTimeout" eval 'ctl A -t | grep -q "scheduled in 7 s"'
check "(a) no new sequence space, no resync, no bulk, no new envelope session on either side" \
	eval '[[ $(session A) == "$SESSION_A" && $(session B) == "$SESSION_B" ]]'

# ---- (b) a broken file: refused where it breaks; the old configuration stays ----
cp "$WORK/A.conf" "$WORK/A.good"
printf 'General {\n\tHashLimit 20\n\tHashLimit lots\n}\n' >"$WORK/A.conf"
hup_wait A
check "(b) the error is logged as file:line:column" \
	grep -q "$WORK/A.conf:3:12: expected a decimal number" "$WORK/A.log"
check "(b) ... and the old configuration stays" \
	grep -q "reload of $WORK/A.conf failed; the running configuration stays" "$WORK/A.log"
check "(b) the daemon runs on with its limit" test "$("$CTSYNCD" -C "$WORK/A.good" -s cache --json |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["internal_cache"]["limit"])')" = 20

# ---- (c) a restart-only option beside a live one ----
sed -e 's/Port 3780/Port 3781/' -e 's/HashLimit 20/HashLimit 1000/' "$WORK/A.good" >"$WORK/A.conf"
hup_wait A
check "(c) the restart-only option is named, with its old value kept" \
	grep -q "UDP Port: changed from 3780 to 3781; needs a restart, keeping 3780" "$WORK/A.log"
check "(c) the summary counts both" \
	grep -q "reloaded $WORK/A.conf: 1 option applied, 1 needs a restart" "$WORK/A.log"
add 10.1.0.100
check "(c) the link still works on the old port, and the raised limit takes the new state" \
	wait_until 10 eval '[[ $(ext_active B) -ge 29 ]] && ctl B -e | grep -q "src=10.1.0.100"'
check "(c) the refused state comes back once there is room (repair)" \
	wait_until 15 eval 'ctl B -e | grep -q "src=10.1.0.99"'

# ---- (d) a key roll, by reloads on both nodes ----
roll() {
	local keys=$1 n=$2 side
	for side in A B; do
		sed -i "s|^\s*Key .*|	$keys|" "$WORK/$side.conf"
		hup_wait "$side" || return 1
	done
	add 10.1.1.$n
	wait_until 10 eval 'ctl B -e | grep -q "src=10.1.1.$n "'
}
sed -i 's/Port 3781/Port 3780/' "$WORK/A.conf"
SESSION_A=$(session A) SESSION_B=$(session B)
BEFORE=$(ext_active B)
check "(d) step 1: the new key is added on both (old one still seals)" roll "Key $WORK/k1 Key $WORK/k2" 1
check "(d) step 2: the new key seals, the old one is still accepted" roll "Key $WORK/k2 Key $WORK/k1" 2
check "(d) step 3: the old key is dropped" roll "Key $WORK/k2" 3
check "(d) the keys were read again on each reload" \
	test "$(grep -c 'sync: keys read again' "$WORK/B.log")" -ge 3
check "(d) A now seals with k2 alone" test "$(js A network 'd["envelope"]["keys"]')" = 1
check "(d) no state lost: B holds what it held plus the three new states" \
	test "$(ext_active B)" -eq $((BEFORE + 3))
check "(d) the session went on through the roll" \
	eval '[[ $(session A) == "$SESSION_A" && $(session B) == "$SESSION_B" ]]'

# ---- (e) --check against the running daemon ----
sed -e 's/HashLimit 1000/HashLimit 5000/' -e 's/Port 3780/Port 3790/' "$WORK/A.conf" >"$WORK/A.next"
"$CTSYNCD" -C "$WORK/A.next" --check >/dev/null 2>"$WORK/check.out"
check "(e) --check lists the live change" grep -q "live:    HashLimit: 1000 -> 5000" "$WORK/check.out"
check "(e) --check lists the restart-only change, which the daemon still has from its start" \
	grep -q "restart: UDP Port: 3780 -> 3790 (a reload keeps 3780)" "$WORK/check.out"
check "(e) --check counts them" grep -q "would apply 1 option live; 1 needs a restart" "$WORK/check.out"
sed -i "s|Path $WORK/A.ctl|Path $WORK/nobody.ctl|" "$WORK/A.next"
"$CTSYNCD" -C "$WORK/A.next" --check >/dev/null 2>"$WORK/check.out"
check "(e) without a daemon, --check still validates and says no daemon answered" \
	eval 'grep -q "is valid" "$WORK/check.out" && grep -q "no daemon answered on $WORK/nobody.ctl" "$WORK/check.out"'
check "both daemons still run" eval 'pid_alive "$(pid_of A)" && pid_alive "$(pid_of B)"'
finish
