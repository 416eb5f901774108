# Three firewalls in a chain of failovers, for tests/failover/chain3.sh.
# Source it after common.sh and failover.sh: it reuses failover.sh's
# policy, keepalived configuration, crash and revive, and widens them to a
# third firewall.
#
#   client 198.18.10.10 ── br-lan ─┬─ lan0 fw1 wan0 ─┬─ br-wan ── server 198.18.20.10
#                                  ├─ lan0 fw2 wan0 ─┤
#                                  └─ lan0 fw3 wan0 ─┘
#   fw1/fw2/fw3 sync0 198.18.30.N ── br-sync ── one multicast FTFW group
#                                               (225.0.0.51, port 3780)
#
# fwN is .N on each side; the virtual addresses .254 move with keepalived
# (VRRP), and the client and the server route through them.  Every firewall
# has failover.sh's strict policy (nf_conntrack_tcp_loose=0, invalid packets
# counted and dropped).

CH_GROUP=225.0.0.51
CH_CHAINFLOWS=${CH_CHAINFLOWS:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/chain_flows.py}

# fo_ns N: the namespace of fwN (failover.sh's knows two; its helpers that
# take a firewall number go through this one).
fo_ns() {
	case $1 in
	1) echo "$NS_FW1" ;;
	2) echo "$NS_FW2" ;;
	3) echo "$NS_FW3" ;;
	*) echo "fo_ns: no firewall '$1'" >&2; return 1 ;;
	esac
}

# ch_setup: the six namespaces and their links; sets NS_CL NS_SV NS_SW NS_FW1..3.
ch_setup() {
	NS_SW=$(make_netns sw) && NS_CL=$(make_netns client) && NS_SV=$(make_netns server) &&
		NS_FW1=$(make_netns fw1) && NS_FW2=$(make_netns fw2) && NS_FW3=$(make_netns fw3) || return 1
	local br n ns
	for br in br-lan br-wan br-sync; do
		ip -n "$NS_SW" link add "$br" type bridge mcast_snooping 0 || return 1
		ip -n "$NS_SW" link set "$br" up
	done
	# port NS DEV SWPORT BRIDGE: a veth from NS (named DEV) to the switch.
	port() {
		ip link add "$2" netns "$1" type veth peer name "$3" netns "$NS_SW" || return 1
		ip -n "$NS_SW" link set "$3" master "$4" up
		ip -n "$1" link set "$2" up
	}
	port "$NS_CL" eth0 cl-lan br-lan || return 1
	port "$NS_SV" eth0 sv-wan br-wan || return 1
	ip -n "$NS_CL" addr add "$FO_CLIENT/24" dev eth0
	ip -n "$NS_CL" route add default via "$FO_LAN_VIP"
	ip -n "$NS_SV" addr add "$FO_SERVER/24" dev eth0
	ip -n "$NS_SV" route add 198.18.10.0/24 via "$FO_WAN_VIP"
	for n in 1 2 3; do
		ns=$(fo_ns "$n")
		port "$ns" lan0 "fw$n-lan" br-lan || return 1
		port "$ns" wan0 "fw$n-wan" br-wan || return 1
		port "$ns" sync0 "fw$n-sync" br-sync || return 1
		ip -n "$ns" addr add "198.18.10.$n/24" dev lan0
		ip -n "$ns" addr add "198.18.20.$n/24" dev wan0
		ip -n "$ns" addr add "198.18.30.$n/24" dev sync0
		ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1 net.netfilter.nf_conntrack_tcp_loose=0 \
			net.netfilter.nf_conntrack_events=1 || return 1
		fo_policy "$ns" || return 1
	done
}

