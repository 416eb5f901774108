#!/bin/bash
# Every attribute kind between ctsyncd and Debian's conntrackd 1.4.7, in
# both directions, on top of what conntrackd.sh covers: connlabels (two
# words apart, so the bitmap has several words), SCTP (its vtags travel, but
# no dump, neither ours nor the kernel's, shows them), IPv6 TCP, UDP and
# ICMPv6, SNAT and DNAT with ports (IPv4 and IPv6), zones, marks; the states
# are created, updated (mark, labels added and removed) and deleted on one
# side, committed on the other, and the two kernels' lines compared.  A
# related flow (the data connection of an FTP session, through the kernel's
# ftp helper) crosses with its master and is committed linked to it, both
# ways.  -B from 1.4.7 and -n from 1.4.7 (ctsyncd answers). After each
# direction: 1.4.7's -s network has zero malformed / wrong version / bad
# size counters, and the receiver's external cache agrees line by line with
# the sender's internal cache (and 1.4.7's client, asking ctsyncd, prints
# what ctsyncd's own client does).
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
. "$(dirname "$0")/../lib/interop.sh"
require_root
require_cmd conntrack conntrackd nft python3
modprobe nf_conntrack_ftp 2>/dev/null
[[ -d /sys/module/nf_conntrack_ftp ]] || { echo "no nf_conntrack_ftp module: skipped" >&2; exit 77; }

# conntrack(8) names labels through /etc/xtables/connlabel.conf (the kernel
# only knows bits): every conntrack(8) here runs with_labels (common.sh).
BIT1=3 L1=lbl-a BIT2=70 L2=lbl-b
ct_in() { local ns; [[ $1 == A ]] && ns=$NS_A || ns=$NS_B; shift; with_labels "$ns" conntrack "$@" 2>/dev/null; }
# label_re BIT...: how ctsyncd's dumps print that label set (hex, most
# significant word first, leading zero words possibly there)
label_re() {
	python3 -c 'import sys; v = sum(1 << int(b) for b in sys.argv[1:]); print("labels=0x0*%x( |$)" % v)' "$@"
}

pair_setup || { echo "cannot create the namespaces" >&2; exit 99; }
pair_ftp_helper || { echo "cannot set up the ftp helper" >&2; exit 99; }
untrack_sync || { echo "cannot untrack the sync link" >&2; exit 99; }
for ns in "$NS_A" "$NS_B"; do
	# A label rule, never run, makes the namespace's conntracks carry labels at all.
	ip netns exec "$ns" nft -f - <<'NFT' || { echo "nft failed" >&2; exit 99; }
table inet labels {
	chain c { ct label set 1; }
}
NFT
done
pair_conf A FTFW   # conntrackd 1.4.7
pair_conf B FTFW   # ctsyncd
pair_start A "$(command -v conntrackd)" || { fail "conntrackd 1.4.7 starts"; finish; }
pair_start B || { fail "ctsyncd starts"; finish; }
old() { old_ctl A "$@"; }

