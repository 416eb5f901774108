#!/bin/bash
# The link module on the real loop, between two network namespaces joined by
# two veth pairs (link-driver.c drives it, one process per namespace):
# - UDP v4/v6, multicast v4/v6, TCP v4/v6, UDP and TCP over IPv6 link-local:
#   numbered wire-format messages both ways, all arrive intact, packed into
#   datagrams up to the payload limit (17 x 84 bytes at MTU 1500; an exact
#   fit of 16 x 92 = 1472 bytes);
# - TCP: the peer restarts; the client reconnects within the one-per-second
#   rule, the error queue is delivered first, and a full queue drops its
#   oldest datagrams;
# - redundant links: the active device goes down mid-stream, the group
#   switches to the backup and messages keep flowing; a peer sending on the
#   other link is followed; the report shows the roles.
. "$(dirname "$0")/../lib/common.sh"
require_root
require_cmd ip awk timeout mkfifo

DRIVER=${top_builddir:+$top_builddir/tests/integration/link-driver}
DRIVER=${DRIVER:-$(cd "$(dirname "$0")/../.." && pwd)/tests/integration/link-driver}
if [[ ! -x $DRIVER ]]; then
	echo "$TEST_NAME: $DRIVER is not built (make check builds it)" >&2
	exit 99
fi

A=$(make_netns linkA) || { echo "$TEST_NAME: cannot create a namespace" >&2; exit 99; }
B=$(make_netns linkB) || exit 99

# Two veth pairs: link 0 (vA0-vB0) and link 1 (vA1-vB1).
setup_links() {
	local i
	for i in 0 1; do
		ip link add "vA$i" netns "$A" type veth peer name "vB$i" netns "$B" || return 1
		ip -n "$A" addr add "198.18.$i.1/24" dev "vA$i" || return 1
		ip -n "$B" addr add "198.18.$i.2/24" dev "vB$i" || return 1
		ip -n "$A" addr add "2001:2:0:$i::1/64" dev "vA$i" nodad || return 1
		ip -n "$B" addr add "2001:2:0:$i::2/64" dev "vB$i" nodad || return 1
		# Link-local too: the same addresses on both pairs, told apart by the scope.
		ip -n "$A" addr add "fe80::ca:1/64" dev "vA$i" nodad || return 1
		ip -n "$B" addr add "fe80::ca:2/64" dev "vB$i" nodad || return 1
		ip -n "$A" link set "vA$i" up && ip -n "$B" link set "vB$i" up || return 1
	done
}
setup_links || { echo "$TEST_NAME: cannot set up the veth pairs" >&2; exit 99; }

carrier_up() { ip -n "$1" link show "$2" | grep -q 'LOWER_UP'; }
for d in vA0 vA1; do wait_until 5 carrier_up "$A" "$d"; done
for d in vB0 vB1; do wait_until 5 carrier_up "$B" "$d"; done

# ---- driver control ----------------------------------------------------------
# start_driver NAME NS CONF: the driver reads commands from the FIFO
# $WORK/NAME.in and writes to $WORK/NAME.out; each command ends with "= N".
# The command count lives in $WORK/NAME.n, so that $(ask ...) keeps it.
declare -A FD PID
start_driver() {
	local name=$1 ns=$2 conf=$3 fd
	rm -f "$WORK/$name.in"
	mkfifo "$WORK/$name.in"
	: >"$WORK/$name.out"
	timeout 300 ip netns exec "$ns" "$DRIVER" -C "$conf" \
		<"$WORK/$name.in" >"$WORK/$name.out" 2>>"$WORK/$name.err" &
	PID[$name]=$!
	track_pid "${PID[$name]}"
	exec {fd}>"$WORK/$name.in"
	FD[$name]=$fd
	echo 0 >"$WORK/$name.n"
	wait_until 10 grep -qx '= 0' "$WORK/$name.out"
}

# stop_driver NAME: quit, or TERM after 5 s; the driver must exit with 0
# (under the sanitizers, a leak or an error makes it exit with 1).
stop_driver() {
	local name=$1 fd=${FD[$1]:-} rc
	[[ -n $fd ]] || return 0
	echo quit >&"$fd" 2>/dev/null
	exec {fd}>&-
	unset "FD[$name]"
	wait_until 5 pid_gone "${PID[$name]}" || kill -TERM "${PID[$name]}" 2>/dev/null
	wait "${PID[$name]}" 2>/dev/null
	rc=$?
	if ((rc != 0)); then
		fail "driver $name exited with status $rc"
		tail -20 "$WORK/$name.err"
	fi
	return 0
}

