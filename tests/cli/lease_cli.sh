#!/usr/bin/env bash
# lease_cli.sh — weft lease end to end, with no weftd: a key made by genkey
# signs a lease whose show reports the address, holder and times that were
# asked for and the verdict "valid" under its public key; a tampered lease,
# another key, an expired lease and one from the future are refused with
# exit 1; bad command lines exit 2 naming the word; a private key never comes
# from the command line.
#
#   WEFT=path/to/weft tests/cli/lease_cli.sh
set -euo pipefail

WEFT=${WEFT:?set WEFT to the weft binary}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "lease_cli: FAIL: $*" >&2; exit 1; }
# expect CODE PATTERN CMD...: CMD exits CODE and its output matches PATTERN.
expect() {
	local code=$1 pattern=$2 out rc=0
	shift 2
	out=$("$@" 2>&1) || rc=$?
	((rc == code)) || fail "'$*' exited $rc, want $code: $out"
	grep -qE -- "$pattern" <<<"$out" || fail "'$*' said '$out', want /$pattern/"
}

umask 077
"$WEFT" lease genkey > "$WORK/key" 2> "$WORK/genkey.err"
[[ ! -s $WORK/genkey.err ]] || fail "genkey warned under umask 077: $(cat "$WORK/genkey.err")"
grep -qE '^[A-Za-z0-9+/]{43}=$' "$WORK/key" || fail "genkey printed '$(cat "$WORK/key")'"
"$WEFT" lease pubkey < "$WORK/key" > "$WORK/pub"
PUB=$(cat "$WORK/pub")
[[ $PUB =~ ^[A-Za-z0-9+/]{43}=$ && $PUB != "$(cat "$WORK/key")" ]] || fail "pubkey printed '$PUB'"
[[ $("$WEFT" lease pubkey < "$WORK/key") == "$PUB" ]] || fail "pubkey is not a function of the key"
"$WEFT" lease genkey > "$WORK/other"
OTHER=$("$WEFT" lease pubkey < "$WORK/other")
[[ $OTHER != "$PUB" ]] || fail "two genkeys made the same key"

# genkey warns, as wg genkey does, of a key written where others can read it.
(umask 022; "$WEFT" lease genkey > "$WORK/open" 2> "$WORK/open.err")
grep -q "world accessible" "$WORK/open.err" || fail "genkey did not warn under umask 022"

HOLDER=$(head -c 32 /dev/urandom | base64)
NOW=$(date +%s)
LEASE=$("$WEFT" lease sign 2001:db8::7 "$HOLDER" valid 2h from "$NOW" < "$WORK/key")
[[ ${#LEASE} == 184 ]] || fail "sign printed ${#LEASE} characters: $LEASE"
expect 0 'verdict: valid' "$WEFT" lease show "$LEASE" key "$PUB"
out=$("$WEFT" lease show "$LEASE")
grep -q "^lease for 2001:db8::7$" <<<"$out" || fail "show: $out"
grep -qF "holder: $HOLDER" <<<"$out" || fail "show did not name the holder: $out"
grep -qF "issued: $(date -u -d "@$NOW" '+%Y-%m-%d %H:%M:%S') UTC ($NOW)" <<<"$out" || fail "show: $out"
grep -qF "expires: $(date -u -d "@$((NOW + 7200))" '+%Y-%m-%d %H:%M:%S') UTC ($((NOW + 7200)))" <<<"$out" ||
	fail "show: $out"
grep -q "verdict: not checked" <<<"$out" || fail "show without a key: $out"
V4=$("$WEFT" lease sign 10.9.8.7 "$HOLDER" < "$WORK/key")
expect 0 '^lease for 10\.9\.8\.7$' "$WEFT" lease show "$V4" key "$PUB"
# The default is 24 hours from now.
out=$("$WEFT" lease show "$V4")
issued=$(sed -n 's/.*issued: .*(\([0-9]*\))$/\1/p' <<<"$out")
expires=$(sed -n 's/.*expires: .*(\([0-9]*\))$/\1/p' <<<"$out")
((expires - issued == 86400 && issued >= NOW)) || fail "default lease: $out"

# Refused: another key, a flipped character in the signature, expired,
# issued in the future, a broken text.
expect 1 'not signed by the lease key' "$WEFT" lease show "$LEASE" key "$OTHER"
c=${LEASE:150:1}
[[ $c == A ]] && r=B || r=A
expect 1 'not signed by the lease key' "$WEFT" lease show "${LEASE:0:150}$r${LEASE:151}" key "$PUB"
c=${LEASE:60:1}
[[ $c == A ]] && r=B || r=A
# Character 60 is in the holder (bytes 40-71): the signature no longer fits.
expect 1 'not signed by the lease key' "$WEFT" lease show "${LEASE:0:60}$r${LEASE:61}" key "$PUB"
OLD=$("$WEFT" lease sign 10.9.8.7 "$HOLDER" from 1000 valid 1h < "$WORK/key")
expect 1 'lease show: expired' "$WEFT" lease show "$OLD" key "$PUB"
SOON=$("$WEFT" lease sign 10.9.8.7 "$HOLDER" from $((NOW + 3600)) < "$WORK/key")
expect 1 'issued in the future' "$WEFT" lease show "$SOON" key "$PUB"
expect 1 'not a lease in base64' "$WEFT" lease show "${LEASE:0:183}" key "$PUB"

# Bad command lines and keys.
expect 2 'one address, not a prefix' "$WEFT" lease sign 10.0.0.0/8 "$HOLDER" < "$WORK/key"
expect 2 "bad address" "$WEFT" lease sign nohost "$HOLDER" < "$WORK/key"
expect 2 'HOLDER .* not a public key' "$WEFT" lease sign 10.0.0.1 short < "$WORK/key"
expect 2 "bad duration '0'" "$WEFT" lease sign 10.0.0.1 "$HOLDER" valid 0 < "$WORK/key"
expect 2 "bad duration '11y'" "$WEFT" lease sign 10.0.0.1 "$HOLDER" valid 11y < "$WORK/key"
expect 2 "unknown word 'until'" "$WEFT" lease sign 10.0.0.1 "$HOLDER" until 5 < "$WORK/key"
expect 1 'private key on stdin: not a key' "$WEFT" lease sign 10.0.0.1 "$HOLDER" < /dev/null
expect 1 'private key on stdin: not a key' "$WEFT" lease pubkey <<<"$PUB$PUB"
expect 2 'takes no arguments' "$WEFT" lease pubkey "$(cat "$WORK/key")"
expect 1 "is not a public key" "$WEFT" lease show "$LEASE" key nokey
expect 2 "unknown lease command 'verify'" "$WEFT" lease verify "$LEASE"
expect 2 'lease needs genkey, pubkey, sign, show or add' "$WEFT" lease
expect 0 'weft lease sign ADDRESS HOLDER' "$WEFT" lease --help
echo "lease_cli: PASS"
