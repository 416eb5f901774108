#!/bin/bash
# The heavy variant of tests/failover/chain3.sh: the same chain of failovers
# through three firewalls, with CHAIN_BULK (default 200,000) other TCP states
# on the firewalls, more than FTFW's 131,072-message resend window (issue
# 18's hard case).  It takes minutes, so it is not part of `make check`.
#
#   bench/chain3.sh [BUILD_DIR]     (default build/default; run as root)
#
# The other CHAIN_* variables of the test's header apply too, e.g.
# CHAIN_PEER_TIMEOUT=1 bench/chain3.sh.  The test's output goes to stdout;
# its exit status is the test's (0 pass, 1 fail, 77 skip, 99 error).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$here/build/default}" 2>/dev/null && pwd) || {
	echo "chain3: no build directory '${1:-$here/build/default}' (scripts/build.sh makes one)" >&2
	exit 99
}
[[ -x $build/ctsyncd && -x $build/bench/ctload ]] || {
	echo "chain3: $build has no ctsyncd or bench/ctload: build it first" >&2
	exit 99
}
export CHAIN_BULK=${CHAIN_BULK:-200000}
export top_builddir=$build CTSYNCD=$build/ctsyncd
exec "$here/tests/failover/chain3.sh"
