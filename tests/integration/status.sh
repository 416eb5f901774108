#!/bin/bash
# `-s ... --json` and `-s ... --prometheus` as interfaces: live pairs in
# three configurations that between them show every conditional part
# (FTFW over UDP with a Key, expectations and polling; ALARM over TCP with a
# Key and expectations; NOTRACK over multicast without a Key), with
# replicated states and traffic on the link.  Every answer must parse (JSON:
# one object with schema_version 1; metrics: promtool check metrics), and
# the keys, metric names and labels seen must be exactly those that
# doc/status-json.md documents (tests/lib/status_doc.py).
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
require_root
require_cmd conntrack python3 promtool
DOC=$(cd "$(dirname "$0")/../../doc" && pwd)/status-json.md
CHECKER=$(cd "$(dirname "$0")/../lib" && pwd)/status_doc.py
[[ -f $DOC ]] || { echo "$TEST_NAME: $DOC is missing" >&2; exit 99; }
pair_setup || { echo "$TEST_NAME: cannot create the namespaces" >&2; exit 99; }
(umask 077 && "$CTSYNCD" --genkey >"$WORK/key") || { echo "$TEST_NAME: --genkey failed" >&2; exit 99; }
mkdir -p "$WORK/out"
WORDS="- network cache runtime link rsqueue process queue ct"

ext_at_least() { (($(ext_active B) >= $1)); }

# run NAME MODE LINK KEYED EXPECT POLL NET: start the pair, replicate states
# 10.80.NET.x, collect every answer of both sides.
run() {
	local name=$1 mode=$2 link=$3 keyed=$4 expect=$5 poll=$6 net=$7 sync="" gen="" side w f words rc i
	[[ $keyed == yes ]] && sync="Key $WORK/key"
	[[ $expect == yes ]] && sync="$sync Options { ExpectationSync on }"
	[[ $poll == yes ]] && gen="PollSecs 1"
	# ALARM sends a state again at each refresh: the first may reach a peer that has not proven our session yet.
	[[ $mode == ALARM ]] && local MODE_OPTS="RefreshTime 1 CacheTimeout 30"
	LINK_KIND=$link pair_conf A "$mode" "$sync" "$gen"
	LINK_KIND=$link pair_conf B "$mode" "$sync"
	pair_start A && pair_start B || { fail "$name: the daemons start"; return 1; }
	for i in 1 2 3; do
		ct_in A -I -s "10.80.$net.$i" -d 10.80.255.1 -p udp --sport 1000 --dport 53 -t 300 >/dev/null
	done
	check "$name: B receives A's states" wait_until 15 ext_at_least 3
	words=$WORDS
	[[ $expect == yes ]] && words="$words expect"
	for side in A B; do
		for w in $words; do
			[[ $w == - ]] && w=""
			f="$WORK/out/$name-$side-${w:-summary}"
			ctl "$side" -s $w --json >"$f.json"; rc=$?
			((rc == 0)) || fail "$name: $side -s $w --json answers (rc=$rc)"
			ctl "$side" -s $w --prometheus >"$f.prom"; rc=$?
			((rc == 0)) || fail "$name: $side -s $w --prometheus answers (rc=$rc)"
			promtool check metrics <"$f.prom" >"$f.promtool" 2>&1 ||
				{ fail "$name: promtool accepts $side -s $w --prometheus"; cat "$f.promtool"; }
		done
	done
	pair_stop A; pair_stop B
	wait_until 5 test ! -e "$WORK/A.lock" -a ! -e "$WORK/B.lock"
}

run ftfw-udp FTFW UDP yes yes yes 1
run alarm-tcp ALARM TCP yes yes no 2
run notrack-mcast NOTRACK Multicast no no no 3
n=$(ls "$WORK"/out/*.json | wc -l)
check "$n JSON answers and as many metric answers collected" test "$n" -eq 58
out=$(python3 "$CHECKER" "$DOC" "$WORK"/out/*.json "$WORK"/out/*.prom 2>&1); rc=$?
check "every answer parses, and the keys, metrics and labels are those doc/status-json.md documents" \
	test $rc -eq 0
echo "$out"
finish
