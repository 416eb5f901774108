# Two firewalls, A and B, joined by a dedicated sync link (veth, 198.18.1.1
# <-> 198.18.1.2), each with a daemon configuration written by pair_conf.
# Source it after common.sh.

# pair_labels: in both namespaces, a label rule in a chain never run, which
# makes their states carry connlabels at all; it also makes them track
# packets, so the sync link is left untracked.
pair_labels() {
	local ns
	for ns in "$NS_A" "$NS_B"; do
		ip netns exec "$ns" nft -f - <<'NFT' || return 1
table inet labels {
	chain c { ct label set 1; }
	chain pre { type filter hook prerouting priority raw; udp dport 3780 notrack; }
	chain out { type filter hook output priority raw; udp dport 3780 notrack; }
}
NFT
	done
}

# pair_setup: creates the namespaces; sets NS_A, NS_B.
pair_setup() {
	NS_A=$(make_netns A) && NS_B=$(make_netns B) || return 1
	ip link add syncA netns "$NS_A" type veth peer name syncB netns "$NS_B" || return 1
	ip -n "$NS_A" addr add 198.18.1.1/24 dev syncA
	ip -n "$NS_B" addr add 198.18.1.2/24 dev syncB
	ip -n "$NS_A" addr add 2001:2:0:1::1/64 dev syncA nodad
	ip -n "$NS_B" addr add 2001:2:0:1::2/64 dev syncB nodad
	ip -n "$NS_A" link set syncA up
	ip -n "$NS_B" link set syncB up
	local ns
	for ns in "$NS_A" "$NS_B"; do
		# every change of an entry must reach the daemons as an event
		ip netns exec "$ns" sysctl -qw net.netfilter.nf_conntrack_events=1
	done
}

# pair_segment_setup: A, B and an attacker X on one bridge (the sync segment),
# 198.18.1.1, .2 and .66/24; sets NS_A, NS_B, NS_X.
pair_segment_setup() {
	local S p ns
	NS_A=$(make_netns A) && NS_B=$(make_netns B) && NS_X=$(make_netns X) &&
		S=$(make_netns S) || return 1
	ip -n "$S" link add br0 type bridge && ip -n "$S" link set br0 up || return 1
	ip link add syncA netns "$NS_A" type veth peer name pa netns "$S" &&
	ip link add syncB netns "$NS_B" type veth peer name pb netns "$S" &&
	ip link add syncX netns "$NS_X" type veth peer name px netns "$S" || return 1
	for p in pa pb px; do
		ip -n "$S" link set "$p" master br0 && ip -n "$S" link set "$p" up || return 1
	done
	ip -n "$NS_A" addr add 198.18.1.1/24 dev syncA
	ip -n "$NS_B" addr add 198.18.1.2/24 dev syncB
	ip -n "$NS_X" addr add 198.18.1.66/24 dev syncX
	for ns in "$NS_A" "$NS_B" "$NS_X"; do
		ip -n "$ns" link set "sync${ns: -1}" up || return 1
		ip netns exec "$ns" sysctl -qw net.netfilter.nf_conntrack_events=1
	done
}

# pair_conf SIDE MODE [extra Sync lines] [extra General lines]: writes $WORK/SIDE.conf.
# The link is UDP, or what LINK_KIND says: TCP or Multicast, over IPv4, or
# IPv6 with LINK_FAMILY=6; MODE_OPTS go into the Mode block, and
# EVENT_SOURCE (ctnetlink or bpf; ctsyncd only) into General.
pair_conf() {
	local side=$1 mode=$2 sync_extra=${3:-} general_extra=${4:-} me peer dev link
	if [[ $side == A ]]; then me=1 peer=2 dev=syncA; else me=2 peer=1 dev=syncB; fi
	case ${LINK_KIND:-UDP}/${LINK_FAMILY:-4} in
	Multicast/4)
		link="Multicast { IPv4_address 225.0.0.50 IPv4_interface 198.18.1.$me Group 3780 Interface $dev }" ;;
	Multicast/6)
		link="Multicast { IPv6_address ff12::3780 Group 3780 Interface $dev }" ;;
	*/6)
		link="${LINK_KIND:-UDP} { IPv6_address 2001:2:0:1::$me IPv6_Destination_Address 2001:2:0:1::$peer Port 3780 Interface $dev }" ;;
	*)
		link="${LINK_KIND:-UDP} { IPv4_address 198.18.1.$me IPv4_Destination_Address 198.18.1.$peer Port 3780 Interface $dev }" ;;
	esac
	cat >"$WORK/$side.conf" <<CONF
