#!/usr/bin/env bash
# weft_cli.sh IMPL_A IMPL_B — the weft CLI against a real weftd (A; B is
# not used): VM ports added, listed (table and JSON, checked with jq),
# refused with the right exit code and message, removed, and loaded from a
# ports file twice with nothing changing the second time.
#
#   netns ...-a
#  +------------------------------------------------+
#  | weftd wgPIDa                                   |
#  |   tap wt<PID>a  (weft port add, 10.77.0.2)     |
#  |   tap wt<PID>b, wt<PID>c  (weft port load)     |
#  +------------------------------------------------+
#  host: weft -i wgPIDa ---> /var/run/wireguard/wgPIDa.sock
#
# The weft binary comes from $WEFT (CMake passes it), else next to weftd's
# build, else $PATH.
. "$(dirname "$0")/lib.sh"
lib_init "$@"
need_cmd jq
is_weftd "$IMPL_A" || skip "weft requests are weftd's; A is $IMPL_A"

WEFT_BIN=${WEFT:-}
for c in "$WEFT_BIN" "${WEFTD:+$(dirname "$WEFTD")/../cli/weft}" "$(command -v weft || true)"; do
	if [[ -n $c && -x $c ]]; then
		WEFT_BIN=$c
		break
	fi
done
[[ -n $WEFT_BIN && -x $WEFT_BIN ]] || skip "weft (cli/) not built; set WEFT=path"

new_ns a
NS_A=$(ns_name a)
IF_A=$(ifname a)
start_daemon "$IMPL_A" "$NS_A" "$IF_A"
TAP1=wt${RUN_ID}a
TAP2=wt${RUN_ID}b
TAP3=wt${RUN_ID}c

# weft ARGS...: runs the CLI on A's interface; its stdout in $OUT, stderr
# in $ERR, exit code in $RC (never fails the script by itself).
weft() {
	RC=0
	"$WEFT_BIN" -i "$IF_A" "$@" >"$WORK/weft.out" 2>"$WORK/weft.err" || RC=$?
	OUT=$(cat "$WORK/weft.out")
	ERR=$(cat "$WORK/weft.err")
	log "weft $* -> $RC${ERR:+ ($ERR)}"
}
expect_rc() {
	local want=$1
	shift
	weft "$@"
	((RC == want)) || fail "weft $*: exit $RC, expected $want (stderr: $ERR)"
}
one_line_err() {
	[[ -n $ERR && $(wc -l <"$WORK/weft.err") -eq 1 ]] || fail "expected one line on stderr, got: $ERR"
}
tap_mtu() { ip -n "$NS_A" -o link show "$1" | sed -n 's/.* mtu \([0-9]*\) .*/\1/p'; }

step "help and version tell every subcommand"
expect_rc 0 --help
for w in "port add" "port del" "port list" "port load" "--json" "--prune" "stats" "--socket" "-i"; do
	grep -qF -- "$w" <<<"$OUT" || fail "weft --help does not mention '$w'"
done
expect_rc 0 port --help
for w in "add" "del" "list" "load" "vhost-user" "router-mac" "gateway4" "prefix" "mtu"; do
	grep -qF -- "$w" <<<"$OUT" || fail "weft port --help does not mention '$w'"
