#!/bin/bash
# ctsyncd and Debian's conntrackd 1.4.7 as a pair, both directions: states of
# every kind cross the sync link and are committed on the other side with
# the same attributes; 1.4.7 counts no malformed message from us; 1000
# states, then 500 updates and 300 deletes of them, converge under 20 % loss
# in each direction (the receiver's -e equals the sender's -i line by line);
# -n and -B work across.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
. "$(dirname "$0")/../lib/interop.sh"
require_root
require_cmd conntrack conntrackd nft python3

CTLOAD=${CTLOAD:-$(built_tool bench/ctload)}
CONNTRACKD=$(command -v conntrackd)
pair_setup || { echo "cannot create the namespaces" >&2; exit 99; }
pair_conf A FTFW   # conntrackd 1.4.7
pair_conf B FTFW   # ctsyncd
pair_start A "$CONNTRACKD" || { fail "conntrackd 1.4.7 starts"; finish; }
pair_start B || { fail "ctsyncd starts"; finish; }
old() { old_ctl A "$@"; }
count_lines() { grep -c . || true; }

# --- conntrackd 1.4.7 -> ctsyncd -------------------------------------------------
ct_in A -I -s 10.0.0.1 -d 10.0.0.2 -p tcp --sport 1234 --dport 80 --state ESTABLISHED -u SEEN_REPLY,ASSURED -t 300 -m 7
ct_in A -I -s 10.0.0.3 -d 10.0.0.2 -p udp --sport 1234 --dport 53 -t 120 --src-nat 192.168.1.1:4000
ct_in A -I -s 10.0.0.5 -d 10.0.0.2 -p icmp --icmp-type 8 --icmp-code 0 --icmp-id 4660 -t 30 --zone 5
ct_in A -I -s 2001:db8::1 -d 2001:db8::2 -p tcp --sport 5555 --dport 443 --state ESTABLISHED -u SEEN_REPLY,ASSURED -t 300
check "1.4.7's states reach ctsyncd's external cache" \
	wait_until 15 bash -c "[[ \$('$CTSYNCD' -C '$WORK/B.conf' -e | grep -c .) -eq 4 ]]"
ext=$(ctl B -e)
check "TCP with mark 7" contains "$ext" 'ESTABLISHED src=10.0.0.1 dst=10.0.0.2 sport=1234 dport=80 .*mark=7'
check "ICMP id 4660 in zone 5 (LE id quirk)" contains "$ext" 'id=4660 .*zone=5'
ct_in A -U -s 10.0.0.1 -d 10.0.0.2 -p tcp --sport 1234 --dport 80 -m 9 >/dev/null
check "an update from 1.4.7 arrives" wait_until 10 bash -c "'$CTSYNCD' -C '$WORK/B.conf' -e | grep -q 'dport=80 .*mark=9'"
out=$(ctl B -c)
check "ctsyncd commits 1.4.7's states: $out" contains "$out" 'commit: 4 states written'
kb=$(ct_in B -L)
check "the SNAT reply tuple survives the LE port quirk" contains "$kb" 'src=10.0.0.2 dst=192.168.1.1 sport=53 dport=4000'
check "the IPv6 state is committed" contains "$kb" 'src=2001:db8::1 dst=2001:db8::2'
ct_in A -D -s 10.0.0.5 >/dev/null
check "a delete from 1.4.7 arrives" wait_until 10 bash -c "! '$CTSYNCD' -C '$WORK/B.conf' -e | grep -q 4660"

# --- ctsyncd -> conntrackd 1.4.7 -------------------------------------------------------
ct_in B -F >/dev/null
ct_in B -I -s 10.1.0.1 -d 10.1.0.2 -p tcp --sport 1000 --dport 22 --state ESTABLISHED -u SEEN_REPLY,ASSURED -t 300 -m 5
ct_in B -I -s 10.1.0.3 -d 10.1.0.2 -p udp --sport 1000 --dport 53 -t 120 --dst-nat 10.2.0.9:5353
ct_in B -I -s 10.1.0.5 -d 10.1.0.2 -p icmp --icmp-type 8 --icmp-code 0 --icmp-id 77 -t 30 --zone 3
check "ctsyncd's states reach 1.4.7's external cache" \
	wait_until 15 bash -c "ip netns exec '$NS_A' conntrackd -C '$WORK/A.conf' -e 2>/dev/null | grep -q 'id=77'"