# make_states SIDE N: the states of every kind, addresses 10.N.x.x and 2001:db8:N::x
make_states() {
	local s=$1 n=$2
	ct_in "$s" -I -s 10.$n.0.1 -d 10.$n.0.2 -p tcp --sport 1001 --dport 80 --state ESTABLISHED \
		-u SEEN_REPLY,ASSURED -t 300 -m 3 --label-add "$L1,$L2"
	ct_in "$s" -I -s 10.$n.0.3 -d 10.$n.0.2 -p tcp --sport 1002 --dport 443 --state ESTABLISHED \
		-u SEEN_REPLY,ASSURED -t 300 --src-nat 10.$n.9.1:40000 -m 11
	ct_in "$s" -I -s 10.$n.0.4 -d 10.$n.0.2 -p udp --sport 1003 --dport 53 -t 120 \
		--dst-nat 10.$n.9.2:5353 --zone 4
	ct_in "$s" -I -s 10.$n.0.5 -d 10.$n.0.2 -p sctp --sport 1004 --dport 2905 --state ESTABLISHED \
		--orig-vtag 1234 --reply-vtag 5678 -t 300 --label-add "$L2"
	ct_in "$s" -I -s 10.$n.0.6 -d 10.$n.0.2 -p icmp --icmp-type 8 --icmp-code 0 --icmp-id 513 -t 30 \
		--zone 7 -m 5
	ct_in "$s" -I -s 2001:db8:$n::1 -d 2001:db8:$n::2 -p tcp --sport 1005 --dport 22 --state ESTABLISHED \
		-u SEEN_REPLY,ASSURED -t 300 -m 6
	ct_in "$s" -I -s 2001:db8:$n::3 -d 2001:db8:$n::2 -p icmpv6 --icmpv6-type 128 --icmpv6-code 0 \
		--icmpv6-id 4660 -t 30
	ct_in "$s" -I -s 2001:db8:$n::4 -d 2001:db8:$n::2 -p tcp --sport 1006 --dport 8080 --state ESTABLISHED \
		-u SEEN_REPLY,ASSURED -t 300 --dst-nat "[2001:db8:$n::9]:80"
	ct_in "$s" -I -s 2001:db8:$n::5 -d 2001:db8:$n::2 -p udp --sport 1007 --dport 123 -t 120 \
		--src-nat 2001:db8:$n::8 --zone 9
}
STATES=9
# update_states SIDE N: a new mark and one label less, labels added (to a
# state with none, and one bit more to one with some), a delete
update_states() {
	local s=$1 n=$2
	ct_in "$s" -U -s 10.$n.0.1 -d 10.$n.0.2 -p tcp --sport 1001 --dport 80 -m 42
	ct_in "$s" -U -s 10.$n.0.1 -d 10.$n.0.2 -p tcp --sport 1001 --dport 80 --label-del "$L2"
	ct_in "$s" -U -s 10.$n.0.5 -d 10.$n.0.2 -p sctp --sport 1004 --dport 2905 --label-add "$L1"
	ct_in "$s" -U -s 2001:db8:$n::1 -d 2001:db8:$n::2 -p tcp --sport 1005 --dport 22 --label-add "$L1"
	ct_in "$s" -D -s 10.$n.0.6 -d 10.$n.0.2 -p icmp --zone 7
} >/dev/null
# dump SIDE internal|external N: one daemon's dump of the states of make_states SIDE N
dump() {
	local opt
	[[ $2 == internal ]] && opt=-i || opt=-e
	if [[ $1 == A ]]; then old $opt; else ctl B $opt 2>/dev/null; fi | grep -E -- "src=(10\.$3\.|2001:db8:$3:)" || true
}
count_is() { [[ $(dump "$1" "$2" "$3" | grep -c .) -eq $4 ]]; }
ext_has() { dump "$1" external "$2" | grep -Eq -- "$3"; }
# agree SENDER N: the receiver's external cache = the sender's internal one
agree() {
	local rx=A
	[[ $1 == A ]] && rx=B
	dump "$1" internal "$2" >"$WORK/int.$2"
	dump "$rx" external "$2" >"$WORK/ext.$2"
	dumps_agree "$3: $rx's external cache (-e) = $1's internal cache (-i)" "$WORK/int.$2" "$WORK/ext.$2"
}
# kernels_agree N WHAT: the states of make_states _ N are the same in both kernels
kernels_agree() {
	local a b
	a=$(kernel_line A "src=\(10\.$1\.\|2001:db8:$1:\)" | sort) b=$(kernel_line B "src=\(10\.$1\.\|2001:db8:$1:\)" | sort)
	if [[ -n $a && $a == "$b" ]]; then
		pass "$2 ($(grep -c . <<<"$a") states)"
	else
		fail "$2"
		diff <(echo "$a") <(echo "$b") | sed 's/^/	/'
	fi
}
# probe_i SIDE: the internal cache of a second ctsyncd started in SIDE's
# namespace on another port: the kernel's states as ctsyncd reads them,
# master included (conntrack -L does not print masters).
probe_i() {
	local ns
	[[ $1 == A ]] && ns=$NS_A || ns=$NS_B
	sed -e "s#$WORK/$1\.#$WORK/P.#g" -e 's/Port 3780/Port 3791/' "$WORK/$1.conf" >"$WORK/P.conf"
	ip netns exec "$ns" "$CTSYNCD" -C "$WORK/P.conf" -d || return 1
	track_pid "$(head -n1 "$WORK/P.lock")"
	ctl P -i
	ctl P -k >/dev/null 2>&1
}

