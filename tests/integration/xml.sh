#!/bin/bash
# -i -x and -e -x: ctsyncd prints what conntrackd 1.4.7 prints for the same
# states.  Each namespace runs both daemons (ctsyncd on port 3780,
# conntrackd on 3781), so both internal caches hold A's kernel table and
# both external caches on B what the A side sent.  The only difference
# allowed: 1.4.7 prints the kernel's conntrack <id>, which ctsyncd does not
# keep.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
require_root
require_cmd conntrack conntrackd python3
pair_setup || { echo "cannot create the namespaces" >&2; exit 99; }
for side in A B; do
	pair_conf "$side" FTFW "" "Filter { Address Ignore { IPv4_address 198.18.1.0/24 IPv6_address 2001:2:0:1::/64 } }"
	sed -e 's/Port 3780/Port 3781/' -e "s|$WORK/$side\.|$WORK/old$side.|g" "$WORK/$side.conf" >"$WORK/old$side.conf"
done
ct_in A -I -s 10.0.0.1 -d 10.0.0.2 -p tcp --sport 1234 --dport 80 --state ESTABLISHED -u SEEN_REPLY,ASSURED -t 300 -m 7
ct_in A -I -s 10.0.0.3 -d 10.0.0.4 -p udp --sport 5000 --dport 53 -t 30 --src-nat 192.168.1.1:4000 --zone 5
ct_in A -I -s 10.0.0.5 -d 10.0.0.6 -p icmp --icmp-type 8 --icmp-code 0 --icmp-id 77 -t 30
ct_in A -I -s 2001:db8::1 -d 2001:db8::2 -p tcp --sport 1 --dport 2 --state SYN_SENT -t 100 --dst-nat 2001:db8::9
ct_in A -I -s 10.0.0.9 -d 10.0.0.8 -p tcp --sport 7 --dport 8 --state TIME_WAIT -u SEEN_REPLY -t 100 --dst-nat 10.9.9.9:9
pair_start A && pair_start B || { fail "ctsyncd starts"; finish; }
for side in A B; do
	ns=$NS_A; [[ $side == B ]] && ns=$NS_B
	ip netns exec "$ns" conntrackd -C "$WORK/old$side.conf" -d 2>/dev/null || { fail "conntrackd 1.4.7 starts on $side"; finish; }
done
old() { local ns=$NS_A; [[ $1 == B ]] && ns=$NS_B; ip netns exec "$ns" conntrackd -C "$WORK/old$1.conf" "${@:2}" 2>/dev/null; }
# One <flow> per line, sorted, without 1.4.7's <id>.
norm() { sed 's|<id>[0-9]*</id>||' | sort; }
# The states made before the start are sent by a bulk, on both sides.
ctl A -B >/dev/null; old A -B >/dev/null
count_is() { [[ $("$@" | grep -c '<flow>') -eq 5 ]]; }
check "ctsyncd's external cache has the 5 states" wait_until 10 count_is ctl B -e -x
check "conntrackd's external cache has the 5 states" wait_until 10 count_is old B -e -x

new_i=$(ctl A -i -x | norm); old_i=$(old A -i -x | norm)
check "both internal caches list the 5 states" eval "[[ \$(grep -c . <<<\"\$new_i\") -eq 5 ]]"
check "-i -x is the same as conntrackd's" test "$new_i" = "$old_i"
[[ $new_i == "$old_i" ]] || diff <(echo "$old_i") <(echo "$new_i") | head -20
new_e=$(ctl B -e -x | norm); old_e=$(old B -e -x | norm)
check "-e -x is the same as conntrackd's" test "$new_e" = "$old_e"
[[ $new_e == "$old_e" ]] || diff <(echo "$old_e") <(echo "$new_e") | head -20
check "every line is well-formed XML" python3 -c '
import sys, xml.dom.minidom
for line in sys.argv[1].splitlines():
    xml.dom.minidom.parseString(line)
' "$new_i
$new_e"

# The plain lines too, for states loaded at start and made after it by
# conntrack -I (their dump and their event carry the mark, zero or not)
# and by a packet (its event leaves a zero mark out: no mark= in either
# daemon's line).  The timers at the end differ.
ct_in A -I -s 10.0.1.1 -d 10.0.1.2 -p tcp --sport 4321 --dport 22 --state ESTABLISHED -u SEEN_REPLY,ASSURED -t 300
# (a rule that uses conntrack, so that the namespace tracks its packets)
ip netns exec "$NS_A" nft -f - <<'NFT' || fail "nftables rule"
table inet xmltest {
	chain out {
		type filter hook output priority 0;
		ct state new counter
	}
}
NFT
ip netns exec "$NS_A" python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", 9999))'
plain() { sed -E 's/ *\[(active since|updated|expires).*$//' | sort; }
count6() { [[ $("$@" | grep -c .) -eq 7 ]]; }
check "both external caches get the 2 new states" eval 'wait_until 10 count6 ctl B -e && wait_until 10 count6 old B -e'
new_i=$(ctl A -i | plain); old_i=$(old A -i | plain)
log "$(grep 127.0.0.1 <<<"$new_i")"
check "-i is the same as conntrackd's" test "$new_i" = "$old_i"
[[ $new_i == "$old_i" ]] || diff <(echo "$old_i") <(echo "$new_i") | head -20
new_e=$(ctl B -e | plain); old_e=$(old B -e | plain)
check "-e is the same as conntrackd's" test "$new_e" = "$old_e"
[[ $new_e == "$old_e" ]] || diff <(echo "$old_e") <(echo "$new_e") | head -20
out=$("$CTSYNCD" -C "$WORK/A.conf" -x 2>&1); rc=$?
check "-x without -i or -e is a usage error (rc=$rc)" test $rc -ne 0
finish
