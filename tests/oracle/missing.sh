#!/bin/bash
# Stands in for the oracle tests (tests/oracle) when configure did not find
# libnetfilter_conntrack and libnfnetlink: SKIP (77), never a pass.
echo "SKIP: the test oracle needs libnetfilter_conntrack and libnfnetlink (apt-get install" \
	"libnetfilter-conntrack-dev libnfnetlink-dev, then configure again)"
exit 77
