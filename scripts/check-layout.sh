#!/usr/bin/env bash
# The layout's rules (docs/architecture.md), checked: fails, naming every
# offence, when
#  - a file of a lower layer includes a header of a layer above it:
#      pkt, text, crypto        include nothing of weft above them
#      router, tun, ndp         (leaves) only pkt/
#      wg (the protocol)        only crypto/, router/, pkt/ and text/
#      port, mesh               nothing of datapath/ or daemon/ or cli/
#      datapath                 nothing of daemon/ or cli/
#  - a source file outside tests/ and fuzz/ is over 900 lines;
#  - the protocol's library (weft_wg) links liburing or libbpf.
# Run from anywhere in the checkout; $WEFT_BUILD_DIR (default build/) is the
# configured build whose dependency graph is read for the last rule.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${WEFT_BUILD_DIR:-build}
fail=0
offence() { echo "check-layout: $*" >&2; fail=1; }

# allowed LAYER: the folders a file of LAYER may include from, besides its own.
allowed() {
	case $1 in
	pkt | text | crypto) echo "" ;;
	router | tun | ndp) echo "pkt" ;;
	wg) echo "crypto router pkt text" ;;
	port) echo "crypto router pkt text tun ndp wg" ;;
	mesh) echo "crypto router pkt text tun ndp wg port" ;;
	datapath) echo "crypto router pkt text tun ndp wg port mesh" ;;
	esac
}

for layer in pkt text crypto router tun ndp wg port mesh datapath; do
	ok=" $(allowed "$layer") $layer "
	for f in "$layer"/*.[ch]; do
		[[ -e $f ]] || continue
		while IFS= read -r line; do
			inc=${line#*\"}
			inc=${inc%%\"*}
			top=${inc%%/*}
			[[ $inc == */* ]] || continue
			[[ $ok == *" $top "* ]] || offence "$f includes $inc ($top/ is not below $layer/)"
		done < <(grep -E '^#include "' "$f")
	done
done

while read -r n f; do
	[[ $f == total ]] && continue
	((n > 900)) && offence "$f has $n lines (at most 900)"
done < <(git ls-files -- '*.c' '*.h' '*.sh' '*.py' ':!tests/' ':!fuzz/' | xargs wc -l)

# What weft_wg links, transitively, as CMake's dependency graph of the
# configured build draws it.
if [[ -f $build/CMakeCache.txt ]]; then
	graph=$(mktemp -d)
	trap 'rm -rf "$graph"' EXIT
	(cd "$graph" && cmake --graphviz=deps.dot "$OLDPWD/$build" >/dev/null 2>&1)
	if [[ ! -f $graph/deps.dot.weft_wg ]]; then
		offence "cmake drew no dependency graph of weft_wg from $build"
	elif grep -qiE 'uring|bpf' "$graph/deps.dot.weft_wg"; then
		offence "weft_wg links $(grep -oiE '"[^"]*(uring|bpf)[^"]*"' "$graph/deps.dot.weft_wg" | sort -u | tr '\n' ' ')"
	fi
else
	offence "$build is not a configured build folder: configure it first (scripts/build.sh)"
fi

((fail)) && exit 1
echo "check-layout: the layers, file sizes and weft_wg's libraries are as they should be"