# --- conntrackd 1.4.7 -> ctsyncd ---------------------------------------------------------
make_states A 70
check "$STATES states of every kind created in A's kernel" eval '[[ $(kernel_line A "src=\(10\.70\.\|2001:db8:70:\)" | grep -c .) -eq $STATES ]]'
check "they all reach ctsyncd's external cache" wait_until 15 count_is B external 70 $STATES
ext=$(dump B external 70)
check "labels (bits $BIT1 and $BIT2) from 1.4.7" contains "$ext" "sport=1001 .*$(label_re "$BIT1" "$BIT2")"
check "SCTP ESTABLISHED from 1.4.7" contains "$ext" '^sctp +132 ESTABLISHED src=10\.70\.0\.5 '
check "ICMPv6 echo, id 4660 (LE id quirk)" contains "$ext" '^icmpv6 +58 src=2001:db8:70::3 .*type=128 code=0 id=4660'
check "ICMP in zone 7 with mark 5" contains "$ext" 'id=513 .*mark=5 zone=7'
agree A 70 "1.4.7 -> ctsyncd, created"
update_states A 70
check "the updates and the delete reach ctsyncd" wait_until 10 eval '
	ext_has B 70 "sport=1001 .*mark=42 $(label_re "$BIT1")" && ext_has B 70 "sport=1004 .*$(label_re "$BIT1" "$BIT2")" &&
	ext_has B 70 "sport=1005 .*$(label_re "$BIT1")" && count_is B external 70 $((STATES - 1))'
agree A 70 "1.4.7 -> ctsyncd, updated"
out=$(ctl B -c)
check "ctsyncd commits them: $out" contains "$out" "commit: .* 0 failed"
kernels_agree 70 "1.4.7 -> ctsyncd: B's kernel = A's kernel (labels, NAT, zones, marks, SCTP, IPv6)"
out=$(old_ctl B -e | grep -E 'src=(10\.70\.|2001:db8:70:)' | dump_norm); mine=$(dump B external 70 | dump_norm)
check "1.4.7's client against ctsyncd dumps what ctsyncd's client does" test -n "$out" -a "$out" = "$mine"

# 1.4.7's side removes the last label.  1.4.7 lays the kernel's update (no
# labels in it) over its internal cache, keeps the label and sends it on
# (its -B below sends it too): ctsyncd holds what 1.4.7 sends.  The other
# way round, ctsyncd does drop the label (below).
ct_in A -U -s 10.70.0.1 -d 10.70.0.2 -p tcp --sport 1001 --dport 80 -m 43 --label-del "$L1" >/dev/null
check "1.4.7 keeps sending a removed last label, and ctsyncd holds what it sends" wait_until 10 eval '
	ext_has B 70 "sport=1001 .*mark=43 $(label_re "$BIT1")"'

# -B from 1.4.7 refills ctsyncd's external cache.
ctl B -f external >/dev/null
check "ctsyncd's external cache flushed" count_is B external 70 0
old -B >/dev/null
check "-B from 1.4.7 sends its whole cache to ctsyncd" wait_until 15 count_is B external 70 $((STATES - 1))
agree A 70 "1.4.7 -> ctsyncd, after 1.4.7's -B"

# --- a related flow, 1.4.7 -> ctsyncd --------------------------------------------------------
ftp_session A 51220
# the data connection is related only once the helper has seen the PORT command
check "A's kernel expects the FTP data connection" wait_until 10 eval 'ct_in A -L expect | grep -q "dport=51220"'
data_conn A 51220
check "A's kernel has the FTP data connection" wait_until 10 eval 'ct_in A -L | grep -q "dport=51220 .*ASSURED"'
check "ctsyncd receives the related flow from 1.4.7 with its master" \
	wait_until 15 eval 'ctl B -e | grep -q "dport=51220 .*master=tcp:198.18.1.1-198.18.1.1"'
check "... and the master, with its helper" eval 'ctl B -e | grep -q "sport=[0-9]* dport=21 .*helper=ftp"'
out=$(ctl B -c)
check "ctsyncd commits the related flow after its master: $out" contains "$out" 'commit: .* 0 failed'
l_a=$(kernel_line A 'dport=51220'); l_b=$(kernel_line B 'dport=51220')
check "the related flow is the same in both kernels: [$l_b]" test -n "$l_a" -a "$l_a" = "$l_b"
l_a=$(kernel_line A 'dport=21 '); l_b=$(kernel_line B 'dport=21 ')
check "and its master too, helper included: [$l_b]" eval '[[ -n $l_a && $l_a == "$l_b" && $l_a == *helper=ftp* ]]'
ctl B -R >/dev/null
check "B's kernel links the related flow to its master (read back by -R)" \
	eval 'ctl B -i | grep -q "dport=51220 .*master=tcp:198.18.1.1-198.18.1.1"'

net=$(old -s network)
check "1.4.7 -s network: no malformed, wrong version or bad size" old_net_clean "$net"

