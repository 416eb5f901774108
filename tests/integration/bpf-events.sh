#!/bin/bash
# EventSource bpf (doc/bpf-events.md): nat.sh's real traffic -- SNAT, DNAT,
# UDP, FTP with its helper, expectation, related states and sequence
# adjustment, a destroy, IPv6 -- with both daemons reading their states
# from the BPF event tap instead of ctnetlink's NEW and UPDATE events.  B
# must end with the same entries as A's kernel, field by field.  nat.sh's
# end also checks that the tap was used (or, on a kernel without netfilter
# BPF links, that the daemon said so and followed ctnetlink).
#
# Twice: as it comes, and with A's policy asking the kernel for destroy
# events only (ct event set destroy, the cheapest setting the document
# gives), which the tap does not need for the changes it reports.
#
# Then a namespace whose ruleset already has a hook at the priority the tap
# needs (the kernel gives a BPF hook no shared priority): the daemon must
# name the hook it could not take, follow ctnetlink, and still see a state.
. "$(dirname "$0")/../lib/common.sh"
require_root
require_cmd conntrack nft
here=$(dirname "$0")

run_nat() { env "$@" bash "$here/nat.sh"; }
check "nat.sh with EventSource bpf" run_nat EVENT_SOURCE=bpf
check "nat.sh with EventSource bpf and ct event set destroy" run_nat EVENT_SOURCE=bpf NAT_CT_EVENTS=destroy

NS=$(make_netns busy) || exit 99
give_sync_link "$NS" || exit 99
ip netns exec "$NS" sysctl -qw net.netfilter.nf_conntrack_events=1
ip netns exec "$NS" nft add table ip busy \; add chain ip busy in "{ type filter hook input priority 2147483646; }" ||
	{ echo "nft failed" >&2; exit 99; }
cat >"$WORK/busy.conf" <<CONF
Sync {
	Mode FTFW { }
	UDP { IPv4_address 198.18.0.1 IPv4_Destination_Address 198.18.0.2 Port 3780 Interface sync0 }
}
General {
	Systemd off
	EventSource bpf
	LogFile $WORK/busy.log
	LockFile $WORK/busy.lock
	UNIX { Path $WORK/busy.ctl }
}
CONF
ip netns exec "$NS" "$CTSYNCD" -C "$WORK/busy.conf" -d && track_pid "$(head -n1 "$WORK/busy.lock")" ||
	{ fail "the daemon starts"; finish; }
kernel_stat() {
	"$CTSYNCD" -C "$WORK/busy.conf" -s --json |
		python3 -c 'import json,sys; print(int(json.load(sys.stdin)["kernel"][sys.argv[1]]))' "$1"
}
check "a taken priority: the daemon refuses the tap and follows ctnetlink" \
	grep -q "EventSource bpf: .*following ctnetlink" "$WORK/busy.log"
check "... and counts the refusal" eval '[[ $(kernel_stat bpf_event_tap_refused) == 1 && $(kernel_stat bpf_event_tap) == 0 ]]'
# before Linux 6.4 there are no netfilter BPF links to refuse
if [[ $(printf '6.4\n%s\n' "$(uname -r)" | sort -V | head -n1) == 6.4 ]]; then
	check "... naming the hook it could not take" grep -q \
		"cannot hook the BPF program into netfilter (IPv4 input, priority 2147483646): Device or resource busy" "$WORK/busy.log"
fi
ip netns exec "$NS" conntrack -I -s 10.70.0.1 -d 10.70.0.2 -p tcp --sport 1 --dport 2 --state ESTABLISHED -t 100 >/dev/null 2>&1
check "... whose events bring a new state in" \
	wait_until 5 eval '"$CTSYNCD" -C "$WORK/busy.conf" -i | grep -q "src=10.70.0.1 dst=10.70.0.2"'
finish
