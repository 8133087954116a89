#!/usr/bin/env bash
# Builds and runs weft's libFuzzer targets (see fuzz/README.md).
#
#   fuzz/run.sh build                 configure and build build-fuzz with clang
#   fuzz/run.sh regress               every target over its checked-in corpus, once
#   fuzz/run.sh smoke [SECONDS]       every target for SECONDS (default 20), new
#                                     inputs to a scratch folder
#   fuzz/run.sh long TARGET HOURS [RUNS]
#                                     one target for hours (or RUNS executions),
#                                     in build-fuzz/fuzz-work/TARGET
#   fuzz/run.sh merge TARGET DIR...   add the inputs of DIR that find new coverage
#                                     to the checked-in corpus
#
# Exits non-zero when a target crashes, leaks, hangs or fails a check; the
# input that did it is left under build-fuzz/fuzz-artifacts/.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${WEFT_FUZZ_BUILD:-$ROOT/build-fuzz}
BIN=$BUILD/fuzz
CORPUS=$ROOT/fuzz/corpus
ARTIFACTS=$BUILD/fuzz-artifacts
# The targets are listed by fuzz/CMakeLists.txt, which writes them to
# $BIN/targets.txt when the build is configured (fuzz_ndp joins once the
# ndp library is part of the build).
TARGETS=()

USER_ASAN_OPTIONS=${ASAN_OPTIONS:-}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

die() { echo "run.sh: $*" >&2; exit 2; }

usage() { sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }

load_targets() {
	[[ -f $BIN/targets.txt ]] || die "$BIN/targets.txt missing: run 'fuzz/run.sh build' first"
	mapfile -t TARGETS < <(grep -v '^$' "$BIN/targets.txt")
	((${#TARGETS[@]} > 0)) || die "no targets in $BIN/targets.txt"
}

is_target() {
	local t
	for t in "${TARGETS[@]}"; do [[ $t == "$1" ]] && return 0; done
	return 1
}

need_built() {
	local t
	load_targets
	for t in "${TARGETS[@]}"; do
		[[ -x $BIN/$t ]] || die "$BIN/$t missing: run 'fuzz/run.sh build' first"
	done
}

# Sets OPTS, the options every run shares: a hang is a failure, crashes go
# to ARTIFACTS, the target's dictionary when it has one.
common_opts() {
	local t=$1
	mkdir -p "$ARTIFACTS"
	OPTS=(-timeout=10 -rss_limit_mb=2048 "-artifact_prefix=$ARTIFACTS/$t-")
	if [[ -f $ROOT/fuzz/$t.dict ]]; then
		OPTS+=("-dict=$ROOT/fuzz/$t.dict")
	fi
}

cmd_build() {
	command -v clang >/dev/null || die "clang not found (apt-get install clang libclang-rt-14-dev llvm)"
	CC=clang cmake -S "$ROOT" -B "$BUILD" -DWEFT_FUZZ=ON
	load_targets
	# weftd and weft too: this is CI's clang build, so clang's lock
	# analysis (-Wthread-safety, wg/lock.h) sees every file.
	make -C "$BUILD" -j"$(nproc)" "${TARGETS[@]}" gen_corpus weftd weft
}

cmd_regress() {
	local t failed=0 files
	need_built
	for t in "${TARGETS[@]}"; do
		shopt -s nullglob
		files=("$CORPUS/$t"/*)
		shopt -u nullglob
		if ((${#files[@]} == 0)); then
			echo "== $t: no corpus"
			continue
		fi
		echo "== $t: ${#files[@]} inputs"
		# Files given one by one are executed once each; nothing is written back.
		common_opts "$t"
		if ! "$BIN/$t" "${OPTS[@]}" "${files[@]}" >"$ARTIFACTS/$t.regress.log" 2>&1; then
			echo "FAIL $t (log: $ARTIFACTS/$t.regress.log)"
			tail -n 30 "$ARTIFACTS/$t.regress.log"
			failed=1
		fi
	done
	return $failed
}

# Runs one target for a time; new inputs go to work (never the checked-in corpus).
fuzz_for() {
	local t=$1 seconds=$2 work=$3 log=$4
	shift 4
	mkdir -p "$work"
	echo "== $t: ${seconds}s, new inputs in $work, log $log"
	common_opts "$t"
	if ! "$BIN/$t" "${OPTS[@]}" -max_total_time="$seconds" -print_final_stats=1 \
		"$@" "$work" "$CORPUS/$t" >"$log" 2>&1; then
		echo "FAIL $t (log: $log)"
		tail -n 40 "$log"
		return 1
	fi
	grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|Done)' "$log" || true
}

cmd_smoke() {
	local seconds=${1:-20} t failed=0 scratch
	[[ $seconds =~ ^[0-9]+$ ]] || die "SECONDS must be a number"
	need_built
	scratch=$(mktemp -d "${TMPDIR:-/tmp}/weft-fuzz-smoke.XXXXXX")
	for t in "${TARGETS[@]}"; do
		fuzz_for "$t" "$seconds" "$scratch/$t" "$scratch/$t.log" || failed=1
	done
	((failed)) || rm -rf "$scratch"
	return $failed
}

cmd_long() {
	local t=${1:-} hours=${2:-} runs=${3:-}
	load_targets
	is_target "$t" || die "TARGET is one of: ${TARGETS[*]}"
	[[ $hours =~ ^[0-9]+([.][0-9]+)?$ ]] || die "HOURS must be a number"
	[[ -z $runs || $runs =~ ^[0-9]+$ ]] || die "RUNS must be a number"
	need_built
	# A smaller quarantine than ASan's 256 MiB: with the default, every
	# input's large allocations (the mesh's inbox and outbox) land on fresh
	# pages, and fuzz_mesh runs at less than half the speed. Freed memory
	# is still poisoned until 16 MiB more has been freed.
	[[ -n $USER_ASAN_OPTIONS ]] || export ASAN_OPTIONS=detect_leaks=1:quarantine_size_mb=16
	local seconds
	seconds=$(awk -v h="$hours" 'BEGIN { printf "%d", h * 3600 }')
	fuzz_for "$t" "$seconds" "$BUILD/fuzz-work/$t" "$BUILD/fuzz-work/$t.log" \
		${runs:+-runs="$runs"}
}

cmd_merge() {
	local t=${1:-}
	load_targets
	is_target "$t" || die "TARGET is one of: ${TARGETS[*]}"
	shift
	(($# > 0)) || die "merge needs at least one folder of inputs"
	need_built
	mkdir -p "$CORPUS/$t"
	common_opts "$t"
	"$BIN/$t" "${OPTS[@]}" -merge=1 "$CORPUS/$t" "$@"
}

case ${1:-} in
build) cmd_build ;;
regress) cmd_regress ;;
smoke) shift; cmd_smoke "$@" ;;
long) shift; cmd_long "$@" ;;
merge) shift; cmd_merge "$@" ;;
*) usage ;;
esac
