#!/usr/bin/env bash
# deb.sh IMPL_A IMPL_B — the Debian package: `cpack -G DEB` in the build
# folder makes a .deb with the binaries, the unit, the man pages and the
# docs, whose Depends names the package of every library the binaries load
# (readelf, ldd), with a real Maintainer, a DEP-5 copyright file, a
# changelog, and no lintian error; `dpkg -i` installs it on this machine (CI machines are disposable),
# the installed man pages and unit are checked, and a small demo runs from
# /usr/sbin/weftd and /usr/bin/weft between two namespaces. `dpkg -r` at the
# end (dpkg -P), whatever happens.
#
#   netns ...-a                          netns ...-b
#  +----------------------------+       +----------------------------+
#  | /usr/sbin/weftd wgPIDa     |  veth | /usr/sbin/weftd wgPIDb     |
#  |   10.241.0.1, fd00:10::1   |-------|   10.241.0.2, fd00:10::2   |
#  |   tap wd<PID>a (/usr/bin/weft)     |                            |
#  +----------------------------+       +----------------------------+
#
# The build folder is $WEFT_BUILD_DIR (CMake passes it), else next to weftd.
. "$(dirname "$0")/lib.sh"
lib_init "$@"
need_cmd cpack dpkg dpkg-deb dpkg-query ldd readelf
is_weftd "$IMPL_A" && is_weftd "$IMPL_B" || skip "the package is weftd's; the pair is $IMPL_A/$IMPL_B"
BUILD=${WEFT_BUILD_DIR:-${WEFTD:+$(dirname "$WEFTD")/..}}
[[ -n $BUILD && -f $BUILD/CPackConfig.cmake ]] || skip "no CPackConfig.cmake in '$BUILD' (set WEFT_BUILD_DIR)"
BUILD=$(cd "$BUILD" && pwd)
if dpkg-query -W -f='${Status}' weft 2>/dev/null | grep -q 'install ok installed'; then
	skip "a weft package is installed already; this test would replace and remove it"
fi

# The package goes whatever happens; then the usual cleanup.
trap 'rc=$?; dpkg -P weft >/dev/null 2>&1; (exit $rc); cleanup' EXIT

step "cpack -G DEB"
(cd "$WORK" && timeout 90 cpack -G DEB -B "$WORK/pkg" --config "$BUILD/CPackConfig.cmake") \
	>"$WORK/cpack.log" 2>&1 || fail "cpack failed: $(tail -20 "$WORK/cpack.log")"
DEB=$(ls "$WORK"/pkg/weft_*.deb 2>/dev/null | head -1)
[[ -f $DEB ]] || fail "no .deb in $WORK/pkg: $(ls "$WORK/pkg")"
log "built $(basename "$DEB") ($(stat -c %s "$DEB") bytes)"
dpkg-deb -c "$DEB" | awk '{ print $6 }' >"$WORK/contents"
for f in ./usr/sbin/weftd ./usr/bin/weft ./lib/systemd/system/weftd@.service \
	./usr/share/man/man8/weftd.8.gz ./usr/share/man/man8/weft.8.gz \
	./usr/share/doc/weft/README.md ./usr/share/doc/weft/systemd.md \
	./usr/share/doc/weft/examples/weftd.env.example \
	./usr/share/doc/weft/copyright ./usr/share/doc/weft/changelog.Debian.gz; do
	grep -qx -- "$f" "$WORK/contents" || fail "the .deb lacks $f"
done
# Nothing of the build's tests or benchmarks.
grep -qE '/(test_|bench|udp_garbage|hs_flood)' "$WORK/contents" && fail "test binaries in the .deb"
depends=$(dpkg-deb -f "$DEB" Depends)
log "Depends: $depends"
[[ $(dpkg-deb -f "$DEB" Package) == weft ]] || fail "package name"
[[ $(dpkg-deb -f "$DEB" Architecture) == "$(dpkg --print-architecture)" ]] || fail "architecture"
maint=$(dpkg-deb -f "$DEB" Maintainer)
[[ $maint =~ ^[^\<]+\ \<[^@\>]+@[^@\>]+\>$ && $maint != *@localhost* ]] || fail "Maintainer: '$maint'"
# The copyright file is machine-readable (DEP-5) and names the licence at
# the repository's root.
dpkg-deb --fsys-tarfile "$DEB" | tar -xO ./usr/share/doc/weft/copyright >"$WORK/copyright"
head -1 "$WORK/copyright" | grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' ||
	fail "copyright is not DEP-5: $(head -1 "$WORK/copyright")"
grep -q '^License: MIT$' "$WORK/copyright" || fail "copyright names no MIT licence"
if command -v lintian >/dev/null 2>&1; then
	# lintian exits non-zero on an error tag; warnings are logged.
	lintian "$DEB" >"$WORK/lintian.log" 2>&1 || fail "lintian: $(grep -v '^running with root' "$WORK/lintian.log")"
	log "lintian: $(grep -c '^W:' "$WORK/lintian.log") warnings, no errors: $(grep '^W:' "$WORK/lintian.log" | tr '\n' ' ')"
