#!/bin/bash
# Stats mode: every destroyed flow is logged with its counters, in the
# lines conntrackd 1.4.7 writes.  Both daemons run in Stats mode in the same
# namespace and see the same events; their log lines must be the same
# apart from the date.  Then the log is rotated with SIGHUP.
. "$(dirname "$0")/../lib/common.sh"
require_root
require_cmd conntrack conntrackd python3
NS=$(make_netns stats) || exit 99
ip netns exec "$NS" sysctl -qw net.netfilter.nf_conntrack_events=1
ip netns exec "$NS" sysctl -qw net.netfilter.nf_conntrack_acct=1
ip netns exec "$NS" sysctl -qw net.netfilter.nf_conntrack_timestamp=1
# The kernel tracks a namespace's packets only once a rule uses conntrack.
ip netns exec "$NS" nft -f - <<'NFT' || { echo "nft failed" >&2; exit 99; }
table inet track {
	chain out {
		type filter hook output priority 0;
		ct state new counter
	}
}
NFT
for who in new old; do
	cat >"$WORK/$who.conf" <<CONF
Stats {
	LogFile $WORK/$who-stats.log
}
General {
	Systemd off
	LogFile $WORK/$who.log
	LockFile $WORK/$who.lock
	UNIX { Path $WORK/$who.ctl }
}
CONF
done
ip netns exec "$NS" "$CTSYNCD" -C "$WORK/new.conf" -d || { fail "ctsyncd starts in Stats mode"; finish; }
track_pid "$(head -n1 "$WORK/new.lock")"
ip netns exec "$NS" conntrackd -C "$WORK/old.conf" -d 2>/dev/null || { fail "conntrackd 1.4.7 starts"; finish; }
ctl() { "$CTSYNCD" -C "$WORK/new.conf" "$@"; }
sleep 1

ct() { ip netns exec "$NS" conntrack "$@" >/dev/null 2>&1; }
ct -I -s 10.0.0.1 -d 10.0.0.2 -p tcp --sport 1234 --dport 80 --state ESTABLISHED -u SEEN_REPLY,ASSURED -t 300 -m 7
ct -I -s 10.0.0.3 -d 10.0.0.4 -p udp --sport 5000 --dport 53 -t 30 --src-nat 192.168.1.1:4000 --zone 5
ct -I -s 10.0.0.5 -d 10.0.0.6 -p icmp --icmp-type 8 --icmp-code 0 --icmp-id 77 -t 30
ct -I -s 2001:db8::1 -d 2001:db8::2 -p tcp --sport 1 --dport 2 --state SYN_SENT -t 100
# Real traffic over lo, so that the counters are not zero: 3 datagrams out, 3 back.
ip netns exec "$NS" timeout 10 python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 7000))
c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); c.bind(("127.0.0.1", 7001))
for i in range(3):
    c.sendto(b"x" * 10, ("127.0.0.1", 7000)); d, a = s.recvfrom(100); s.sendto(d, a); c.recvfrom(100)
'
ct -D
lines() { [[ -f $1 ]] && grep -c . "$1" || echo 0; }
check "ctsyncd logs the 5 destroyed flows" wait_until 10 eval '(( $(lines "$WORK/new-stats.log") == 5 ))'
check "conntrackd 1.4.7 logs them too" wait_until 10 eval '(( $(lines "$WORK/old-stats.log") == 5 ))'
body() { cut -f2- "$1" | sort; }
new=$(body "$WORK/new-stats.log"); old=$(body "$WORK/old-stats.log")
check "the lines are conntrackd's, apart from the date" test "$new" = "$old"
[[ $new == "$old" ]] || diff <(echo "$old") <(echo "$new")
check "with nf_conntrack_timestamp each line has its delta-time, as 1.4.7's" \
	eval '(( $(grep -c " delta-time=[0-9]*" <<<"$new") == 5 ))'
check "each line starts with the date and a tab" \
	eval '! grep -Pvq "^[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]\d \d\d:\d\d:\d\d \d{4}\t" "$WORK/new-stats.log"'
check "the UDP flow of real traffic has its counters (3 packets of 38 bytes each way)" \
	contains "$new" 'sport=7001 dport=7000 packets=3 bytes=114 src=127.0.0.1 dst=127.0.0.1 sport=7000 dport=7001 packets=3 bytes=114'
j=$(ctl -s --json)
check "-s counts the traffic of the destroyed flows" python3 -c '
import json, sys
t = json.loads(sys.argv[1])["traffic_processed"]
assert t["packets"] == 6 and t["bytes"] == 228, t
' "$j"

# Rotation: the log moves away, SIGHUP, and the next lines go to a new file.
mv "$WORK/new-stats.log" "$WORK/new-stats.log.1"
kill -HUP "$(head -n1 "$WORK/new.lock")"
wait_until 5 test -e "$WORK/new-stats.log"
ct -I -s 10.0.0.9 -d 10.0.0.8 -p udp --sport 1 --dport 2 -t 30
ct -D -s 10.0.0.9
check "after SIGHUP the next destroyed flow goes to the new file" \
	wait_until 10 eval 'grep -q "src=10.0.0.9" "$WORK/new-stats.log"'
check "... and the old file keeps its 5 lines" eval '(( $(lines "$WORK/new-stats.log.1") == 5 ))'
check "ctsyncd still answers" ctl -s
finish
