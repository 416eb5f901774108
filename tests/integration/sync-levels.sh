#!/bin/bash
# The three synchronization levels of doc/sync-levels.md, each on a
# primary-backup pair with traffic through it (tests/lib/failover.sh's
# client, fw1, fw2 and server, without keepalived: the test moves the
# virtual addresses itself):
#
#   none         no ctsyncd;
#   established  ctsyncd with  Filter { State Accept { ESTABLISHED TIME_WAIT CLOSE for TCP } }
#                (the kernel's destroy events carry the TCP state: without
#                TIME_WAIT and CLOSE the end of a connection is filtered out);
#   full         ctsyncd without a State filter (every TCP state change).
#
# For each level: 100 short connections (connect, one line, close) measure
# the sync link's bytes and state messages per connection (fw1's
# sync.bytes_sent and states_sent); then connections are held in three
# states through fw1 (established; closing: the client's FIN is out, the
# server still sends; half-open: SYN_SENT, their SYNs are dropped before the
# server), fw2 commits its external cache (ctsyncd -c) and takes the
# addresses, and the test reports what fw2 had received and which
# connections survive.  The level's promise (doc/sync-levels.md) is asserted:
#   none         nothing replicated; established and closing ones break;
#   established  established ones replicated and survive; half-open ones
#                not replicated; closing ones replicated as ESTABLISHED;
#                closed ones as TIME_WAIT, and their end;
#                fewer bytes per connection than full;
#   full         every state replicated as it is, also SYN_SENT and the
#                closing states; established and closing ones survive.
# Half-open ones complete their handshake after the failover at every
# level (a retransmitted SYN is a new connection to the new primary's
# policy), so only their replication tells the levels apart.
#
# SYNC_LEVELS (default "none established full") picks the levels; the table
# of doc/sync-levels.md is the output of SYNC_LEVELS_TABLE=1.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/failover.sh"
require_root
require_cmd conntrack nft python3
TCPSTATES=$(cd "$(dirname "$0")/../lib" && pwd)/tcpstates.py
SHORT=100 EST=10 CLO=10 HALF=10
# The client's addresses: the held connections' (established and closing),
# the half-open ones', and the short ones'.
HOLD_ADDR=$FO_CLIENT HALF_ADDR=198.18.10.11 SHORT_ADDR=198.18.10.12

# conf N LEVEL: fwN's configuration (FTFW over UDP on sync0, no HotStandby:
# fw2's kernel gets what the commit writes, nothing before).
conf() {
	local n=$1 state=""
	[[ $2 == established ]] && state="State Accept { ESTABLISHED TIME_WAIT CLOSE for TCP }"
	cat >"$WORK/fw$n.conf" <<CONF
Sync {
	Mode FTFW { }
	UDP {
		IPv4_address 198.18.30.$n
		IPv4_Destination_Address 198.18.30.$((3 - n))
		Port 3780
		Interface sync0
	}
}
General {
	Systemd off
	LogFile $WORK/fw$n.log
	LockFile $WORK/fw$n.lock
	UNIX { Path $WORK/fw$n.ctl }
	Filter From Userspace {
		Protocol Accept { TCP }
		Address Ignore {
			IPv4_address 198.18.10.1
			IPv4_address 198.18.10.2
			IPv4_address 198.18.20.1
			IPv4_address 198.18.20.2
			IPv4_address 198.18.30.0/24
		}
		$state
	}
}
CONF
}

sync_json() { "$CTSYNCD" -C "$WORK/fw$1.conf" -s --json 2>/dev/null; }
# counter N KEY: sync.KEY of fwN (0 without ctsyncd).
counter() {
	sync_json "$1" | python3 -c 'import json,sys
try: print(json.load(sys.stdin)["sync"][sys.argv[1]])
except Exception: print(0)' "$2"
}
# ext_states: fw2's external cache: the TCP states of the held and
# half-open connections, as "STATE:COUNT ...".
ext_states() {
	"$CTSYNCD" -C "$WORK/fw2.conf" -e 2>/dev/null | grep -E "src=($HOLD_ADDR|$HALF_ADDR) .*dport=$FO_PORT " |
		awk '{for (i = 1; i <= NF; i++) if ($i ~ /^(SYN_SENT|SYN_RECV|ESTABLISHED|FIN_WAIT|CLOSE_WAIT|LAST_ACK|TIME_WAIT|CLOSE|LISTEN)$/) { print $i; break }}' |
		sort | uniq -c |
		awk '{printf "%s:%s ", $2, $1}'
}
ext_count() { local s; s=$(ext_states); [[ $s =~ $1:([0-9]+) ]] && echo "${BASH_REMATCH[1]}" || echo 0; }
vip() {   # vip add|del N
	ip -n "$(fo_ns "$2")" addr "$1" "$FO_LAN_VIP/24" dev lan0 &&
		ip -n "$(fo_ns "$2")" addr "$1" "$FO_WAN_VIP/24" dev wan0
}