# kill_driver NAME: as a crash would, without quit (timeout passes TERM on).
kill_driver() {
	local name=$1 fd=${FD[$1]}
	kill -TERM "${PID[$name]}" 2>/dev/null
	wait_until 5 pid_gone "${PID[$name]}"
	wait "${PID[$name]}" 2>/dev/null
	exec {fd}>&-
	unset "FD[$name]"
}

# cmd NAME COMMAND: queue a command, do not wait.
cmd() {
	echo $(($(<"$WORK/$1.n") + 1)) >"$WORK/$1.n"
	echo "$2" >&"${FD[$1]}"
}

# result NAME [SECONDS]: wait for the last queued command and print its output.
result() {
	local name=$1 limit=${2:-30} n
	n=$(<"$WORK/$name.n")
	if ! wait_until "$limit" grep -qx "= $n" "$WORK/$name.out"; then
		log "$name: command $n did not finish in $limit s"
		return 1
	fi
	awk -v a="= $((n - 1))" -v b="= $n" '$0 == a { f = 1; next } $0 == b { f = 0 } f' \
		"$WORK/$name.out"
}

# ask NAME COMMAND [SECONDS]: run a command and print its output.
ask() { cmd "$1" "$2" && result "$1" "${3:-30}"; }

# kv "stats ... key=value ..." KEY
kv() { tr ' ' '\n' <<<"$1" | awk -F= -v k="$2" '$1 == k { print $2 }'; }

# section TEXT NAME: the lines of one report section ("link_0" is shown "link 0").
section() { awk -v h="${2//_/ }:" '$0 == h { f = 1; next } /^[^ ]/ { f = 0 } f' <<<"$1"; }

eq() { [[ $1 == "$2" ]]; }

# count_lines FILE LINE: how many times LINE appears as a whole line.
count_lines() { grep -cxF -- "$2" "$1"; }

# Report regexes for wait-report: no spaces (commands split on them).
S='[[:space:]]+'
role_re() { echo "link.$1:${S}device:$S$2${S}status:$S$3${S}role:$S$4"; }

# ---- configurations ----------------------------------------------------------
# conf FILE KIND SIDE FAMILY [LINKS]: one Sync block with LINKS (1 or 2) links.
# FAMILY is 4, 6 or 6ll (IPv6 link-local: the scope comes from Interface).
conf() {
	local file=$1 kind=$2 side=$3 fam=$4 nlinks=${5:-1} i me peer dev v4 v6 extra
	{
		echo "General { EventIterationLimit 200 }"
		echo "Sync {"
		echo "	Mode FTFW { }"
		for ((i = 0; i < nlinks; i++)); do
			if [[ $side == A ]]; then me=1 peer=2 dev=vA$i; else me=2 peer=1 dev=vB$i; fi
			v4="198.18.$i"
			v6="2001:2:0:$i:"
			extra=""
			[[ $i == 0 ]] && ((nlinks > 1)) && extra=" Default"
			case $kind in
			Multicast)
				echo "	Multicast$extra {"
				if [[ $fam == 4 ]]; then
					echo "		IPv4_address 225.0.0.5$i"
					echo "		IPv4_interface $v4.$me"
				else
					echo "		IPv6_address ff02::4354:$i"
				fi
				echo "		Group 3780"
				;;
			UDP | TCP)
				echo "	$kind$extra {"
				if [[ $fam == 4 ]]; then
					echo "		IPv4_address $v4.$me"
					echo "		IPv4_Destination_Address $v4.$peer"
				elif [[ $fam == 6ll ]]; then
					echo "		IPv6_address fe80::ca:$me"
					echo "		IPv6_Destination_Address fe80::ca:$peer"
				else
					echo "		IPv6_address $v6:$me"
					echo "		IPv6_Destination_Address $v6:$peer"
				fi
				echo "		Port 3780"
				[[ $kind == TCP ]] && echo "		ErrorQueueLength 8"
				;;
			esac
			echo "		Interface $dev"
			echo "		RcvSocketBuffer 4194304"
			echo "		SndSocketBuffer 1048576"
			echo "		Checksum $([[ $i == 0 ]] && echo on || echo off)"
			echo "	}"
		done
		echo "}"
	} >"$file"
}

