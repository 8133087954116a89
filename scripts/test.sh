#!/usr/bin/env bash
# The whole check, as CI runs it: dependencies, both builds, then every test
# (unit and namespace integration) in each build. Exits non-zero on any
# failure; the ctest summaries are printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/build.sh asan
# The layout's rules (docs/architecture.md): layers, file sizes, weft_wg's
# libraries.
scripts/check-layout.sh

# Under ASan, leaks are reported when a daemon exits; the integration scripts
# fail a run whose daemon log has a sanitizer report.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

status=0
summaries=()
for dir in "${WEFT_BUILD_DIR:-build}" "${WEFT_ASAN_DIR:-build-asan}"; do
	# The offload variants of the integration tests (label "variant") run
	# in the normal build only, to keep the whole run well under 30 min.
	exclude=()
	[[ $dir == "${WEFT_ASAN_DIR:-build-asan}" ]] && exclude=(-LE variant)
	echo
	echo "=== ctest in $dir ==="
	log="$dir/ctest.log"
	# Unit tests run two at a time; integration tests are RUN_SERIAL.
	if (cd "$dir" && ctest --output-on-failure -j2 --timeout 300 "${exclude[@]}") </dev/null 2>&1 | tee "$log"; then
		:
	else
		status=1
	fi
	summaries+=("$dir: $(grep -E 'tests passed|tests failed' "$log" | tail -n1)")
done

# Every fuzz target replays its checked-in corpus, then fuzzes briefly.
echo
echo "=== fuzz: corpus regression and a short smoke run ==="
if fuzz/run.sh build && fuzz/run.sh regress && fuzz/run.sh smoke "${WEFT_FUZZ_SECONDS:-10}"; then
	summaries+=("fuzz: corpus regression and ${WEFT_FUZZ_SECONDS:-10} s smoke per target passed")
else
	summaries+=("fuzz: FAILED")
	status=1
fi

echo
echo "=== summary ==="
for s in "${summaries[@]}"; do echo "$s"; done
exit "$status"