declare -A ROW
run_level() {
	local level=$1 b0 s0 b1 s1 j zoo_pid
	log "--- level $level"
	fo_setup || { fail "$level: the pair is set up"; return; }
	ip -n "$NS_CL" addr add "$HALF_ADDR/24" dev eth0
	ip -n "$NS_CL" addr add "$SHORT_ADDR/24" dev eth0
	# The half-open connections' SYNs pass fw1 and die before the server.
	ip netns exec "$NS_SV" nft -f - <<NFT || { fail "$level: the server drops the half-open SYNs"; fo_teardown; return; }
table inet halfopen {
	chain in {
		type filter hook input priority 0;
		ip saddr $HALF_ADDR tcp dport $FO_PORT drop
	}
}
NFT
	vip add 1
	if [[ $level != none ]]; then
		conf 1 "$level" && conf 2 "$level"
		fo_start_ctsyncd 1 && fo_start_ctsyncd 2 || { fail "$level: ctsyncd starts"; fo_teardown; return; }
	fi
	rm -f "$WORK/bye" "$WORK/zoo.ready" "$WORK/srv.pid"
	ip netns exec "$NS_SV" python3 "$TCPSTATES" server --bind "$FO_SERVER" --port "$FO_PORT" \
		--bye-file "$WORK/bye" --pid-file "$WORK/srv.pid" 2>>"$WORK/srv.err" &
	track_pid $!
	wait_until 5 test -s "$WORK/srv.pid"

	# bytes per connection
	b0=$(counter 1 bytes_sent) s0=$(counter 1 states_sent)
	check "$level: $SHORT short connections through fw1" \
		ip netns exec "$NS_CL" python3 "$TCPSTATES" short --connect "$FO_SERVER:$FO_PORT" --count "$SHORT" \
			--bind "$SHORT_ADDR"
	sleep 1.5   # their last state changes (TIME_WAIT) go out
	b1=$(counter 1 bytes_sent) s1=$(counter 1 states_sent)
	ROW[$level.bytes]=$(((b1 - b0) / SHORT)) ROW[$level.msgs]=$(python3 -c "print(round(($s1 - $s0) / $SHORT, 1))")
	log "$level: sync link: $((b1 - b0)) bytes, $((s1 - s0)) state messages for $SHORT connections"

	# connections in three states, then the failover
	ip netns exec "$NS_CL" python3 "$TCPSTATES" zoo --connect "$FO_SERVER:$FO_PORT" --established "$EST" \
		--closing "$CLO" --half-open "$HALF" --half-bind "$HALF_ADDR" --ready-file "$WORK/zoo.ready" \
		--wait 20 --after 6 >"$WORK/zoo.$level.json" 2>>"$WORK/zoo.err" &
	zoo_pid=$!
	track_pid $zoo_pid
	check "$level: the connections are set up" wait_until 10 test -e "$WORK/zoo.ready"
	sleep 1
	log "$level: fw1's kernel: $(ip netns exec "$NS_FW1" conntrack -L -p tcp --dport "$FO_PORT" 2>/dev/null |
		awk '{print $4}' | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}')"
	ROW[$level.ext]=$(ext_states)
	log "$level: fw2's external cache: ${ROW[$level.ext]:-empty}"
	# fw1 fails: its links go dark; fw2 commits and takes the addresses.
	ip -n "$NS_FW1" link set lan0 down
	ip -n "$NS_FW1" link set wan0 down
	[[ $level != none ]] && "$CTSYNCD" -C "$WORK/fw2.conf" -c >>"$WORK/commit.log" 2>&1
	vip add 2
	ip -n "$NS_CL" neigh flush all
	ip -n "$NS_SV" neigh flush all
	ip netns exec "$NS_SV" nft delete table inet halfopen
	local shorts
	if [[ $level == established ]]; then
		shorts=$("$CTSYNCD" -C "$WORK/fw2.conf" -e 2>/dev/null | grep "src=$SHORT_ADDR " | grep -c TIME_WAIT)
		check "established: fw2 holds the $SHORT closed short connections in TIME_WAIT ($shorts)" \
			test "$shorts" -eq "$SHORT"
		# Their end (a destroy event, in TIME_WAIT) passes the filter.
		ip netns exec "$NS_FW1" conntrack -D -s "$SHORT_ADDR" >/dev/null 2>&1
		check "established: their end is replicated: once fw1's kernel drops them, fw2 forgets them" \
			wait_until 5 eval '! "$CTSYNCD" -C "$WORK/fw2.conf" -e 2>/dev/null | grep -q "src=$SHORT_ADDR "'
	fi
	touch "$WORK/bye"
	kill -USR1 "$zoo_pid"
	wait "$zoo_pid"
	j=$(cat "$WORK/zoo.$level.json")
	ROW[$level.inv]=$(fo_invalid 2)
	ROW[$level.surv]=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1])