ext=$(old -e)
check "1.4.7 shows the TCP state with mark 5" contains "$ext" 'src=10.1.0.1 dst=10.1.0.2 sport=1000 dport=22 .*mark=5'
check "1.4.7 shows the zone" contains "$ext" 'zone=3'
net=$(old -s network)
check "1.4.7 counts no malformed message from ctsyncd" old_net_clean "$net"
old -c >/dev/null
ka=$(ct_in A -L)
check "1.4.7 commits ctsyncd's DNAT state" contains "$ka" 'src=10.1.0.3 dst=10.1.0.2 sport=1000 dport=53 .*src=10.2.0.9 dst=10.1.0.3 sport=5353 dport=1000'
# ctsyncd's DELs carry the key only (WIRE_ENC_KEY_ONLY): 1.4.7 must find the state with it.
ct_in B -D -s 10.1.0.1 >/dev/null
ct_in B -D -s 10.1.0.5 >/dev/null
check "ctsyncd's key-only deletes (TCP, ICMP in a zone) empty 1.4.7's external cache of them" \
	wait_until 10 bash -c "! ip netns exec '$NS_A' conntrackd -C '$WORK/A.conf' -e 2>/dev/null | grep -Eq 'id=77|sport=1000 dport=22'"
check "... and leave the other state" contains "$(old -e)" 'sport=1000 dport=53'

# --- 20 % loss, each direction ------------------------------------------------------------
if [[ -x $CTLOAD ]]; then
	ct_in A -F >/dev/null; ct_in B -F >/dev/null; sleep 1
	ctl B -f >/dev/null; old -f >/dev/null
	pair_loss 20
	ip netns exec "$NS_A" "$CTLOAD" create 1000 --timeout 600 --base-addr 198.18.50.1 >/dev/null
	check "1000 states from 1.4.7 converge in ctsyncd under 20 % loss" \
		wait_until 120 bash -c "[[ \$('$CTSYNCD' -C '$WORK/B.conf' -e | grep -c 198.18.50) -eq 1000 ]]"
	ip netns exec "$NS_B" "$CTLOAD" create 1000 --timeout 600 --base-addr 198.18.60.1 >/dev/null
	check "1000 states from ctsyncd converge in 1.4.7 under 20 % loss" \
		wait_until 120 bash -c "[[ \$(ip netns exec '$NS_A' conntrackd -C '$WORK/A.conf' -e 2>/dev/null | grep -c 198.18.60) -eq 1000 ]]"
	# updates (500) and deletes (300) under loss too; then the receiver's
	# external cache must equal the sender's internal cache line by line
	ip netns exec "$NS_A" "$CTLOAD" update 500 --base-addr 198.18.50.1 --mark 9 --timeout 600 >/dev/null
	ip netns exec "$NS_A" "$CTLOAD" delete 300 --base-addr 198.18.50.1 --offset 700 >/dev/null
	ip netns exec "$NS_B" "$CTLOAD" update 500 --base-addr 198.18.60.1 --mark 9 --timeout 600 >/dev/null
	ip netns exec "$NS_B" "$CTLOAD" delete 300 --base-addr 198.18.60.1 --offset 700 >/dev/null
	same() { [[ $(grep -c . <"$2") -eq 700 && $(dump_norm <"$2") == "$(dump_norm <"$3")" ]]; }
	in_sync_50() { old -i | grep 'src=198\.18\.50\.' >"$WORK/i50"; ctl B -e | grep 'src=198\.18\.50\.' >"$WORK/e50"; same _ "$WORK/i50" "$WORK/e50"; }
	in_sync_60() { ctl B -i | grep 'src=198\.18\.60\.' >"$WORK/i60"; old -e | grep 'src=198\.18\.60\.' >"$WORK/e60"; same _ "$WORK/i60" "$WORK/e60"; }
	wait_until 120 in_sync_50
	dumps_agree "1.4.7's updates and deletes under 20 % loss: ctsyncd's -e = 1.4.7's -i" "$WORK/i50" "$WORK/e50"
	wait_until 120 in_sync_60
	dumps_agree "ctsyncd's updates and deletes under 20 % loss: 1.4.7's -e = ctsyncd's -i" "$WORK/i60" "$WORK/e60"
	check "... 1.4.7 -s network: no malformed, wrong version or bad size" old_net_clean "$(old -s network)"
	pair_loss 0
	ctl B -f external >/dev/null
	ctl B -n >/dev/null
	check "-n from ctsyncd: 1.4.7 sends its whole cache" \
		wait_until 20 bash -c "[[ \$('$CTSYNCD' -C '$WORK/B.conf' -e | grep -c 198.18.50) -eq 700 ]]"
	old -f external >/dev/null
	ctl B -B >/dev/null
	check "-B from ctsyncd fills 1.4.7's cache again" \
		wait_until 20 bash -c "[[ \$(ip netns exec '$NS_A' conntrackd -C '$WORK/A.conf' -e 2>/dev/null | grep -c 198.18.60) -eq 700 ]]"
else
	fail "bench/ctload is not built"
fi
old -k >/dev/null
finish