N=2000
PER=17                           # 84-byte messages per datagram: 17 x 84 = 1428 <= 1472, 1460, 1452, 1440
DGRAMS=$(((N + PER - 1) / PER))  # 118

# ---- every transport, both ways ---------------------------------------------------
transport() {
	local kind=$1 fam=$2 what="$1 IPv${2/6ll/6 link-local}" sa sb ra rb rep limit
	conf "$WORK/a.conf" "$kind" A "$fam"
	conf "$WORK/b.conf" "$kind" B "$fam"
	if ! start_driver a "$A" "$WORK/a.conf" || ! start_driver b "$B" "$WORK/b.conf"; then
		fail "$what: drivers start"
		cat "$WORK/a.err" "$WORK/b.err" 2>/dev/null
		stop_driver a; stop_driver b
		return
	fi
	if [[ $kind == TCP ]]; then
		check "$what: both connections up" \
			eq "$( (ask a 'wait-report client=connected 10'; ask b 'wait-report client=connected 10'
				ask a 'wait-report server=connected 5') | grep -c '^report-ok$')" 3
	fi
	cmd a "send $N"
	cmd b "send $N"
	result a 60 >/dev/null
	result b 60 >/dev/null
	ra=$(ask a "wait-recv $N 15"; ask a stats)
	rb=$(ask b "wait-recv $N 15"; ask b stats)
	sa=$(grep '^stats' <<<"$ra")
	sb=$(grep '^stats' <<<"$rb")
	check "$what: A got $N distinct messages, intact ($sa)" \
		eq "$(kv "$sa" distinct)/$(kv "$sa" corrupt)/$(kv "$sa" bad_frames)/$(kv "$sa" dups)" "$N/0/0/0"
	check "$what: B got $N distinct messages, intact ($sb)" \
		eq "$(kv "$sb" distinct)/$(kv "$sb" corrupt)/$(kv "$sb" bad_frames)/$(kv "$sb" dups)" "$N/0/0/0"
	case $kind/$fam in
	TCP/4) limit=1460 ;;
	TCP/6*) limit=1440 ;;
	*/4) limit=1472 ;;
	*/6*) limit=1452 ;;
	esac
	check "$what: payload limit $limit" eq "$(kv "$sa" payload_max)" "$limit"
	# A sent its N messages in $DGRAMS datagrams: all full but the last.
	check "$what: A sent $DGRAMS datagrams, $((N * 84)) bytes" \
		eq "$(kv "$sa" tx_packets)/$(kv "$sa" tx_bytes)" "$DGRAMS/$((N * 84))"
	if [[ $kind != TCP ]]; then
		check "$what: B received $DGRAMS datagrams of up to $PER messages, $((DGRAMS - 1)) of them full ($(kv "$sb" hist))" \
			eq "$(kv "$sb" chunks)/$(kv "$sb" max_msgs)/$(kv "$sb" max_chunk)/$(kv "$sb" hist)" \
			"$DGRAMS/$PER/$((PER * 84))/$((N - PER * (DGRAMS - 1))):1,$PER:$((DGRAMS - 1))"
		MEASURED+=("$what: $(kv "$sb" hist) (messages:datagrams)")
	fi
	rep=$(ask a report)
	check "$what: report shows link 0 RUNNING and ACTIVE" \
		contains "$(section "$rep" link_0 | tr '\n' ' ')" 'status: +RUNNING +role: +ACTIVE'

	if [[ $kind == TCP ]]; then
		check "$what: report shows server=connected client=connected" \
			contains "$rep" 'tcp: +server=connected client=connected'
		check "$what: JSON report has the connection booleans" \
			contains "$(ask a json)" '"server_connected":true,"client_connected":true'
	fi
	if [[ $kind/$fam == UDP/4 ]]; then
		# 16 x 92 = 1472: an exact fit fills the datagram (1.4.7's < would send 15 + 1).
		ask b reset >/dev/null
		ask a "send 160 92" >/dev/null
		sb=$(ask b "wait-recv 160 10"; ask b stats)
		check "UDP IPv4: 92-byte messages fill 1472-byte datagrams exactly ($(kv "$sb" hist))" \
			eq "$(kv "$sb" max_chunk)/$(kv "$sb" hist)" "1472/16:10"
	fi
	if [[ $kind == TCP && $fam == 4 ]]; then
		tcp_restart
	fi
	stop_driver a
	stop_driver b
}

