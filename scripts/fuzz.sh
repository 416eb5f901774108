#!/bin/bash
# Build every libFuzzer harness (tests/fuzz/fuzz_*.c) with clang, ASan and
# UBSan, and run each for a bounded time on a copy of its seed corpus, as
# many at once as there are CPUs.
#   scripts/fuzz.sh [SECONDS_PER_HARNESS]      (default 20)
# A crash, leak or sanitizer report fails the run; the reproducer is kept
# in build/fuzz/artifacts/.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-20}
dir=$top/build/fuzz
fuzz_flags="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined"

"$top/scripts/build.sh" "$dir" CC=clang "CFLAGS=$fuzz_flags" >/dev/null
# the libraries the daemon links, as this build's configure chose them (libbpf is optional)
libs=$(make -s -C "$dir" -f Makefile -f - print-libs <<<'print-libs: ; @echo $(CTSYNCD_LIBS)' |
	sed 's/libctsyncd\.a//')
mkdir -p "$dir/artifacts"
# Every harness is built before any runs: the runs are bounded by time, and
# side by side they take SECONDS for each CPU's share of them.
names=()
for src in "$top"/tests/fuzz/fuzz_*.c; do
	name=$(basename "$src" .c)
	clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -I"$top/include" -I"$dir" \
		"$src" "$dir/libctsyncd.a" $libs -o "$dir/$name.libfuzzer"
	names+=("$name")
done

# run NAME: fuzz NAME for SECONDS on a fresh copy of its seed corpus;
# its exit status is libFuzzer's.
run() {
	local name=$1 corpus_name=${1#fuzz_} work
	work=$dir/corpus-$corpus_name
	rm -rf "$work"
	mkdir -p "$work"
	[[ -d $top/tests/fuzz/corpus/$corpus_name ]] && cp -r "$top/tests/fuzz/corpus/$corpus_name/." "$work/"
	"$dir/$name.libfuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$dir/artifacts/$name-" -print_final_stats=1 "$work" >"$dir/$name.out" 2>&1
}

jobs_max=$(nproc)
declare -A pid_of
for name in "${names[@]}"; do
	while (($(jobs -rp | wc -l) >= jobs_max)); do wait -n || true; done
	run "$name" &
	pid_of[$name]=$!
done
passed=0 failed=0
for name in "${names[@]}"; do
	if wait "${pid_of[$name]}"; then
		execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$dir/$name.out" | grep -o '[0-9]*$' || echo '?')
		echo "ok   - $name: $execs inputs in ${seconds}s, no crash"
		passed=$((passed + 1))
	else
		echo "FAIL - $name: see $dir/$name.out"
		tail -n 30 "$dir/$name.out"
		failed=$((failed + 1))
	fi
done
echo "fuzz: $passed passed, $failed failed"
((failed == 0))
