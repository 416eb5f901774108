#!/bin/bash
# sandbox.sh UNIT DIR -- COMMAND [ARGS...]
#
# Runs COMMAND under the restrictions that the [Service] section of the
# systemd unit UNIT puts on its service, where systemd is not PID 1 and
# cannot apply them itself: a private mount and UTS namespace, a root that
# is an overlay of / made read-only, a private /dev, /proc, /tmp, the
# capability bounding set and no_new_privs (setpriv), and the system call
# filters (seccomp-exec, built from tests/package/seccomp-exec.c; its path
# is $SECCOMP_EXEC).  Run it as root, inside the network namespace the
# service is to see.
#
# DIR holds what the test gives the service and takes back from it:
#   DIR/files/...     copied into the root before it is made read-only
#                     (the configuration at the unit's path, say)
#   DIR/runtime       the RuntimeDirectory (/run/NAME inside)
#   DIR/rw/PATH       each ReadWritePaths PATH (writable inside)
# Inside, the service sees nothing else of the host's /tmp, /run or /var/log.
#
# Every directive of [Service] must be one this script applies or one that
# concerns systemd's supervision (Type, Exec*, Restart*, ...), which the
# calling test checks itself; any other directive, or a value it does not
# apply, is an error (exit 125), so the unit cannot gain a restriction that
# no test runs under.
set -euo pipefail

die() { echo "sandbox: $*" >&2; exit 125; }

