# An active-active cluster of N firewalls (2 or 3) in network namespaces, for
# the active-active test.  Source it after common.sh and failover.sh (whose
# forwarding policy, fo_policy, every firewall loads).
#
#   clients 198.18.10.1xx ─ br-lan ─┬─ lan0 fw1 wan0 ─┬─ br-wan ─ server 198.18.20.10
#                                   ├─ lan0 fw2 wan0 ─┤
#                                   └─ lan0 fw3 wan0 ─┘
#   sync0 of every firewall, 198.18.30.N ─ br-sync (ctsyncd's multicast group)
#
# Every firewall has the same MAC address and the address .254 on lan0, and
# the same MAC and .254 on wan0 (each also has .N of its own, which VRRP
# speaks from).  The client and the server route through .254; the switch's
# firewall ports learn no address, so every frame for the shared MAC is
# flooded to all firewalls.  Each firewall loads the shipped
# active-active.nft (its interface names and `mod N` substituted), which
# drops before conntrack the packets of buckets it does not own, and the
# strict forwarding policy of failover.sh (nf_conntrack_tcp_loose=0: a
# firewall forwards an established connection only if it has its state).
# keepalived runs the shipped keepalived.conf (interfaces, addresses and the
# advertisement interval substituted; for two firewalls without the
# instance of bucket 2, as its comment says) with the shipped hook, both as
# the build made them ($top_builddir).

