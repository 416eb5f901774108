#!/bin/bash
# The kernel module against the real kernel, in namespaces of its own:
# - dump of entries made with `conntrack -I` (every protocol the kernel
#   tracks, NAT both ways and with ports, IPv6 NAT, zone, mark), compared
#   field by field with `conntrack -L -o extended` (timeouts within 2 s);
# - NEW / UPDATE / DESTROY events for conntrack -I / -U / -D, not own writes;
# - the batched writer: the dump of namespace A created in namespace B
#   (NAT through CTA_NAT_*, zones...) gives the same table;
# - what conntrack -I cannot make (helper, related flow with its master,
#   labels, sequence adjustment, SCTP vtags), created and read back;
# - 100k creates / updates / deletes with rates (printed, not asserted),
#   own-write recognition and the drop-own socket filter;
# - selective flush (dump + delete) and full flush;
# - the loop keeps serving while a 100k-entry dump and a bulk job run;
# - overrun (ENOBUFS) reported and the buffer grown; event rate and CPU per
#   event of a listener, with and without coalescing.
# DCCP is not tracked by this kernel (no CONFIG_NF_CT_PROTO_DCCP); its
# attributes are covered by tests/unit/check_kernel_attr.
. "$(dirname "$0")/../lib/common.sh"
require_root
require_cmd conntrack ip nft awk

DRIVER=${top_builddir:+$top_builddir/tests/integration/kernel-driver}
DRIVER=${DRIVER:-$(cd "$(dirname "$0")/../.." && pwd)/tests/integration/kernel-driver}
if [[ ! -x $DRIVER ]]; then
	echo "$TEST_NAME: $DRIVER is not built (make check builds it)" >&2
	exit 99
fi
BULK=${KERNEL_BULK:-100000}

A=$(make_netns kernA) || { echo "$TEST_NAME: cannot create a namespace" >&2; exit 99; }
B=$(make_netns kernB) || exit 99
C=$(make_netns kernC) || exit 99

# Connlabels exist in a namespace only once something uses them.
for ns in "$A" "$B"; do
	ip netns exec "$ns" nft -f - <<-'EOF' || { echo "$TEST_NAME: nft failed" >&2; exit 99; }
	table inet ctslabels {
		chain c {
			ct label set 5
		}
	}
	EOF
done

drv() { local ns=$1; shift; timeout 120 ip netns exec "$ns" "$DRIVER" "$@"; }
ct() { local ns=$1; shift; ip netns exec "$ns" conntrack "$@" 2>/dev/null; }

