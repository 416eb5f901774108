#!/bin/bash
# The whole test suite, from a fresh Debian 12 machine, as root:
# install what is needed, build with warnings as errors, run `make check`
# (unit tests, fuzz corpora, integration tests against the real kernel and
# conntrackd 1.4.7), again built with ASan+UBSan, `make distcheck`, short
# libFuzzer runs, and the Debian package (lintian, install, purge).  Ends with one line "suite: N passed, N failed".
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
start=$(date +%s)
passed=0 failed=0

step() {
	local name=$1
	shift
	local t0=$(date +%s)
	echo "=== $name"
	if "$@"; then
		echo "=== $name: ok ($(($(date +%s) - t0)) s)"
		passed=$((passed + 1))
	else
		echo "=== $name: FAILED ($(($(date +%s) - t0)) s)"
		failed=$((failed + 1))
	fi
}

# make check in BUILD_DIR; skipped tests count as failures (a suite that
# cannot run a test has not shown that it passes).
check_in() {
	local dir=$1 rc=0
	if (($# > 1)); then
		make -C "$dir" -j2 check TESTS="$2" >"$dir/check.out" 2>&1 || rc=1
	else
		make -C "$dir" -j2 check >"$dir/check.out" 2>&1 || rc=1
	fi
	grep -E '^(PASS|FAIL|XFAIL|XPASS|SKIP|ERROR):' "$dir/check.out" || true
	grep -E '^# (TOTAL|PASS|SKIP|XFAIL|FAIL|XPASS|ERROR):' "$dir/check.out" || true
	if ((rc)) || grep -Eq '^# (SKIP|FAIL|ERROR|XPASS): +[1-9]' "$dir/check.out"; then
		show_failed_logs "$dir"
		return 1
	fi
}

# The failed checks and the end of the log of every test under DIR that
# failed, skipped or erred.
show_failed_logs() {
	local log
	for log in $(grep -lE '^(FAIL|SKIP|ERROR)' $(find "$@" -path '*/tests/*' -name '*.log' 2>/dev/null) 2>/dev/null); do
		echo "--- $log"
		# The failed checks first: the tail may start after them.
		grep -E '^FAIL - ' "$log" | head -n 20
		tail -n 40 "$log"
	done
}

step "install dependencies" scripts/install-deps.sh || exit 1
step "build (warnings are errors)" scripts/build.sh build/default --enable-werror
step "make check" check_in build/default
step "build with ASan+UBSan" scripts/build.sh build/asan --enable-werror --enable-sanitizers
# The sanitizer and distcheck runs repeat the suite for their own reasons
# (memory errors; a tarball that builds and passes): the scale tests run
# smaller there (SUITE_SCALE=small, see tests/integration/loss.sh).
# The sanitizer run leaves out the tests whose subject is not the daemon's
# memory, to keep the suite under 20 minutes: the lab tools (lab.sh), the
# packaging sandbox (hardening.sh, where LeakSanitizer cannot run anyway),
# the resource agent's script (pacemaker.sh), the text layout of 1.4.7
# (stats_text.sh; check_compat_report renders it here), the keepalived
# failovers and cluster topologies (failover.sh, chain3.sh, active-active.sh,
# sync-levels.sh; the daemon's paths there are those of hotstandby.sh,
# kernel.sh, replication.sh, multinode.sh and filter.sh, which run here).
asan_tests() {
	make -s -C build/asan -f Makefile -f - print-tests <<<'print-tests: ; @echo $(TESTS)' |
		tr ' ' '\n' |
		grep -vE '^tests/(integration/(lab|pacemaker|active-active|sync-levels)|package/hardening|interop/stats_text|failover/(failover|chain3))\.sh$' |
		tr '\n' ' '
}
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	SUITE_SCALE=small step "make check with ASan+UBSan" check_in build/asan "$(asan_tests)"
# The tests the distcheck runs from the tarball: every unit, fuzz replay and
# simulator test, and the integration tests that start the daemon from the
# tarball's build, plain and keyed.  The two runs above have run them all;
# here what matters is that the tarball builds and holds what they need,
# which dist_holds_the_tree checks for every tracked file as well.
distcheck_tests() {
	make -s -C build/default -f Makefile -f - print-tests <<<'print-tests: ; @echo $(TESTS)' |
		tr ' ' '\n' | grep -E '^tests/(unit|fuzz|sim)/|^tests/integration/(lifecycle|replication|auth)\.sh$' |
		tr '\n' ' '
}
dist_holds_the_tree() {
	local dir missing
	dir=$(ls -d build/default/ctsyncd-*/ 2>/dev/null | head -n1)
	[[ -n $dir ]] || { echo "no distdir to compare"; return 1; }
	# Every tracked file but git's own, and every file README.md links to.
	missing=$({ git ls-files | grep -vxE '\.gitignore|m4/\.keep'
		grep -oE '\]\([^)#]+' README.md | sed 's/^](//' | grep -v '^[a-z]*://'; } |
		while read -r f; do [[ -e $dir/$f ]] || echo "$f"; done)
	[[ -z $missing ]] && return 0
	echo "tracked or linked files missing from the tarball:"
	echo "$missing"
	return 1
}
distcheck() {
	local tests
	tests=$(distcheck_tests)
	[[ -n $tests ]] || { echo "cannot list the tests"; return 1; }
	SUITE_SCALE=small make -C build/default -j"$(nproc)" distcheck DISTCHECK_CONFIGURE_FLAGS=--enable-werror \
		AM_MAKEFLAGS="TESTS='$tests'" >build/default/distcheck.out 2>&1 &&
		make -C build/default distdir >>build/default/distcheck.out 2>&1 && dist_holds_the_tree &&
		{ rm -rf build/default/ctsyncd-*/; return 0; }
	tail -n 60 build/default/distcheck.out
	show_failed_logs build/default/ctsyncd-*/_build
	return 1
}
step "make distcheck" distcheck
# The Debian package (tests/package/install.sh): built from a clean copy of
# the tree (the suite has run the tests, hence nocheck), lintian-clean
# (scripts/build-deb.sh), then installed into a throwaway root, its unit's
# condition, the keepalived hook and the purge checked.  It runs beside the
# libFuzzer step, whose runs are bounded by time, not by work.
package() {
	local t0=$(date +%s) deb rc=0
	deb=$(DEB_BUILD_OPTIONS=nocheck scripts/build-deb.sh build/deb | tail -n1) &&
		echo "built $deb in $(($(date +%s) - t0)) s" &&
		tests/package/install.sh "$deb" || rc=1
	echo "package step took $(($(date +%s) - t0)) s"
	return $rc
}
package >build/package.out 2>&1 &
package_pid=$!
step "libFuzzer runs" scripts/fuzz.sh "${FUZZ_SECONDS:-12}"
package_done() {
	local rc=0
	wait "$package_pid" || rc=1
	grep -E '^(FAIL|built|package step|install:)|^[EW]: ' build/package.out
	((rc)) && tail -n 40 build/package.out
	return $rc
}
step "Debian package (beside the libFuzzer runs)" package_done

echo "suite took $(($(date +%s) - start)) s"
echo "suite: $passed passed, $failed failed"
((failed == 0))
