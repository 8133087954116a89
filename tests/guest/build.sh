#!/usr/bin/env bash
# build.sh — builds the tiny test guest: Debian's kernel (unpacked to an ELF
# vmlinux that QEMU boots directly through PVH, skipping the in-guest xz
# decompression that costs seconds under TCG) and a busybox-static initramfs
# holding tests/guest/init and the virtio-net modules.
#
#   tests/guest/build.sh [--update]
#
# Prints, on stdout and nothing else:
#   KERNEL=/var/cache/weft-guest/<kver>/vmlinux
#   INITRAMFS=/var/cache/weft-guest/<kver>/initramfs.cpio.gz
# so a caller can `eval "$(build.sh)"`. Progress goes to stderr.
#
# Installs nothing. Exit 0 ok; 1 a package is missing (named on stderr);
# 2 no kernel can be had (no apt lists, no network, no cached kernel).
#
# Everything lands in ${WEFT_GUEST_CACHE:-/var/cache/weft-guest}. Once a kernel
# is there it is reused (reruns take well under a second); --update resolves
# linux-image-amd64 again and fetches a newer kernel if there is one.
# WEFT_GUEST_KPKG=linux-image-6.1.0-NN-amd64 picks a kernel package by name.
# WEFT_GUEST_MODULES adds modules (e.g. "wireguard tun") to the initramfs;
# their dependencies come along, built-ins are skipped.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${WEFT_GUEST_CACHE:-/var/cache/weft-guest}
# virtio_pci and virtio_net (with failover, net_failover, virtio, virtio_ring,
# the virtio_pci_*_dev libraries) are modules in Debian's config.
MODULES="virtio_pci virtio_net ${WEFT_GUEST_MODULES:-}"
UPDATE=0

msg() { printf 'guest/build: %s\n' "$*" >&2; }
die() {
	local rc=$1
	shift
	msg "$*"
	exit "$rc"
}

for arg in "$@"; do
	case $arg in
	--update) UPDATE=1 ;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*) die 2 "unknown argument '$arg' (see --help)" ;;
	esac
done

# --- what must be installed ---------------------------------------------------
# busybox-static, not busybox: the initramfs has no libc. The two packages
# conflict, so the package status says which /bin/busybox this is.
pkg_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
missing=()
for p in qemu-system-x86 busybox-static cpio xz-utils gzip; do
	pkg_installed "$p" || missing+=("$p")
