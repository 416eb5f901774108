#!/bin/bash
# ExpectationSync: an FTP control connection through A's conntrack (the
# kernel's ftp helper, assigned by nftables) makes an expectation; it
# reaches B's external expectation cache, B's commit writes it into B's
# kernel after its master, and its end on A removes it from B.  Then the
# same against conntrackd 1.4.7, both ways, with the related flow of the data
# connection and a connlabel on the master (set by nftables) committed too.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
. "$(dirname "$0")/../lib/interop.sh"
require_root
require_cmd conntrack python3 nft
modprobe nf_conntrack_ftp 2>/dev/null
[[ -d /sys/module/nf_conntrack_ftp ]] || { echo "no nf_conntrack_ftp module: skipped" >&2; exit 77; }
DRIVER=${DRIVER:-$(built_tool tests/integration/kernel-driver)}
require_built "$DRIVER"
# A kernel's entry for the FTP control connection with this client port, helper and labels
# included (tests/integration/kernel-driver), without its timeout.
control_line() { side "$1"; ip netns exec "$ns" "$DRIVER" dump 2>/dev/null | grep "sport=$2 dport=21 " | sed 's/ tmo=[0-9]*//'; }
# The same for the data connection to PORT (a related flow: with its master).
data_line() { side "$1"; ip netns exec "$ns" "$DRIVER" dump 2>/dev/null | grep "dport=$2 " | grep -v 'dport=21 ' | sed 's/ tmo=[0-9]*//'; }

pair_setup || { echo "cannot create the namespaces" >&2; exit 99; }
conf_both() {
	pair_conf A FTFW "Options { ExpectationSync on }"
	pair_conf B FTFW "Options { ExpectationSync on }"
}
conf_both

# The ftp helper on port 21 of the side's own address (traffic over lo is tracked).
for ns in "$NS_A" "$NS_B"; do
	ip netns exec "$ns" nft -f - <<'NFT'
table inet ftp {
	ct helper ftp-std { type "ftp" protocol tcp; }
	chain out { type filter hook output priority 0; tcp dport 21 ct helper set "ftp-std"; tcp dport 21 ct label set 5; }
}
NFT
	ip -n "$ns" link set lo up
done