# ---- TCP: the peer restarts -----------------------------------------------------------
tcp_restart() {
	local s base t0 t1 rep
	ask b reset >/dev/null
	# B dies; A notices the end of its client connection and of its server's peer.
	kill_driver b
	check "TCP: A sees its client connection go" \
		contains "$(ask a 'wait-report client=disconnected 5')" '^report-ok'
	# 300 messages while B is away: one burst of 16 full datagrams (272
	# messages) meets a queue of ErrorQueueLength 8: the 8 oldest go.
	cmd a "send 300"
	sleep 0.5
	t0=$(date +%s%N)
	start_driver b "$B" "$WORK/b.conf" || fail "TCP: B restarts"
	s=$(ask b "wait-recv 164 10"; ask b stats)
	t1=$(date +%s%N)
	result a 10 >/dev/null
	s=$(grep '^stats' <<<"$s")
	check "TCP: after the restart B got the 8 newest queued datagrams and the rest: 136 + 28 ($s)" \
		eq "$(kv "$s" distinct)/$(( $(kv "$s" hi) - $(kv "$s" lo) + 1 ))/$(kv "$s" missing)/$(kv "$s" corrupt)" "164/164/0/0"
	check "TCP: they are the newest: $((N + 136)) to $((N + 299)) ($(kv "$s" lo) to $(kv "$s" hi))" \
		eq "$(kv "$s" lo)-$(kv "$s" hi)" "$((N + 136))-$((N + 299))"
	check "TCP: reconnected and delivered within 2.5 s ($(((t1 - t0) / 1000000)) ms)" \
		test $(((t1 - t0) / 1000000)) -lt 2500
	rep=$(ask a 'wait-report client=connected 5'; ask a report)
	check "TCP: A's report: 8 datagrams dropped from the full error queue" \
		contains "$(section "$rep" channel)" 'dropped datagrams: +8$'
	check "TCP: A's report: a second client connection" \
		contains "$(section "$rep" link_0)" 'client connects: +2$'
	check "TCP: A's report: connected both ways again" \
		contains "$(ask a 'wait-report server=connected.client=connected 5')" '^report-ok'
}

MEASURED=()
for kind in UDP Multicast TCP; do
	for fam in 4 6; do
		transport "$kind" "$fam"
	done
done
transport UDP 6ll
transport TCP 6ll

# ---- redundant links and failover ------------------------------------------------------------
conf "$WORK/a.conf" UDP A 4 2
conf "$WORK/b.conf" UDP B 4 2
start_driver a "$A" "$WORK/a.conf" && start_driver b "$B" "$WORK/b.conf" || fail "failover: drivers start"
rep=$(ask a report)
check "failover: link 0 (Default) is ACTIVE" contains "$(section "$rep" link_0)" 'role: +ACTIVE'
check "failover: link 1 is BACKUP" contains "$(section "$rep" link_1)" 'role: +BACKUP'

# The peer sends on the other link: B follows it, and back.
ask a "active 1" >/dev/null
ask a "send 100" >/dev/null
check "failover: B follows A to link 1" \
	contains "$(ask b "wait-report $(role_re 1 vB1 RUNNING ACTIVE) 5")" '^report-ok'
check "failover: B logged the switch" eq "$(count_lines "$WORK/b.out" 'switch vB0 -> vB1')" 1
ask a "active 0" >/dev/null
ask a "send 100" >/dev/null
check "failover: B follows A back to link 0" \
	contains "$(ask b "wait-report $(role_re 0 vB0 RUNNING ACTIVE) 5")" '^report-ok'
check "failover: B logged the switch back" eq "$(count_lines "$WORK/b.out" 'switch vB1 -> vB0')" 1
ask a reset >/dev/null
ask b reset >/dev/null

