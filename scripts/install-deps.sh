#!/usr/bin/env bash
# Installs what weft's build, tests and demo need on Debian 12, as root.
# Idempotent and quiet: when everything is already there it only says so.
# --no-install-recommends matters: wireguard-tools recommends a kernel image.
set -euo pipefail

PACKAGES=(
	# build
	build-essential cmake pkg-config clang llvm libclang-rt-14-dev bpftool
	libsodium-dev liburing-dev libnl-3-dev libnl-route-3-dev libmnl-dev
	libbpf-dev libssl-dev
	# integration tests and demo
	wireguard-tools wireguard-go iperf3 iproute2 iputils-ping tcpdump socat ndisc6
	ethtool procps coreutils nftables python3
	# the QEMU test guest (tests/guest): TCG, busybox initramfs, kernel unpacking
	qemu-system-x86 busybox-static cpio xz-utils
	# bench
	gnuplot-nox jq
	# service: man pages (scdoc), the .deb (cpack, dpkg-shlibdeps), metrics
	# scrapes checked with promtool (prometheus: only its promtool is used;
	# the server is kept from starting, see policy-rc.d below), man(1) for
	# the installed pages, lintian for the .deb
	scdoc dpkg-dev prometheus curl man-db lintian
)

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
	echo "install-deps: all ${#PACKAGES[@]} packages present"
	exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
	echo "install-deps: missing ${missing[*]}; run as root" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp /tmp/weft-install-deps.XXXXXX)
# Packages install no running services here (the prometheus server would
# otherwise start and scrape itself next to the timing tests): a
# policy-rc.d that forbids starting them, only for this install and only
# when the machine has none of its own.
policy=/usr/sbin/policy-rc.d
if [[ ! -e $policy ]]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	trap 'rm -f "$policy"' EXIT
fi
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends -o Dpkg::Use-Pty=0 "${missing[@]}"; } \
	</dev/null >"$log" 2>&1; then
	cat "$log" >&2
	rm -f "$log"
	echo "install-deps: apt-get failed" >&2
	exit 1
fi
rm -f "$log"
echo "install-deps: done"
