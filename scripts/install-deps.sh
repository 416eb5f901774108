#!/bin/bash
# Install what building, testing, the demo and the benchmark need on Debian 12.
# Idempotent: apt is only called when a package is missing.  Run as root.
set -euo pipefail

packages=(
	# build
	build-essential autoconf automake libtool pkg-config
	libmnl-dev libsystemd-dev libsodium-dev check
	# EventSource bpf: the BPF event tap, compiled with clang (below), loaded with libbpf
	libbpf-dev
	# the Debian package and its checks (tests/package/): debhelper, lintian,
	# systemd-analyze (in systemd) for the unit, libseccomp for the test's
	# system call filter
	debhelper lintian systemd libseccomp-dev
	# tests: libnetfilter_conntrack is the oracle of tests/oracle (the daemon links neither)
	libnetfilter-conntrack-dev libnfnetlink-dev
	# fuzzing (libFuzzer ships with clang) and sanitizer runtimes; clang also builds the BPF tap
	clang libclang-rt-14-dev
	# tests: the real kernel tools, the reference peer and VRRP; PyNaCl to forge envelopes
	iproute2 nftables conntrack conntrackd keepalived python3 procps python3-nacl
	# promtool, to check the metrics of -s --prometheus
	prometheus
	# Pacemaker's resource agent for conntrackd and ocf-tester (no cluster
	# stack: the test runs the agent alone); xmllint for ocf-tester's
	# meta-data check
	resource-agents libxml2-utils
	# the loss experiments tool draws its figure with gnuplot; bench/evtap needs bpftool
	gnuplot-nox bpftool
	# a-priori mode's test queues packets with iptables' NFQUEUE target
	# where the kernel lacks nftables' queue expression (tests/integration/apriori.sh)
	iptables
)

missing=()
for p in "${packages[@]}"; do
	[[ $p == \#* ]] && continue
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
		missing+=("$p")
	fi
done

if ((${#missing[@]})); then
	if [[ $(id -u) -ne 0 ]]; then
		echo "install-deps: these packages are missing and installing them needs root: ${missing[*]}" >&2
		exit 1
	fi
	echo "install-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian starts the packaged daemons on install where an init system runs;
# our tests start their own instances, in their own namespaces.
for svc in conntrackd keepalived prometheus; do
	if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
		systemctl disable --now "$svc" >/dev/null 2>&1 || true
	fi
done

# Connection tracking must exist in the kernel (module or built in).
if [[ ! -d /proc/sys/net/netfilter ]] && command -v modprobe >/dev/null 2>&1; then
	modprobe nf_conntrack 2>/dev/null || true
	modprobe nf_conntrack_netlink 2>/dev/null || true
fi
# The expectation tests run FTP through the kernel's ftp helper.
if command -v modprobe >/dev/null 2>&1 && [[ ! -d /sys/module/nf_conntrack_ftp ]]; then
	modprobe nf_conntrack_ftp 2>/dev/null || true
fi
exit 0
