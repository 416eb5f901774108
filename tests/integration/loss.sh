#!/bin/bash
# Convergence under loss, at scale, over every link kind: two ctsyncd in FTFW
# over UDP, multicast and TCP, each over IPv4 and IPv6, with 0, 5, 20 and 50 %
# of the sync traffic dropped at random both ways (nftables; no netem here).
# For each: N states (50k by default; bench/compare.sh --phases loss runs
# 100k and more) created on A all reach B's external
# cache, then an update of every one of them does, then deleting them all
# does; at the end of each kind B's external cache equals A's internal cache
# line by line.  Prints the time each phase took, from the start of the load
# generator to the last state in B.
#
# Not TCP at 50 %: with half the segments and half the ACKs lost, the
# kernel's TCP backs off its retransmissions for minutes (the sync
# connection is alive, its send buffer full); that is TCP's behaviour, not
# the protocol's, and a lossy sync link should be UDP or multicast.
#
# SUITE_SCALE=small (the sanitizer and distcheck runs of scripts/test-all.sh)
# runs 20k states over UDP/IPv4, multicast/IPv6 and TCP/IPv4 only.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
require_root
require_cmd conntrack nft python3

CTLOAD=${CTLOAD:-$(built_tool bench/ctload)}
require_built "$CTLOAD"
if [[ ${SUITE_SCALE:-} == small ]]; then
	N=${LOSS_STATES:-20000}
	KINDS=${LOSS_KINDS:-UDP/4 Multicast/6 TCP/4}
else
	N=${LOSS_STATES:-50000}
	KINDS=${LOSS_KINDS:-UDP/4 UDP/6 Multicast/4 Multicast/6 TCP/4 TCP/6}
fi
RATES=${LOSS_RATES:-0 5 20 50}
LIMIT=${LOSS_LIMIT:-120}   # seconds a phase may take

ctload() { ip netns exec "$NS_A" "$CTLOAD" "$@" >/dev/null; }
marked() { ctl B -e | grep -c "mark=$1 "; }
# converge WHAT COMMAND...: wait until the command succeeds; the time counts
# from $t0 (set before the load generator starts).
converge() {
	local what=$1 ms
	shift
	if wait_until "$LIMIT" "$@"; then
		ms=$((($(date +%s%N) - t0) / 1000000))
		pass "$what ($ms ms)"
	else
		fail "$what (not within $LIMIT s)"
	fi
}
# orig_only: a dump line without its reply tuple and "[active since ...]" (the
# external cache shows no reply tuple: the peer rebuilds it from the original).
orig_only() {
	python3 -c '
import sys
for line in sys.stdin:
    out, srcs, skip = [], 0, False
    for tok in line.split():
        if tok.startswith("src="):
            srcs += 1
            skip = srcs == 2
        elif skip and (tok.startswith("[") or "=" not in tok or tok.split("=")[0] in ("mark", "zone", "secctx", "labels")):
            skip = False
        if tok == "[active":
            break
        if not skip:
            out.append(tok)
    print(" ".join(out))'
}
count_is() { [[ $(ext_active B) -eq $1 ]]; }
marks_are() { [[ $(marked "$1") -eq $N ]]; }

pair_setup || { echo "cannot create the namespaces" >&2; exit 99; }
for kind in $KINDS; do
	export LINK_KIND=${kind%/*} LINK_FAMILY=${kind#*/}
	pair_conf A FTFW
	pair_conf B FTFW
	pair_start A && pair_start B || { fail "the daemons start over $kind"; continue; }
	for rate in $RATES; do
		if [[ $LINK_KIND == TCP ]] && ((rate >= 50)); then
			log "$kind, $rate % loss: not run (the kernel's TCP stalls at this loss; see the top)"
			continue
		fi
		pair_loss "$rate"
		base=198.18.$((100 + rate)).1
		t0=$(date +%s%N)
		ctload create "$N" --proto mixed --timeout 900 --base-addr "$base"
		converge "$kind, $rate % loss: $N new states reach B" count_is "$N"
		t0=$(date +%s%N)
		ctload update "$N" --proto mixed --base-addr "$base" --mark $((rate + 1)) --timeout 900
		converge "$kind, $rate % loss: $N updates reach B" marks_are $((rate + 1))
		if [[ $rate == "${RATES##* }" || ($LINK_KIND == TCP && $rate == 20) ]]; then
			pair_loss 0
			diff <(ctl A -i | orig_only | sort) <(ctl B -e | orig_only | sort) >"$WORK/diff"
			check "$kind: B's external cache equals A's internal cache, line by line" test ! -s "$WORK/diff"
			pair_loss "$rate"
		fi
		t0=$(date +%s%N)
		ctload delete "$N" --proto mixed --base-addr "$base"
		converge "$kind, $rate % loss: $N deletes reach B" count_is 0
	done
	pair_loss 0
	j=$(ctl B -s network --json)
	check "$kind: B's counters show no malformed message" python3 -c '
import json, sys; assert json.loads(sys.argv[1])["sync"]["malformed"] == 0' "$j"
	pair_stop A; pair_stop B
	wait_until 5 test ! -e "$WORK/A.lock" -a ! -e "$WORK/B.lock"
	ip netns exec "$NS_A" "$CTLOAD" flush >/dev/null
done
finish