# conntrack -L -o extended -> the driver's canonical lines (see kernel-driver.c).
normalize() {
	awk '
	function hex(s,   i, v) {
		v = 0; s = tolower(s); sub(/^0x/, "", s)
		for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return v
	}
	/^ipv[46] / {
		state = "-"; i = 6
		if ($6 !~ /=/ && $6 !~ /^\[/) { state = $6; i = 7 }
		dir = 0; o = ""; r = ""; assured = 0; unrep = 0; mark = 0; zone = 0; helper = "-"
		for (; i <= NF; i++) {
			if ($i == "[ASSURED]") { assured = 1; continue }
			if ($i == "[UNREPLIED]") { unrep = 1; continue }
			eq = index($i, "="); if (!eq) continue
			k = substr($i, 1, eq - 1); v = substr($i, eq + 1)
			if (k == "src") dir++
			if (k == "srckey") { k = "sport"; v = hex(v) }
			if (k == "dstkey") { k = "dport"; v = hex(v) }
			if (k ~ /^(src|dst|sport|dport|type|code|id)$/) {
				if (dir == 1) o = o (o == "" ? "" : " ") k "=" v
				else r = r (r == "" ? "" : " ") k "=" v
			} else if (k == "mark") mark = v
			else if (k == "zone") zone = v
			else if (k == "helper") helper = v
		}
		printf "fam=%s proto=%s state=%s %s | %s | assured=%d unreplied=%d mark=%s zone=%s helper=%s tmo=%s\n",
		       $1, $4, state, o, r, assured, unrep, mark, zone, helper, $5
	}'
}

# same_tables A B [SLACK]: the same entries; timeouts within SLACK seconds
# (default 2: the two dumps were taken at about the same time).
same_tables() {
	local a=$1 b=$2 slack=${3:-2}
	if ! diff <(sed 's/ tmo=.*//' "$a" | sort) <(sed 's/ tmo=.*//' "$b" | sort) >"$WORK/diff"; then
		cat "$WORK/diff"
		return 1
	fi
	paste -d' ' <(sort "$a" | sed 's/.* tmo=//') <(sort "$b" | sed 's/.* tmo=//') |
		awk -v s="$slack" '{ d = $1 - $2; if (d < -s || d > s) { print "timeouts " $1 " and " $2; bad = 1 } } END { exit bad }'
}

# --- 1. dump vs conntrack -L ----------------------------------------------------
ct "$A" -I -s 10.0.0.1 -d 10.0.0.2 -p tcp --sport 1234 --dport 80 --state ESTABLISHED -u SEEN_REPLY,ASSURED -t 300 -m 7
ct "$A" -I -s fd00::1 -d fd00::2 -p tcp --sport 1000 --dport 443 --state SYN_SENT -t 120
ct "$A" -I -s 10.0.1.1 -d 10.0.1.2 -p udp --sport 1000 --dport 53 -t 100 --src-nat 192.168.1.1:4000
ct "$A" -I -s 10.0.2.1 -d 10.0.2.2 -p udp --sport 1000 --dport 53 -t 100 --dst-nat 10.9.9.9:5353
ct "$A" -I -s 10.0.3.1 -d 10.0.3.2 -p tcp --sport 1000 --dport 80 --state ESTABLISHED -t 100 \
	--src-nat 192.168.3.1 --dst-nat 10.9.9.3:8080
ct "$A" -I -s fd00::5 -d fd00::6 -p udp --sport 7 --dport 8 -t 100 --src-nat fd00::99
ct "$A" -I -s fd00::7 -d fd00::8 -p udp --sport 7 --dport 8 -t 100 --src-nat '[fd00::98]:999'
ct "$A" -I -s 10.0.4.1 -d 10.0.4.2 -p icmp --icmp-type 8 --icmp-code 0 --icmp-id 4660 -t 50
ct "$A" -I -s fd00::9 -d fd00::a -p icmpv6 --icmpv6-type 128 --icmpv6-code 0 --icmpv6-id 77 -t 50
ct "$A" -I -s 10.0.5.1 -d 10.0.5.2 -p sctp --sport 3868 --dport 3868 --state ESTABLISHED \
	--orig-vtag 5 --reply-vtag 6 -t 100
ct "$A" -I -s 10.0.6.1 -d 10.0.6.2 -p gre --srckey 5 --dstkey 6 -t 100
ct "$A" -I -s 10.0.7.1 -d 10.0.7.2 -p udplite --sport 5 --dport 6 -t 100
ct "$A" -I -s 10.0.8.1 -d 10.0.8.2 -p tcp --sport 1 --dport 2 --state ESTABLISHED -t 100 -w 5 -m 3 -u ASSURED
ct "$A" -I -s fd00::b -d fd00::c -p udp --sport 9 --dport 10 -t 100 -w 65535 -m 4294967295
N_A=14

drv "$A" dump >"$WORK/a.drv" 2>"$WORK/a.err"
check "driver dump succeeds: $(cat "$WORK/a.err")" test $? -eq 0
ct "$A" -L -o extended | normalize >"$WORK/a.ct"
check "conntrack -L lists the $N_A entries made (got $(grep -c . "$WORK/a.ct"))" \
	test "$(grep -c . "$WORK/a.ct")" -eq $N_A
check "the dump equals conntrack -L -o extended field by field" same_tables "$WORK/a.drv" "$WORK/a.ct"
check "SNAT with port seen (reply dst 192.168.1.1:4000)" \
	grep -q 'src=10.0.1.2 dst=192.168.1.1 sport=53 dport=4000' "$WORK/a.drv"
check "DNAT with port seen (reply src 10.9.9.9:5353)" grep -q 'src=10.9.9.9 dst=10.0.2.1 sport=5353' "$WORK/a.drv"
check "ICMP id 4660 seen" grep -q 'type=8 code=0 id=4660' "$WORK/a.drv"
check "zone 5 mark 3 seen" grep -Eq 'mark=[0-9]+ zone=5 ' "$WORK/a.drv"

# --- 2. events --------------------------------------------------------------------
ip netns exec "$A" "$DRIVER" events 3 15 >"$WORK/events" 2>"$WORK/events.err" &
evpid=$!
track_pid $evpid
if wait_until 10 grep -q ready "$WORK/events"; then
	ct "$A" -I -s 10.0.20.1 -d 10.0.20.2 -p tcp --sport 5555 --dport 22 --state ESTABLISHED -t 60 -m 1
	ct "$A" -U -s 10.0.20.1 -d 10.0.20.2 -p tcp --sport 5555 --dport 22 -m 9 >/dev/null
	ct "$A" -D -s 10.0.20.1 -d 10.0.20.2 -p tcp --sport 5555 --dport 22 >/dev/null
fi
wait_until 15 pid_gone $evpid
wait $evpid
check "event listener saw its 3 events (rc $?): $(tr '\n' ';' <"$WORK/events")" \
	test "$(grep -c own= "$WORK/events")" -eq 3
check "NEW event with the entry's tuple and mark" \
	grep -Eq '^NEW own=0 .*src=10.0.20.1 dst=10.0.20.2 sport=5555 dport=22 .*mark=1 ' "$WORK/events"
check "UPDATE event with the new mark" grep -Eq '^UPDATE own=0 .*sport=5555 .*mark=9 ' "$WORK/events"
check "DESTROY event" grep -Eq '^DESTROY own=0 .*sport=5555 dport=22' "$WORK/events"

# --- 3. the writer: A's table created in B --------------------------------------------
t_save=$(date +%s)
drv "$A" dump >"$WORK/a3.drv" 2>/dev/null
drv "$A" save "$WORK/a.bin" 2>"$WORK/save.err"
check "save A's table: $(cat "$WORK/save.err")" test $? -eq 0
drv "$B" load "$WORK/a.bin" >"$WORK/load.out" 2>&1
check "load into B creates every entry: $(cat "$WORK/load.out")" test $? -eq 0
ct "$A" -L -o extended | normalize >"$WORK/a.ct"
ct "$B" -L -o extended | normalize >"$WORK/b.ct"
check "B's table equals A's (conntrack -L, NAT included)" same_tables "$WORK/a.ct" "$WORK/b.ct"
drv "$B" dump >"$WORK/b.drv" 2>/dev/null
# the timeouts ran down for as long as the save, load and listings took
check "B's dump equals A's dump" same_tables "$WORK/a3.drv" "$WORK/b.drv" $(($(date +%s) - t_save + 2))

# --- 4. helper, master, labels, seq adjustment, vtags ---------------------------------
ct "$B" -F
drv "$B" attrs >"$WORK/attrs.out" 2>&1
check "attrs: created, read back and updated: $(tr '\n' ';' <"$WORK/attrs.out")" test $? -eq 0
check "conntrack -L shows the helper" contains "$(ct "$B" -L)" 'dport=21 .*helper=ftp'

# --- 5. bulk, purge, flush, slices ------------------------------------------------------
drv "$C" bulk "$BULK" >"$WORK/bulk.out" 2>&1
rc=$?
sed 's/^/    /' "$WORK/bulk.out"
check "bulk $BULK: create/update/delete all ok, own events recognised (rc $rc)" test $rc -eq 0
drv "$C" purge >"$WORK/purge.out" 2>&1
rc=$?
sed 's/^/    /' "$WORK/purge.out"
check "selective flush keeps mark 1 only, full flush empties the table (rc $rc)" test $rc -eq 0
drv "$C" slices "$BULK" >"$WORK/slices.out" 2>&1
rc=$?
sed 's/^/    /' "$WORK/slices.out"
check "the loop serves a 1 ms timer during a $BULK-entry job and dump (rc $rc)" test $rc -eq 0

drv "$C" overrun >"$WORK/overrun.out" 2>&1
rc=$?
sed 's/^/    /' "$WORK/overrun.out"
check "a burst into a 64 KiB event buffer is reported as an overrun and the buffer grows (rc $rc)" \
	test $rc -eq 0

# Event rate and CPU per event, events read as they come and coalesced by 1 ms.
for ms in 0 1; do
	ip netns exec "$C" conntrack -F 2>/dev/null
	ip netns exec "$C" "$DRIVER" listen "$BULK" 60 $ms >"$WORK/listen.out" 2>&1 &
	lpid=$!
	track_pid $lpid
	wait_until 10 grep -q ready "$WORK/listen.out"
	drv "$C" create "$BULK" >"$WORK/create.out" 2>&1
	wait_until 60 pid_gone $lpid
	wait $lpid
	rc=$?
	sed 's/^/    /' "$WORK/create.out" "$WORK/listen.out"
	check "a listener (coalesce $ms ms) receives all $BULK events of another process (rc $rc)" test $rc -eq 0
done

finish
