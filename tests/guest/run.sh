#!/usr/bin/env bash
# run.sh — boots weft's test guest under QEMU (TCG) with one virtio-net NIC,
# runs a script inside it and exits with the guest's verdict.
#
#   run.sh [NETDEV] [options] (--script FILE | --cmd 'COMMANDS' | --shell)
#
# NETDEV, one of (default --no-net):
#   --tap IFNAME          a tap in the current network namespace: run run.sh
#                         under `ip netns exec` of the test's namespace
#   --vhost-user SOCK     vhost-user; QEMU connects to a backend listening on SOCK
#     --server            QEMU listens on SOCK instead and waits for the backend
#     --reconnect SEC     client: retry every SEC s until the backend appears
#   --no-net              no NIC at all
# NIC:
#   --mac MAC             default 52:54:00:12:34:56
#   --queues N            queue pairs (mq=on when N > 1; a pre-made tap must
#                         then be multi_queue)
#   --smp N               guest CPUs; default 1, or N = --queues (the driver
#                         uses min(queue pairs, CPUs)); each CPU adds ~1 s boot
#   --nic-opts OPTS       appended to -device virtio-net-pci, e.g.
#                         csum=off,guest_tso4=off,mrg_rxbuf=off,host_mtu=1420
# Guest network (kernel command line, see README.md):
#   --ip4 A/PLEN  --gw4 A  --ip6 A/PLEN  --gw6 A  --mtu N  --linkwait SEC
# Test:
#   --script FILE         becomes /weft/run, sourced by /init with the helpers
#                         fail WHY and note TEXT; exit 0 = ok
#   --cmd 'COMMANDS'      the same from a string
#   --file SRC[:NAME]     also copy SRC to /weft/NAME (repeatable)
#   --timeout SEC         whole run, QEMU killed after it (default 60)
#   --log FILE            keep the serial console here (default: a temp file,
#                         printed to stderr when the run fails)
#   --append 'ARGS'       more kernel parameters
#   --shell               interactive shell on this terminal (no script)
#   -v, --verbose         stream the console to stderr while it runs
#
# Exit: 0 guest said ok; 1 guest said fail; 2 usage; 3 QEMU failed or the
# guest stopped without a verdict; 4 timeout; 77 the guest cannot be built
# here (packages missing, no kernel: see build.sh).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)

die_usage() {
	echo "guest/run: $*" >&2
	exit 2
}
msg() { echo "guest/run: $*" >&2; }

NET=none SOCK="" SERVER=0 RECONNECT="" TAP=""
MAC=52:54:00:12:34:56 QUEUES=1 SMP="" NIC_OPTS=""
IP4="" GW4="" IP6="" GW6="" MTU="" LINKWAIT=""
SCRIPT="" CMD="" FILES=() TIMEOUT=60 LOG="" APPEND="" SHELL_MODE=0 VERBOSE=0

need_arg() { if (($# < 2)) || [[ -z $2 ]]; then die_usage "$1 needs a value"; fi; }
while (($#)); do
	case $1 in
	--tap) need_arg "$@"; NET=tap TAP=$2; shift ;;
	--vhost-user) need_arg "$@"; NET=vhost-user SOCK=$2; shift ;;
	--server) SERVER=1 ;;
	--reconnect) need_arg "$@"; RECONNECT=$2; shift ;;
	--no-net) NET=none ;;
	--mac) need_arg "$@"; MAC=$2; shift ;;
	--queues) need_arg "$@"; QUEUES=$2; shift ;;
	--smp) need_arg "$@"; SMP=$2; shift ;;
	--nic-opts) need_arg "$@"; NIC_OPTS=$2; shift ;;
	--ip4) need_arg "$@"; IP4=$2; shift ;;
	--gw4) need_arg "$@"; GW4=$2; shift ;;
	--ip6) need_arg "$@"; IP6=$2; shift ;;
	--gw6) need_arg "$@"; GW6=$2; shift ;;
	--mtu) need_arg "$@"; MTU=$2; shift ;;
	--linkwait) need_arg "$@"; LINKWAIT=$2; shift ;;
	--script) need_arg "$@"; SCRIPT=$2; shift ;;
	--cmd) need_arg "$@"; CMD=$2; shift ;;
	--file) need_arg "$@"; FILES+=("$2"); shift ;;
	--timeout) need_arg "$@"; TIMEOUT=$2; shift ;;
	--log) need_arg "$@"; LOG=$2; shift ;;
	--append) need_arg "$@"; APPEND=$2; shift ;;
	--shell) SHELL_MODE=1 ;;
	-v | --verbose) VERBOSE=1 ;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*) die_usage "unknown argument '$1' (see --help)" ;;
	esac
	shift
done

