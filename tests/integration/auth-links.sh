#!/bin/bash
# Keyed sync (doc/envelope.md) on every kind of link, the key's roll-over
# and the key files:
#  1. a key file that is not root's and private, not a key, or a symbolic
#     link: the daemon refuses to start and --check fails, naming the file;
#  2. a roll-over k1 -> k2 (A first) and k2 -> k3 (B first), one daemon
#     restarted at a time through {old,new}, {new,old}, {new}: no state
#     lost, new ones replicated at every step, no envelope refused for its
#     key; a node that skips the first step is refused (unknown_key_id);
#  3. A keyed and B not: nothing replicates, and each says why;
#  4. a keyed TCP link, with a restart of A;
#  5. keyed redundant links: the active one goes down;
#  6. a keyed multicast group of three nodes, with a restart of one.
#
# How the checks were seen to fail, each with a temporary change to src/
# (not kept):
#  - keyfile_read() without its owner and mode checks and O_NOFOLLOW: the
#    daemon starts with those files, section 1 fails;
#  - sealing with the last configured key rather than the first: {k1,k2}
#    seals with k2, which the peer does not have yet: unknown_key_id and
#    lost replication, section 2 fails;
#  - sealing_open() passing plain datagrams on: A takes unkeyed B's states,
#    section 3 fails;
#  - one envelope session slot for all the peers of a group: the proofs
#    of section 6 fail;
#  - section 4 fails as the code stands (reported, not fixed here): the
#    TCP link hands the envelope every whole frame of a read at once, and
#    an envelope must be alone in what it is given (envelope.md §1), so a
#    read that holds two frames is refused as malformed, all of it.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
require_root
require_cmd conntrack python3

pair_setup || { echo "cannot create the namespaces" >&2; exit 99; }
# a second link for section 5
ip link add syncA2 netns "$NS_A" type veth peer name syncB2 netns "$NS_B" &&
	ip -n "$NS_A" addr add 198.18.2.1/24 dev syncA2 && ip -n "$NS_B" addr add 198.18.2.2/24 dev syncB2 &&
	ip -n "$NS_A" link set syncA2 up && ip -n "$NS_B" link set syncB2 up ||
	{ echo "cannot create the second link" >&2; exit 99; }

umask 077
for k in k1 k2 k3 k4; do
	"$CTSYNCD" --genkey >"$WORK/$k" || { echo "ctsyncd --genkey failed" >&2; exit 99; }
done

