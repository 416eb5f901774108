# bench/lib.sh: shell pieces shared by the benchmarks under bench/ and by
# scripts/ctsyncd-lab.  Source it after setting BENCH_NAME (the prefix of the
# messages, e.g. "compare").

# bench_need_pkg PKG: install a Debian package when dpkg says it is missing
bench_need_pkg() {
	local pkg=$1
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' && return 0
	echo "$BENCH_NAME: installing $pkg" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$pkg" >/dev/null ||
		{ apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$pkg" >/dev/null; }
}

# running PID: it exists and is not a zombie (daemons are reparented to
# PID 1, which may reap them only seconds later)
running() {
	local st
	st=$(awk '/^State:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
	[[ -n $st && $st != Z ]]
}

# stop one daemon by PID: TERM, up to 5 s, then KILL
stop_pid() {
	local pid=$1 i
	running "$pid" || return 0
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		running "$pid" || return 0
		sleep 0.05
	done
	kill -KILL "$pid" 2>/dev/null
}

# calc EXPR: floating-point arithmetic (awk), "nan" when it fails
calc() { awk "BEGIN { v = ($1); printf \"%.6g\\n\", v }" 2>/dev/null || echo nan; }

# bench_sync_link NS_A NS_B: the veth sync link syncA 198.18.1.1/24 (in NS_A)
# <-> syncB 198.18.1.2/24 (in NS_B), up with carrier (waits at most 5 s), and
# nf_conntrack_events=1 in both namespaces: every change of an entry reaches
# the daemon as an event, even for entries created before it subscribed
# (bench/README.md)
bench_sync_link() {
	local a=$1 b=$2 i ns
	ip link add syncA netns "$a" type veth peer name syncB netns "$b" || return 1
	ip -n "$a" addr add 198.18.1.1/24 dev syncA
	ip -n "$b" addr add 198.18.1.2/24 dev syncB
	ip -n "$a" link set syncA up
	ip -n "$b" link set syncB up
	for ((i = 0; i < 50; i++)); do
		[[ $(ip netns exec "$a" cat /sys/class/net/syncA/operstate) == up &&
			$(ip netns exec "$b" cat /sys/class/net/syncB/operstate) == up ]] && break
		sleep 0.1
	done
	for ns in "$a" "$b"; do
		ip netns exec "$ns" sysctl -qw net.netfilter.nf_conntrack_events=1
	done
}

# bench_daemon_pid LOCKFILE PROG NS: the PID of daemon PROG in namespace NS.
# ctsyncd writes it into its lock file; conntrackd 1.4.7 leaves its lock file
# empty, so take the PROG process of the namespace.
bench_daemon_pid() {
	local lock=$1 prog=$2 ns=$3 pid p
	pid=$(head -n1 "$lock" 2>/dev/null)
	if [[ $pid =~ ^[0-9]+$ ]] && [[ $(cat /proc/"$pid"/comm 2>/dev/null) == "$prog" ]]; then
		echo "$pid"
		return 0
	fi
	for p in $(ip netns pids "$ns"); do
		if [[ $(cat /proc/"$p"/comm 2>/dev/null) == "$prog" ]]; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# bench_write_conf FILE TITLE ME PEER DEV MODE_OPTS SYNC_LINES GENERAL_LINES:
# the benchmarks' configuration of one firewall, the same for every daemon
# kind: FTFW with MODE_OPTS over UDP on the sync link (198.18.1.ME to
# 198.18.1.PEER on DEV, 8 MiB socket buffers).  SYNC_LINES and GENERAL_LINES
# are further options, one per line, for the Sync and the General block.  The
# log, lock and control socket are FILE with .log, .lock and .ctl for .conf.
bench_write_conf() {
	local file=$1 title=$2 me=$3 peer=$4 dev=$5 mode_opts=$6 sync_lines=$7 general_lines=$8
	local stem=${1%.conf} line
	{
		printf '# %s\nSync {\n\tMode FTFW { %s}\n' "$title" "${mode_opts:+$mode_opts }"
		while IFS= read -r line; do [[ -n $line ]] && printf '\t%s\n' "$line"; done <<<"$sync_lines"
		printf '\tUDP {\n\t\tIPv4_address 198.18.1.%s\n\t\tIPv4_Destination_Address 198.18.1.%s\n' "$me" "$peer"
		printf '\t\tPort 3780\n\t\tInterface %s\n\t\tSndSocketBuffer 8388608\n\t\tRcvSocketBuffer 8388608\n\t}\n}\n' "$dev"
		printf 'General {\n\tSystemd off\n'
		while IFS= read -r line; do [[ -n $line ]] && printf '\t%s\n' "$line"; done <<<"$general_lines"
		printf '\tLogFile %s.log\n\tLockFile %s.lock\n\tUNIX { Path %s.ctl }\n}\n' "$stem" "$stem" "$stem"
	} >"$file"
}

# bench_make_key CTSYNCD FILE: a sync key made by `ctsyncd --genkey`, root's
# and mode 600 as ctsyncd demands of a key file; says why on failure.
bench_make_key() {
	local ctsyncd=$1 key=$2
	rm -f "$key"
	(umask 077 && "$ctsyncd" --genkey >"$key") && chown root:root "$key" && chmod 600 "$key" ||
		{ echo "$BENCH_NAME: cannot make the key $key with ctsyncd --genkey" >&2; return 1; }
	[[ $(stat -c '%u %a' "$key") == "0 600" ]] ||
		{ echo "$BENCH_NAME: $key is not root's with mode 600: $(stat -c '%U %a' "$key")" >&2; return 1; }
}
