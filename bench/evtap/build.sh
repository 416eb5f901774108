#!/bin/bash
# bench/evtap/build.sh OUTDIR: builds evtap and evtap.bpf.o for this machine's
# kernel into OUTDIR (vmlinux.h from its BTF).  Needs clang, bpftool and
# libbpf-dev; exits 1 naming what is missing.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:?usage: build.sh OUTDIR}
mkdir -p "$OUT" || exit 1
for tool in clang bpftool cc; do
	command -v "$tool" >/dev/null || { echo "evtap: $tool is missing (apt-get install clang bpftool libbpf-dev)" >&2; exit 1; }
done
[[ -r /usr/include/bpf/libbpf.h ]] || { echo "evtap: libbpf-dev is missing" >&2; exit 1; }
[[ -r /sys/kernel/btf/vmlinux ]] || { echo "evtap: this kernel has no BTF (/sys/kernel/btf/vmlinux)" >&2; exit 1; }
bpftool btf dump file /sys/kernel/btf/vmlinux format c >"$OUT/vmlinux.h" || exit 1
clang -O2 -g -target bpf -I"$OUT" -c "$HERE/evtap.bpf.c" -o "$OUT/evtap.bpf.o" || exit 1
cc -O2 -Wall -Wextra -o "$OUT/evtap" "$HERE/evtap.c" -lbpf || exit 1