(($# >= 4)) && [[ $3 == -- ]] || die "usage: sandbox.sh UNIT DIR -- COMMAND [ARGS...]"
unit=$1 dir=$2
shift 3
[[ -f $unit ]] || die "no unit file $unit"
[[ -x ${SECCOMP_EXEC:-} ]] || die "SECCOMP_EXEC does not name the built seccomp-exec"

# --- the directives ---------------------------------------------------------
declare -A set=()
filters=() rw_paths=()
supervision=" Type NotifyAccess ExecCondition ExecStart ExecReload WatchdogSec Restart RestartSec "
section=
while IFS= read -r line || [[ -n $line ]]; do
	line=${line%%$'\r'}
	[[ $line =~ ^[[:space:]]*(#|;|$) ]] && continue
	if [[ $line =~ ^\[(.*)\]$ ]]; then
		section=${BASH_REMATCH[1]}
		continue
	fi
	[[ $section == Service ]] || continue
	key=${line%%=*}
	value=${line#*=}
	case $key in
	SystemCallFilter) filters+=("$value") ;;
	ReadWritePaths) read -ra more <<<"$value"; rw_paths+=("${more[@]}") ;;
	*) set[$key]=$value ;;
	esac
done <"$unit"

# want KEY VALUE: the directive must be set to VALUE (the one emulated here).
want() {
	[[ ${set[$1]:-} == "$2" ]] || die "$1=${set[$1]:-} is not emulated (only $1=$2)"
	unset "set[$1]"
}
for key in "${!set[@]}"; do
	[[ $supervision == *" $key "* ]] && unset "set[$key]"
done
want NoNewPrivileges yes
want ProtectSystem strict
want ProtectHome yes
want PrivateTmp yes
want PrivateDevices yes
want DevicePolicy closed
want ProtectKernelTunables yes
want ProtectKernelModules yes
want ProtectKernelLogs yes
want ProtectControlGroups yes
want ProtectClock yes
want ProtectHostname yes
want ProtectProc invisible
want ProcSubset pid
want RestrictNamespaces yes
want RestrictSUIDSGID yes
want LockPersonality yes
want MemoryDenyWriteExecute yes
want SystemCallArchitectures native
want KeyringMode private
runtime_name=${set[RuntimeDirectory]:?the unit has no RuntimeDirectory}
runtime_mode=${set[RuntimeDirectoryMode]:-0755}
caps=${set[CapabilityBoundingSet]:?the unit has no CapabilityBoundingSet}
families=${set[RestrictAddressFamilies]:?the unit has no RestrictAddressFamilies}
errno_name=${set[SystemCallErrorNumber]:-}
umask_value=${set[UMask]:-0022}
unset "set[RuntimeDirectory]" "set[RuntimeDirectoryMode]" "set[CapabilityBoundingSet]" \
	"set[RestrictAddressFamilies]" "set[SystemCallErrorNumber]" "set[UMask]"
((${#set[@]} == 0)) || die "no emulation for: ${!set[*]}"
((${#filters[@]})) || die "the unit has no SystemCallFilter"

# --- the system call allow-list, as systemd computes it ----------------------
# The first SystemCallFilter line without "~" starts the allow-list; later
# lines add to it, or with "~" take away.  Groups expand recursively, as
# `systemd-analyze syscall-filter` defines them.
declare -A expanded=()
expand() {
	local name=$1 entry
	if [[ $name != @* ]]; then
		echo "$name"
		return
	fi
	if [[ -z ${expanded[$name]:-} ]]; then
		expanded[$name]=$(systemd-analyze syscall-filter --no-pager "$name" |
			tail -n +2 | sed -e 's/^[[:space:]]*//' -e '/^#/d' -e '/^$/d')
		[[ -n ${expanded[$name]} ]] || die "systemd-analyze knows no group $name"
	fi
	for entry in ${expanded[$name]}; do
		expand "$entry"
	done
}
declare -A allowed=()
for value in "${filters[@]}"; do
	remove=
	if [[ $value == ~* ]]; then
		remove=1
		value=${value#\~}
	fi
	for item in $value; do
		for call in $(expand "$item"); do
			if [[ $remove ]]; then unset "allowed[$call]"; else allowed[$call]=1; fi
		done
	done
done
mkdir -p "$dir"
printf '%s\n' "${!allowed[@]}" | sort >"$dir/syscalls.allowed"

seccomp_args=(--allow /run/sandbox-syscalls.allowed --families "${families// /,}" --restrict-namespaces
	--restrict-suid-sgid --lock-personality --deny-write-execute --private-keyring)
[[ $errno_name ]] && seccomp_args+=(--errno "$errno_name")
bounding=-all
for cap in $caps; do
	cap=${cap#CAP_}
	bounding+=",+${cap,,}"
done

# --- the mounts, in a namespace of their own ---------------------------------
if [[ -z ${SANDBOX_INSIDE:-} ]]; then
	SANDBOX_INSIDE=1 exec unshare --mount --uts --propagation private "$0" "$unit" "$dir" -- "$@"
fi

root=$dir/.root
mkdir -p "$root" "$dir/runtime"
# The layers live on a tmpfs: overlayfs refuses an upper directory inside
# its lower one (/).
mount -t tmpfs -o mode=0755 sandbox "$root"
mkdir -p "$root/upper" "$root/work" "$root/merged"
mount -t overlay overlay -o "lowerdir=/,upperdir=$root/upper,workdir=$root/work" "$root/merged"
new=$root/merged
[[ -d $dir/files ]] && cp -a "$dir/files/." "$new/"
# Read by seccomp-exec inside, where the host's /tmp is out of sight.
cp "$dir/syscalls.allowed" "$new/run/sandbox-syscalls.allowed"

# ProtectProc=invisible, ProcSubset=pid: a proc of its own that shows the
# processes of the service's user only, and nothing but processes.
mount -t proc -o nosuid,nodev,noexec,hidepid=invisible,subset=pid proc "$new/proc"
# ProtectKernelTunables, ProtectControlGroups: /sys (of this network
# namespace) read-only, the control groups in it included.
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$new/sys"
# PrivateDevices, DevicePolicy=closed: only the pseudo-devices both allow
# (no /dev/kmsg either: ProtectKernelLogs).
mount -t tmpfs -o mode=0755,nosuid,noexec dev "$new/dev"
for node in null zero full random urandom tty; do
	touch "$new/dev/$node"
	mount --bind "/dev/$node" "$new/dev/$node"
done
mkdir -p "$new/dev/pts" "$new/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$new/dev/pts"
ln -s pts/ptmx "$new/dev/ptmx"
mount -t tmpfs -o nosuid,nodev,mode=1777 shm "$new/dev/shm"
ln -s /proc/self/fd "$new/dev/fd"
# RuntimeDirectory, RuntimeDirectoryMode.
chmod "$runtime_mode" "$dir/runtime"
mkdir -p "$new/run/$runtime_name"
mount --bind "$dir/runtime" "$new/run/$runtime_name"
# ReadWritePaths.
for path in "${rw_paths[@]}"; do
	path=${path#-}
	mkdir -p "$dir/rw$path" "$new$path"
	mount --bind "$dir/rw$path" "$new$path"
done
# ProtectSystem=strict: the whole tree read-only, except the API file
# systems and what the unit makes writable.
mount -o remount,bind,ro "$new"
# ProtectHome: the homes cannot be entered.
for path in /home /root /run/user; do
	[[ -d $new$path ]] && mount -t tmpfs -o ro,mode=0000 inaccessible "$new$path"
done
# ProtectKernelModules: the module tree cannot be entered.
for path in /usr/lib/modules /lib/modules; do
	[[ -d $new$path && ! -L $new$path ]] && mount -t tmpfs -o ro,mode=0000 inaccessible "$new$path"
done
# PrivateTmp.
mount -t tmpfs -o mode=1777,nosuid,nodev tmp "$new/tmp"
mount -t tmpfs -o mode=1777,nosuid,nodev tmp "$new/var/tmp"
# A service's programs are installed (/usr/sbin); the test's come from a
# build tree, which may itself lie under /tmp (a clone there): the
# directory of each program run here stays visible, read-only, and
# nothing else of the host's /tmp does.
for prog in "$SECCOMP_EXEC" "$@"; do
	[[ $prog == /* && -f $prog && -x $prog ]] || continue
	[[ $prog == /tmp/* || $prog == /var/tmp/* ]] || continue
	d=$(dirname "$prog")
	mountpoint -q "$new$d" && continue
	mkdir -p "$new$d"
	mount --bind "$d" "$new$d"
	mount -o remount,bind,ro "$new$d"
done

# UMask; CapabilityBoundingSet and NoNewPrivileges (setpriv); then the
# filters: RestrictAddressFamilies, RestrictNamespaces, RestrictSUIDSGID,
# LockPersonality, MemoryDenyWriteExecute, SystemCallArchitectures,
# SystemCallFilter, SystemCallErrorNumber, KeyringMode (seccomp-exec).
# ProtectClock, ProtectHostname, ProtectKernelModules and ProtectKernelLogs
# add system call filters of their own under systemd (@clock, sethostname,
# @module, syslog); tests/package/hardening.sh checks that the allow-list
# holds none of them, and that the bounding set has none of their
# capabilities.
umask "$umask_value"
exec chroot "$new" setpriv --bounding-set="$bounding" --inh-caps=-all --no-new-privs \
	"$SECCOMP_EXEC" "${seccomp_args[@]}" -- "$@"