print(" ".join("%d/%d" % (d[k]["survived"], d[k]["n"]) for k in ("established", "closing", "half_open")))' "$j" 2>/dev/null)
	log "$level: survived (established closing half-open): ${ROW[$level.surv]}; fw2 dropped ${ROW[$level.inv]} packets as invalid"
	surv() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]]["survived"])' "$j" "$1" 2>/dev/null || echo -1; }
	local ext=${ROW[$level.ext]}
	case $level in
	none)
		check "none: nothing crosses a sync link (${ROW[$level.bytes]} bytes per connection)" test "${ROW[$level.bytes]}" -eq 0
		check "none: no established connection survives ($(surv established) of $EST)" test "$(surv established)" -eq 0
		check "none: no closing connection survives ($(surv closing) of $CLO)" test "$(surv closing)" -eq 0
		;;
	established)
		check "established: fw2 received the $((EST + CLO)) established and closing connections as ESTABLISHED ($ext)" \
			test "$(ext_count ESTABLISHED)" -eq $((EST + CLO))
		check "established: no half-open connection was replicated ($ext)" test "$(ext_count SYN_SENT)" -eq 0
		check "established: no closing state was replicated ($ext)" \
			test "$(($(ext_count FIN_WAIT) + $(ext_count CLOSE_WAIT)))" -eq 0
		check "established: every established connection survives ($(surv established) of $EST)" \
			test "$(surv established)" -eq "$EST"
		;;
	full)
		check "full: fw2 received the established ones as ESTABLISHED ($ext)" test "$(ext_count ESTABLISHED)" -eq "$EST"
		check "full: ... the closing ones in their closing state ($ext)" \
			test "$(($(ext_count FIN_WAIT) + $(ext_count CLOSE_WAIT)))" -eq "$CLO"
		check "full: ... and the half-open ones as SYN_SENT ($ext)" test "$(ext_count SYN_SENT)" -eq "$HALF"
		check "full: every established connection survives ($(surv established) of $EST)" \
			test "$(surv established)" -eq "$EST"
		check "full: every closing connection survives ($(surv closing) of $CLO)" test "$(surv closing)" -eq "$CLO"
		;;
	esac
	fo_teardown
}

LEVELS=${SYNC_LEVELS:-none established full}
for level in $LEVELS; do
	case $level in
	none | established | full) run_level "$level" ;;
	*) echo "$TEST_NAME: SYNC_LEVELS: unknown level '$level' (none, established, full)" >&2; exit 99 ;;
	esac
done
if [[ " $LEVELS " == *" established "* && " $LEVELS " == *" full "* ]]; then
	check "established-only sends fewer bytes per connection than full (${ROW[established.bytes]} < ${ROW[full.bytes]})" \
		test "${ROW[established.bytes]}" -lt "${ROW[full.bytes]}"
fi
if [[ -n ${SYNC_LEVELS_TABLE:-} ]]; then
	echo "| Level | Sync bytes per connection | State messages per connection | Backup's external cache before the failover | Survived (established, closing, half-open) | Invalid drops on the new primary |"
	echo "|---|---|---|---|---|---|"
	for level in $LEVELS; do
		echo "| $level | ${ROW[$level.bytes]} | ${ROW[$level.msgs]} | ${ROW[$level.ext]:-empty} | ${ROW[$level.surv]} | ${ROW[$level.inv]} |"
	done
fi
finish