else
	skip_part "lintian not installed: the .deb is not linted"
fi

step "dpkg -i"
timeout 60 dpkg -i "$DEB" >"$WORK/dpkg.log" 2>&1 || fail "dpkg -i: $(tail -20 "$WORK/dpkg.log")"
[[ -x /usr/sbin/weftd && -x /usr/bin/weft ]] || fail "binaries not installed"
# Every library the binaries link (DT_NEEDED, found where ldd finds it)
# comes from a package Depends names.
for bin in /usr/sbin/weftd /usr/bin/weft; do
	needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
	[[ -n $needed ]] || fail "readelf found no NEEDED entry in $bin"
	for soname in $needed; do
		lib=$(ldd "$bin" | awk -v s="$soname" '$1 == s && $3 ~ /^\// { print $3 }')
		[[ -n $lib ]] || fail "$bin: ldd does not resolve $soname"
		# dpkg knows a file by the path its package ships (/lib or /usr/lib).
		pkg=""
		for cand in "$lib" "$(readlink -f "$lib")" "/usr$lib" "${lib#/usr}"; do
			pkg=$(dpkg-query -S "$cand" 2>/dev/null | head -1 | cut -d: -f1 || true)
			[[ -n $pkg ]] && break
		done
		[[ -n $pkg ]] || fail "$bin loads $lib, which no package owns"
		grep -qE "(^|, )$pkg( |,|$)" <<<"$depends" || fail "$bin loads $lib ($pkg), not in Depends: $depends"
	done
done
/usr/sbin/weftd --version | grep -q '^weftd v' || fail "installed weftd --version"
/usr/bin/weft --version | grep -q '^weft ' || fail "installed weft --version"
if command -v man >/dev/null 2>&1; then
	for page in weftd weft; do
		[[ $(man -w "$page" 2>/dev/null) == /usr/share/man/man8/$page.8.gz ]] ||
			fail "man -w $page: $(man -w "$page" 2>&1)"
		MANWIDTH=80 man "$page" 2>/dev/null | grep -q "^NAME" || fail "man $page does not render"
	done
else
	skip_part "man not installed: pages not rendered"
fi
if command -v systemd-analyze >/dev/null 2>&1; then
	systemd-analyze verify --man=no /lib/systemd/system/weftd@.service >"$WORK/verify.log" 2>&1 ||
		true
	grep -q . "$WORK/verify.log" && fail "systemd-analyze verify: $(cat "$WORK/verify.log")"
else
	skip_part "systemd-analyze not installed: installed unit not verified"
fi

step "the demo from the installed binaries"
WEFTD=/usr/sbin/weftd
WEFT_BIN=/usr/bin/weft
make_hosts
setup_pair 51820 51821 4
ping_within "$NS_A" "$IN4_B" 5 15 || fail "no ping A -> B with the installed weftd"
ping_ok "$NS_B" "$IN6_A" 5 || fail "no ping B -> A over IPv6"
nswg "$NS_A" show "$IF_A" | grep -q "latest handshake" || fail "wg show has no handshake"
weft -i "$IF_A" port add "wd${RUN_ID}a" tap mac 52:54:00:00:02:01 address 10.79.0.2 ||
	fail "installed weft port add: $ERR"
ip -n "$NS_A" link show "wd${RUN_ID}a" >/dev/null || fail "no tap from the installed weft"
weft -i "$IF_A" show || fail "installed weft show: $ERR"
grep -q "^peer: $PUB_b$" <<<"$OUT" && grep -q "^port: wd${RUN_ID}a$" <<<"$OUT" ||
	fail "weft show: $OUT"
weft -i "$IF_A" metrics || fail "installed weft metrics: $ERR"
grep -q "^wireguard_received_bytes_total{interface=\"$IF_A\",public_key=\"$PUB_b\"" <<<"$OUT" ||
	fail "weft metrics: no peer series"
responsive "$NS_B" "$IF_B" || fail "B does not answer"
stop_daemon "$IF_A"
stop_daemon "$IF_B"

step "dpkg -P (remove and purge)"
timeout 60 dpkg -P weft >"$WORK/dpkg-r.log" 2>&1 || fail "dpkg -P: $(tail -5 "$WORK/dpkg-r.log")"
[[ ! -e /usr/sbin/weftd && ! -e /usr/bin/weft && ! -e /lib/systemd/system/weftd@.service ]] ||
	fail "files left after dpkg -P"
[[ -z $(dpkg-query -W -f='${Status}' weft 2>/dev/null | grep -v 'not-installed') ]] ||
	fail "dpkg still knows weft: $(dpkg-query -W -f='${Status}' weft)"
pass