ns_empty() { [[ -z $(ip netns pids "$1") ]]; }
# Everything that runs in the two namespaces is this test's: the daemons and the FTP session.
stop_all() {
	local ns pid
	for ns in "$NS_A" "$NS_B"; do
		for pid in $(ip netns pids "$ns"); do kill -TERM "$pid" 2>/dev/null; done
		wait_until 5 ns_empty "$ns" || for pid in $(ip netns pids "$ns"); do kill -KILL "$pid"; done
	done
	rm -f "$WORK"/*.lock "$WORK"/*.ctl
}

kexp_has() { ct_in "$1" -L expect | grep -q -- "$2"; }
iexp_has() { ctl "$1" -i expect | grep -q -- "$2"; }
eexp_has() { ctl "$1" -e expect | grep -q -- "$2"; }
eexp_empty() { [[ -z $(ctl "$1" -e expect) ]]; }

# --- ctsyncd to ctsyncd --------------------------------------------------------------
pair_start A && pair_start B || { fail "the daemons start"; finish; }
ftp_session A 51210
check "A's kernel has the FTP expectation" wait_until 10 kexp_has A 'dport=51210'
check "A's internal expectation cache has it, with its helper" \
	wait_until 5 iexp_has A 'dport=51210 .*master-src=198.18.1.1 .*helper=ftp'
check "B's external expectation cache has it" wait_until 10 eexp_has B 'dport=51210 .*helper=ftp'
check "B has the master too" wait_until 5 eval 'ctl B -e | grep -q "dport=21 .*helper=ftp"'
out=$(ctl B -c)
check "B's commit writes the expectation: $out" contains "$out" '1 expectations written, 0 failed'
check "B's kernel has the master with its helper" eval 'ct_in B -L -o extended | grep -q "dport=21 .*helper=ftp"'
check "B's kernel has the expectation" kexp_has B 'dport=51210'
k_a=$(ct_in A -L expect | grep -o 'proto=6 .*' | sed 's/ *$//')
k_b=$(ct_in B -L expect | grep -o 'proto=6 .*' | sed 's/ *$//')
check "the two kernels' expectations agree apart from the timeout: [$k_a] [$k_b]" test -n "$k_a" -a "$k_a" = "$k_b"
ctl B -s expect --verbose | grep -q 'committed' && pass "-s expect reports the commit" || fail "-s expect reports the commit"

# The data connection: the expectation is used up, and a related flow appears.
data_conn A 51210
check "A's related flow has its master" \
	wait_until 10 eval 'ctl A -i | grep -q "dport=51210 .*master=tcp:198.18.1.1-198.18.1.1"'
check "the expectation's end on A empties B's external cache" wait_until 10 eexp_empty B
check "B has the related flow with its master" \
	wait_until 10 eval 'ctl B -e | grep -q "dport=51210 .*master=tcp:198.18.1.1-198.18.1.1"'
out=$(ctl B -c)
check "B's commit writes the related flow: $out" contains "$out" 'states written .* 0 failed'
l_a=$(kernel_line A 'dport=51210'); l_b=$(kernel_line B 'dport=51210')
check "the related flow is the same in both kernels: [$l_a] [$l_b]" test -n "$l_a" -a "$l_a" = "$l_b"
l_a=$(kernel_line A 'dport=21 '); l_b=$(kernel_line B 'dport=21 ')
check "and so is its master, helper included: [$l_a] [$l_b]" \
	eval '[[ -n $l_a && $l_a == "$l_b" && $l_a == *helper=ftp* ]]'
ctl B -R >/dev/null
check "B's kernel links the related flow to its master (read back by -R)" \
	eval 'ctl B -i | grep -q "dport=51210 .*master=tcp:198.18.1.1-198.18.1.1"'
ct_in A -F expect >/dev/null
j=$(ctl A -s cache --json)
check "A's expectation counters add up" python3 -c '
import json, sys
d = json.loads(sys.argv[1])["expectations"]
assert d["events_new"] >= 1 and d["events_destroy"] >= 1, d
assert d["events_malformed"] == 0, d
' "$j"

# --- a helper list that leaves ftp out -------------------------------------------------
stop_all
pair_conf A FTFW "Options { ExpectationSync { sip } }"
pair_start A && pair_start B || { fail "the daemons restart"; finish; }
ftp_session A 51211
wait_until 10 kexp_has A 'dport=51211'
sleep 1
check "ExpectationSync { sip } leaves the ftp expectation out" eval '! iexp_has A "dport=51211"'
j=$(ctl A -s cache --json)
check "... and counts it" python3 -c '
import json, sys
assert json.loads(sys.argv[1])["expectations"]["left_out_helper"] >= 1
' "$j"

# --- ALARM: expectations are refreshed like states, and expire when they no longer are ------
stop_all
MODE_OPTS="RefreshTime 1 CacheTimeout 3" pair_conf A ALARM "Options { ExpectationSync on }"
MODE_OPTS="RefreshTime 1 CacheTimeout 3" pair_conf B ALARM "Options { ExpectationSync on }"
pair_start A && pair_start B || { fail "the ALARM pair starts"; finish; }
ftp_session A 51214
check "ALARM: B's external expectation cache has A's expectation" wait_until 10 eexp_has B 'dport=51214'
sleep 4
check "ALARM: refreshed, it is still there after CacheTimeout" eexp_has B 'dport=51214'
ctl A -k >/dev/null
check "ALARM: once A is gone it expires on B" wait_until 10 eexp_empty B
check "ALARM: ... and is counted as expired" \
	eval 'ctl B -s cache --json | python3 -c "import json,sys; sys.exit(json.load(sys.stdin)[\"expectations\"][\"expired\"] < 1)"'

# --- with conntrackd 1.4.7, both ways ----------------------------------------------------
if ! command -v conntrackd >/dev/null; then
	log "conntrackd 1.4.7 is not installed: the interop half is skipped"
	finish
fi
restart_pair() {        # restart_pair BINARY_A BINARY_B
	stop_all
	conf_both
	pair_start A "$1" && pair_start B "$2"
}
restart_pair "$(command -v conntrackd)" "$CTSYNCD" || { fail "conntrackd 1.4.7 and ctsyncd start"; finish; }
ftp_session A 51212
wait_until 10 kexp_has A 'dport=51212'
check "conntrackd 1.4.7 -> ctsyncd: B's external expectation cache has it" \
	wait_until 15 eexp_has B 'dport=51212 .*helper=ftp'
strip_age() { sed 's/ \[[a-z]* .*\]$//' | sort; }
old_l=$(old_ctl A -i expect | grep 'dport=51212' | strip_age); new_l=$(ctl B -e expect | grep 'dport=51212' | strip_age)
check "ctsyncd's -e expect line is 1.4.7's -i expect line: [$new_l]" eval '[[ -n $new_l && $new_l == "$old_l" ]]'
old_l=$(old_ctl A -i expect -x | grep 'dport>51212<'); new_l=$(ctl B -e expect -x | grep 'dport>51212<')
check "and its XML too: [$new_l]" eval '[[ -n $new_l && $new_l == "$old_l" ]]'
out=$(ctl B -c)
check "ctsyncd commits what 1.4.7 sent: $out" contains "$out" '1 expectations written, 0 failed'
check "... into B's kernel" kexp_has B 'dport=51212'
port=$(ct_in A -L expect | grep -o 'dport=51212 .*master-src=[0-9.]* master-dst=[0-9.]* sport=[0-9]*' | grep -o '[0-9]*$')
a=$(control_line A "$port"); b=$(control_line B "$port")
check "the master from 1.4.7 is committed with its helper and label: [$b]" \
	eval '[[ -n $a && $a == "$b" && $a == *helper=ftp* && $a == *labels=0x00000020* ]]'
data_conn A 51212
check "1.4.7's related flow reaches ctsyncd with its master" \
	wait_until 15 eval 'ctl B -e | grep -q "dport=51212 .*master=tcp:198.18.1.1-198.18.1.1"'
ctl B -c >/dev/null
a=$(data_line A 51212); b=$(data_line B 51212)
check "ctsyncd commits it, linked to its master: [$b]" eval '[[ -n $a && $a == "$b" && $a == *master=* ]]'

restart_pair "$CTSYNCD" "$(command -v conntrackd)" || { fail "ctsyncd and conntrackd 1.4.7 start"; finish; }
ftp_session A 51213
wait_until 10 kexp_has A 'dport=51213'
check "ctsyncd -> conntrackd 1.4.7: its external expectation cache has it" \
	wait_until 15 eval 'old_ctl B -e expect | grep -q "dport=51213"'
old_ctl B -c >/dev/null
check "conntrackd 1.4.7 commits what ctsyncd sent into B's kernel" wait_until 5 kexp_has B 'dport=51213'
port=$(ct_in A -L expect | grep -o 'dport=51213 .*master-src=[0-9.]* master-dst=[0-9.]* sport=[0-9]*' | grep -o '[0-9]*$')
a=$(control_line A "$port"); b=$(control_line B "$port")
check "the master from ctsyncd is committed by 1.4.7 with its helper and label: [$b]" \
	eval '[[ -n $a && $a == "$b" && $a == *helper=ftp* && $a == *labels=0x00000020* ]]'
data_conn A 51213
check "ctsyncd's related flow reaches 1.4.7" wait_until 15 eval 'old_ctl B -e | grep -q "dport=51213"'
old_ctl B -c >/dev/null
a=$(data_line A 51213); b=$(data_line B 51213)
check "1.4.7 commits it, linked to its master: [$b]" \
	wait_until 5 eval '[[ -n $a && $(data_line B 51213) == "$a" && $a == *master=* ]]'
net=$(old_ctl B -s network)
check "1.4.7 counts no malformed message" old_net_clean "$net"
finish
