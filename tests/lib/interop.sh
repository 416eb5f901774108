# Helpers for the tests that pair ctsyncd with Debian's conntrackd 1.4.7
# (tests/interop/, the 1.4.7 half of tests/integration/expect.sh).  Source
# it after pair.sh.

# old_ctl SIDE ARGS...: conntrackd 1.4.7's client against the daemon of SIDE
# (whichever it is: the client only needs the UNIX path of SIDE's config).
old_ctl() {
	local side=$1 ns
	[[ $side == A ]] && ns=$NS_A || ns=$NS_B
	shift
	ip netns exec "$ns" conntrackd -C "$WORK/$side.conf" "$@" 2>/dev/null
}

# ns_pid NS COMM: the PID of the process named COMM in namespace NS (ours:
# the namespace is).  1.4.7 leaves its lock file empty, so this is how we
# find it.
ns_pid() {
	local p
	for p in $(ip netns pids "$1"); do
		[[ $(cat "/proc/$p/comm" 2>/dev/null) == "$2" ]] && { echo "$p"; return 0; }
	done
	return 1
}

# old_net_clean TEXT: TEXT (1.4.7's `-s network`) shows its receive error
# counters (malformed, wrong version, malformed header/payload, bad type,
# truncated, bad size) and every one of them is zero.
old_net_clean() {
	python3 -c '
import re, sys
t = sys.argv[1]
bad = [int(n) for n in re.findall(r"(?im)^\s*(?:malformed|wrong protocol|bad message|truncated)[^:]*:\s*(\d+)", t)]
if not bad or any(bad):
    sys.exit("1.4.7 -s network: %r" % t)
' "$1"
}

# kernel_line SIDE PATTERN: SIDE's kernel lines for the states matching
# PATTERN (labels included), without what differs between two kernels
# (timeout, use count).
kernel_line() {
	ct_in "$1" -L -o extended,labels | grep -- "$2" | awk '{ $5 = ""; print }' | sed 's/ use=[0-9]*//'
}

# dump_norm: a dump (-i or -e, of ctsyncd or of 1.4.7) on stdin, in a form
# in which the two programs' dumps of the same states compare equal: one
# line per state, sorted, without the reply tuple (only -i has it), the
# age suffix ("[active since Ns]" of 1.4.7, and of ctsyncd; "[expires in Ns]" in ALARM),
# a timeout column, and the fields that libnetfilter_conntrack's plain
# line (1.4.7's dumps) does not print at all: labels and master.  Those
# two are compared in the kernels (kernel_line) and in ctsyncd's -e.
dump_norm() {
	python3 -c '
import re, sys
tup = r" src=\S+ dst=\S+(?: sport=\d+ dport=\d+| type=\d+ code=\d+ id=\d+)?"
out = []
for line in sys.stdin:
    line = re.sub(r" \[(?:active since \d+s|updated \d+s ago|expires in \d+s)\]", "", line.strip())
    line = re.sub(r" (?:labels=\S+|master=\S+)", "", line)
    line = re.sub(r"^(\S+ +\d+) \d+ ", r"\1 ", line)
    tuples = list(re.finditer(tup, line))
    if len(tuples) > 1:
        line = line[:tuples[1].start()] + line[tuples[1].end():]
    if line:
        out.append(" ".join(line.split()))
print("\n".join(sorted(out)))
'
}

# dumps_agree WHAT FILE1 FILE2: FILE1 and FILE2 (raw dumps) are the same
# once normalised; prints both and the difference if not.
dumps_agree() {
	local a b
	a=$(dump_norm <"$2") b=$(dump_norm <"$3")
	if [[ -n $a && $a == "$b" ]]; then
		pass "$1 ($(grep -c . <<<"$a") lines)"
		return 0
	fi
	fail "$1"
	diff <(echo "$a") <(echo "$b") | sed 's/^/	/'
	return 1
}

# untrack_sync: the sync traffic (UDP port 3780) is not tracked in either
# namespace; once anything there loads conntrack (a helper, a label rule),
# it would otherwise add states of its own to every dump.
untrack_sync() {
	local ns
	for ns in "$NS_A" "$NS_B"; do
		ip netns exec "$ns" nft -f - <<'NFT' || return 1
table inet untrack_sync {
	chain pre { type filter hook prerouting priority raw; udp dport 3780 notrack; }
	chain out { type filter hook output priority raw; udp dport 3780 notrack; }
}
NFT
	done
}
