#!/bin/bash
# An attacker on the sync segment against a keyed UDP pair (doc/envelope.md).
# A, B and X share one bridge; X records A's datagrams to B with a sniffer on
# B's port and sends, in A's name (IP_TRANSPARENT, source 198.18.1.1), a
# plain 1.4.7 datagram, A's envelopes with a bit flipped or cut short,
# envelopes sealed with a key B does not have (under its own id and under
# A's), garbage behind the magic byte, and A's own envelopes again: within
# their session, after A restarted, and after B restarted.  Each is refused,
# counted under its reason in B's -s network ("envelope") and nothing else
# is; no forged or replayed state reaches B's external cache or kernel, and
# A's replication goes on.  The same with DisableExternalCache on, where
# what B takes goes straight into its kernel.  The key's text never shows
# in a log, in --check or in -s.
#
# How the checks were seen to fail, each with a temporary change to src/
# (not kept), both runs:
#  - sealing_open() passing plain datagrams on (a downgrade): the forged
#    flow 10.66.0.1:4444 lands in B's external cache, or its kernel, and
#    every "no forged one" check after it fails;
#  - env_decrypt() not verifying the tag (XChaCha20 alone): the bit flips
#    and the forgery under A's key id are delivered (their counters are
#    ahead of A's), the bad_tag checks fail;
#  - the replay window taking any counter: the "replayed" checks fail;
#  - a new session taken on its first authentic datagram, unchallenged:
#    the stale_session, proof and "B delivered nothing" checks fail, and
#    with DisableExternalCache the deleted states 1200..1219 come back
#    into B's kernel.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
require_root
require_cmd conntrack nft python3

FORGE=$(cd "$(dirname "$0")/../lib" && pwd)/envelope_forge.py
# Debian's python3-nacl lives in the system's python; a python3 of its own
# earlier in PATH (pyenv, a venv) may not have it.
PY=
for p in python3 /usr/bin/python3; do
	if "$p" -c 'import nacl.bindings' 2>/dev/null; then PY=$p; break; fi
done
if [[ -z $PY ]]; then
	echo "$TEST_NAME: python3 cannot import nacl (PyNaCl): run scripts/install-deps.sh (python3-nacl)" >&2
	exit 99
fi

# ---- the segment: A, B and X on one bridge ----
pair_segment_setup || { echo "cannot create the namespaces" >&2; exit 99; }
MAC_A=$(ip netns exec "$NS_A" cat /sys/class/net/syncA/address)

umask 077
"$CTSYNCD" --genkey >"$WORK/k1" || { echo "ctsyncd --genkey failed" >&2; exit 99; }
KEY_TEXT=$(cat "$WORK/k1")

forge() { "$PY" "$FORGE" "$@"; }
# x_send [SRC]: the datagrams of stdin from X to B, in A's name unless SRC says otherwise.
x_send() { ip netns exec "$NS_X" "$PY" "$FORGE" send "${1:-198.18.1.1}" 198.18.1.2 3780; }

# record FILE MAX: in the background, B's port records at most MAX of A's
# DATA envelopes, for at most 8 s (wait for $SNIFFER).
record() {
	ip netns exec "$NS_B" timeout 12 "$PY" "$FORGE" sniff syncB "$MAC_A" 198.18.1.1 3780 8 "$2" data >"$1" &
	SNIFFER=$!
	track_pid "$SNIFFER"
	sleep 0.5       # the socket is bound before anything is sent
}

# load N FIRST [PAUSE]: N UDP states on A, sports FIRST..., with PAUSE
# seconds between them (so that each leaves in a datagram of its own).
load() {
	local i
	for ((i = $2; i < $2 + $1; i++)); do
		ct_in A -I -s 10.7.0.1 -d 10.7.0.2 -p udp --sport "$i" --dport 53 -t 600 >/dev/null
		[[ -n ${3:-} ]] && sleep "$3"
	done
}
unload() {      # unload N FIRST: deletes what load N FIRST made
	local i
	for ((i = $2; i < $2 + $1; i++)); do
		ct_in A -D -s 10.7.0.1 -d 10.7.0.2 -p udp --sport "$i" --dport 53 >/dev/null
	done
}

