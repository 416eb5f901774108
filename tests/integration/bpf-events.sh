#!/bin/bash
# EventSource bpf (doc/bpf-events.md): nat.sh's real traffic -- SNAT, DNAT,
# UDP, FTP with its helper, expectation, related states and sequence
# adjustment, a destroy -- with both daemons reading their states from
# the BPF event tap instead of ctnetlink's NEW and UPDATE events.  B must
# end with the same entries as A's kernel, field by field.  nat.sh's end
# also checks that the tap was used (or, on a kernel without netfilter BPF
# links, that the daemon said so and followed ctnetlink).
EVENT_SOURCE=bpf exec bash "$(dirname "$0")/nat.sh"
