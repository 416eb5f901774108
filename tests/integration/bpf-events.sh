#!/bin/bash
# EventSource bpf (doc/bpf-events.md): nat.sh's real traffic -- SNAT, DNAT,
# UDP, FTP with its helper, expectation, related states and sequence
# adjustment, a destroy -- with both daemons reading their states from
# the BPF event tap instead of ctnetlink's NEW and UPDATE events.  B must
# end with the same entries as A's kernel, field by field.  nat.sh's end
# also checks that the tap was used (or, on a kernel without netfilter BPF
# links, that the daemon said so and followed ctnetlink).
#
# Twice: as it comes, and with A's policy asking the kernel for destroy
# events only (ct event set destroy, the cheapest setting the document
# gives), which the tap does not need for the changes it reports.
here=$(dirname "$0")
rc=0
echo "# EventSource bpf"
EVENT_SOURCE=bpf bash "$here/nat.sh" || rc=1
echo "# EventSource bpf, ct event set destroy"
EVENT_SOURCE=bpf NAT_CT_EVENTS=destroy bash "$here/nat.sh" || rc=1
exit $rc
