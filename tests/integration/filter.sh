#!/bin/bash
# Filter From Kernelspace: the Filter runs as a BPF program on the event
# socket, so the kernel drops ignored events before they reach ctsyncd,
# with the same verdicts as the Filter in user space: protocol, the two
# real endpoints (the original source, and the reply source, i.e. the
# DNAT'ed address), TCP state; IPv4 and IPv6, exact and CIDR.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
require_root
require_cmd conntrack python3
pair_setup || { echo "cannot create the namespaces" >&2; exit 99; }

FILTER='Protocol Accept { TCP }
	Address Ignore { IPv4_address 10.9.0.0/16 IPv4_address 10.8.0.7 IPv6_address 2001:db8:9::/48 IPv4_address 198.18.1.0/24 }
	State Accept { ESTABLISHED for TCP }'
inject() {
	ct_in A -I -s 10.1.0.1 -d 10.1.0.2 -p tcp --sport 1 --dport 2 --state ESTABLISHED -u SEEN_REPLY -t 300   # passes
	ct_in A -I -s 10.1.0.3 -d 10.1.0.2 -p udp --sport 3 --dport 4 -t 300                                     # protocol
	ct_in A -I -s 10.9.1.1 -d 10.1.0.2 -p tcp --sport 5 --dport 6 --state ESTABLISHED -t 300                 # source in a net
	ct_in A -I -s 10.1.0.4 -d 10.8.0.7 -p tcp --sport 7 --dport 8 --state ESTABLISHED -t 300                 # exact destination
	ct_in A -I -s 10.1.0.4 -d 10.1.0.5 -p tcp --sport 9 --dport 10 --state ESTABLISHED -t 300 --dst-nat 10.9.2.2  # DNAT'ed into a net
	ct_in A -I -s 10.1.0.6 -d 10.1.0.2 -p tcp --sport 11 --dport 12 --state SYN_SENT -t 300                  # state
	ct_in A -I -s 2001:db8:9::1 -d 2001:db8:1::2 -p tcp --sport 13 --dport 14 --state ESTABLISHED -t 300     # IPv6 net
	ct_in A -I -s 2001:db8:1::1 -d 2001:db8:1::2 -p tcp --sport 15 --dport 16 --state ESTABLISHED -t 300     # passes
	ct_in A -U -s 10.1.0.3 -p udp -m 5 >/dev/null                                                           # an update, dropped
	ct_in A -D -s 10.9.1.1 >/dev/null                                                                      # a destroy, dropped
	ct_in A -D -s 10.1.0.1 >/dev/null                                                                      # a destroy, passes
}
kernel() { ctl A -s --json | python3 -c 'import json,sys; d=json.load(sys.stdin)["kernel"]; print(sys.argv[1].format(**d))' "$1"; }
passing() { ctl A -i | grep -c .; }

for from in Kernelspace Userspace; do
	pair_conf A FTFW "" "Filter From $from { $FILTER }"
	pair_start A || { fail "ctsyncd starts with Filter From $from"; finish; }
	[[ $from == Kernelspace ]] && check "the log says how many BPF instructions" \
		grep -q 'Filter From Kernelspace: [0-9]* BPF instructions' "$WORK/A.log"
	inject
	check "From $from: exactly the IPv6 state is left (the other one that passed was destroyed)" \
		wait_until 5 eval '[[ $(passing) -eq 1 ]] && ctl A -i | grep -q "sport=15 dport=16"'
	echo "From $from: $(kernel 'new {events_new}, update {events_update}, destroy {events_destroy}, filtered {events_filtered}')" >&2
	if [[ $from == Kernelspace ]]; then
		check "From Kernelspace: only the passing events reached user space (2 new, 1 destroy, none filtered there)" \
			test "$(kernel '{events_new}/{events_update}/{events_destroy}/{events_filtered}')" = "2/0/1/0"
	else
		check "From Userspace: every event reached user space and the Filter counted 8 out" \
			test "$(kernel '{events_new}/{events_update}/{events_destroy}/{events_filtered}')" = "2/0/1/8"
	fi
	pair_stop A
	wait_until 5 eval '! ctl A -s >/dev/null 2>&1'
	ct_in A -F >/dev/null
done

# A Filter too large for a BPF program stays in user space, and says so.
many=$(for i in $(seq 1 3000); do printf 'IPv4_address 10.200.%d.%d ' $((i / 250)) $((i % 250 + 1)); done)
pair_conf A FTFW "" "Filter From Kernelspace { Address Ignore { $many } }"
pair_start A || { fail "ctsyncd starts with a 3000-address Filter"; finish; }
check "a 3000-address Filter is applied in user space, with a notice" \
	grep -q 'Filter From Kernelspace: the Filter needs more than' "$WORK/A.log"
ct_in A -I -s 10.200.0.5 -d 10.1.0.2 -p tcp --sport 1 --dport 2 --state ESTABLISHED -t 300
ct_in A -I -s 10.201.0.5 -d 10.1.0.2 -p tcp --sport 1 --dport 2 --state ESTABLISHED -t 300
check "... and still filters" wait_until 5 eval '[[ $(passing) -eq 1 ]] && ctl A -i | grep -q "src=10.201.0.5"'
finish