done
if ((${#missing[@]})); then
	msg "missing packages: ${missing[*]}"
	msg "install them with: apt-get install --no-install-recommends ${missing[*]}"
	msg "(or run scripts/install-deps.sh, which lists them)"
	exit 1
fi
BUSYBOX=/bin/busybox

mkdir -p "$CACHE"
# Tests may build the guest concurrently; one builder at a time.
exec 9>"$CACHE/.lock"
flock 9

# --- which kernel ---------------------------------------------------------------
# A kernel directory is complete once its vmlinux exists (written last, by rename).
newest_cached() {
	local d
	for d in "$CACHE"/*/vmlinux; do
		[[ ! -f $d ]] || basename "$(dirname "$d")"
	done | sort -V | tail -n 1
}

# linux-image-amd64 is a meta package; its Depends names the real image.
resolve_pkg() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n1
}

KVER=""
KPKG=${WEFT_GUEST_KPKG:-}
if [[ -n $KPKG ]]; then
	KVER=${KPKG#linux-image-}
elif ((!UPDATE)); then
	KVER=$(newest_cached)
fi
if [[ -z $KVER ]]; then
	KPKG=$(resolve_pkg)
	[[ -n $KPKG ]] || die 2 "apt knows no linux-image-amd64 (run apt-get update) and no kernel is cached in $CACHE"
	KVER=${KPKG#linux-image-}
fi
KPKG=linux-image-$KVER
KDIR=$CACHE/$KVER

# --- fetch and unpack the kernel --------------------------------------------------
deb_path() {
	local f
	for f in "$CACHE/debs/${KPKG}_"*_amd64.deb /var/cache/apt/archives/"${KPKG}_"*_amd64.deb; do
		[[ -f $f ]] && {
			echo "$f"
			return 0
		}
	done
	return 1
}

# tar_from_deb DEB DEST PATTERN...: unpack only the named members (the whole
# package is 400 MB of modules, of which we want a few hundred KB).
tar_from_deb() {
	local deb=$1 dest=$2
	shift 2
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dest" --wildcards "$@"
}

# The bzImage's payload is an xz stream; unpacking it here gives the ELF
# vmlinux with its PVH note, which QEMU's -kernel starts directly.
extract_vmlinux() {
	local bz=$1 out=$2 off
	# No pipes into head here: under pipefail a writer's SIGPIPE is a failure.
	off=$(LC_ALL=C grep -m1 -obUaP '\xFD7zXZ\x00' "$bz" | tr -d '\000' || true)
	off=${off%%:*}
	[[ -n $off ]] || die 2 "$bz: no xz payload found (kernel not xz-compressed?)"
	tail -c +$((off + 1)) "$bz" >"$out.xz"
	xz -dc --single-stream "$out.xz" >"$out"
	rm -f "$out.xz"
	[[ $(head -c 4 "$out" | od -An -tx1 | tr -d ' ') == 7f454c46 ]] || die 2 "$bz: payload is not an ELF vmlinux"
}

# Module name -> path inside the package, from modules.order ("-" and "_" are
# the same in module names). Prints nothing for a built-in module.
mod_path() {
	local name=${1//-/_} p
	while read -r p; do
		local b=${p##*/}
		b=${b%%.ko*}
		[[ ${b//-/_} == "$name" ]] && {
			echo "$p"
			return 0
		}
	done <"$KDIR/src/modules.order"
	return 1
}
is_builtin() {
	local name=${1//-/_} p b
	while read -r p; do
		b=${p##*/}
		b=${b%%.ko*}
		[[ ${b//-/_} == "$name" ]] && return 0
	done <"$KDIR/src/modules.builtin"
	return 1
}

# Unpacked .ko, plain or xz/zst-compressed in the package: plain in ko/.
# Its "depends=" modinfo string lists what must be loaded first.
mod_depends() {
	tr '\0' '\n' <"$KDIR/ko/$1.ko" | sed -n 's/^depends=//p' | tr ',' ' '
}

# fetch_modules NAME...: unpack the named modules and, level by level, their
# dependencies; one pass over the package per level.
fetch_modules() {
	local todo=("$@") next m p members dep
	local -A queued
	while ((${#todo[@]})); do
		members=()
		queued=()
		for m in "${todo[@]}"; do
			m=${m//-/_}
			[[ -f $KDIR/ko/$m.ko || -n ${queued[$m]:-} ]] && continue
			queued[$m]=1
			is_builtin "$m" && continue
			p=$(mod_path "$m") || die 2 "module $m is neither in modules.order nor built in"
			members+=("./lib/modules/$KVER/$p")
		done
		((${#members[@]})) || break
		msg "unpacking ${members[*]##*/}"
		tar_from_deb "$DEB" "$KDIR/src" "${members[@]}"
		next=()
		for p in "${members[@]}"; do
			m=${p##*/}
			m=${m%%.ko*}
			m=${m//-/_}
			case $p in
			*.ko) cp "$KDIR/src/$p" "$KDIR/ko/$m.ko" ;;
			*.ko.xz) xz -dc "$KDIR/src/$p" >"$KDIR/ko/$m.ko" ;;
			*.ko.zst) zstd -qdc "$KDIR/src/$p" >"$KDIR/ko/$m.ko" ;;
			*) die 2 "$p: unknown module compression" ;;
			esac
			for dep in $(mod_depends "$m"); do next+=("$dep"); done
		done
		todo=("${next[@]}")
	done
}

# load_order NAME...: dependencies first, each module once, built-ins left out.
declare -A seen=()
ORDER=()
visit() {
	local m=${1//-/_} dep
	[[ -n ${seen[$m]:-} ]] && return 0
	seen[$m]=1
	is_builtin "$m" && return 0
	for dep in $(mod_depends "$m"); do visit "$dep"; done
	ORDER+=("$m")
}

if [[ ! -f $KDIR/vmlinux ]]; then
	DEB=$(deb_path) || {
		msg "downloading $KPKG"
		mkdir -p "$CACHE/debs"
		tmp=$(mktemp -d "$CACHE/debs/.dl.XXXXXX")
		# Bounded: without a network apt-get may wait on DNS or connect.
		if ! (cd "$tmp" && timeout 300 apt-get download -q -o APT::Sandbox::User=root \
			-o Acquire::Retries=1 "$KPKG") >"$tmp.log" 2>&1; then
			cat "$tmp.log" >&2
			rm -rf "$tmp" "$tmp.log"
			die 2 "cannot download $KPKG (no network, or stale apt lists: apt-get update)"
		fi
		mv "$tmp"/*.deb "$CACHE/debs/"
		rm -rf "$tmp" "$tmp.log"
		DEB=$(deb_path) || die 2 "downloaded $KPKG but found no .deb"
	}
	msg "unpacking $DEB"
	rm -rf "$KDIR"
	mkdir -p "$KDIR/src" "$KDIR/ko"
	tar_from_deb "$DEB" "$KDIR/src" "./boot/vmlinuz-$KVER" "./boot/config-$KVER" \
		"./lib/modules/$KVER/modules.order" "./lib/modules/$KVER/modules.builtin"
	mv "$KDIR/src/boot/vmlinuz-$KVER" "$KDIR/vmlinuz"
	mv "$KDIR/src/boot/config-$KVER" "$KDIR/config"
	mv "$KDIR/src/lib/modules/$KVER/modules.order" "$KDIR/src/modules.order"
	mv "$KDIR/src/lib/modules/$KVER/modules.builtin" "$KDIR/src/modules.builtin"
	extract_vmlinux "$KDIR/vmlinuz" "$KDIR/vmlinux.tmp"
	# Modules are unpacked (below) before vmlinux appears: vmlinux marks the
	# directory complete for newest_cached.
	# shellcheck disable=SC2086 # a space-separated list
	fetch_modules $MODULES
	mv "$KDIR/vmlinux.tmp" "$KDIR/vmlinux"
fi

# Modules asked for after the first build (WEFT_GUEST_MODULES) need the .deb again.
need=()
for m in $MODULES; do
	m=${m//-/_}
	[[ -f $KDIR/ko/$m.ko ]] || is_builtin "$m" || need+=("$m")
done
if ((${#need[@]})); then
	DEB=$(deb_path) || die 2 "modules ${need[*]} not cached and $KPKG.deb is gone; rerun with --update"
	fetch_modules "${need[@]}"
fi
for m in $MODULES; do visit "$m"; done

# --- the initramfs -----------------------------------------------------------------
# Rebuilt when init, this script, busybox or the module list change. Another
# module set gets its own file, so runs with different sets can overlap.
stamp=$(
	{
		sha256sum "$HERE/init" "$HERE/build.sh" "$BUSYBOX"
		printf '%s\n' "${ORDER[@]}"
	} | sha256sum | cut -d' ' -f1
)
INITRAMFS=$KDIR/initramfs.cpio.gz
EXTRA=${WEFT_GUEST_MODULES:-}
if [[ -n ${EXTRA// /} ]]; then
	INITRAMFS=$KDIR/initramfs-$(printf '%s\n' "${ORDER[@]}" | sha256sum | cut -c1-12).cpio.gz
fi
if [[ ! -f $INITRAMFS || $(cat "$INITRAMFS.stamp" 2>/dev/null) != "$stamp" ]]; then
	msg "building initramfs (modules: ${ORDER[*]})"
	root=$(mktemp -d "$KDIR/.root.XXXXXX")
	mkdir -p "$root"/{bin,dev,proc,sys,tmp,run,etc,weft,lib/modules}
	cp "$BUSYBOX" "$root/bin/busybox"
	for a in $("$BUSYBOX" --list); do
		[[ $a == busybox ]] || ln -s busybox "$root/bin/$a"
	done
	ln -s bin "$root/sbin"
	install -m 0755 "$HERE/init" "$root/init"
	for m in "${ORDER[@]}"; do
		cp "$KDIR/ko/$m.ko" "$root/lib/modules/"
		echo "$m" >>"$root/lib/modules/load-order"
	done
	touch "$root/lib/modules/load-order"
	echo "$KVER" >"$root/etc/weft-kernel"
	# Owner root whoever builds; /dev/console is not needed (init opens it
	# from devtmpfs), so no device nodes and no root privileges.
	(cd "$root" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) |
		gzip -n -6 >"$INITRAMFS.tmp"
	rm -rf "$root"
	mv "$INITRAMFS.tmp" "$INITRAMFS"
	echo "$stamp" >"$INITRAMFS.stamp"
fi

echo "KERNEL=$KDIR/vmlinux"
echo "INITRAMFS=$INITRAMFS"