# ---- what B holds ----
# b_count: A's states on B, in its external cache, or in its kernel
# without one.
b_count() {
	if [[ $NO_EXT == on ]]; then
		ct_in B -L | grep -c 'src=10\.7\.0\.1 '
	else
		ext_active B
	fi
}
b_has() { [[ $(b_count) == "$1" ]]; }
a_count() { ct_in A -L | grep -c 'src=10\.7\.0\.1 '; }
# b_holds REGEX: a state matching REGEX is in B's external cache or kernel.
b_holds() { ctl B -e 2>/dev/null | grep -Eq -- "$1" || ct_in B -L | grep -Eq -- "$1"; }
# forged flow: 10.66.0.1:4444 -> 10.66.0.2:80, ESTABLISHED
no_forged_flow() { ! b_holds 'src=10\.66\.0\.1 '; }

# ---- B's envelope counters ----
REFUSALS="plain truncated malformed unknown_key_id bad_tag replayed stale_session unsolicited reflected wrong_peer"
env_json() { ctl "$1" -s network --json | "$PY" -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["envelope"]))'; }
counter() { env_json "$1" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$2"; }
snap() { env_json B >"$WORK/snap.json"; }
# refusals_are [REASON=N...]: since snap, B refused N more datagrams for
# each REASON given, and not one more for any other reason.
refusals_are() {
	env_json B | "$PY" -c '
import json, sys
old = json.load(open(sys.argv[1])); new = json.load(sys.stdin)
want = dict(a.split("=") for a in sys.argv[3:])
sys.exit(any(new[k] - old[k] != int(want.get(k, 0)) for k in sys.argv[2].split()))
' "$WORK/snap.json" "$REFUSALS" "$@"
}
# grown: what B's refusal counters gained since snap, for the messages.
grown() {
	env_json B | "$PY" -c '
import json, sys
old = json.load(open(sys.argv[1])); new = json.load(sys.stdin)
print(" ".join("%s+%d" % (k, new[k] - old[k]) for k in sys.argv[2].split() if new[k] != old[k]) or "none")
' "$WORK/snap.json" "$REFUSALS"
}
strangers() {
	ctl B -s link --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["links"][0]["strangers_dropped"])'
}
# at_least N COMMAND...: COMMAND prints at least N (for wait_until: run anew each time).
at_least() { local n=$1; shift; (($("$@") >= n)); }

# attack WHAT FILE EXPECT...: the datagrams of FILE from X in A's name; B
# refuses them as EXPECT says (REASON=N), takes no state from them (its
# count stays $HELD, no forged flow) and counts nothing else.
attack() {
	local what=$1 file=$2 rc
	shift 2
	snap
	x_send <"$file"
	wait_until 5 refusals_are "$@"; rc=$?
	check "$LABEL: $what: refused as $* (B counted: $(grown))" test $rc -eq 0
	check "$LABEL: $what: B still holds its $HELD states of A, and no forged one" \
		eval 'b_has "$HELD" && no_forged_flow'
}

# mutations BASE KIND...: BASE (one datagram in hex) changed as each KIND says.
mutations() {
	local base=$1 k
	shift
	for k in "$@"; do forge mutate "$k" <<<"$base" || return 1; done
}

# hold_a on|off: B's port drops what comes from A's own interface (not
# X's forgeries in A's name): an attacker holding A's datagrams back.
hold_a() {
	if [[ $1 == on ]]; then
		ip netns exec "$NS_B" nft -f - <<NFT
table netdev hold {
	chain in { type filter hook ingress device "syncB" priority 0; ether saddr $MAC_A udp dport 3780 drop; }
}
NFT
	else
		ip netns exec "$NS_B" nft delete table netdev hold
	fi
}

stop_side() { pair_stop "$1"; wait_until 5 test ! -e "$WORK/$1.lock"; }
restart_side() { stop_side "$1" && pair_start "$1"; }