[[ $TIMEOUT =~ ^[0-9]+$ && $TIMEOUT -ge 5 ]] || die_usage "--timeout wants whole seconds >= 5"
[[ $QUEUES =~ ^[0-9]+$ && $QUEUES -ge 1 ]] || die_usage "--queues wants a count >= 1"
SMP=${SMP:-$QUEUES}
[[ $SMP =~ ^[0-9]+$ && $SMP -ge 1 ]] || die_usage "--smp wants a count >= 1"
[[ $MAC =~ ^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$ ]] || die_usage "--mac '$MAC' is not a MAC address"
[[ -z $RECONNECT || $RECONNECT =~ ^[0-9]+$ ]] || die_usage "--reconnect wants seconds"
((SERVER == 0 || ${#SOCK})) || die_usage "--server goes with --vhost-user"
((SERVER == 0)) || [[ -z $RECONNECT ]] || die_usage "--reconnect is for client mode, not --server"
if ((SHELL_MODE)); then
	[[ -z $SCRIPT && -z $CMD ]] || die_usage "--shell takes no script"
else
	[[ -n $SCRIPT || -n $CMD ]] || die_usage "give --script FILE, --cmd 'COMMANDS' or --shell"
	[[ -z $SCRIPT || -z $CMD ]] || die_usage "--script and --cmd exclude each other"
	[[ -z $SCRIPT || -f $SCRIPT ]] || die_usage "--script $SCRIPT: no such file"
fi
# QEMU splits its option strings at commas; a doubled comma is a literal one.
qesc() { printf '%s' "${1//,/,,}"; }

command -v qemu-system-x86_64 >/dev/null || {
	msg "qemu-system-x86_64 not installed (package qemu-system-x86)"
	exit 77
}
built=$("$HERE/build.sh") || {
	msg "cannot build the guest (see above)"
	exit 77
}
eval "$built" # KERNEL=..., INITRAMFS=...

WORK=$(mktemp -d /tmp/weft-guest-run.XXXXXX)
QPID="" TAILPID=""
# shellcheck disable=SC2317 # called from the EXIT trap
cleanup() {
	if [[ -n $QPID ]] && kill -0 "$QPID" 2>/dev/null; then
		kill -TERM "$QPID" 2>/dev/null || true
		sleep 0.5
		kill -KILL "$QPID" 2>/dev/null || true
	fi
	if [[ -n $TAILPID ]]; then kill "$TAILPID" 2>/dev/null || true; fi
	# A QEMU that was killed leaves its listening socket behind.
	if ((SERVER)) && [[ -S $SOCK ]]; then rm -f "$SOCK"; fi
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# --- the per-run initramfs: the base one plus a second cpio with /weft --------
# The kernel unpacks concatenated archives in order, so the test's files land
# on top of the base without rebuilding it.
mkdir -p "$WORK/ov/weft"
if [[ -n $SCRIPT ]]; then
	cp "$SCRIPT" "$WORK/ov/weft/run"
elif [[ -n $CMD ]]; then
	printf '%s\n' "$CMD" >"$WORK/ov/weft/run"
fi
for f in "${FILES[@]}"; do
	src=${f%%:*} name=${f#*:}
	[[ $f == *:* ]] || name=$(basename "$f")
	[[ -f $src ]] || die_usage "--file $src: no such file"
	[[ $name != */* && $name != run ]] || die_usage "--file $f: NAME must be a plain name other than run"
	cp "$src" "$WORK/ov/weft/$name"
done
(cd "$WORK/ov" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -n -1 >"$WORK/ov.cpio.gz"
cat "$INITRAMFS" "$WORK/ov.cpio.gz" >"$WORK/initrd.cpio.gz"

# --- kernel command line ---------------------------------------------------------
# Speed under TCG: no crypto self-tests (~0.4 s), no TSC/timer checks, no
# i8042 probing, expedited RCU; mitigations and KASLR buy nothing here.
cmdline="console=ttyS0 quiet panic=-1 mitigations=off nokaslr cryptomgr.notests"
cmdline+=" no_timer_check tsc=reliable audit=0 nowatchdog rcupdate.rcu_expedited=1"
cmdline+=" i8042.noaux i8042.nokbd i8042.nopnp 8250.nr_uarts=1"
[[ $NET == none ]] && cmdline+=" weft.dev=none"
for kv in ip4:$IP4 gw4:$GW4 ip6:$IP6 gw6:$GW6 mtu:$MTU linkwait:$LINKWAIT; do
	[[ -n ${kv#*:} ]] && cmdline+=" weft.${kv%%:*}=${kv#*:}"
done
# The guest's own limit on the script leaves time to boot and to report.
guest_timeout=$((TIMEOUT > 20 ? TIMEOUT - 8 : TIMEOUT * 2 / 3))
cmdline+=" weft.timeout=$guest_timeout"
((SHELL_MODE)) && cmdline+=" weft.shell=1"
[[ -n $APPEND ]] && cmdline+=" $APPEND"

# --- QEMU ------------------------------------------------------------------------------
# Guest RAM is always a shared memfd: a vhost-user backend maps it, and using
# it for tap runs too keeps one command line for both. vectors=0 (INTx, no
# MSI-X) because QEMU 7.2 under TCG crashes in msix_set_vector_notifiers with
# vhost-user otherwise. romfile= skips the PXE option ROM (no boot from it).
LOG=${LOG:-$WORK/console.log}
: >"$LOG"
# shellcheck disable=SC2054 # commas belong to QEMU options
qemu=(qemu-system-x86_64 -accel tcg -cpu max -smp "$SMP" -m 256
	-object memory-backend-memfd,id=mem0,size=256M,share=on
	-machine pc,memory-backend=mem0
	-nodefaults -no-user-config -nic none -display none -no-reboot
	-kernel "$KERNEL" -initrd "$WORK/initrd.cpio.gz" -append "$cmdline")
if ((SHELL_MODE)); then
	qemu+=(-serial mon:stdio)
else
	qemu+=(-chardev "file,id=con0,path=$(qesc "$LOG")" -serial chardev:con0 -monitor none)
fi
dev="virtio-net-pci,netdev=net0,mac=$MAC,vectors=0,romfile="
((QUEUES > 1)) && dev+=",mq=on"
[[ -n $NIC_OPTS ]] && dev+=",$NIC_OPTS"
case $NET in
tap)
	# A tap in the host's own namespace could be bridged to a real network;
	# tests keep their guests inside namespaces they create.
	if [[ $(readlink /proc/self/ns/net) == "$(readlink /proc/1/ns/net 2>/dev/null)" &&
		-z ${WEFT_GUEST_ALLOW_HOST_NETNS:-} ]]; then
		die_usage "--tap in the initial network namespace: run under 'ip netns exec NS' (or set WEFT_GUEST_ALLOW_HOST_NETNS=1)"
	fi
	q=""
	((QUEUES > 1)) && q=",queues=$QUEUES"
	qemu+=(-netdev "tap,id=net0,ifname=$(qesc "$TAP"),script=no,downscript=no$q" -device "$dev")
	;;
vhost-user)
	chr="socket,id=chr0,path=$(qesc "$SOCK")"
	if ((SERVER)); then
		chr+=",server=on,wait=off"
	elif [[ -n $RECONNECT ]]; then
		chr+=",reconnect=$RECONNECT"
	fi
	qemu+=(-chardev "$chr" -netdev "vhost-user,id=net0,chardev=chr0,queues=$QUEUES" -device "$dev")
	;;
esac

if ((SHELL_MODE)); then
	rc=0
	"${qemu[@]}" || rc=$?
	exit "$rc"
fi

((VERBOSE)) && msg "${qemu[*]}"
start=$(date +%s%N)
"${qemu[@]}" </dev/null >"$WORK/qemu.out" 2>&1 &
QPID=$!
if ((VERBOSE)); then
	tail -n +1 -f --pid="$QPID" "$LOG" >&2 &
	TAILPID=$!
fi
timed_out=0
deadline=$((start + TIMEOUT * 1000000000))
while kill -0 "$QPID" 2>/dev/null; do
	if (($(date +%s%N) > deadline)); then
		timed_out=1
		kill -TERM "$QPID" 2>/dev/null || true
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 "$QPID" 2>/dev/null || break
			sleep 0.2
		done
		kill -KILL "$QPID" 2>/dev/null || true
		break
	fi
	sleep 0.1
done
qrc=0
wait "$QPID" || qrc=$?
QPID=""
if [[ -n $TAILPID ]]; then
	wait "$TAILPID" 2>/dev/null || true
	TAILPID=""
fi
elapsed_ms=$((($(date +%s%N) - start) / 1000000))

# --- the verdict ---------------------------------------------------------------------
console() { tr -d '\r' <"$LOG"; }
show_console() {
	((VERBOSE)) && return 0
	[[ -s $LOG ]] || return 0
	echo "--- guest console (last 40 lines) ---" >&2
	console | tail -n 40 >&2
	echo "--- end of console ---" >&2
}
result=$(console | sed -n 's/^.*WEFT-RESULT //p' | tail -n 1)
boot=$(console | sed -n 's/^WEFT-BOOT //p' | head -n 1)
[[ -n $boot ]] && msg "guest reached init ${boot}s after kernel start; run took ${elapsed_ms} ms"

if [[ $result == ok* ]]; then
	msg "guest: ok"
	exit 0
fi
if [[ $result == fail* ]]; then
	show_console
	msg "guest: ${result}"
	exit 1
fi
if ((timed_out)); then
	show_console
	if [[ $NET == vhost-user && ! -s $LOG ]]; then
		if ((SERVER)); then
			msg "timeout after ${TIMEOUT}s: no vhost-user backend connected to $SOCK (QEMU waits for one before booting)"
		else
			msg "timeout after ${TIMEOUT}s: QEMU kept retrying $SOCK (--reconnect) and no backend answered"
		fi
	else
		msg "timeout after ${TIMEOUT}s without a verdict; QEMU killed"
	fi
	exit 4
fi
sed 's/^/qemu: /' "$WORK/qemu.out" >&2
if [[ $NET == vhost-user && ! -s $LOG ]] && grep -q 'Failed to connect' "$WORK/qemu.out"; then
	msg "QEMU could not connect to the vhost-user socket $SOCK: no backend listens there" \
		"(start the backend first, or use --server / --reconnect SEC)"
elif [[ ! -s $LOG ]]; then
	msg "QEMU exited with status $qrc before the guest printed anything"
else
	show_console
	msg "guest stopped without a verdict (QEMU status $qrc): kernel panic or init died?"
fi
exit 3