# --- ctsyncd -> conntrackd 1.4.7 ---------------------------------------------------------------
make_states B 71
check "they all reach 1.4.7's external cache" wait_until 15 count_is A external 71 $STATES
ext=$(dump A external 71)
check "SCTP ESTABLISHED to 1.4.7" contains "$ext" '^sctp +132 ESTABLISHED src=10\.71\.0\.5 '
check "ICMPv6 echo, id 4660, to 1.4.7" contains "$ext" '^icmpv6 +58 src=2001:db8:71::3 .*type=128 code=0 id=4660'
check "ICMP in zone 7 with mark 5, to 1.4.7" contains "$ext" 'id=513 .*mark=5 zone=7'
agree B 71 "ctsyncd -> 1.4.7, created"
old -c >/dev/null
kernels_agree 71 "ctsyncd -> 1.4.7, created: A's kernel = B's kernel (labels, NAT, zones, marks, SCTP, IPv6)"
update_states B 71
# 1.4.7's dumps do not print labels: the label updates are checked in the kernel below.
check "the updates and the delete reach 1.4.7" wait_until 10 eval '
	ext_has A 71 "sport=1001 .*mark=42" && count_is A external 71 $((STATES - 1))'
agree B 71 "ctsyncd -> 1.4.7, updated"
old -c >/dev/null
ct_in A -D -s 10.71.0.6 >/dev/null   # 1.4.7's commit does not delete what the peer deleted
kernels_agree 71 "ctsyncd -> 1.4.7, updated and committed again: A's kernel = B's kernel (labels added)"
# The last label removed: the kernel's event then has no labels at all, and
# 1.4.7 lays an update over what it has; ctsyncd sends an all-zero label
# array, so 1.4.7's copy loses its label too.  The new mark tells when the
# update has arrived.
ct_in B -U -s 10.71.0.1 -d 10.71.0.2 -p tcp --sport 1001 --dport 80 -m 43 --label-del "$L1" >/dev/null
check "the last label removed (and mark 43) reaches 1.4.7" wait_until 10 eval 'ext_has A 71 "sport=1001 .*mark=43"'
old -c >/dev/null
check "A's kernel: the committed state has no label left" eval '! kernel_line A "10\.71\.0\.1 .*sport=1001" | grep -q labels='
kernels_agree 71 "ctsyncd -> 1.4.7, last label removed and committed again: A's kernel = B's kernel"

# --- a related flow, ctsyncd -> 1.4.7 --------------------------------------------------------
ftp_session B 51221
# the data connection is related only once the helper has seen the PORT command
check "B's kernel expects the FTP data connection" wait_until 10 eval 'ct_in B -L expect | grep -q "dport=51221"'
data_conn B 51221
check "B's kernel has the FTP data connection" wait_until 10 eval 'ct_in B -L | grep -q "dport=51221 .*ASSURED"'
check "1.4.7 receives the related flow from ctsyncd" wait_until 15 eval 'old -e | grep -q "dport=51221"'
check "... and its master" eval 'old -e | grep -q "src=198.18.1.2 dst=198.18.1.2 sport=[0-9]* dport=21 "'
old -c >/dev/null
l_a=$(kernel_line A 'dport=51221'); l_b=$(kernel_line B 'dport=51221')
check "1.4.7 commits the related flow as B's kernel has it: [$l_a]" test -n "$l_b" -a "$l_a" = "$l_b"
l_a=$(kernel_line A 'src=198.18.1.2 .*dport=21 '); l_b=$(kernel_line B 'src=198.18.1.2 .*dport=21 ')
check "and its master, helper included: [$l_a]" eval '[[ -n $l_b && $l_a == "$l_b" && $l_a == *helper=ftp* ]]'
check "A's kernel links the related flow to its master" \
	eval 'probe_i A | grep -q "dport=51221 .*master=tcp:198.18.1.2-198.18.1.2"'

# -n from 1.4.7: ctsyncd answers with its whole internal cache.
old -f external >/dev/null
check "1.4.7's external cache flushed" count_is A external 71 0
old -n >/dev/null
check "-n from 1.4.7: ctsyncd sends its whole cache" wait_until 15 count_is A external 71 $((STATES - 1))
agree B 71 "ctsyncd -> 1.4.7, after 1.4.7's -n"

net=$(old -s network)
check "1.4.7 -s network: no malformed, wrong version or bad size" old_net_clean "$net"
old -k >/dev/null
finish
