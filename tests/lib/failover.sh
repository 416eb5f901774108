# A primary-backup firewall pair in network namespaces, for the failover
# test and the demo.  Source it after common.sh.
#
#   client 198.18.10.10 ── br-lan ─┬─ lan0 fw1 wan0 ─┬─ br-wan ── server 198.18.20.10
#                                  └─ lan0 fw2 wan0 ─┘
#   fw1 sync0 198.18.30.1 ──────── sync0 fw2 198.18.30.2   (ctsyncd's dedicated link)
#
# fw1 is .1 and fw2 is .2 on each side; the virtual addresses .254 move with
# keepalived (VRRP), and the client and the server route through them.  Both
# firewalls forward with a strict nftables policy: established and related
# packets pass, new ones only as TCP SYN to the test's port or to FTP's, UDP
# or ICMP, everything else is dropped, and packets conntrack finds invalid
# are counted and dropped.  With nf_conntrack_tcp_loose=0 a firewall cannot
# pick up a TCP connection in the middle: it has to have the state.  FTP
# control connections get the kernel's ftp helper, so a passive data
# connection passes only as related: the firewall needs the expectation.
#
# keepalived runs the hook shipped in examples/keepalived, with a
# configuration made from the shipped keepalived.conf (only interfaces,
# addresses, priority, timing and the hook's arguments are changed), both
# as the build made them from their .in files ($top_builddir).

FO_LAN_VIP=198.18.10.254
FO_WAN_VIP=198.18.20.254
FO_CLIENT=198.18.10.10
FO_SERVER=198.18.20.10
FO_PORT=5001
FO_ADVERT=${FO_ADVERT:-0.5}   # VRRP advertisement interval, seconds
FO_EXAMPLES=${FO_EXAMPLES:-${top_builddir:?the build directory}/examples/keepalived}
FO_FLOWS=${FO_FLOWS:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/flows.py}

# fo_setup: the five namespaces and their links; sets NS_CL NS_FW1 NS_FW2 NS_SV NS_SW.
fo_setup() {
	NS_SW=$(make_netns sw) && NS_CL=$(make_netns client) && NS_SV=$(make_netns server) &&
		NS_FW1=$(make_netns fw1) && NS_FW2=$(make_netns fw2) || return 1
	local br n ns
	for br in br-lan br-wan; do
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
	for n in 1 2; do
		ns=$(fo_ns "$n")
		port "$ns" lan0 "fw$n-lan" br-lan || return 1
		port "$ns" wan0 "fw$n-wan" br-wan || return 1
		ip -n "$ns" addr add "198.18.10.$n/24" dev lan0
		ip -n "$ns" addr add "198.18.20.$n/24" dev wan0
		ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1 net.netfilter.nf_conntrack_tcp_loose=0 \
			net.netfilter.nf_conntrack_events=1 || return 1
		fo_policy "$ns" || return 1
	done
	ip link add sync0 netns "$NS_FW1" type veth peer name sync0 netns "$NS_FW2" || return 1
	ip -n "$NS_FW1" addr add 198.18.30.1/24 dev sync0
	ip -n "$NS_FW2" addr add 198.18.30.2/24 dev sync0
	ip -n "$NS_FW1" link set sync0 up
	ip -n "$NS_FW2" link set sync0 up
}

