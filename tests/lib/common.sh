# Shared helpers for the shell tests.  Source it; it sets `set -u`, a work
# directory, a cleanup trap that stops this test's daemons by PID and deletes
# this test's namespaces, and bounded waiting helpers.
#
# Every namespace a test creates is named "$NS_PREFIX<name>", with the test's
# PID in the prefix, so parallel runs never collide.

set -u

TEST_NAME=$(basename "$0" .sh)
NS_PREFIX="cts$$-"
WORK=$(mktemp -d "/tmp/ctsyncd-$TEST_NAME.XXXXXX")
CTSYNCD=${CTSYNCD:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/ctsyncd}
TESTS_PASSED=0
TESTS_FAILED=0

log() { printf '%s: %s\n' "$TEST_NAME" "$*"; }

pass() {
	TESTS_PASSED=$((TESTS_PASSED + 1))
	printf 'ok   - %s\n' "$*"
}

fail() {
	TESTS_FAILED=$((TESTS_FAILED + 1))
	printf 'FAIL - %s\n' "$*"
}

# check "description" command...: pass if the command succeeds.
check() {
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}

# Skip (exit 77 for automake) unless root: the suite runner turns skips into failures.
require_root() {
	if [[ $(id -u) -ne 0 ]]; then
		echo "$TEST_NAME: needs root (network namespaces, conntrack); skipped" >&2
		exit 77
	fi
}

require_cmd() {
	local c
	for c in "$@"; do
		if ! command -v "$c" >/dev/null 2>&1; then
			echo "$TEST_NAME: '$c' is missing: run scripts/install-deps.sh" >&2
			exit 99
		fi
	done
}

# Remember a PID to kill at exit.  Kept in a file, so that it also works
# from a subshell such as $(...).
# built_tool PATH: a program the build makes (bench/ctload,
# tests/integration/kernel-driver): in $top_builddir when make check runs the
# test, else in the top of the source tree (an in-tree build).
built_tool() { echo "${top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)}/$1"; }
# require_built PROGRAM: exit 99 (a hard error, not a skip) when it was not built.
require_built() { [[ -x $1 ]] || { echo "$TEST_NAME: $1 is not built (make check builds it)" >&2; exit 99; }; }

track_pid() { echo "$1" >>"$WORK/.pids"; }

# Create a namespace "$NS_PREFIX$1" with lo up; prints its full name.  It is
# recorded in a file, so `ns=$(make_netns a)` is still cleaned up at exit.
make_netns() {
	local ns="$NS_PREFIX$1"
	ip netns add "$ns" || return 1
	echo "$ns" >>"$WORK/.namespaces"
	ip -n "$ns" link set lo up
	echo "$ns"
}

# wait_until SECONDS command...: poll every 0.1 s, at most SECONDS (by the
# clock too: a slow command must not stretch the wait).
wait_until() {
	local limit=$(($1 * 10)) end=$((SECONDS + $1 + 1)) i
	shift
	for ((i = 0; i < limit && SECONDS < end; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

pid_alive() { kill -0 "$1" 2>/dev/null; }
pid_gone() { ! kill -0 "$1" 2>/dev/null; }

# with_labels NS COMMAND...: COMMAND in namespace NS, in a private mount
# namespace whose /etc is an overlay with an /etc/xtables/connlabel.conf
# that names bit 3 "lbl-a" and bit 70 "lbl-b" (conntrack(8) names labels
# through that file).  The host's /etc is never written.
with_labels() {
	mkdir -p "$WORK/etc-up" "$WORK/etc-work" || return 1
	unshare -m sh -c 'mount -t overlay overlay -o "lowerdir=/etc,upperdir=$0/etc-up,workdir=$0/etc-work" /etc &&
		mkdir -p /etc/xtables && printf "3 lbl-a\n70 lbl-b\n" >/etc/xtables/connlabel.conf &&
		exec ip netns exec "$@"' "$WORK" "$@"
}

_cleanup() {
	local rc=$? pid ns pids=() namespaces=()
	[[ -f $WORK/.pids ]] && mapfile -t pids <"$WORK/.pids"
	[[ -f $WORK/.namespaces ]] && mapfile -t namespaces <"$WORK/.namespaces"
	for pid in "${pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	for pid in "${pids[@]}"; do
		wait_until 3 pid_gone "$pid" || kill -KILL "$pid" 2>/dev/null
	done
	# Whatever still runs in our namespaces was started by this test (a
	# daemon started by a keepalived hook, say): stop it before the
	# namespace goes.
	for ns in "${namespaces[@]}"; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -KILL "$pid" 2>/dev/null
		done
	done
	for ns in "${namespaces[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	if ((rc != 0)) || ((TESTS_FAILED > 0)); then
		log "work directory kept for inspection: $WORK"
	else
		rm -rf "$WORK"
	fi
	return $rc
}
trap _cleanup EXIT
trap 'exit 130' INT TERM

# Print the closing line and exit with the right status.
finish() {
	# The duration helps order tests/automake.mk: the longest start first.
	printf '%s: %d passed, %d failed (%d s)\n' "$TEST_NAME" "$TESTS_PASSED" "$TESTS_FAILED" "$SECONDS"
	((TESTS_FAILED == 0))
	exit $?
}

# contains TEXT PATTERN: grep -E PATTERN in TEXT.
contains() { grep -Eq -- "$2" <<<"$1"; }

# give_sync_link NS: a device "sync0" with 198.18.0.1/24 in NS, for a daemon
# whose peer is not there (198.18.0.2 never answers; datagrams just go).
give_sync_link() {
	ip -n "$1" link add sync0 type veth peer name sync1 &&
	ip -n "$1" addr add 198.18.0.1/24 dev sync0 &&
	ip -n "$1" link set sync0 up && ip -n "$1" link set sync1 up
}
