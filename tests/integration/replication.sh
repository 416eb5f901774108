#!/bin/bash
# Two ctsyncd over a UDP sync link between two namespaces: states created,
# updated and deleted on A reach B's external cache; B commits them into its
# kernel with the same attributes; under 20 % random loss on the link (in
# both directions, nftables) 5000 states still converge exactly; -B and -n
# resend everything; a restarted peer is brought up to date, a peer started
# later gets the table unasked; and Mode ALARM:
# refreshes (of the start-up dump too), deletes, expiry after a SIGKILL.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
require_root
require_cmd conntrack nft python3

CTLOAD=${CTLOAD:-$(built_tool bench/ctload)}

pair_setup || { echo "cannot create the namespaces" >&2; exit 99; }
pair_conf A FTFW
pair_conf B FTFW
pair_start A && pair_start B || { fail "the daemons start"; finish; }

ext_count() { ctl B -e | grep -c .; }
int_count() { ctl A -i | grep -c .; }
ext_has() { ctl B -e | grep -q -- "$1"; }
ext_lacks() { ! ctl B -e | grep -q -- "$1"; }

# --- every kind of state goes across ----------------------------------------
ct_in A -I -s 10.0.0.1 -d 10.0.0.2 -p tcp --sport 1234 --dport 80 --state ESTABLISHED -u SEEN_REPLY,ASSURED -t 300 -m 7
ct_in A -I -s 10.0.0.3 -d 10.0.0.2 -p udp --sport 1234 --dport 53 -t 120 --src-nat 192.168.1.1:4000
ct_in A -I -s 10.0.0.5 -d 10.0.0.2 -p icmp --icmp-type 8 --icmp-code 0 --icmp-id 4660 -t 30 --zone 5
ct_in A -I -s 2001:db8::1 -d 2001:db8::2 -p tcp --sport 5555 --dport 443 --state ESTABLISHED -u SEEN_REPLY,ASSURED -t 300
ct_in A -I -s 10.0.0.7 -d 10.0.0.2 -p sctp --sport 100 --dport 200 --state ESTABLISHED --orig-vtag 1 --reply-vtag 2 -t 300
check "TCP with its mark reaches B" wait_until 10 ext_has 'ESTABLISHED src=10.0.0.1 dst=10.0.0.2 sport=1234 dport=80 .*mark=7'
check "UDP with SNAT reaches B" wait_until 5 ext_has 'src=10.0.0.3 dst=10.0.0.2 sport=1234 dport=53'
check "ICMP with its id and zone reaches B" wait_until 5 ext_has 'id=4660 .*zone=5'
check "IPv6 reaches B" wait_until 5 ext_has 'src=2001:db8::1'
check "SCTP reaches B" wait_until 5 ext_has 'sctp'
ct_in A -U -s 10.0.0.1 -d 10.0.0.2 -p tcp --sport 1234 --dport 80 -m 9 >/dev/null
check "an update reaches B" wait_until 5 ext_has 'sport=1234 dport=80 .*mark=9'
# As 1.4.7's dumps, each line ends with how long the state has been cached.
out=$("$CTSYNCD" -C "$WORK/B.conf" -e | head -n1)
check "-e lines end as 1.4.7's: [active since Ns] ($out)" contains "$out" ' \[active since [0-9]+s\]$'
ct_in A -D -s 10.0.0.5 >/dev/null
check "a delete reaches B" wait_until 5 ext_lacks 'id=4660'

