#!/bin/bash
# A chain of failovers through three firewalls (tests/lib/chain.sh draws
# them): keepalived with priorities fw1 150 > fw2 100 > fw3 50, the shipped
# keepalived example and hook (only interfaces, addresses, priorities and
# timing changed), ctsyncd on every firewall in one keyed multicast FTFW
# group with HotStandby on, and failover.sh's strict policy
# (nf_conntrack_tcp_loose=0, invalid packets counted and dropped).
#
#   step 1: 200 long TCP connections flow through fw1; fw1 crashes (its
#           processes freeze, its links go dark, then it is killed); fw2
#           takes the addresses and every connection;
#   then    50 more long connections are opened through fw2;
#   step 2: fw2 crashes; fw3 takes over every connection, those opened
#           through fw2 included;
#   step 3: fw1 returns as from a reboot (empty conntrack table, no
#           virtual address): keepalived starts it as a backup, the shipped hook
#           starts ctsyncd and asks the group for every state (-n); fw1
#           waits keepalived's preempt_delay (CHAIN_PREEMPT_DELAY seconds)
#           and then takes the addresses back.  What makes it catch up
#           first is preempt_delay alone (no check script): the test
#           measures when fw1's external cache and kernel hold every state
#           and asserts that this came before fw1 took the addresses.
#
# Asserted at each step: the addresses move to the expected firewall, every
# connection alive before the step is flowing after it, and the new primary
# drops 0 packets as invalid.  Printed per step: the VRRP move time,
# survivors, invalid drops; at the end the FTFW counters of the survivors
# (ctsyncd -s --json: resends, window, lost sequence numbers, peers).
#
# Environment:
#   CHAIN_LONG (200), CHAIN_MID (50)  connections opened before step 1 and
#                                     through fw2 after it
#   CHAIN_BULK (0)   other TCP states injected into fw1's kernel (bench/ctload,
#                    no packets) before the connections, replicated to fw2
#                    and fw3: a busy firewall's table.  CHAIN_BULK=200000 is
#                    the hard case of issue 18 (a takeover bulk larger than
#                    the 131,072-message resend window while a crashed
#                    member is still counted); it takes minutes and is not
#                    part of `make check` (bench/chain3.sh runs it)
#   CHAIN_PREEMPT_DELAY   keepalived's preempt_delay for the returning fw1
#                    (4 s; 30 s with CHAIN_BULK)
#   CHAIN_PEER_TIMEOUT, CHAIN_ALIVE_INTERVAL   PeerTimeout and AliveInterval
#                    of the Sync block (unset: the defaults), e.g. 300ms and 100
#   CHAIN_SETTLE (4) seconds each new primary carries the traffic before the
#                    next step
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/failover.sh"
. "$(dirname "$0")/../lib/chain.sh"
require_root
require_cmd conntrack nft python3 keepalived

LONG=${CHAIN_LONG:-200}
MID=${CHAIN_MID:-50}
BULK=${CHAIN_BULK:-0}
SETTLE=${CHAIN_SETTLE:-4}
if ((BULK > 0)); then
	export FO_PREEMPT_DELAY=${CHAIN_PREEMPT_DELAY:-30}
	LIMIT=600   # seconds any one wait for the replication may take
else
	export FO_PREEMPT_DELAY=${CHAIN_PREEMPT_DELAY:-4}
	LIMIT=20
fi
for v in LONG MID BULK SETTLE FO_PREEMPT_DELAY; do
	[[ ${!v} =~ ^[0-9]+$ ]] || { echo "$TEST_NAME: $v must be a whole number, not '${!v}'" >&2; exit 99; }
done
CTLOAD=${CTLOAD:-$(built_tool bench/ctload)}
require_built "$CTLOAD"

declare -A VIP_MS INVALID
# invalid_on N: packets fwN has dropped as invalid so far.
invalid_on() { fo_invalid "$1"; }
# kernel_has N COUNT: fwN's kernel holds COUNT established states to the test's port.
kernel_has() { (($(fo_kernel_count "$1" "$FO_PORT") >= $2)); }
# external_has N COUNT: fwN's external cache holds COUNT states in all.
external_has() { (($(ch_external_active "$1") >= $2)); }
# hook_ran N ACTION COUNT: fwN's hook ran ACTION's last step COUNT times.
hook_ran() {
	local what='send every state'
	[[ $2 == backup ]] && what='ask the primary for a full resynchronisation'
	(($(grep -c " $2 \[[a-z]*\] $what" "$WORK/fw$1.hook.log" 2>/dev/null) >= $3))
}
# mark CLIENT...: the failure instant, in each client's mark file.
mark() { local c t; t=$(fo_now); for c in "$@"; do echo "$t" >>"$WORK/$c.mark"; done; }