# ---- one run: the pair keyed, with MODE_OPTS ----
run() {
	LABEL=$1
	NO_EXT=$2
	local base n sid1 s0 c0 f0 lines
	MODE_OPTS=
	[[ $NO_EXT == on ]] && MODE_OPTS="DisableExternalCache on"
	pair_conf A FTFW "Key $WORK/k1"
	pair_conf B FTFW "Key $WORK/k1"
	pair_start A && pair_start B || { fail "$LABEL: the daemons start"; return 1; }
	load 100 1000
	check "$LABEL: A's 100 states reach B" wait_until 20 b_has 100

	# -- A's envelopes, recorded while A sends states 1100..1129 one by one
	record "$WORK/rec1" 20
	load 30 1100 0.05
	wait "$SNIFFER"
	HELD=130
	check "$LABEL: A's 130 states reach B" wait_until 10 b_has 130
	n=$(grep -c . "$WORK/rec1")
	check "$LABEL: the sniffer recorded A's envelopes ($n)" test "$n" -ge 5
	# DATA goes AES-256-GCM between nodes whose CPUs have AES-NI and PCLMUL
	# (libsodium's condition), XChaCha20-Poly1305 otherwise.
	if grep -qw aes /proc/cpuinfo && grep -qw pclmulqdq /proc/cpuinfo; then
		check "$LABEL: A seals DATA under AES-256-GCM and B opens it ($(counter A sealed_aes256gcm) sealed, $(counter B delivered_aes256gcm) opened)" \
			eval '(($(counter A sealed_aes256gcm) > 0 && $(counter B delivered_aes256gcm) > 0)) && [[ $(counter A data_cipher) == aes256gcm ]]'
	else
		check "$LABEL: without AES-NI, DATA stays XChaCha20-Poly1305" \
			eval '(($(counter A sealed_aes256gcm) == 0)) && [[ $(counter A data_cipher) == xchacha20poly1305 ]]'
	fi
	base=$(head -n1 "$WORK/rec1")

	# -- a 1.4.7 datagram: a "restarted" A with an ESTABLISHED flow.
	# Unkeyed, B would take it (HELLO: any sequence number is in sync).
	forge plain-ct-new 10.66.0.1 10.66.0.2 4444 80 >"$WORK/plain"
	attack "a plain 1.4.7 CT_NEW" "$WORK/plain" plain=1

	# -- one bit flipped: the header is the AEAD's additional data, so a
	# flip anywhere but in the bytes read before the cryptography fails
	# the tag; version, type and length are refused before it.
	mutations "$base" flip-sid flip-counter flip-body flip-tag >"$WORK/flips"
	attack "a bit flipped in the sid, the counter, the ciphertext, the tag" "$WORK/flips" bad_tag=4
	mutations "$base" flip-version flip-type flip-len-down >"$WORK/flips"
	attack "a bit flipped in the version, the type, the length (shorter)" "$WORK/flips" malformed=3
	mutations "$base" flip-keyid >"$WORK/flips"
	attack "a bit flipped in the key id" "$WORK/flips" unknown_key_id=1

	# -- cut short, or a length beyond the datagram
	mutations "$base" cut-header cut-one magic-only flip-len-up >"$WORK/cuts"
	attack "cut short (3 ways) or a length beyond the datagram" "$WORK/cuts" truncated=4

	# -- sealed with a key B does not have: under its own id, and under
	# the id of B's key (which only a holder of the key can compute; a
	# recorded envelope shows it)
	forge seal random <<<"$base" >"$WORK/other-key"
	attack "sealed with another key" "$WORK/other-key" unknown_key_id=1
	forge seal random "${base:8:4}" <<<"$base" >"$WORK/other-key"
	attack "sealed with another key under A's key id" "$WORK/other-key" bad_tag=1

	# -- garbage behind the magic byte
	forge garbage 20 "$$" >"$WORK/garbage"
	attack "20 datagrams of garbage behind the magic byte" "$WORK/garbage" malformed=10 truncated=10

	# -- A's envelopes again, in the session they belong to: each once only
	attack "A's $n recorded envelopes replayed in their session" "$WORK/rec1" replayed="$n"

	# -- the same from X's own address: the link drops a stranger before the envelope
	f0=$(strangers)
	snap
	x_send 198.18.1.66 <"$WORK/rec1"
	check "$LABEL: from X's own address, the link drops them as strangers" \
		wait_until 5 at_least $((f0 + n)) strangers
	check "$LABEL: ... before the envelope (B counted: $(grown))" refusals_are

	# -- A restarts; its previous session's envelopes are played to B.
	# B asks that session to prove itself; A's new process does not answer
	# for it, so B proves nothing and takes nothing.
	sid1=$(forge sid <<<"$base")
	s0=$(counter B sessions_accepted)
	restart_side A || fail "$LABEL: A restarts"
	check "$LABEL: B proves A's new session" wait_until 10 at_least $((s0 + 1)) counter B sessions_accepted
	check "$LABEL: B still holds A's 130 states" wait_until 10 b_has 130
	sleep 1         # A's first datagrams were refused until the proof: done
	c0=$(counter B challenges_sent)
	lines=$(wc -l <"$WORK/B.log")
	attack "A's previous session's $n envelopes, after A restarted" "$WORK/rec1" stale_session="$n"
	check "$LABEL: B challenged the recorded session" test "$(counter B challenges_sent)" -gt "$c0"
	check "$LABEL: A's new process ignored the challenges for its old session" \
		wait_until 3 at_least 1 counter A challenges_for_others
	sleep 2.5       # a challenge is answered within 2 s, or never
	check "$LABEL: B accepted no session but A's restart" test "$(counter B sessions_accepted)" -eq $((s0 + 1))
	check "$LABEL: B's log shows no proof of the recorded session $sid1" \
		eval '! tail -n +$((lines + 1)) "$WORK/B.log" | grep -Eq "proved (its|a new) session $sid1"'
	check "$LABEL: ... and still no forged flow" eval 'b_has 130 && no_forged_flow'

	# -- B restarts; envelopes recorded before are played to it.  They
	# carry states 1200..1219 that A deleted since: if B took any, they
	# would be back.  The attacker holds A's own datagrams back meanwhile
	# (envelope.md §3.6: it may delay), so that its recordings are the
	# first B hears of A's session, and B's challenge gets no answer.
	record "$WORK/rec2" 30
	load 20 1200 0.05
	wait "$SNIFFER"
	check "$LABEL: A's states 1200..1219 reach B" wait_until 10 b_has 150
	n=$(grep -c . "$WORK/rec2")
	unload 20 1200
	check "$LABEL: ... and their deletion too" wait_until 10 b_has 130
	hold_a on
	restart_side B || fail "$LABEL: B restarts"
	x_send <"$WORK/rec2"
	check "$LABEL: B, restarted, refuses the $n recorded envelopes: A's session is not proven" \
		wait_until 5 eval '[[ $(counter B stale_session) == "$n" ]]'
	sleep 1
	check "$LABEL: ... and B delivered nothing, proved nothing" \
		eval '[[ $(counter B delivered) == 0 && $(counter B sessions_accepted) == 0 ]]'
	hold_a off
	check "$LABEL: A's own datagrams let B prove A's session" wait_until 10 at_least 1 counter B sessions_accepted
	ctl B -n >/dev/null
	check "$LABEL: B is brought A's real table ($(a_count) states)" \
		wait_until 15 eval 'b_has "$(a_count)"'
	check "$LABEL: no state A deleted is back on B" eval '! b_holds "sport=12[01][0-9] "'
	sleep 0.5       # nothing of A's sealed before the proof is still on its way
	attack "the $n recorded envelopes again, after B proved A's session" "$WORK/rec2" replayed="$n"
	check "$LABEL: ... still no state A deleted on B" eval '! b_holds "sport=12[01][0-9] "'
	check "$LABEL: B proved A's session once" test "$(counter B sessions_accepted)" -eq 1

	# -- after all that, A's replication goes on
	load 20 1300
	check "$LABEL: A's new states still reach B" wait_until 10 b_has 150
	check "$LABEL: no forged flow on B" no_forged_flow

	# -- the key's text is nowhere to be read
	{
		ctl A -s; ctl B -s; ctl B -s network; ctl A -s network --json; ctl B -s network --json; ctl B -s --json
		ctl A --check 2>&1
	} >"$WORK/outputs.txt" 2>&1
	check "$LABEL: the key's text is in no log, no -s output, no --check output" \
		eval '! grep -qF -- "$KEY_TEXT" "$WORK/outputs.txt" "$WORK/A.log" "$WORK/B.log"'

	stop_side A; stop_side B
	ct_in A -F >/dev/null; ct_in B -F >/dev/null
	mv "$WORK/A.log" "$WORK/A-$LABEL.log"; mv "$WORK/B.log" "$WORK/B-$LABEL.log"
}

run external-cache off
run no-external-cache on
finish