AA_SEED=0x63747379           # active-active.nft's seed
AA_LAN_MAC=02:00:5e:aa:0a:fe # shared by every firewall's lan0
AA_WAN_MAC=02:00:5e:aa:14:fe # and wan0
AA_SHARED_LAN=198.18.10.254
AA_SHARED_WAN=198.18.20.254
AA_ADVERT=${AA_ADVERT:-0.5}
AA_EXAMPLES=${AA_EXAMPLES:-${top_builddir:?the build directory}/examples/active-active}
AA_SRC_EXAMPLES=${AA_SRC_EXAMPLES:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../examples/active-active" && pwd)}
AA_HASH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/cluster_hash.py
declare -a AA_NS
declare -a AA_KEEPALIVED
AA_N=0

# aa_ns N: fwN's namespace.
aa_ns() { echo "${AA_NS[$1]}"; }

# aa_pick_clients N PER: PER client addresses for each of the N buckets, the
# first of 198.18.10.101-199 that fall there; sets AA_CLIENTS (address ->
# bucket, an associative array).  Not in $(...): it sets a variable.
declare -A AA_CLIENTS
aa_pick_clients() {
	local n=$1 per=$2 addr b
	local -A have=()
	AA_CLIENTS=()
	while read -r addr b; do
		((${have[$b]:-0} >= per)) && continue
		have[$b]=$((${have[$b]:-0} + 1))
		AA_CLIENTS[$addr]=$b
	done < <(python3 "$AA_HASH" "$n" "$AA_SEED" $(seq -f '198.18.10.%g' 101 199))
	((${#AA_CLIENTS[@]} == n * per))
}

# aa_clients_text: the client addresses with their buckets, for the log.
aa_clients_text() {
	local addr
	for addr in "${!AA_CLIENTS[@]}"; do echo "$addr:${AA_CLIENTS[$addr]}"; done | sort -t. -k4n | tr '\n' ' '
}

# aa_setup N: the switch, client, server and N firewalls; sets NS_SW NS_CL
# NS_SV AA_NS[1..N] AA_N.  Call aa_pick_clients first.
aa_setup() {
	local n=$1 i ns br addr
	AA_N=$n
	NS_SW=$(make_netns sw) && NS_CL=$(make_netns client) && NS_SV=$(make_netns server) || return 1
	for br in br-lan br-wan br-sync; do
		ip -n "$NS_SW" link add "$br" type bridge mcast_snooping 0 || return 1
		ip -n "$NS_SW" link set "$br" up
	done
	# aa_port NS DEV SWPORT BRIDGE: a veth from NS (named DEV) to the switch.
	aa_port() {
		ip link add "$2" netns "$1" type veth peer name "$3" netns "$NS_SW" || return 1
		ip -n "$NS_SW" link set "$3" master "$4" up
		ip -n "$1" link set "$2" up
	}
	aa_port "$NS_CL" eth0 cl-lan br-lan || return 1
	aa_port "$NS_SV" eth0 sv-wan br-wan || return 1
	for addr in "${!AA_CLIENTS[@]}"; do ip -n "$NS_CL" addr add "$addr/24" dev eth0 || return 1; done
	ip -n "$NS_CL" route add default via "$AA_SHARED_LAN"
	ip -n "$NS_SV" addr add "$FO_SERVER/24" dev eth0
	ip -n "$NS_SV" route add 198.18.10.0/24 via "$AA_SHARED_WAN"
	for ((i = 1; i <= n; i++)); do
		ns=$(make_netns "fw$i") || return 1
		AA_NS[$i]=$ns
		aa_port "$ns" lan0 "fw$i-lan" br-lan || return 1
		aa_port "$ns" wan0 "fw$i-wan" br-wan || return 1
		aa_port "$ns" sync0 "fw$i-sync" br-sync || return 1
		# The shared MAC must never be learned on one port: the switch
		# then floods it to every firewall.
		ip netns exec "$NS_SW" bridge link set dev "fw$i-lan" learning off || return 1
		ip netns exec "$NS_SW" bridge link set dev "fw$i-wan" learning off || return 1
		ip -n "$ns" link set lan0 address "$AA_LAN_MAC"
		ip -n "$ns" link set wan0 address "$AA_WAN_MAC"
		# Same MAC, same link-local address: IPv6 would only fail its DAD.
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.lan0.disable_ipv6=1 net.ipv6.conf.wan0.disable_ipv6=1
		# Its own address first: the one VRRP speaks from.
		ip -n "$ns" addr add "198.18.10.$i/24" dev lan0
		ip -n "$ns" addr add "$AA_SHARED_LAN/24" dev lan0
		ip -n "$ns" addr add "198.18.20.$i/24" dev wan0
		ip -n "$ns" addr add "$AA_SHARED_WAN/24" dev wan0
		ip -n "$ns" addr add "198.18.30.$i/24" dev sync0
		ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1 net.netfilter.nf_conntrack_tcp_loose=0 \
			net.netfilter.nf_conntrack_events=1 || return 1
		aa_steering "$ns" || return 1
		fo_policy "$ns" || return 1
	done
}

# aa_steering NS: the shipped active-active.nft, for this cluster's size and interfaces.
aa_steering() {
	sed -e 's|^define lan = .*|define lan = "lan0"|' -e 's|^define wan = .*|define wan = "wan0"|' \
		-e "s|mod 3|mod $AA_N|g" "$AA_SRC_EXAMPLES/active-active.nft" | ip netns exec "$1" nft -f -
}

# aa_teardown: stops everything in the namespaces and deletes them.
aa_teardown() {
	local ns pid i
	for ns in "$NS_CL" "$NS_SV" "${AA_NS[@]:1:$AA_N}" "$NS_SW"; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
		ip netns del "$ns"
	done
	for ((i = 1; i <= AA_N; i++)); do
		rm -f "$WORK/fw$i.lock" "$WORK/fw$i.ctl" "$WORK/fw$i.keepalived.pid" "$WORK/fw$i.vrrp.pid"
	done
	AA_KEEPALIVED=()
}

# aa_ctsyncd_conf N: $WORK/fwN.conf: FTFW over one multicast group on the
# sync bridge, external cache, no HotStandby (a firewall's kernel holds only
# the flows it forwards; the others' states wait in the external cache).
aa_ctsyncd_conf() {
	local n=$1 i ignore=""
	for ((i = 1; i <= AA_N; i++)); do
		ignore+="IPv4_address 198.18.10.$i
			IPv4_address 198.18.20.$i
			"
	done
	cat >"$WORK/fw$n.conf" <<CONF
# ctsyncd on fw$n of $AA_N
Sync {
	Mode FTFW { }
	Multicast {
		IPv4_address 225.0.0.50
		IPv4_interface 198.18.30.$n
		Group 3780
		Interface sync0
	}
}
General {
	Systemd off
	HashSize 16384
	HashLimit 131072
	LogFile $WORK/fw$n.log
	LockFile $WORK/fw$n.lock
	UNIX { Path $WORK/fw$n.ctl }
	NetlinkBufferSize 2097152
	NetlinkBufferSizeMaxGrowth 16777216
	# Only the forwarded traffic: not VRRP, not the sync link, not the
	# firewalls' own addresses.
	Filter From Userspace {
		Protocol Accept { TCP UDP ICMP }
		Address Ignore {
			IPv4_address 127.0.0.1
			$ignore
			IPv4_address $AA_SHARED_LAN
			IPv4_address $AA_SHARED_WAN
			IPv4_address 198.18.30.0/24
		}
	}
}
CONF
}

# aa_start_ctsyncd N: ctsyncd on fwN, as a daemon, tracked.
aa_start_ctsyncd() {
	ip netns exec "$(aa_ns "$1")" "$CTSYNCD" -C "$WORK/fw$1.conf" -d 2>>"$WORK/fw$1.stderr" || return 1
	track_pid "$(head -n1 "$WORK/fw$1.lock")"
}

# aa_keepalived_conf N: $WORK/fwN.keepalived.conf from the shipped one; the
# hook gets the test's ctsyncd binary, log and lock, and fwN's configuration.
aa_keepalived_conf() {
	local n=$1 hook drop=""
	hook="/usr/bin/env CTSYNCD=$CTSYNCD HOOK_LOG=$WORK/fw$n.hook.log HOOK_LOCK=$WORK/fw$n.hook.lock"
	hook+=" HOOK_SYSLOG=off $AA_EXAMPLES/active-active.sh"
	# Two firewalls: no instance for bucket 2.
	((AA_N == 2)) && drop='/^vrrp_instance bucket2 {/,/^}/d'
	sed -e "$drop" \
		-e "s|interface eth1|interface lan0|" -e "s|^\([[:space:]]*\)eth0$|\1wan0|" \
		-e "s|203\.0\.113\.|198.18.30.|g" -e "s|advert_int 1$|advert_int $AA_ADVERT|" \
		-e "s|\"[^\"]*active-active\.sh \([a-z]* [0-9]* [0-9.]* [0-9.,]*\)\"|\"$hook \1 $WORK/fw$n.conf\"|" \
		"$AA_EXAMPLES/keepalived.conf" >"$WORK/fw$n.keepalived.conf"
}

# aa_start_keepalived N: keepalived (VRRP only, foreground) on fwN, as "fwN".
aa_start_keepalived() {
	local n=$1
	ip netns exec "$(aa_ns "$n")" keepalived -P -n -l -D -G -i "fw$n" -f "$WORK/fw$n.keepalived.conf" \
		-p "$WORK/fw$n.keepalived.pid" -r "$WORK/fw$n.vrrp.pid" >>"$WORK/fw$n.keepalived.log" 2>&1 &
	track_pid $!
	AA_KEEPALIVED[$n]=$!
	disown $!
}

# aa_owned N: the buckets fwN forwards now, sorted, space-separated.
aa_owned() {
	ip netns exec "$(aa_ns "$1")" nft -j list set inet ctsyncd_aa owned | python3 -c '
import json, sys
for o in json.load(sys.stdin)["nftables"]:
    if "set" in o:
        print(" ".join(str(e) for e in sorted(o["set"].get("elem", []))))'
}

# aa_owns N "BUCKETS": fwN forwards exactly BUCKETS (sorted, space-separated).
aa_owns() { [[ $(aa_owned "$1") == "$2" ]]; }

# aa_counter N NAME: packets of the named counter NAME on fwN
# (ctsfo invalid_dropped, or ctsyncd_aa not_owned).
aa_counter() {
	ip netns exec "$(aa_ns "$1")" nft -j list counter inet $2 | python3 -c 'import json,sys
for o in json.load(sys.stdin)["nftables"]:
    if "counter" in o: print(o["counter"]["packets"])'
}
aa_invalid() { aa_counter "$1" "ctsfo invalid_dropped"; }
aa_not_owned() { aa_counter "$1" "ctsyncd_aa not_owned"; }

# aa_kernel_clients N: "ADDR COUNT" for each client address with
# established connections to the test's port in fwN's kernel table.
aa_kernel_clients() {
	ip netns exec "$(aa_ns "$1")" conntrack -L -p tcp --dport "$FO_PORT" --state ESTABLISHED 2>/dev/null |
		grep -o 'src=198\.18\.10\.[0-9]*' | head -n 100000 | sort | uniq -c | awk '{ sub("src=", "", $2); print $2, $1 }' | sort
}

# aa_expected_clients BUCKETS COUNT: the "ADDR COUNT" lines that a kernel
# owning BUCKETS (space-separated) shows when each client has COUNT flows.
aa_expected_clients() {
	local addr
	for addr in "${!AA_CLIENTS[@]}"; do
		[[ " $1 " == *" ${AA_CLIENTS[$addr]} "* ]] && echo "$addr $2"
	done | sort
}

# aa_start_clients LONG SECONDS: one flows.py client per client address,
# LONG long connections each and no short ones (so that every firewall's
# table holds a known number of states), for SECONDS at most (aa_stop_clients
# ends them earlier); $WORK/ADDR.json, .ready, and one mark file
# $WORK/clients.mark for all.
aa_start_clients() {
	local long=$1 secs=$2 addr
	rm -f "$WORK"/*.ready "$WORK/clients.mark"
	AA_CLIENT_PIDS=()
	for addr in "${!AA_CLIENTS[@]}"; do
		ip netns exec "$NS_CL" python3 "$FO_FLOWS" client --connect "$FO_SERVER:$FO_PORT" --bind-addr "$addr" \
			--long "$long" --interval-ms 100 --short-per-s 0 --duration "$secs" \
			--mark-file "$WORK/clients.mark" --ready-file "$WORK/$addr.ready" \
			>"$WORK/$addr.json" 2>>"$WORK/$addr.err" &
		AA_CLIENT_PIDS+=($!)
		track_pid $!
	done
}
declare -a AA_CLIENT_PIDS

# aa_stop_clients: the clients end their run now (each prints its JSON).
aa_stop_clients() {
	local pid
	for pid in "${AA_CLIENT_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
	for pid in "${AA_CLIENT_PIDS[@]}"; do wait "$pid"; done
}

# aa_clients_ready: every client has all its long connections up.
aa_clients_ready() {
	local addr
	for addr in "${!AA_CLIENTS[@]}"; do [[ -e $WORK/$addr.ready ]] || return 1; done
}

# aa_client_json ADDR EXPR: a value of a client's JSON (python expression on d).
aa_client_json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$WORK/$1.json" "$2"; }

# aa_crash N: fwN dies as a machine does: its processes freeze, its links go
# dark, then the processes are killed (no goodbye on any link).
aa_crash() {
	local n=$1 ns pids pid dev
	ns=$(aa_ns "$n")
	pids="${AA_KEEPALIVED[$n]:-} $(cat "$WORK/fw$n.vrrp.pid" 2>/dev/null) $(head -n1 "$WORK/fw$n.lock" 2>/dev/null)"
	for pid in $pids; do kill -STOP "$pid" 2>/dev/null; done
	for dev in lan0 wan0 sync0; do ip -n "$ns" link set "$dev" down; done
	for pid in $pids; do kill -KILL "$pid" 2>/dev/null; done
	for pid in $pids; do wait_until 3 pid_gone "$pid"; done
	rm -f "$WORK/fw$n.vrrp.pid" "$WORK/fw$n.keepalived.pid"
}

# aa_external N [--origin ADDR]: the established connections to the test's
# port in fwN's external cache (of ADDR's), counted.
aa_external() {
	local n=$1
	shift
	"$CTSYNCD" -C "$WORK/fw$n.conf" -e "$@" 2>/dev/null | grep -c "ESTABLISHED .*dport=$FO_PORT "
}

# aa_external_all N ADDR: every state of ADDR's in fwN's external cache, counted.
aa_external_all() { "$CTSYNCD" -C "$WORK/fw$1.conf" -e --origin "$2" 2>/dev/null | grep -c .; }

# aa_probe ADDR: a new connection from client address ADDR to the server:
# connect, one line, its echo, close (3 s at most).
aa_probe() {
	ip netns exec "$NS_CL" python3 -c '
import socket, sys
s = socket.socket()
s.settimeout(3)
s.bind((sys.argv[1], 0))
s.connect((sys.argv[2], int(sys.argv[3])))
s.sendall(b"probe\n")
buf = b""
while not buf.endswith(b"\n"):
    chunk = s.recv(100)
    if not chunk:
        break
    buf += chunk
sys.exit(buf != b"probe\n")' "$1" "$FO_SERVER" "$FO_PORT"
}

# aa_peer_states N ADDR: peers[].external_states of the peer ADDR in fwN's
# -s --json (the states fwN holds from it), or "none" if it is not listed.
aa_peer_states() {
	"$CTSYNCD" -C "$WORK/fw$1.conf" -s --json 2>/dev/null | python3 -c '
import json, sys
for p in json.load(sys.stdin).get("peers", []):
    if p.get("address") == sys.argv[1]:
        print(p.get("external_states"))
        break
else:
    print("none")' "$2"
}
