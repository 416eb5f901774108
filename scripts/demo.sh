#!/bin/bash
# README command (1): install, build, and show a two-node ctsyncd setup in
# network namespaces: two firewalls joined by a dedicated sync link, a
# ctsyncd on each, configured with the conntrackd.conf grammar, and the
# control socket answered both by ctsyncd's client and by Debian's
# conntrackd 1.4.7 client.
#
# What this version of ctsyncd does not do yet is said plainly: state
# replication and the keepalived failover come with the kernel and sync
# work (see README.md, "Status").
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

say "Start ctsyncd on both firewalls; -d returns once the control socket answers"
for n in 1 2; do
	run ip netns exec "${prefix}fw$n" "$ctsyncd" -C "$work/fw$n/ctsyncd.conf" -d
done

say "Statistics from fw1, as text (ctsyncd -s)"
run "$ctsyncd" -C "$work/fw1/ctsyncd.conf" -s

say "The same as JSON (ctsyncd -s --json), for monitoring"
run "$ctsyncd" -C "$work/fw2/ctsyncd.conf" -s --json

say "Debian's conntrackd 1.4.7 client talks to ctsyncd unchanged"
run ip netns exec "${prefix}fw1" conntrackd -C "$work/fw1/ctsyncd.conf" -s runtime

say "Requests whose subsystem is not built yet answer so, and the client exits 1"
run "$ctsyncd" -C "$work/fw1/ctsyncd.conf" -c || echo "(exit status $?)"

say "A second daemon with the same lock file is refused"
run ip netns exec "${prefix}fw1" "$ctsyncd" -C "$work/fw1/ctsyncd.conf" -d || echo "(exit status $?)"

say "Stop both with -k; lock files and sockets are removed"
for n in 1 2; do
	run "$ctsyncd" -C "$work/fw$n/ctsyncd.conf" -k
done
sleep 0.3
ls "$work/fw1"

say "Done. Not in this version yet: replication of conntrack states and the keepalived failover."
