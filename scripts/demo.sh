#!/bin/bash
# README command (1): install, build, and show a two-node ctsyncd setup in
# network namespaces: two firewalls joined by a dedicated sync link, a
# ctsyncd on each, configured with the conntrackd.conf grammar, and the
# control socket answered both by ctsyncd's client and by Debian's
# conntrackd 1.4.7 client.
#
# It replicates conntrack states from fw1 to fw2 and commits them into
# fw2's kernel table.  The keepalived failover demo is not there yet (see
# README.md, "Status").
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/install-deps.sh"
build=$("$top/scripts/build.sh" "$top/build/default" --enable-werror | tail -n1)
ctsyncd=$build/ctsyncd

prefix="ctsdemo$$-"
work=$(mktemp -d /tmp/ctsyncd-demo.XXXXXX)
namespaces=()
cleanup() {
	local ns
	for ns in fw1 fw2; do
		if [[ -f $work/$ns/lock ]]; then
			kill -TERM "$(head -n1 "$work/$ns/lock")" 2>/dev/null || true
		fi
	done
	sleep 0.3
	for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

say "Two firewalls, fw1 and fw2, joined by a dedicated sync link (198.18.0.1 <-> 198.18.0.2)"
for n in 1 2; do
	ip netns add "${prefix}fw$n"
	namespaces+=("${prefix}fw$n")
	ip -n "${prefix}fw$n" link set lo up
done
ip link add sync1 netns "${prefix}fw1" type veth peer name sync2 netns "${prefix}fw2"
ip -n "${prefix}fw1" addr add 198.18.0.1/24 dev sync1
ip -n "${prefix}fw2" addr add 198.18.0.2/24 dev sync2
ip -n "${prefix}fw1" link set sync1 up
ip -n "${prefix}fw2" link set sync2 up

for n in 1 2; do
	peer=$((3 - n))
	mkdir -p "$work/fw$n"
	cat >"$work/fw$n/ctsyncd.conf" <<CONF
# conntrackd.conf grammar: this very file also works with conntrackd 1.4.7.
Sync {
	Mode FTFW { ResendQueueSize 131072 ACKWindowSize 300 }
	UDP {
		IPv4_address 198.18.0.$n
		IPv4_Destination_Address 198.18.0.$peer
		Port 3780
		Interface sync$n
		Checksum on
	}
}
General {
	Systemd off
	HashSize 8192
	HashLimit 65535
	LogFile $work/fw$n/ctsyncd.log
	LockFile $work/fw$n/lock
	UNIX { Path $work/fw$n/ctl }
	Scheduler { Type FIFO Priority 1 }
}
CONF
done

say "The configuration is checked and printed with every default filled in (first lines)"
run "$ctsyncd" -C "$work/fw1/ctsyncd.conf" --check 2>&1 | head -n 20

say "Start ctsyncd on both firewalls; -d returns once it is ready"
for n in 1 2; do
	run ip netns exec "${prefix}fw$n" "$ctsyncd" -C "$work/fw$n/ctsyncd.conf" -d
done

say "Statistics from fw1, as text (ctsyncd -s)"
run "$ctsyncd" -C "$work/fw1/ctsyncd.conf" -s

say "The same as JSON (ctsyncd -s --json), for monitoring"
run "$ctsyncd" -C "$work/fw2/ctsyncd.conf" -s --json

say "Debian's conntrackd 1.4.7 client talks to ctsyncd unchanged"
run ip netns exec "${prefix}fw1" conntrackd -C "$work/fw1/ctsyncd.conf" -s runtime

say "Three connections appear in fw1's kernel table (injected with conntrack -I)"
ct1() { ip netns exec "${prefix}fw1" conntrack "$@" 2>&1; }
ct1 -I -s 10.0.0.1 -d 10.0.0.2 -p tcp --sport 40000 --dport 443 --state ESTABLISHED -u SEEN_REPLY,ASSURED -t 3600 -m 7
ct1 -I -s 10.0.0.3 -d 10.0.0.2 -p udp --sport 5000 --dport 53 -t 120 --src-nat 192.0.2.1:6000
ct1 -I -s 2001:db8::1 -d 2001:db8::2 -p tcp --sport 40001 --dport 22 --state ESTABLISHED -u SEEN_REPLY,ASSURED -t 3600
sleep 1

say "fw1's internal cache (ctsyncd -i)"
run "$ctsyncd" -C "$work/fw1/ctsyncd.conf" -i

say "fw2 received them over the sync link: its external cache (ctsyncd -e)"
run "$ctsyncd" -C "$work/fw2/ctsyncd.conf" -e

say "fw2 takes over: commit the external cache into its kernel (ctsyncd -c)"
run "$ctsyncd" -C "$work/fw2/ctsyncd.conf" -c
run ip netns exec "${prefix}fw2" conntrack -L

say "Sync statistics of fw1 (ctsyncd -s network)"
run "$ctsyncd" -C "$work/fw1/ctsyncd.conf" -s network | head -n 24

say "Requests that are not implemented yet answer so, and the client exits 1"
run "$ctsyncd" -C "$work/fw1/ctsyncd.conf" -i expect || echo "(exit status $?)"

say "A second daemon with the same lock file is refused"
run ip netns exec "${prefix}fw1" "$ctsyncd" -C "$work/fw1/ctsyncd.conf" -d || echo "(exit status $?)"

say "Stop both with -k; lock files and sockets are removed"
for n in 1 2; do
	run "$ctsyncd" -C "$work/fw$n/ctsyncd.conf" -k
done
sleep 0.3
ls "$work/fw1"

say "Done. Not in this version yet: the keepalived failover demo (README.md, Status)."