done
# -v, -V and --version, the same for weft and weftd: "NAME vVERSION".
want=$("$WEFTD" --version) || fail "weftd --version failed"
[[ $want =~ ^weftd\ v[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "weftd --version printed '$want'"
for o in -v -V; do
	[[ $("$WEFTD" "$o") == "$want" ]] || fail "weftd $o and --version differ"
done
for o in --version -v -V; do
	expect_rc 0 "$o"
	[[ $OUT == "weft ${want#weftd }" ]] || fail "weft $o printed '$OUT', weftd --version '$want'"
done
expect_rc 2 port frobnicate
expect_rc 2 port add "$TAP1"
# No command: one line that says what is missing, not the whole help.
"$WEFT_BIN" >"$WORK/weft.out" 2>"$WORK/weft.err" && fail "weft with no command succeeded" ||
	(($? == 2)) || fail "weft with no command did not exit 2"
ERR=$(cat "$WORK/weft.err")
one_line_err
grep -q "COMMAND is needed" <<<"$ERR" || fail "weft with no command said: $ERR"

step "port add: a tap appears in weftd's namespace"
expect_rc 0 port add "$TAP1" tap mac 52:54:00:12:34:56 address 10.77.0.2,fd00:77::2 \
	address 10.78.0.0/24 prefix fd00:77::/64 mtu 1400
wait_for 5 ip -n "$NS_A" link show "$TAP1" || fail "no tap $TAP1 after port add"
[[ $(tap_mtu "$TAP1") == 1400 ]] || fail "tap $TAP1 has MTU $(tap_mtu "$TAP1"), expected 1400"

step "port list: table and JSON"
expect_rc 0 port list
grep -E "^$TAP1 +tap +52:54:00:12:34:56 +10\.77\.0\.2/32,fd00:77::2/128,10\.78\.0\.0/24 " <<<"$OUT" >/dev/null ||
	fail "port list table does not show $TAP1 as added: $OUT"
head -1 <<<"$OUT" | grep -qE '^NAME +TYPE +MAC +ADDRESSES +STATE +RX-PACKETS +TX-PACKETS +DROPS' ||
	fail "port list header: $(head -1 <<<"$OUT")"
expect_rc 0 port list --json
jq -e --arg n "$TAP1" '
	length == 1 and .[0].name == $n and .[0].type == "tap" and .[0].path == null and
	.[0].mac == "52:54:00:12:34:56" and .[0].router_mac == "02:77:65:66:74:01" and
	.[0].gateway4 == "169.254.1.1" and .[0].mtu == 1400 and
	.[0].addresses == ["10.77.0.2/32", "fd00:77::2/128", "10.78.0.0/24"] and
	.[0].prefixes == ["fd00:77::/64"] and (.[0].connected | type) == "boolean" and
	(.[0].counters | to_entries | all(.value | type == "number")) and
	(.[0].counters | has("rx_packets") and has("tx_bytes") and has("drop_spoofed_source") and
	 has("drop_foreign_mac") and has("ndp_replies") and has("ndp_drops"))' \
	"$WORK/weft.out" >/dev/null || fail "port list --json: $(cat "$WORK/weft.out")"
ndrops=$(jq '[.[0].counters | keys[] | select(startswith("drop_"))] | length' "$WORK/weft.out")
((ndrops >= 9)) || fail "port list --json has $ndrops drop counters"

step "refusals: exit 1 with the errno text on one line"
expect_rc 1 port add "$TAP1" tap mac 52:54:00:12:34:57
grep -q "File exists" <<<"$ERR" || fail "duplicate name: $ERR"
one_line_err
expect_rc 1 port add "$TAP2" tap mac 52:54:00:12:34:57 address 10.77.0.2
grep -q "File exists" <<<"$ERR" || fail "duplicate address: $ERR"
one_line_err
ip -n "$NS_A" link show "$TAP2" >/dev/null 2>&1 && fail "a refused port left its tap $TAP2"
expect_rc 1 port add "$TAP2" tap mac 52:54:00:12:34:57 address 10.1.2.3/8
grep -q "Invalid argument.*host bits" <<<"$ERR" || fail "host bits: $ERR"
expect_rc 1 port add "$TAP2" tap mac ff:ff:ff:ff:ff:ff
grep -q "Invalid argument.*multicast" <<<"$ERR" || fail "multicast MAC: $ERR"
expect_rc 1 port add "$TAP2" tap mac 52:54:00:12:34:57 mtu 100
grep -q "Invalid argument.*MTU" <<<"$ERR" || fail "MTU: $ERR"
expect_rc 1 port add abcdefghijklmnop tap mac 52:54:00:12:34:57
grep -q "Invalid argument.*too long" <<<"$ERR" || fail "long name: $ERR"
expect_rc 1 port del "wt${RUN_ID}none"
grep -q "No such file or directory" <<<"$ERR" || fail "unknown port del: $ERR"
one_line_err

step "port del: the tap goes"
expect_rc 0 port del "$TAP1"
wait_for 5 bash -c "! ip -n '$NS_A' link show '$TAP1' >/dev/null 2>&1" || fail "tap $TAP1 still there after port del"
expect_rc 0 port list --json
[[ $(jq length "$WORK/weft.out") == 0 ]] || fail "ports left after del: $OUT"
expect_rc 0 port list
[[ -z $OUT ]] || fail "port list of no ports printed: $OUT"

step "port load: twice, the second run changes nothing"
cat >"$WORK/ports.conf" <<EOF
# the ports of this host
[Port]
Name = $TAP2
Type = tap
MAC = 52:54:00:00:00:02
Address = 10.77.2.2/32, fd00:77:2::2/128

[Port]
Name = $TAP3
Type = tap
MAC = 52:54:00:00:00:03
Address = 10.77.3.2
MTU = 1420
EOF
expect_rc 0 port load "$WORK/ports.conf"
grep -q "^2 added, 0 replaced, 0 removed, 0 unchanged$" <<<"$OUT" || fail "first load: $OUT"
ip -n "$NS_A" link show "$TAP2" >/dev/null && ip -n "$NS_A" link show "$TAP3" >/dev/null ||
	fail "load did not create both taps"
expect_rc 0 port list --json
cp "$WORK/weft.out" "$WORK/list1.json"
expect_rc 0 port load "$WORK/ports.conf"
[[ $OUT == "0 added, 0 replaced, 0 removed, 2 unchanged" ]] || fail "second load changed something: $OUT"
expect_rc 0 port list --json
# The taps are up and the kernel talks on them: compare all but counters.
jq -e -s 'map(map(del(.counters, .connected))) | .[0] == .[1]' "$WORK/list1.json" "$WORK/weft.out" \
	>/dev/null || fail "the ports differ after a second load"

step "port load: a changed port is replaced, --prune removes the rest"
sed -i 's/^MTU = 1420$/MTU = 1500/' "$WORK/ports.conf"
expect_rc 0 port load "$WORK/ports.conf"
grep -q "^replaced $TAP3$" <<<"$OUT" && grep -q "^0 added, 1 replaced, 0 removed, 1 unchanged$" <<<"$OUT" ||
	fail "load after a change: $OUT"
[[ $(tap_mtu "$TAP3") == 1500 ]] || fail "tap $TAP3 has MTU $(tap_mtu "$TAP3") after the replace"
expect_rc 0 port add "$TAP1" tap mac 52:54:00:00:00:01
expect_rc 0 port load "$WORK/ports.conf"
grep -q "^0 added, 0 replaced, 0 removed, 2 unchanged$" <<<"$OUT" || fail "load without prune: $OUT"
expect_rc 0 port load "$WORK/ports.conf" --prune
grep -q "^removed $TAP1$" <<<"$OUT" || fail "load --prune: $OUT"
wait_for 5 bash -c "! ip -n '$NS_A' link show '$TAP1' >/dev/null 2>&1" || fail "pruned tap $TAP1 still there"
printf '[Port]\nName = x\nColour = blue\n' >"$WORK/bad.conf"
expect_rc 1 port load "$WORK/bad.conf" --prune
grep -q "bad.conf:3: Invalid argument: unknown key" <<<"$ERR" || fail "bad file: $ERR"
expect_rc 0 port list --json
[[ $(jq length "$WORK/weft.out") == 2 ]] || fail "a bad file changed the ports"

step "stats, and finding the interface"
expect_rc 0 stats
grep -qE '^[a-z0-9_]+=[0-9]+$' <<<"$OUT" || fail "weft stats printed: $OUT"
grep -q '^errno=' <<<"$OUT" && fail "weft stats printed the errno line"
RC=0
WEFT_INTERFACE=$IF_A "$WEFT_BIN" port list >/dev/null 2>"$WORK/weft.err" || RC=$?
((RC == 0)) || fail "WEFT_INTERFACE=$IF_A: exit $RC: $(cat "$WORK/weft.err")"
RC=0
"$WEFT_BIN" -i "wt${RUN_ID}nosuch" port list >/dev/null 2>"$WORK/weft.err" || RC=$?
((RC == 1)) && grep -q "No such file or directory" "$WORK/weft.err" || fail "-i of no daemon: exit $RC: $(cat "$WORK/weft.err")"

responsive "$NS_A" "$IF_A" || fail "weftd does not answer wg show after the weft requests"
stop_daemon "$IF_A"

step "weftd --ports FILE: a host's ports come back after a restart"
wait_for 5 bash -c "! ip -n '$NS_A' link show '$TAP3' >/dev/null 2>&1" || fail "tap $TAP3 outlived weftd"
DAEMON_ARGS=(--ports "$WORK/ports.conf")
start_daemon "$IMPL_A" "$NS_A" "$IF_A"
DAEMON_ARGS=()
expect_rc 0 port list --json
[[ $(jq length "$WORK/weft.out") == 2 ]] || fail "after a restart with --ports: $(cat "$WORK/weft.out")"
ip -n "$NS_A" link show "$TAP3" >/dev/null || fail "no tap $TAP3 after a restart with --ports"
expect_rc 0 port load "$WORK/ports.conf"
grep -q "^0 added, 0 replaced, 0 removed, 2 unchanged$" <<<"$OUT" || fail "load after --ports: $OUT"
stop_daemon "$IF_A"
RC=0
ip netns exec "$NS_A" timeout "$HANG_SECS" "$WEFTD" -f --ports "$WORK/bad.conf" "${IF_A}x" >"$WORK/bad-start.log" 2>&1 || RC=$?
((RC != 0 && RC != 124)) || fail "weftd started with a bad ports file (exit $RC)"
grep -q "bad.conf:3" "$WORK/bad-start.log" || fail "weftd did not say what is wrong: $(cat "$WORK/bad-start.log")"
pass