# fo_teardown: stops everything in the namespaces and deletes them.
fo_teardown() {
	local ns pid
	for ns in "$NS_CL" "$NS_SV" "$NS_FW1" "$NS_FW2" "$NS_SW"; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
		ip netns del "$ns"
	done
	rm -f "$WORK"/fw*.lock "$WORK"/fw*.ctl "$WORK"/*.pid
}

fo_ns() { if [[ $1 == 1 ]]; then echo "$NS_FW1"; else echo "$NS_FW2"; fi; }

# fo_policy NS: the firewall's forwarding policy.
fo_policy() {
	ip netns exec "$1" nft -f - <<'NFT'
table inet ctsfo {
	counter invalid_dropped { }
	ct helper ftp-std { type "ftp" protocol tcp; }
	chain pre {
		type filter hook prerouting priority filter;
		tcp dport 21 ct helper set "ftp-std"
	}
	chain forward {
		type filter hook forward priority filter; policy drop;
		ct state invalid counter name invalid_dropped drop
		ct state established,related accept
		tcp dport { 21, 5001 } tcp flags & (fin | syn | rst | ack) == syn ct state new accept
		meta l4proto { udp, icmp } ct state new accept
	}
}
NFT
}

# fo_invalid N: packets dropped as invalid on fwN so far.
fo_invalid() {
	ip netns exec "$(fo_ns "$1")" nft -j list counter inet ctsfo invalid_dropped |
		python3 -c 'import json,sys
for o in json.load(sys.stdin)["nftables"]:
    if "counter" in o: print(o["counter"]["packets"])'
}

# fo_sync_loss N PERCENT: drop PERCENT % of what fwN sends on the sync link
# (0 removes the rule).  No netem here: nftables' random numbers do it.
fo_sync_loss() {
	local ns
	ns=$(fo_ns "$1")
	ip netns exec "$ns" nft delete table inet ctsfo_loss 2>/dev/null
	(($2 == 0)) && return 0
	ip netns exec "$ns" nft -f - <<NFT
table inet ctsfo_loss {
	chain out {
		type filter hook output priority 0;
		oifname "sync0" udp dport 3780 numgen random mod 100 < $2 drop
	}
}
NFT
}

# fo_ctsyncd_conf N [Mode options]: $WORK/fwN.conf, FTFW over UDP on sync0, keyed
# with $WORK/sync.key unless FO_UNKEYED is set.
fo_ctsyncd_conf() {
	local n=$1 opts=${2:-HotStandby on} peer=$((3 - $1)) key=""
	# Keyed, as we recommend, unless FO_UNKEYED is set: one key for the pair.
	if [[ -z ${FO_UNKEYED:-} ]]; then
		[[ -s $WORK/sync.key ]] || (umask 077; "$CTSYNCD" --genkey >"$WORK/sync.key") || return 1
		key="Key $WORK/sync.key"
	fi
	cat >"$WORK/fw$n.conf" <<CONF
# ctsyncd on fw$n ($(date -u +%FT%TZ))
Sync {
	Mode FTFW {
		$opts
	}
	UDP {
		IPv4_address 198.18.30.$n
		IPv4_Destination_Address 198.18.30.$peer
		Port 3780
		Interface sync0
	}
	$key
	Options { ExpectationSync on }
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
			IPv4_address 198.18.10.1
			IPv4_address 198.18.10.2
			IPv4_address 198.18.20.1
			IPv4_address 198.18.20.2
			IPv4_address 198.18.30.0/24
		}
	}
}
CONF
}

# fo_keepalived_conf N PRIORITY: $WORK/fwN.keepalived.conf from the shipped
# example; FO_NO_HOOK=1 leaves the notify hooks out (no ctsyncd at all).
fo_keepalived_conf() {
	local n=$1 prio=$2 hook
	hook="/usr/bin/env CTSYNCD=$CTSYNCD HOOK_LOG=$WORK/fw$n.hook.log HOOK_LOCK=$WORK/fw$n.hook.lock"
	hook+=" HOOK_SYSLOG=off $FO_EXAMPLES/primary-backup.sh"
	local nohook=
	[[ ${FO_NO_HOOK:-} ]] && nohook='/^[[:space:]]*notify_/d'
	sed -e "s|enable_script_security|enable_script_security\n\tvrrp_version 3|" \
		-e "s|preempt_delay [0-9]*|preempt_delay ${FO_PREEMPT_DELAY:-2}|" -e "$nohook" \
		-e "s|interface eth1|interface lan0|; s|dev eth1|dev lan0|" \
		-e "s|interface eth0|interface wan0|; s|dev eth0|dev wan0|" \
		-e "s|192\.0\.2\.254/24|$FO_LAN_VIP/24|; s|198\.51\.100\.254/24|$FO_WAN_VIP/24|" \
		-e "s|priority 150|priority $prio|; s|advert_int 1|advert_int $FO_ADVERT|" \
		-e "s|\"[^\"]*primary-backup\.sh \([a-z]*\)\"|\"$hook \1 $WORK/fw$n.conf\"|" \
		"$FO_EXAMPLES/keepalived.conf" >"$WORK/fw$n.keepalived.conf"
}

# fo_start_ctsyncd N: starts ctsyncd on fwN (as a daemon) and tracks it.
fo_start_ctsyncd() {
	ip netns exec "$(fo_ns "$1")" "$CTSYNCD" -C "$WORK/fw$1.conf" -d 2>>"$WORK/fw$1.stderr" || return 1
	track_pid "$(head -n1 "$WORK/fw$1.lock")"
}

# fo_ctsyncd_pid N: the pid of fwN's ctsyncd, if it runs.
fo_ctsyncd_pid() { [[ -f $WORK/fw$1.lock ]] && head -n1 "$WORK/fw$1.lock"; }

# fo_start_keepalived N: keepalived (VRRP only, foreground) on fwN.
fo_start_keepalived() {
	local n=$1
	ip netns exec "$(fo_ns "$n")" keepalived -P -n -l -D -G -f "$WORK/fw$n.keepalived.conf" \
		-p "$WORK/fw$n.keepalived.pid" -r "$WORK/fw$n.vrrp.pid" >>"$WORK/fw$n.keepalived.log" 2>&1 &
	track_pid $!
	FO_KEEPALIVED[$n]=$!
	disown $!   # killed by pid at the crash: no "Killed" notice from the shell
}
declare -a FO_KEEPALIVED

# fo_keepalived_pids N: the keepalived processes of fwN (parent and VRRP child).
fo_keepalived_pids() {
	local n=$1 f
	echo "${FO_KEEPALIVED[$n]:-}"
	for f in "$WORK/fw$n.vrrp.pid"; do [[ -f $f ]] && cat "$f"; done
}

# fo_has_vip N: fwN holds both virtual addresses.
fo_has_vip() {
	local ns
	ns=$(fo_ns "$1")
	ip -n "$ns" -4 addr show dev lan0 | grep -q "inet $FO_LAN_VIP/" &&
		ip -n "$ns" -4 addr show dev wan0 | grep -q "inet $FO_WAN_VIP/"
}

# fo_wait_vip_fast N SECONDS: like fo_has_vip, polled every 10 ms.
fo_wait_vip_fast() {
	local i limit=$(($2 * 100))
	for ((i = 0; i < limit; i++)); do
		fo_has_vip "$1" && return 0
		sleep 0.01
	done
	return 1
}

# fo_crash N: fwN dies as a machine does: its processes freeze, its links
# go dark, then the processes are killed (no goodbye on any link).
fo_crash() {
	local n=$1 ns pids pid dev
	ns=$(fo_ns "$n")
	pids="$(fo_keepalived_pids "$n") $(fo_ctsyncd_pid "$n")"
	for pid in $pids; do kill -STOP "$pid" 2>/dev/null; done
	for dev in lan0 wan0 sync0; do ip -n "$ns" link set "$dev" down; done
	for pid in $pids; do kill -KILL "$pid" 2>/dev/null; done
	for pid in $pids; do wait_until 3 pid_gone "$pid"; done
	rm -f "$WORK/fw$n.vrrp.pid" "$WORK/fw$n.keepalived.pid"
}

# fo_revive N: fwN's links come back (its processes are started separately).
fo_revive() {
	local ns dev
	ns=$(fo_ns "$1")
	for dev in lan0 wan0 sync0; do ip -n "$ns" link set "$dev" up; done
}

# fo_external_count N PORT: established TCP states to PORT in fwN's external cache.
fo_external_count() {
	"$CTSYNCD" -C "$WORK/fw$1.conf" -e 2>/dev/null | grep -c "ESTABLISHED .*dport=$2 "
}

# fo_kernel_count N PORT: established TCP states to PORT in fwN's kernel table.
fo_kernel_count() {
	ip netns exec "$(fo_ns "$1")" conntrack -L -p tcp --dport "$2" --state ESTABLISHED 2>/dev/null | grep -c .
}

# fo_start_server: the echo server, tracked.
fo_start_server() {
	ip netns exec "$NS_SV" python3 "$FO_FLOWS" server --bind "$FO_SERVER" --port "$FO_PORT" \
		--pid-file "$WORK/server.pid" >>"$WORK/server.log" 2>&1 &
	track_pid $!
	disown $!
	wait_until 5 test -s "$WORK/server.pid"
}

# fo_start_client NAME LONG SECONDS [extra flows.py options]: the client in
# the background; its JSON goes to $WORK/NAME.json, its mark file is
# $WORK/NAME.mark, and $WORK/NAME.ready appears once every long connection
# is up.  Sets FO_CLIENT_PID.
fo_start_client() {
	local name=$1 long=$2 secs=$3
	shift 3
	rm -f "$WORK/$name.ready" "$WORK/$name.mark"
	ip netns exec "$NS_CL" python3 "$FO_FLOWS" client --connect "$FO_SERVER:$FO_PORT" \
		--long "$long" --interval-ms 100 --short-per-s 10 --duration "$secs" \
		--mark-file "$WORK/$name.mark" --ready-file "$WORK/$name.ready" "$@" \
		>"$WORK/$name.json" 2>>"$WORK/$name.err" &
	FO_CLIENT_PID=$!
	track_pid $FO_CLIENT_PID
}

# fo_mark NAME: write "now" into the client's mark file (the failure instant).
fo_mark() { date +%s.%N >>"$WORK/$1.mark"; }

# fo_json NAME EXPR: a value of the client's JSON (python expression on d).
fo_json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$WORK/$1.json" "$2"; }

# fo_now: seconds since the epoch, with fractions.
fo_now() { date +%s.%N; }
# fo_ms_since T: milliseconds since T.
fo_ms_since() { python3 -c "import time; print(int((time.time() - $1) * 1000))"; }
