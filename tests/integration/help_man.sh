#!/usr/bin/env bash
# help_man.sh — --help and the man pages agree with the code. What the code
# accepts is read from the sources: weftd's and weft's getopt tables and
# option strings, the weft subcommand tables (cli/*.c, struct cli_command),
# the flags the subcommands compare their arguments with, and every
# getenv(). Each must appear in the --help of its program (weft's groups
# and commands each have their own) and in its man page (docs/man/*.scd);
# and every option, command and environment variable the help texts and
# man pages name must be one the code accepts.
#
#   WEFTD=path/to/weftd WEFT=path/to/weft tests/integration/help_man.sh
#
# Needs no root. Exits 77 when a binary is missing.
set -euo pipefail

SRC=${WEFT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
WEFTD=${WEFTD:-$SRC/build/daemon/weftd}
WEFT=${WEFT:-$SRC/build/cli/weft}
for b in "$WEFTD" "$WEFT"; do
	[[ -x $b ]] || { echo "help_man: SKIP: no binary $b (build it, or set WEFTD/WEFT)" >&2; exit 77; }
done
MAN_WEFTD=$SRC/docs/man/weftd.8.scd
MAN_WEFT=$SRC/docs/man/weft.8.scd
PROBLEMS=()
problem() { PROBLEMS+=("$*"); }

# ---- what the code accepts ---------------------------------------------------

# long_opts FILE: the names of a getopt_long table, with "--".
long_opts() { grep -oE '\{ "[a-z][a-z-]*", (no|required|optional)_argument' "$1" | cut -d'"' -f2 | sed 's/^/--/'; }
# short_opts FILE: the letters of the getopt_long option string, with "-".
short_opts() {
	grep -oE 'getopt_long\([^,]+, [^,]+, "[^"]*"' "$1" | sed 's/.*"\(.*\)"/\1/' |
		tr -d '+:' | grep -o . | sed 's/^/-/'
}
# env_vars DIR...: every getenv("NAME") in the C files of DIRs.
env_vars() { grep -rhoE 'getenv\("[A-Za-z_]+"\)' --include='*.c' "$@" | cut -d'"' -f2 | sort -u; }
# commands FILE: the names in its struct cli_command tables.
commands() {
	awk '/struct cli_command [a-z_]+\[\] = \{/ { t = 1; next } t && /^\};/ { t = 0 }
	     t && match($0, /\{ "[a-z][a-z-]*"/) { s = substr($0, RSTART + 3, RLENGTH - 4); print s }' "$1"
}

mapfile -t D_LONG < <(long_opts "$SRC/daemon/weftd.c")
mapfile -t D_SHORT < <(short_opts "$SRC/daemon/weftd.c")
mapfile -t D_ENV < <(env_vars "$SRC/daemon" "$SRC/datapath" "$SRC/port" "$SRC/mesh" "$SRC/wg" "$SRC/tun" \
	"$SRC/ndp" "$SRC/router" "$SRC/crypto" "$SRC/pkt")
mapfile -t C_ENV < <(env_vars "$SRC/cli")
# weft: main's options, then every flag a subcommand compares an argument with.
mapfile -t C_FLAGS < <({
	long_opts "$SRC/cli/weft.c"
	short_opts "$SRC/cli/weft.c"
	grep -ohE '"--?[a-zA-Z][a-z-]*"' "$SRC"/cli/*.c | tr -d '"'
} | sort -u)
C_CMDS=()
C_GROUPS=()
for f in "$SRC"/cli/*.c; do
	base=$(basename "$f" .c)
	while read -r c; do
		[[ -n $c ]] || continue
		if [[ $base == weft ]]; then
			C_CMDS+=("$c")
		elif [[ $base == *_cmd ]]; then
			C_CMDS+=("${base%_cmd} $c")
		fi
	done < <(commands "$f")
done
# A command of weft.c's table that has subcommands elsewhere is a group.
for c in "${C_CMDS[@]}"; do
	[[ $c == *" "* ]] && C_GROUPS+=("${c%% *}")
done
mapfile -t C_GROUPS < <(printf '%s\n' "${C_GROUPS[@]}" | sort -u)
is_group() { local g; for g in "${C_GROUPS[@]}"; do [[ $g == "$1" ]] && return 0; done; return 1; }
in_list() { local x=$1 y; shift; for y in "$@"; do [[ $x == "$y" ]] && return 0; done; return 1; }

((${#D_LONG[@]} >= 4 && ${#C_CMDS[@]} >= 8 && ${#C_FLAGS[@]} >= 6)) || {
	echo "help_man: FAIL: the sources did not parse (weftd options: ${D_LONG[*]}; weft commands: ${C_CMDS[*]})" >&2
	exit 1
}
echo "help_man: weftd accepts ${D_LONG[*]} ${D_SHORT[*]}; environment ${D_ENV[*]}" >&2
echo "help_man: weft commands: $(printf '[%s] ' "${C_CMDS[@]}"); flags ${C_FLAGS[*]}; environment ${C_ENV[*]}" >&2

# ---- the help texts ------------------------------------------------------------

D_HELP=$("$WEFTD" --help)
W_HELP=$("$WEFT" --help)
declare -A G_HELP=()
for g in "${C_GROUPS[@]}"; do G_HELP[$g]=$("$WEFT" "$g" --help); done
ALL_W_HELP=$W_HELP
for c in "${C_CMDS[@]}"; do
	[[ $c == *" "* ]] && continue
	is_group "$c" && continue
	# A plain command prints its help among its arguments, without a daemon.
	h=$("$WEFT" "$c" --help 2>&1) || problem "weft $c --help failed: $h"
	grep -qE "(^|[^a-z-])$c([^a-z-]|$)" <<<"$h" || problem "weft $c --help does not name $c"
	ALL_W_HELP+=$'\n'$h
done
for g in "${C_GROUPS[@]}"; do ALL_W_HELP+=$'\n'${G_HELP[$g]}; done

word_in() { grep -qE -- "(^|[^A-Za-z0-9_-])$1([^A-Za-z0-9_-]|$)" <<<"$2"; }

for o in "${D_LONG[@]}" "${D_SHORT[@]}"; do
	word_in "$o" "$D_HELP" || problem "weftd --help does not show $o"
done
for e in "${D_ENV[@]}"; do
	word_in "$e" "$D_HELP" || problem "weftd --help does not show the environment variable $e"
done
for c in "${C_CMDS[@]}"; do
	word_in "$c" "$W_HELP" || problem "weft --help does not show the command '$c'"
	if [[ $c == *" "* ]]; then
		word_in "${c#* }" "${G_HELP[${c%% *}]}" || problem "weft ${c%% *} --help does not show '$c'"
	fi
done
for f in "${C_FLAGS[@]}"; do
	word_in "$f" "$ALL_W_HELP" || problem "no weft help shows the flag $f"
done
for e in "${C_ENV[@]}"; do
	word_in "$e" "$W_HELP" || problem "weft --help does not show the environment variable $e"
done

# Vice versa: what the help texts offer, the code takes.
for o in $(grep -oE -- '(^|[ ,[(])--[a-z][a-z-]*' <<<"$D_HELP" | grep -oE -- '--[a-z-]+' | sort -u); do
	in_list "$o" "${D_LONG[@]}" || problem "weftd --help shows $o, which weftd does not take"
done
for o in $(grep -oE -- '(^|[ ,[(|])--?[a-zA-Z][a-z-]*' <<<"$ALL_W_HELP" | grep -oE -- '--?[a-zA-Z][a-z-]*' | sort -u); do
	in_list "$o" "${C_FLAGS[@]}" || problem "a weft help shows $o, which weft does not take"
done
# The lines of weft --help's command list: "  group sub ..." or "  command ...".
while read -r w1 w2 _; do
	if is_group "$w1"; then c="$w1 $w2"; else c=$w1; fi
	in_list "$c" "${C_CMDS[@]}" || problem "weft --help lists '$c', which weft does not take"
done < <(sed -n '/^Commands:/,/^$/p' <<<"$W_HELP" | grep -E '^  [a-z]')

# ---- the man pages ---------------------------------------------------------------

bold_in() { grep -qF -- "*$1*" "$2"; }
for o in "${D_LONG[@]}" "${D_SHORT[@]}"; do
	bold_in "$o" "$MAN_WEFTD" || problem "weftd(8) does not show *$o*"
done
for e in "${D_ENV[@]}"; do
	bold_in "$e" "$MAN_WEFTD" || problem "weftd(8) does not show the environment variable *$e*"
done
for c in "${C_CMDS[@]}"; do
	# A group is its subcommands (and its --help in the synopsis).
	if is_group "$c"; then
		bold_in "$c --help" "$MAN_WEFT" || problem "weft(8) does not show *$c --help*"
		continue
	fi
	bold_in "$c" "$MAN_WEFT" || problem "weft(8) does not show the command *$c*"
done
for f in "${C_FLAGS[@]}"; do
	bold_in "$f" "$MAN_WEFT" || problem "weft(8) does not show the flag *$f*"
done
for e in "${C_ENV[@]}"; do
	bold_in "$e" "$MAN_WEFT" || problem "weft(8) does not show the environment variable *$e*"
done

# Vice versa: every bold option in a page is one its program takes (the
# other program's options, mentioned in passing, are allowed), and every
# entry of weft(8)'s COMMANDS and of the ENVIRONMENT sections exists.
for o in $(grep -oE -- '\*--?[a-zA-Z][a-z-]*\*' "$MAN_WEFTD" | tr -d '*' | sort -u); do
	in_list "$o" "${D_LONG[@]}" "${D_SHORT[@]}" || problem "weftd(8) shows *$o*, which weftd does not take"
done
for o in $(grep -oE -- '\*--?[a-zA-Z][a-z-]*\*' "$MAN_WEFT" | tr -d '*' | sort -u); do
	in_list "$o" "${C_FLAGS[@]}" || problem "weft(8) shows *$o*, which weft does not take"
done
while read -r entry; do
	in_list "$entry" "${C_CMDS[@]}" || problem "weft(8) has an entry for *$entry*, which weft does not take"
done < <(sed -n '/^# COMMANDS/,/^# [A-Z]/p' "$MAN_WEFT" | grep -oE '^\*[a-z][a-z -]*\*' | tr -d '*')
while read -r e; do
	in_list "$e" "${D_ENV[@]}" || problem "weftd(8) documents *$e*, which weftd never reads"
done < <(sed -n '/^# ENVIRONMENT/,/^# [A-Z]/p' "$MAN_WEFTD" | grep -oE '^\*[A-Z][A-Z_]+\*|, \*[A-Z][A-Z_]+\*' | tr -d '*, ')
while read -r e; do
	in_list "$e" "${C_ENV[@]}" || problem "weft(8) documents *$e*, which weft never reads"
done < <(sed -n '/^# ENVIRONMENT/,/^# [A-Z]/p' "$MAN_WEFT" | grep -oE '^\*[A-Z][A-Z_]+\*' | tr -d '*')

# The pages are valid scdoc (when scdoc is there to say so).
if command -v scdoc >/dev/null 2>&1; then
	for p in "$MAN_WEFTD" "$MAN_WEFT"; do
		scdoc <"$p" >/dev/null 2>"/tmp/help_man.$$" || problem "scdoc $(basename "$p"): $(cat "/tmp/help_man.$$")"
		rm -f "/tmp/help_man.$$"
	done
fi

if ((${#PROBLEMS[@]})); then
	printf 'help_man: FAIL: %s\n' "${PROBLEMS[@]}" >&2
	exit 1
fi
echo "help_man: PASS (weftd: ${#D_LONG[@]} long options, ${#D_ENV[@]} variables; weft: ${#C_CMDS[@]} commands, ${#C_FLAGS[@]} flags)" >&2