# ch_ctsyncd_conf N [Mode options]: $WORK/fwN.conf, FTFW on the multicast
# group over sync0, keyed with $WORK/sync.key (one key for the group).
# CHAIN_PEER_TIMEOUT and CHAIN_ALIVE_INTERVAL, when set, become the Sync
# block's PeerTimeout and AliveInterval.
ch_ctsyncd_conf() {
	local n=$1 opts=${2:-HotStandby on} peer_timeout=""
	[[ -s $WORK/sync.key ]] || (umask 077; "$CTSYNCD" --genkey >"$WORK/sync.key") || return 1
	[[ -n ${CHAIN_PEER_TIMEOUT:-} ]] && peer_timeout="PeerTimeout $CHAIN_PEER_TIMEOUT"
	[[ -n ${CHAIN_ALIVE_INTERVAL:-} ]] && peer_timeout+=" AliveInterval $CHAIN_ALIVE_INTERVAL"
	cat >"$WORK/fw$n.conf" <<CONF
# ctsyncd on fw$n ($(date -u +%FT%TZ))
Sync {
	Mode FTFW {
		$opts
	}
	Multicast {
		IPv4_address $CH_GROUP
		IPv4_interface 198.18.30.$n
		Group 3780
		Interface sync0
	}
	Key $WORK/sync.key
	$peer_timeout
}
General {
	Systemd off
	HashSize 65536
	HashLimit 524288
	LogFile $WORK/fw$n.log
	LockFile $WORK/fw$n.lock
	UNIX { Path $WORK/fw$n.ctl }
	NetlinkBufferSize 8388608
	NetlinkBufferSizeMaxGrowth 33554432
	# Only the forwarded traffic: not VRRP, not the sync link, not the
	# firewalls' own addresses.
	Filter From Userspace {
		Protocol Accept { TCP UDP ICMP }
		Address Ignore {
			IPv4_address 127.0.0.1
			IPv4_address 198.18.10.1
			IPv4_address 198.18.10.2
			IPv4_address 198.18.10.3
			IPv4_address 198.18.20.1
			IPv4_address 198.18.20.2
			IPv4_address 198.18.20.3
			IPv4_address 198.18.30.0/24
		}
	}
}
CONF
}

# ch_reboot N: fwN comes back as a rebooted machine does: an empty
# conntrack table, no virtual address (keepalived killed at the crash left
# them on the interfaces), then its links up.  Its processes are started
# separately; its nftables counters stay, so callers count differences.
ch_reboot() {
	local ns
	ns=$(fo_ns "$1") || return 1
	ip netns exec "$ns" conntrack -F 2>/dev/null
	ip -n "$ns" addr del "$FO_LAN_VIP/24" dev lan0 2>/dev/null
	ip -n "$ns" addr del "$FO_WAN_VIP/24" dev wan0 2>/dev/null
	fo_revive "$1"
}

# ch_holder: the number of the firewall that holds the virtual addresses, or nothing.
ch_holder() {
	local n
	for n in 1 2 3; do fo_has_vip "$n" && { echo "$n"; return 0; }; done
	return 1
}

# ch_stats N [SECTION]: fwN's ctsyncd -s [SECTION] --json.
ch_stats() { "$CTSYNCD" -C "$WORK/fw$1.conf" -s ${2:+"$2"} --json 2>/dev/null; }

# ch_external_active N: states in fwN's external cache (0 if it does not answer).
ch_external_active() {
	ch_stats "$1" cache | python3 -c 'import json,sys
try: print(json.load(sys.stdin)["external_cache"]["active"])
except Exception: print(0)'
}

# ch_kernel_total N: every state in fwN's kernel table.
ch_kernel_total() { ip netns exec "$(fo_ns "$1")" conntrack -C 2>/dev/null || echo 0; }

# ch_sync_summary N: one line of fwN's FTFW counters from ctsyncd -s --json:
# messages, resends, the window (in flight of ResendQueueSize), lost
# sequence numbers, and each peer's liveness.
ch_sync_summary() {
	ch_stats "$1" | python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
except ValueError:
    print("(no answer)"); sys.exit(0)
s, q = d.get("sync", {}), d.get("queues", {})
peers = ", ".join("%s %s" % (p.get("address"), p.get("state")) for p in d.get("peers", []))
print("sent %s msgs (%s states, %s resent), received %s, sequence_lost %s, nack sent/recv %s/%s, "
      "in flight %s of %s (peak %s), stalls %s, rtx queue %s, tx queue %s; peers: %s" % (
      s.get("messages_sent"), s.get("states_sent"), s.get("retransmitted"), s.get("messages_received"),
      s.get("sequence_lost"), s.get("nack_sent"), s.get("nack_received"),
      q.get("in_flight"), q.get("in_flight_max"), q.get("in_flight_peak"), q.get("flow_control_stalls"),
      q.get("retransmission_queue"), q.get("tx_queue"), peers))'
}

# ch_start_client NAME LONG SECONDS: flows.py's client (through
# chain_flows.py, which adds per-step counts); as fo_start_client.
ch_start_client() {
	local name=$1 long=$2 secs=$3
	rm -f "$WORK/$name.ready" "$WORK/$name.mark"
	ip netns exec "$NS_CL" python3 "$CH_CHAINFLOWS" client --connect "$FO_SERVER:$FO_PORT" \
		--long "$long" --interval-ms 100 --short-per-s 5 --duration "$secs" \
		--mark-file "$WORK/$name.mark" --ready-file "$WORK/$name.ready" \
		>"$WORK/$name.json" 2>>"$WORK/$name.err" &
	FO_CLIENT_PID=$!
	track_pid $FO_CLIENT_PID
}
