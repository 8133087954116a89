#!/usr/bin/env bash
# Configures and builds weft: a normal build in build/, and with an argument
# (asan, or anything) also a sanitizer build (ASan + UBSan) in build-asan/.
#   scripts/build.sh          # build/
#   scripts/build.sh asan     # build/ and build-asan/
# Extra CMake options can come from $WEFT_CMAKE_ARGS; the folders from
# $WEFT_BUILD_DIR and $WEFT_ASAN_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${WEFT_BUILD_DIR:-build}
asan=${WEFT_ASAN_DIR:-build-asan}
jobs=$(nproc 2>/dev/null || echo 2)
# shellcheck disable=SC2086
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${WEFT_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j "$jobs"
if (($# > 0)); then
	# shellcheck disable=SC2086
	cmake -S . -B "$asan" -DCMAKE_BUILD_TYPE=Debug -DWEFT_SANITIZE=ON ${WEFT_CMAKE_ARGS:-} >/dev/null
	cmake --build "$asan" -j "$jobs"
fi