# ---- helpers ----
json() {        # json SIDE SECTION KEY: a number of -s network --json
	ctl "$1" -s network --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]][sys.argv[2]])' "$2" "$3"
}
env_count() { json "$1" envelope "$2"; }
# keyed SIDE KEY... [-- extra Sync lines]: SIDE's configuration with these keys.
keyed() {
	local side=$1 lines="" extra=""
	shift
	while (($#)); do
		[[ $1 == -- ]] && { shift; extra="$*"; break; }
		lines+="Key $WORK/$1 "
		shift
	done
	pair_conf "$side" FTFW "$lines$extra"
}
stop_side() { pair_stop "$1"; wait_until 5 test ! -e "$WORK/$1.lock"; }
start_side() { pair_start "$1" 2>>"$WORK/$1.stderr"; }
peer_of() { [[ $1 == A ]] && echo B || echo A; }

# load SIDE N: N more UDP states on SIDE (A: 10.7.0.1 -> 10.7.0.2, B:
# 10.8.0.1 -> 10.8.0.2); COUNT_A and COUNT_B say how many each holds.
COUNT_A=0 COUNT_B=0
load() {
	local side=$1 n=$2 first i net
	[[ $side == A ]] && net=7 first=$((1000 + COUNT_A)) || net=8 first=$((1000 + COUNT_B))
	for ((i = first; i < first + n; i++)); do
		ct_in "$side" -I -s "10.$net.0.1" -d "10.$net.0.2" -p udp --sport "$i" --dport 53 -t 900 >/dev/null
	done
	[[ $side == A ]] && COUNT_A=$((COUNT_A + n)) || COUNT_B=$((COUNT_B + n))
}
# synced: each side's external cache holds all the other's states.
synced() { [[ $(ext_active B) == "$COUNT_A" && $(ext_active A) == "$COUNT_B" ]]; }
caches() { echo "A holds $(ext_active A) of B's $COUNT_B, B holds $(ext_active B) of A's $COUNT_A"; }
# check_synced WHAT SECONDS: within SECONDS, synced; the counts in the message.
check_synced() {
	wait_until "$2" synced
	check "$1 ($(caches))" synced
}
# key_refusals SIDE: SIDE's envelopes refused for their key (unknown_key_id + bad_tag).
key_refusals() { echo $(($(env_count "$1" unknown_key_id) + $(env_count "$1" bad_tag))); }
# refused_none SIDE...: SIDE refused no envelope for any reason but a session not proven yet.
refused_none() {
	local s c
	for s in "$@"; do
		for c in plain truncated malformed unknown_key_id bad_tag replayed unsolicited reflected wrong_peer; do
			(($(env_count "$s" "$c") == 0)) || return 1
		done
	done
}

# =====================================================================
# 1. Key files.  Whoever reads the key can write ESTABLISHED states into
# both kernels: a file that is not root's and private is refused, never
# used with a warning; so is a symbolic link and a file with no key.  The
# daemon must not start and --check must fail, both naming the file.
# =====================================================================
# refused WHAT FILE PATTERN [SECOND_FILE]: a configuration with Key FILE
# (and Key SECOND_FILE) does not start, exit status non-zero, and both the
# start and --check say PATTERN about FILE.
refused() {
	local what=$1 file=$2 pattern=$3 rc crc out cout
	pair_conf A FTFW "Key $file${4:+ Key $4}"
	: >"$WORK/A.log"
	out=$(ip netns exec "$NS_A" timeout 10 "$CTSYNCD" -C "$WORK/A.conf" -d 2>&1); rc=$?
	out+=$(cat "$WORK/A.log")
	cout=$(ctl A --check 2>&1); crc=$?
	check "key file $what: the daemon refuses to start (exit status $rc)" \
		eval '((rc != 0 && rc != 124)) && [[ ! -e $WORK/A.lock ]]'
	check "key file $what: it says why, naming the file" eval 'grep -qF -- "$file" <<<"$out" && contains "$out" "$pattern"'
	check "key file $what: --check fails the same way (exit status $crc)" \
		eval '((crc != 0)) && grep -qF -- "$file" <<<"$cout" && contains "$cout" "$pattern"'
	if [[ -e $WORK/A.lock ]]; then
		track_pid "$(head -n1 "$WORK/A.lock")"
		stop_side A
	fi
}
accepted() {    # accepted WHAT FILE: --check takes it
	pair_conf A FTFW "Key $2"
	check "key file $1: --check accepts it" eval 'ctl A --check >/dev/null 2>&1'
}

key_files() {
	local f=$WORK/kf
	cp "$WORK/k1" "$f.good" && chmod 600 "$f.good"
	accepted "0600, root's" "$f.good"
	cp "$WORK/k1" "$f.640" && chmod 640 "$f.640"
	accepted "0640 (its group may read)" "$f.640"

	cp "$WORK/k1" "$f.644" && chmod 644 "$f.644"
	refused "0644 (world-readable)" "$f.644" 'other users can read it.*chmod 600'
	cp "$WORK/k1" "$f.620" && chmod 620 "$f.620"
	refused "0620 (group-writable)" "$f.620" 'its group can write it.*chmod 600'
	cp "$WORK/k1" "$f.601" && chmod 601 "$f.601"
	refused "0601 (others may execute)" "$f.601" 'chmod 600'
	cp "$WORK/k1" "$f.nobody" && chmod 600 "$f.nobody" && chown 65534 "$f.nobody"
	refused "owned by uid 65534" "$f.nobody" 'uid 65534, not root'
	echo "this is not a key" >"$f.garbage"
	refused "holding garbage" "$f.garbage" 'does not hold a key'
	printf '%s\n%s\n' "$(cat "$WORK/k1")" "$(cat "$WORK/k2")" >"$f.two"
	refused "holding two keys" "$f.two" 'does not hold a key'
	ln -s "$f.good" "$f.link"
	refused "a symbolic link to a good key file" "$f.link" 'symbolic link'
	refused "missing" "$f.missing" 'cannot open it'
	cp "$WORK/k1" "$f.copy"
	refused "holding the same key as the first Key" "$f.good" 'hold the same key' "$f.copy"
}

# =====================================================================
# 2. Roll-over (envelope.md §2.3): each step is a restart of one daemon
# (that is how a configuration change is applied), and after each the
# restarted side asks for the peer's table (-n, as keepalived's backup
# does).  Then each side's external cache holds all of the other's states,
# including states loaded during the roll, and no envelope was refused
# for its key (unknown_key_id, bad_tag) on either side.
# =====================================================================
# step SIDE KEY...: SIDE restarted with these keys, and the checks above
# (the peer's counters since SIDE stopped: the peer runs on).
step() {
	local side=$1 what="${*:2}" peer base
	peer=$(peer_of "$side")
	stop_side "$side"
	sleep 0.2       # what it sent last is read by the peer
	base=$(key_refusals "$peer")
	keyed "$@"
	start_side "$side" || { fail "roll: $side starts with {$what}"; return 1; }
	ctl "$side" -n >/dev/null
	check_synced "roll: $side with {$what}: the caches are complete again" 20
	load A 5; load B 5
	check_synced "roll: $side with {$what}: new states of both reach the other" 10
	check "roll: $side with {$what}: no envelope refused for its key on either side" \
		eval '(($(key_refusals "$side") == 0 && $(key_refusals "$peer") == base))'
}

rollover() {
	keyed A k1; keyed B k1
	start_side A && start_side B || { fail "roll: the daemons start with {k1}"; return 1; }
	load A 100; load B 100
	ctl A -n >/dev/null; ctl B -n >/dev/null
	check_synced "roll: with {k1}, each side has the other's 100 states" 20

	# k1 -> k2, A first at each step
	step A k1 k2 && step B k1 k2 &&
	step A k2 k1 && step B k2 k1 &&
	step A k2 && step B k2 || return 1
	# k2 -> k3, B first
	step B k2 k3 && step A k2 k3 &&
	step B k3 k2 && step A k3 k2 &&
	step B k3 && step A k3 || return 1

	# A node that skips the first step seals with a key its peer does not
	# have yet: refused as unknown_key_id both ways, and nothing passes.
	local before=$COUNT_A
	stop_side B
	keyed B k4
	start_side B || { fail "roll: B starts with {k4}"; return 1; }
	load A 5
	check "roll: B with {k4} against A's {k3}: each refuses the other's envelopes as unknown_key_id" \
		wait_until 10 eval '(($(env_count A unknown_key_id) > 0 && $(env_count B unknown_key_id) > 0))'
	check "roll: ... and none of A's states reaches B ($(caches))" eval '(($(ext_active B) == 0))'
	check "roll: ... nor any handshake: no session proven" \
		eval '[[ $(env_count B sessions_accepted) == 0 && $(env_count B delivered) == 0 ]]'
	step B k3 && check "roll: B back on {k3} holds A's $COUNT_A states, $before before the mistake" synced
}

# =====================================================================
# 3. A keyed, B not: they cannot sync, and each counts the other's
# datagrams as not its own (envelope.md §1.3): A as "plain", B, which
# reads our 0xC5 as version 12, as "wrong version" (1.4.7 does the same).
# Why both nodes must be keyed.
# =====================================================================
mixed() {
	stop_side A; stop_side B
	keyed A k1; pair_conf B FTFW
	start_side A && start_side B || { fail "mixed: the daemons start"; return 1; }
	ctl A -n >/dev/null; ctl B -n >/dev/null
	load A 5; load B 5
	check "mixed: A counts B's datagrams as plain" wait_until 10 eval '(($(env_count A plain) > 0))'
	check "mixed: B counts A's messages as of a wrong version" \
		wait_until 10 eval '(($(json B malformed wrong_version) > 0 && $(json B sync malformed) > 0))'
	check "mixed: B says it has no key" eval '[[ $(json B envelope keyed) == False ]]'
	check "mixed: nothing replicated either way ($(caches))" \
		eval '(($(ext_active A) == 0 && $(ext_active B) == 0))'
	check "mixed: A delivered nothing" eval '(($(env_count A delivered) == 0))'
	stop_side A; stop_side B
}

# =====================================================================
# 4. A keyed TCP link: each frame of the stream is an envelope.  Both
# directions replicate; A restarts (a new connection, a new session): B
# proves the new session and the caches converge again.
# =====================================================================
tcp() {
	LINK_KIND=TCP keyed A k1; LINK_KIND=TCP keyed B k1
	start_side A && start_side B || { fail "tcp: the daemons start"; return 1; }
	ctl A -n >/dev/null; ctl B -n >/dev/null
	check_synced "tcp: each side has the other's states" 20
	load A 20; load B 20
	check_synced "tcp: new states replicate both ways" 10
	local proofs
	proofs=$(grep -c 'proved a new session' "$WORK/B.log")
	stop_side A; start_side A || { fail "tcp: A restarts"; return 1; }
	ctl A -n >/dev/null
	check "tcp: B proves A's new session" \
		wait_until 10 eval '(($(grep -c "proved a new session" "$WORK/B.log") > proofs))'
	load A 10; load B 10
	check_synced "tcp: after A's restart the caches converge" 20
	check "tcp: no envelope of either refused (but for a session not proven yet)" refused_none A B
	stop_side A; stop_side B
}

# =====================================================================
# 5. Keyed redundant links (as redundant.sh): the active link goes down,
# A moves to the other one, and replication goes on there, sealed.
# =====================================================================
active() { ctl "$1" -s link --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["channel"]["active"])'; }
redundant() {
	keyed A k2 -- "UDP { IPv4_address 198.18.2.1 IPv4_Destination_Address 198.18.2.2 Port 3780 Interface syncA2 }"
	keyed B k2 -- "UDP { IPv4_address 198.18.2.2 IPv4_Destination_Address 198.18.2.1 Port 3780 Interface syncB2 }"
	start_side A && start_side B || { fail "redundant: the daemons start"; return 1; }
	ctl A -n >/dev/null; ctl B -n >/dev/null
	check_synced "redundant: each side has the other's states" 20
	check "redundant: A sends on its first link" test "$(active A)" = syncA
	ip -n "$NS_A" link set syncA down
	load A 20; load B 20
	check "redundant: A moved to the other link" wait_until 5 eval '[[ $(active A) == syncA2 ]]'
	check_synced "redundant: with the first link down, new states replicate both ways" 20
	check "redundant: B delivers A's envelopes and refuses none" \
		eval '(($(env_count B delivered) > 0)) && refused_none A B'
	ip -n "$NS_A" link set syncA up
	stop_side A; stop_side B
}

# =====================================================================
# 6. A keyed multicast group of three nodes (as multinode.sh): every node
# hears every envelope and every handshake, and proves each other node's
# session under that node's address.  Each node's states reach both
# others; node 2 restarts: it proves itself to the others and they to it,
# its external cache is refilled from both, and its states reach them.
# =====================================================================
NODES=(1 2 3)
declare -A NS
mcast_setup() {
	local hub i
	hub=$(make_netns hub) || return 1
	ip -n "$hub" link add br0 type bridge && ip -n "$hub" link set br0 up || return 1
	for i in "${NODES[@]}"; do
		NS[$i]=$(make_netns "n$i") || return 1
		ip link add sync netns "${NS[$i]}" type veth peer name "p$i" netns "$hub" || return 1
		ip -n "$hub" link set "p$i" master br0 up
		ip -n "${NS[$i]}" addr add "198.18.3.$i/24" dev sync
		ip -n "${NS[$i]}" link set sync up
		ip netns exec "${NS[$i]}" sysctl -qw net.netfilter.nf_conntrack_events=1
		cat >"$WORK/n$i.conf" <<CONF
Sync {
	Mode FTFW { }
	Key $WORK/k3
	Multicast { IPv4_address 225.0.0.51 IPv4_interface 198.18.3.$i Group 3780 Interface sync }
}
General {
	Systemd off
	HashSize 16384
	LogFile $WORK/n$i.log
	LockFile $WORK/n$i.lock
	UNIX { Path $WORK/n$i.ctl }
	Filter { Address Ignore { IPv4_address 198.18.3.0/24 } }
}
CONF
	done
}
nctl() { local i=$1; shift; "$CTSYNCD" -C "$WORK/n$i.conf" "$@"; }
nstart() {
	ip netns exec "${NS[$1]}" "$CTSYNCD" -C "$WORK/n$1.conf" -d 2>>"$WORK/n$1.stderr" &&
		track_pid "$(head -n1 "$WORK/n$1.lock")"
}
nload() {      # nload NODE N FIRST: N states of NODE (10.NODE.0.1 -> 10.NODE.0.2)
	local i
	for ((i = $3; i < $3 + $2; i++)); do
		ip netns exec "${NS[$1]}" conntrack -I -s "10.$1.0.1" -d "10.$1.0.2" -p udp \
			--sport "$i" --dport 53 -t 900 >/dev/null 2>&1
	done
}
# holds NODE ORIGIN: how many of ORIGIN's states NODE's external cache holds.
holds() { nctl "$1" -e | grep -c "src=10\.$2\.0\.1 "; }
# group_has N1 N2 N3: every node holds Nj states of each other node j.
group_has() {
	local want=("" "$@") i j
	for i in "${NODES[@]}"; do
		for j in "${NODES[@]}"; do
			((i == j)) || (($(holds "$i" "$j") == want[j])) || return 1
		done
	done
}
group_report() {
	local i j
	for i in "${NODES[@]}"; do
		for j in "${NODES[@]}"; do ((i != j)) && printf 'n%s has %s of n%s; ' "$i" "$(holds "$i" "$j")" "$j"; done
	done
}
check_group() { # check_group WHAT N1 N2 N3
	local what=$1
	shift
	wait_until 30 group_has "$@"
	check "$what: $(group_report)" group_has "$@"
}
ncount() {      # ncount NODE KEY: a number of NODE's envelope counters
	nctl "$1" -s network --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["envelope"][sys.argv[1]])' "$2"
}

all_proved() {  # all_proved N: each node proved N sessions
	local i
	for i in "${NODES[@]}"; do (($(ncount "$i" sessions_accepted) == $1)) || return 1; done
}

multicast() {
	local i
	mcast_setup || { fail "multicast: the namespaces"; return 1; }
	for i in "${NODES[@]}"; do nstart "$i" || { fail "multicast: node $i starts"; return 1; }; done
	for i in "${NODES[@]}"; do nload "$i" 50 1000; done
	check_group "multicast: each node's 50 states reach both others" 50 50 50
	check "multicast: each node proved the two others' sessions" all_proved 2

	nctl 2 -k >/dev/null
	wait_until 5 test ! -e "$WORK/n2.lock"
	nload 2 10 2000
	nstart 2 || { fail "multicast: node 2 restarts"; return 1; }
	nctl 2 -n >/dev/null
	check_group "multicast: node 2 restarted: its cache is refilled and its 60 states reach the others" 50 60 50
	check "multicast: nodes 1 and 3 proved node 2's new session" \
		eval 'grep -q "proved a new session" "$WORK/n1.log" && grep -q "proved a new session" "$WORK/n3.log"'
	check "multicast: node 2 proved the others' sessions" eval '(($(ncount 2 sessions_accepted) >= 2))'
	for i in 1 3; do nload "$i" 10 2000; done
	check_group "multicast: new states of nodes 1 and 3 reach all" 60 60 60
	for i in "${NODES[@]}"; do
		check "multicast: node $i refused nothing for its key or its shape" eval '
			(($(ncount '"$i"' unknown_key_id) + $(ncount '"$i"' bad_tag) + $(ncount '"$i"' malformed) + $(ncount '"$i"' plain) == 0))'
	done
	for i in "${NODES[@]}"; do nctl "$i" -k >/dev/null; done
}

# AUTH_LINKS_SECTIONS: the sections to run (all by default), for a quicker look at one.
for section in ${AUTH_LINKS_SECTIONS:-key_files rollover mixed tcp redundant multicast}; do
	"$section"
done
finish