# --- commit on B ---------------------------------------------------------------
out=$(ctl B -c); rc=$?
check "B commits and answers when done (rc=$rc): $out" contains "$out" 'commit: 4 states written'
kb=$(ct_in B -L -o extended)
check "B's kernel has the TCP state with mark 9" contains "$kb" 'tcp .*ESTABLISHED src=10.0.0.1 dst=10.0.0.2 sport=1234 dport=80 .*mark=9'
check "B's kernel has the SNAT reply tuple (SPAT byte quirk)" contains "$kb" 'src=10.0.0.2 dst=192.168.1.1 sport=53 dport=4000'
check "B's kernel has the IPv6 state" contains "$kb" 'src=2001:db8::1 dst=2001:db8::2 sport=5555 dport=443'
check "B's kernel has the SCTP state" contains "$kb" 'sctp .*src=10.0.0.7'
check "B's commit did not echo back to A (A's external cache stays empty)" test "$(ctl A -e | grep -c .)" -eq 0
# A commit over an entry B's kernel already follows keeps the kernel's
# status and TCP state: the peer's copy (SYN_SENT, no SEEN_REPLY) is older
# than what B's packets showed (ESTABLISHED); the kernel refuses to clear
# SEEN_REPLY, which failed the whole update before.  The rest (the mark) is
# updated.
ct_in A -I -s 10.0.0.8 -d 10.0.0.2 -p tcp --sport 4321 --dport 80 --state SYN_SENT -t 120 -m 11
check "a SYN_SENT state reaches B" wait_until 5 ext_has 'SYN_SENT src=10.0.0.8 .*mark=11'
ct_in B -I -s 10.0.0.8 -d 10.0.0.2 -p tcp --sport 4321 --dport 80 --state ESTABLISHED -u SEEN_REPLY -t 300 -m 1
out=$(ctl B -c)
check "the commit updates B's entry in place: $out" contains "$out" '5 updated in place, 0 failed'
kb=$(ct_in B -L -o extended | grep 'sport=4321')
check "B's kernel keeps its TCP state and takes the mark: $kb" contains "$kb" 'ESTABLISHED src=10.0.0.8 .*mark=11'

ct_in B -F >/dev/null; ct_in A -F >/dev/null
check "deletes by flush reach B" wait_until 10 bash -c "[[ \$('$CTSYNCD' -C '$WORK/B.conf' -e | grep -c .) -eq 0 ]]"

# --- 20 % loss both ways, 5000 states ------------------------------------------
for ns in "$NS_A" "$NS_B"; do
	ip netns exec "$ns" nft -f - <<'NFT'
table inet ctsyncd_loss {
	chain out { type filter hook output priority 0; udp dport 3780 numgen random mod 100 < 20 drop; }
}
NFT
done
if [[ -x $CTLOAD ]]; then
	t0=$(date +%s.%N)
	ip netns exec "$NS_A" "$CTLOAD" create 5000 --proto mixed --timeout 600 >/dev/null
	check "5000 states converge under 20 % loss" wait_until 120 bash -c "[[ \$('$CTSYNCD' -C '$WORK/B.conf' -e | grep -c .) -eq 5000 ]]"
	log "converged in $(python3 -c "import time;print(round(time.time()-$t0,2))") s"
	ip netns exec "$NS_A" "$CTLOAD" update 5000 --proto mixed --mark 3 >/dev/null
	check "5000 updates converge under 20 % loss" wait_until 120 bash -c "[[ \$('$CTSYNCD' -C '$WORK/B.conf' -e | grep -c 'mark=3') -eq 5000 ]]"
	ip netns exec "$NS_A" "$CTLOAD" delete 2500 --proto mixed >/dev/null
	check "2500 deletes converge under 20 % loss" wait_until 120 bash -c "[[ \$('$CTSYNCD' -C '$WORK/B.conf' -e | grep -c .) -eq 2500 ]]"
	j=$(ctl B -s network --json)
	check "B saw the loss as sequence gaps and asked for retransmissions" python3 -c '
import json, sys
d = json.loads(sys.argv[1])["sync"]
assert d["sequence_lost"] > 0 and d["nack_sent"] > 0, d
' "$j"
else
	fail "bench/ctload is not built"
fi
for ns in "$NS_A" "$NS_B"; do ip netns exec "$ns" nft delete table inet ctsyncd_loss; done