# --- the cluster -------------------------------------------------------------------------
t_begin=$SECONDS
ch_setup || { fail "the three firewalls are set up"; finish; }
for n in 1 2 3; do
	ch_ctsyncd_conf "$n" "HotStandby on
		PurgeTimeout 3" || { fail "fw$n's configuration"; finish; }
	fo_start_ctsyncd "$n" || { fail "ctsyncd starts on fw$n ($(cat "$WORK/fw$n.stderr"))"; finish; }
done
fo_keepalived_conf 1 150
fo_keepalived_conf 2 100
fo_keepalived_conf 3 50
fo_start_keepalived 1
check "fw1 (priority 150) becomes the primary" wait_until 10 fo_has_vip 1
fo_start_keepalived 2
fo_start_keepalived 3
check "fw2 and fw3 run their backup hooks" wait_until 10 eval 'hook_ran 2 backup 1 && hook_ran 3 backup 1'
fo_start_server || { fail "the server starts"; finish; }
if ((BULK > 0)); then
	t=$SECONDS
	ip netns exec "$NS_FW1" "$CTLOAD" create "$BULK" --proto tcp --timeout 1800 \
		--base-addr 10.64.0.1 --dst-addr 10.128.0.1 >/dev/null || { fail "ctload creates $BULK states on fw1"; finish; }
	check "fw2 and fw3 hold fw1's $BULK other states" \
		wait_until "$LIMIT" eval 'external_has 2 $BULK && external_has 3 $BULK'
	log "bulk: $BULK states on fw1, replicated to fw2 and fw3 in $((SECONDS - t)) s"
fi

# --- step 1: fw1 crashes, fw2 takes over ----------------------------------------------------
ch_start_client first "$LONG" $((BULK > 0 ? 1500 : 120))
first_pid=$FO_CLIENT_PID
check "$LONG long connections are established through fw1" wait_until 20 test -e "$WORK/first.ready"
check "fw2's and fw3's kernels hold them (HotStandby)" \
	wait_until "$LIMIT" eval 'kernel_has 2 $LONG && kernel_has 3 $LONG'
sleep 1
inv0=$(invalid_on 2)
t0=$(fo_now)
mark first
fo_crash 1
fo_wait_vip_fast 2 20 && VIP_MS[1]=$(fo_ms_since "$t0") || VIP_MS[1]=none
check "step 1: fw2 takes the addresses (${VIP_MS[1]} ms after fw1's crash)" test "${VIP_MS[1]}" != none
check "step 1: fw2's primary hook runs to its end" wait_until "$LIMIT" hook_ran 2 primary 1
sleep "$SETTLE"
INVALID[1]=$(($(invalid_on 2) - inv0))
log "step 1: fw2 after the takeover: $(ch_sync_summary 2)"

# --- new connections through fw2 ------------------------------------------------------------
ch_start_client mid "$MID" $((BULK > 0 ? 1500 : 100))
mid_pid=$FO_CLIENT_PID
check "$MID more long connections are established through fw2" wait_until 20 test -e "$WORK/mid.ready"
t=$(fo_now)
# Bounded well below the default PeerTimeout (30 s), so that fw2 fails
# while the crashed fw1 may still count for acknowledgements: whether these
# arrive must not depend on that.
if wait_until 10 kernel_has 3 $((LONG + MID)); then
	pass "fw3's kernel holds all $((LONG + MID)) connections, those opened through fw2 too ($(fo_ms_since "$t") ms)"
else
	fail "fw3's kernel holds all $((LONG + MID)) connections, those opened through fw2 too (it has $(fo_kernel_count 3 "$FO_PORT"))"
fi
log "before step 2: fw2: $(ch_sync_summary 2)"

# --- step 2: fw2 crashes, fw3 takes over ----------------------------------------------------
inv0=$(invalid_on 3)
t0=$(fo_now)
mark first mid
fo_crash 2
fo_wait_vip_fast 3 20 && VIP_MS[2]=$(fo_ms_since "$t0") || VIP_MS[2]=none
check "step 2: fw3 takes the addresses (${VIP_MS[2]} ms after fw2's crash)" test "${VIP_MS[2]}" != none
check "step 2: fw3's primary hook runs to its end" wait_until "$LIMIT" hook_ran 3 primary 1
sleep "$SETTLE"
INVALID[2]=$(($(invalid_on 3) - inv0))
log "step 2: fw3 after the takeover: $(ch_sync_summary 3)"