Sync {
	Mode $mode { ${MODE_OPTS:+$MODE_OPTS }}
	$link
	$sync_extra
}
General {
	Systemd off
	HashSize 16384
	HashLimit 262144
	LogFile $WORK/$side.log
	LockFile $WORK/$side.lock
	UNIX { Path $WORK/$side.ctl }
	NetlinkBufferSize 2097152
	NetlinkBufferSizeMaxGrowth 16777216
	Scheduler { Type FIFO Priority 1 }
	${EVENT_SOURCE:+EventSource $EVENT_SOURCE}
	$general_extra
}
CONF
}

# pair_start SIDE [binary]: starts the daemon of SIDE in its namespace (ctsyncd by default).
pair_start() {
	local side=$1 bin=${2:-$CTSYNCD} ns
	[[ $side == A ]] && ns=$NS_A || ns=$NS_B
	ip netns exec "$ns" "$bin" -C "$WORK/$side.conf" -d || return 1
	track_pid "$(head -n1 "$WORK/$side.lock")"
}

pair_stop() { "$CTSYNCD" -C "$WORK/$1.conf" -k >/dev/null 2>&1; }
ctl() { local side=$1; shift; "$CTSYNCD" -C "$WORK/$side.conf" "$@"; }
ct_in() { local ns; [[ $1 == A ]] && ns=$NS_A || ns=$NS_B; shift; ip netns exec "$ns" conntrack "$@" 2>/dev/null; }

# pair_loss PERCENT: drop PERCENT % of the sync traffic that each side sends
# (UDP and TCP, port 3780 either way); 0 removes the rules.
pair_loss() {
	local ns
	for ns in "$NS_A" "$NS_B"; do
		ip netns exec "$ns" nft delete table inet ctsyncd_loss 2>/dev/null
		(($1 == 0)) && continue
		ip netns exec "$ns" nft -f - <<NFT || return 1
table inet ctsyncd_loss {
	chain out {
		type filter hook output priority 0;
		meta l4proto { tcp, udp } th dport 3780 numgen random mod 100 < $1 drop
		meta l4proto tcp th sport 3780 numgen random mod 100 < $1 drop
	}
}
NFT
	done
}

# ext_active SIDE: the number of states in SIDE's external cache.
ext_active() {
	ctl "$1" -s cache --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["external_cache"]["active"])'
}

# pair_ftp_helper: the kernel's ftp helper on TCP port 21 in both
# namespaces (traffic over lo is tracked, so a side can talk FTP to itself).
pair_ftp_helper() {
	local ns
	for ns in "$NS_A" "$NS_B"; do
		ip netns exec "$ns" nft -f - <<'NFT' || return 1
table inet ftp {
	ct helper ftp-std { type "ftp" protocol tcp; }
	chain out { type filter hook output priority 0; tcp dport 21 ct helper set "ftp-std"; }
}
NFT
	done
}

# side SIDE: sets ns and addr, the side's namespace and its address on the sync link.
side() { if [[ $1 == A ]]; then ns=$NS_A addr=198.18.1.1; else ns=$NS_B addr=198.18.1.2; fi; }

# ftp_session SIDE DATAPORT: a control connection to port 21 whose client
# announces "PORT addr,DATAPORT"; kept open (the master must live) until
# killed ($FTP_PID).  The helper reads a command only where a line starts,
# and it learns where lines start from the lines before: hence USER first.
ftp_session() {
	local ns addr
	side "$1"
	ip netns exec "$ns" timeout 120 python3 -c '
import socket, sys, time
addr, port = sys.argv[1], int(sys.argv[2])
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((addr, 21)); srv.listen(1)
cli = socket.create_connection((addr, 21)); conn, _ = srv.accept()
conn.sendall(b"220 ready\r\n"); cli.recv(100)
cli.sendall(b"USER anonymous\r\n"); conn.recv(100); conn.sendall(b"230 in\r\n"); cli.recv(100)
cli.sendall(("PORT %s,%d,%d\r\n" % (addr.replace(".", ","), port >> 8, port & 255)).encode())
conn.recv(100); conn.sendall(b"200 ok\r\n"); cli.recv(100)
time.sleep(110)
' "$addr" "$2" &
	FTP_PID=$!
	track_pid $FTP_PID
}
# data_conn SIDE PORT: the data connection the expectation announced (the
# server's side connects to the client's PORT); a related flow, kept open.
data_conn() {
	local ns addr
	side "$1"
	ip netns exec "$ns" timeout 120 python3 -c '
import socket, sys, time
addr, port = sys.argv[1], int(sys.argv[2])
lst = socket.socket(); lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
lst.bind((addr, port)); lst.listen(1)
srv = socket.create_connection((addr, port)); cli, _ = lst.accept()
srv.sendall(b"data\n"); cli.recv(100)
time.sleep(110)
' "$addr" "$2" &
	track_pid $!
}