# --- -B and -n, and a restart of B ------------------------------------------------
ctl B -f external >/dev/null
check "B's external cache is flushed" test "$(ext_count)" -eq 0
ctl A -B >/dev/null
check "-B on A sends everything again" wait_until 20 bash -c "[[ \$('$CTSYNCD' -C '$WORK/B.conf' -e | grep -c .) -eq 2500 ]]"
ctl B -f external >/dev/null
ctl B -n >/dev/null
check "-n on B asks A for everything" wait_until 20 bash -c "[[ \$('$CTSYNCD' -C '$WORK/B.conf' -e | grep -c .) -eq 2500 ]]"
pair_stop B
wait_until 5 test ! -e "$WORK/B.lock"
pair_conf B FTFW "" ""
sed -i 's/Mode FTFW { }/Mode FTFW { StartupResync on }/' "$WORK/B.conf"
pair_start B
check "a restarted B with StartupResync gets everything" wait_until 20 bash -c "[[ \$('$CTSYNCD' -C '$WORK/B.conf' -e | grep -c .) -eq 2500 ]]"
# A peer first heard gets our table unasked, even without StartupResync:
# here B starts after A, and A never knew B's previous process.
pair_stop A; pair_stop B
wait_until 5 test ! -e "$WORK/A.lock" -a ! -e "$WORK/B.lock"
pair_conf B FTFW "" ""
pair_start A
check "A restarted alone has the 2500 states of its kernel" wait_until 10 bash -c "[[ \$('$CTSYNCD' -C '$WORK/A.conf' -i | grep -c .) -eq 2500 ]]"
pair_start B
check "B started after A, without StartupResync, gets A's table" wait_until 20 bash -c "[[ \$('$CTSYNCD' -C '$WORK/B.conf' -e | grep -c .) -eq 2500 ]]"
# A restarted peer's states are marked, not flushed: B keeps them while A
# sends its table again, then sweeps what A no longer has (300 states
# deleted in A's kernel while its daemon was down).
for ((i = 0; i < 300; i++)); do
	echo "-I -s 10.44.0.1 -d 10.44.0.2 -p udp --sport $((10000 + i)) --dport 53 -t 600"
done | ip netns exec "$NS_A" conntrack -f - >/dev/null 2>&1 ||
	for ((i = 0; i < 300; i++)); do
		ct_in A -I -s 10.44.0.1 -d 10.44.0.2 -p udp --sport $((10000 + i)) --dport 53 -t 600 >/dev/null
	done
check "B has A's 2800 states" wait_until 20 bash -c "[[ \$('$CTSYNCD' -C '$WORK/B.conf' -e | grep -c .) -eq 2800 ]]"
kill -KILL "$(head -n1 "$WORK/A.lock")"
wait_until 5 bash -c "! kill -0 $(head -n1 "$WORK/A.lock") 2>/dev/null"
rm -f "$WORK/A.lock"
ct_in A -D -s 10.44.0.1 >/dev/null
pair_start A
min=2800
for ((i = 0; i < 40; i++)); do
	n=$(ctl B -e | grep -c .)
	((n < min)) && min=$n
	sleep 0.1
done
check "B never dropped below A's 2500 live states while A resent them (lowest: $min)" test "$min" -ge 2500
check "then B swept the 300 that A no longer has" wait_until 20 bash -c "[[ \$('$CTSYNCD' -C '$WORK/B.conf' -e | grep -c .) -eq 2500 ]]"
j=$(ctl B -s cache --json)
check "B counts them as stale_swept" python3 -c 'import json,sys; assert json.loads(sys.argv[1])["remote_states"]["stale_swept"] == 300, sys.argv[1]' "$j"
j=$(ctl A -s network --json)
check "A's counters show no malformed message" python3 -c 'import json,sys; assert json.loads(sys.argv[1])["sync"]["malformed"] == 0' "$j"