# --- step 3: fw1 returns, catches up, preempts ------------------------------------------------
inv0=$(invalid_on 1)
ch_reboot 1
t_back=$(fo_now)
fo_start_keepalived 1
check "step 3: fw1's backup hook starts ctsyncd and asks for every state" wait_until 15 hook_ran 1 backup 1
pid=$(fo_ctsyncd_pid 1) && track_pid "$pid"
# Caught up: fw1's external cache holds fw3's whole table (the other states
# and every connection), and its kernel, empty at the reboot, every
# connection (HotStandby).
want=$((BULK + LONG + MID))
caught=none vip_at=none at_vip=""
end=$((SECONDS + FO_PREEMPT_DELAY + LIMIT))
for ((i = 0; i < (FO_PREEMPT_DELAY + LIMIT) * 20 && SECONDS < end; i++)); do
	if [[ $vip_at == none ]] && fo_has_vip 1; then
		vip_at=$(fo_ms_since "$t_back")
		((end > SECONDS + 60)) && end=$((SECONDS + 60))   # late states help no more
		at_vip="its kernel then held $(fo_kernel_count 1 "$FO_PORT") of the $((LONG + MID)) connections"
		mark first mid
	fi
	if [[ $caught == none ]] && external_has 1 "$want" && kernel_has 1 $((LONG + MID)); then
		caught=$(fo_ms_since "$t_back")
	fi
	[[ $caught != none && $vip_at != none ]] && break
	sleep 0.05
done
VIP_MS[3]=$vip_at
log "step 3: fw1 had every state $caught ms after its links returned; it took the addresses after $vip_at ms ($at_vip)"
check "step 3: fw1 catches up before it takes the addresses (states at $caught ms, addresses at $vip_at ms)" \
	python3 -c 'import sys; c, v = sys.argv[1:]; sys.exit(not (c != "none" and v != "none" and float(c) < float(v)))' "$caught" "$vip_at"
check "step 3: fw1 takes the addresses back (${VIP_MS[3]} ms after its links returned; preempt_delay $FO_PREEMPT_DELAY s)" \
	test "${VIP_MS[3]}" != none
check "step 3: fw1's primary hook runs to its end" wait_until "$LIMIT" hook_ran 1 primary 1
check "step 3: fw3 becomes a backup again" wait_until 10 hook_ran 3 backup 2
sleep "$SETTLE"
INVALID[3]=$(($(invalid_on 1) - inv0))

kill -TERM "$first_pid" "$mid_pid" 2>/dev/null
wait "$first_pid" "$mid_pid"

# --- results ------------------------------------------------------------------------------
# steps CLIENT K FIELD: FIELD of step K (0-based) in CLIENT's JSON, 0 if the client has no such step.
steps() { fo_json "$1" "d['steps'][$2]['$3'] if len(d['steps']) > $2 else 0"; }
names=("" "fw1 crashes, fw2 takes over" "fw2 crashes, fw3 takes over" "fw1 returns and preempts fw3")
primary=("" 2 3 1)
for k in 1 2 3; do
	alive=$((LONG + (k > 1 ? MID : 0)))
	through=$(steps first $((k - 1)) came_through)
	((k > 1)) && through=$((through + $(steps mid $((k - 2)) came_through)))
	log "step $k (${names[$k]}): VRRP moved in ${VIP_MS[$k]} ms; $through of $alive connections came through;" \
		"${INVALID[$k]} packets dropped as invalid on fw${primary[$k]}"
	check "step $k: all $alive connections came through ($through)" test "$through" -eq "$alive"
	check "step $k: fw${primary[$k]} dropped no packet as invalid (${INVALID[$k]})" test "${INVALID[$k]}" -eq 0
done
log "first: $(python3 "$FO_FLOWS" summary "$WORK/first.json")"
log "mid: $(python3 "$FO_FLOWS" summary "$WORK/mid.json")"
check "the $LONG first connections survived all three steps ($(fo_json first 'd["survived"]'))" \
	test "$(fo_json first 'd["survived"]')" -eq "$LONG"
check "the $MID connections opened through fw2 survived steps 2 and 3 ($(fo_json mid 'd["survived"]'))" \
	test "$(fo_json mid 'd["survived"]')" -eq "$MID"
for n in 1 3; do log "survivor fw$n: $(ch_sync_summary "$n")"; done
log "wall time $((SECONDS - t_begin)) s"
finish