# Both send 1500 messages at 500/s; vA0 goes down after one second.
cmd a "rate 1500 500"
cmd b "rate 1500 500"
sleep 1
ip -n "$A" link set dev vA0 down
result a 20 >/dev/null
result b 20 >/dev/null
sa=$(ask a "wait-recv 1500 5" >/dev/null; ask a stats)
sb=$(ask b "wait-recv 1500 5" >/dev/null; ask b stats)
# The first switch of each was the follow test above.
check "failover: A switched to vA1" eq "$(count_lines "$WORK/a.out" 'switch vA0 -> vA1')" 2
check "failover: B switched to vB1" eq "$(count_lines "$WORK/b.out" 'switch vB0 -> vB1')" 2
# A's sends failing with ENETUNREACH are kept and retried on the new link.
# A datagram the kernel took just before the device went down can still be
# dropped with it (seen once under ASan: A counted 300 datagrams sent, B got
# 299); the sync protocol repairs that.  So: up to the last message, no
# corruption, and at most one datagram lost.
check "failover: B got A's messages up to the last one, at most one datagram lost in the switch ($sb)" \
	test "$(kv "$sb" hi)" -eq $(($(kv "$sb" lo) + 1499)) -a "$(kv "$sb" corrupt)" -eq 0 \
	-a "$(kv "$sb" missing)" -le "$(kv "$sb" max_msgs)" -a "$(kv "$sb" chunks)" -ge $(($(kv "$sb" tx_packets) - 1))
MEASURED+=("failover: A->B lost $(kv "$sb" missing) of 1500 messages in the switch")
check "failover: messages arrived on both links ($(kv "$sb" link0) + $(kv "$sb" link1) datagrams)" \
	test "$(kv "$sb" link0)" -gt 0 -a "$(kv "$sb" link1)" -gt 0
# B's datagrams sent between the carrier loss and its switch are lost on the
# wire (the device takes them); the sync protocol repairs that.  They keep
# flowing: the last one arrived, and at most a few were lost.
check "failover: A got B's messages up to the last one, $(kv "$sa" missing) lost in the switch ($sa)" \
	test "$(kv "$sa" hi)" -eq 1499 -a "$(kv "$sa" distinct)" -ge 1400
MEASURED+=("failover: B->A lost $((1500 - $(kv "$sa" distinct))) of 1500 messages at 500/s in the switch")
rep=$(ask a report)
check "failover: A's report: link 0 DOWN BACKUP" \
	contains "$(section "$rep" link_0 | tr '\n' ' ')" 'status: +DOWN +role: +BACKUP'
check "failover: A's report: link 1 RUNNING ACTIVE" \
	contains "$(section "$rep" link_1 | tr '\n' ' ')" 'status: +RUNNING +role: +ACTIVE'
rep=$(ask b report)
check "failover: B's report: link 0 NO-CARRIER BACKUP" \
	contains "$(section "$rep" link_0 | tr '\n' ' ')" 'status: +NO-CARRIER +role: +BACKUP'
check "failover: B's report counts one failover... or more" \
	contains "$(section "$rep" channel)" 'failovers: +[1-9]'

# vA0 comes back: no switch back while vA1 is fine; then vA1 goes down and vA0 takes over.
ip -n "$A" link set dev vA0 up
wait_until 5 carrier_up "$A" vA0
check "failover: A's link 0 RUNNING again, still BACKUP" \
	contains "$(ask a "wait-report $(role_re 0 vA0 RUNNING BACKUP) 5")" '^report-ok'
ask b reset >/dev/null
ip -n "$A" link set dev vA1 down
ask a "send 500" >/dev/null
sb=$(ask b "wait-recv 500 5" >/dev/null; ask b stats)
check "failover: A switched back to vA0" eq "$(count_lines "$WORK/a.out" 'switch vA1 -> vA0')" 2
check "failover: all 500 arrived on link 0 ($sb)" \
	eq "$(kv "$sb" distinct)/$(kv "$sb" link1)" "500/0"
check "failover: the switches were logged" \
	grep -q 'sending on vA0 now, vA1 was active: vA1 is DOWN' "$WORK/a.err"
stop_driver a
stop_driver b

check "no sanitizer report from the drivers" \
	eval '! grep -E "Sanitizer|runtime error" "$WORK/a.err" "$WORK/b.err"'
for m in "${MEASURED[@]}"; do log "measured: $m"; done
finish