# --- the same over TCP and over multicast ----------------------------------------------
for kind in TCP Multicast; do
	pair_stop A; pair_stop B
	wait_until 5 test ! -e "$WORK/A.lock" -a ! -e "$WORK/B.lock"
	ip netns exec "$NS_A" "$CTLOAD" flush >/dev/null
	LINK_KIND=$kind pair_conf A FTFW
	LINK_KIND=$kind pair_conf B FTFW
	pair_start A && pair_start B || { fail "the daemons start over $kind"; continue; }
	ip netns exec "$NS_A" "$CTLOAD" create 2000 --proto mixed --timeout 600 --base-addr 198.18.70.1 >/dev/null
	check "2000 states reach B over $kind" \
		wait_until 30 bash -c "[[ \$('$CTSYNCD' -C '$WORK/B.conf' -e | grep -c 198.18.70) -eq 2000 ]]"
	ip netns exec "$NS_A" "$CTLOAD" delete 1000 --proto mixed --base-addr 198.18.70.1 >/dev/null
	check "1000 deletes reach B over $kind" \
		wait_until 30 bash -c "[[ \$('$CTSYNCD' -C '$WORK/B.conf' -e | grep -c 198.18.70) -eq 1000 ]]"
done

# --- Mode ALARM: refreshes, also of the states loaded at start-up; expiry ------------------
pair_stop A; pair_stop B
wait_until 5 test ! -e "$WORK/A.lock" -a ! -e "$WORK/B.lock"
MODE_OPTS="RefreshTime 2 CacheTimeout 5" pair_conf A ALARM
MODE_OPTS="RefreshTime 2 CacheTimeout 5" pair_conf B ALARM
if pair_start A && pair_start B; then
	# A's kernel still holds the 1000 states of the multicast round: its start-up dump.
	check "ALARM: the states A loaded at start-up reach B by refresh" \
		wait_until 10 bash -c "[[ \$('$CTSYNCD' -C '$WORK/B.conf' -e | grep -c 198.18.70) -eq 1000 ]]"
	# The first 1000 of the 2000 are gone already: this deletes the next 500.
	ip netns exec "$NS_A" "$CTLOAD" delete 1500 --proto mixed --base-addr 198.18.70.1 >/dev/null
	check "ALARM: 500 deletes reach B" \
		wait_until 10 bash -c "[[ \$('$CTSYNCD' -C '$WORK/B.conf' -e | grep -c 198.18.70) -eq 500 ]]"
	out=$("$CTSYNCD" -C "$WORK/B.conf" -e | grep -m1 198.18.70)
	check "ALARM: -e lines end as 1.4.7's, with the expiry ($out)" \
		contains "$out" ' \[active since [0-9]+s\] \[expires in [0-9]+s\]$'
	check "ALARM: the other 500 stay (refreshed within CacheTimeout)" \
		bash -c "sleep 7; [[ \$('$CTSYNCD' -C '$WORK/B.conf' -e | grep -c 198.18.70) -eq 500 ]]"
	kill -KILL "$(head -n1 "$WORK/A.lock")"
	check "ALARM: A killed, its states expire from B's external cache" \
		wait_until 15 bash -c "[[ \$('$CTSYNCD' -C '$WORK/B.conf' -e | grep -c 198.18.70) -eq 0 ]]"
	j=$(ctl B -s cache --json)
	check "ALARM: B counts 500 expirations" \
		python3 -c 'import json,sys; assert json.loads(sys.argv[1])["remote_states"]["expired"] == 500, sys.argv[1]' "$j"
	# As 1.4.7: -n and -B do nothing in ALARM and are no error (the stock
	# primary-backup.sh runs them in every mode).
	out=$(ctl B -n 2>&1); rc=$?
	check "ALARM: -n does nothing and exits 0, as 1.4.7 (exit $rc): $out" \
		eval '[[ $rc -eq 0 && $out == *"nothing to do in Mode ALARM"* ]]'
	out=$(ctl B -B 2>&1); rc=$?
	check "ALARM: -B likewise (exit $rc)" test "$rc" -eq 0
else
	fail "the daemons start in ALARM"
fi

finish
