#!/bin/sh
# keepalived notify hook for ctsyncd, for a primary-backup pair of firewalls.
#
#   primary-backup.sh primary|backup|fault [CONFIG]
#
# keepalived runs it from the vrrp_sync_group of keepalived.conf (next to
# this file) each time the group changes state.  CONFIG is the ctsyncd
# configuration (default /etc/ctsyncd/ctsyncd.conf); the daemon's control
# socket is found through it.  The binary is $CTSYNCD, else the first
# ctsyncd on PATH, /usr/sbin or /usr/local/sbin.
#
# Each step is logged (syslog tag "ctsyncd-hook" unless HOOK_SYSLOG=off, and
# to the file $HOOK_LOG if set); a failed step is logged as an error and the
# hook goes on with the next one, because a half-done takeover is better
# than none.  The exit status is 1 if a step failed, 0 otherwise.
#
# With "HotStandby on" in the Mode block (recommended), the backup's kernel
# table already holds the primary's states when keepalived moves the
# addresses, so no packet is lost while this hook runs; without it, the
# kernel is empty for established connections until step 1 of "primary" is
# done, and keepalived has already sent its gratuitous ARPs by then.
set -u

action=${1:-}
conf=${2:-${CTSYNCD_CONF:-/etc/ctsyncd/ctsyncd.conf}}

find_ctsyncd() {
	if [ -n "${CTSYNCD:-}" ]; then
		echo "$CTSYNCD"
		return
	fi
	for c in "$(command -v ctsyncd 2>/dev/null)" /usr/sbin/ctsyncd /usr/local/sbin/ctsyncd; do
		if [ -n "$c" ] && [ -x "$c" ]; then
			echo "$c"
			return
		fi
	done
	echo ctsyncd
}
bin=$(find_ctsyncd)
status=0

say() {
	# $1: priority (info or err); the rest: the message
	prio=$1
	shift
	[ "${HOOK_SYSLOG:-on}" = on ] && command -v logger >/dev/null 2>&1 &&
		logger -t ctsyncd-hook -p "daemon.$prio" -- "$*"
	[ -n "${HOOK_LOG:-}" ] && printf '%s %s [%s] %s\n' "$(date +%H:%M:%S.%N | cut -c1-12)" "$action" "$prio" "$*" >>"$HOOK_LOG"
	return 0
}

# step "what it is for" ctsyncd-arguments...
step() {
	what=$1
	shift
	if out=$("$bin" -C "$conf" "$@" 2>&1); then
		say info "$what: ctsyncd $*: $(echo "$out" | tr '\n' ' ')"
	else
		say err "$what failed: ctsyncd $*: $(echo "$out" | tr '\n' ' ')"
		status=1
	fi
}

# Transitions can follow each other faster than a hook runs (backup, then
# primary at once): let each hook finish before the next one starts.
lock=${HOOK_LOCK:-/run/ctsyncd-hook.lock}
if command -v flock >/dev/null 2>&1 && exec 9>>"$lock"; then
	flock -w 60 9 || say err "waited 60 s for the previous hook; going on"
fi

case $action in
primary)
	# This firewall now owns the virtual addresses.
	# 1. Write the peer's states into the kernel.  The answer comes when
	#    the commit is done.  With HotStandby it mostly refreshes states
	#    already there, and it stops writing what the peer sends from now
	#    on into the kernel: those states are the peer's, not ours.
	step "commit the external cache into the kernel" -c
	# 2. Both caches are out of date now: the kernel table is the truth.
	step "flush the internal and external caches" -f
	# 3. Load the kernel table, committed states included, as our own.
	step "reload the internal cache from the kernel" -R
	# 4. Send all of it to the new backup, which may have missed a part.
	step "send every state to the backup" -B
	;;
backup)
	# This firewall now stands by.
	# 1. Is the daemon alive?  If not (first start, or it crashed), start
	#    it; a lock file left by a crash is taken over, with a warning.
	if ! "$bin" -C "$conf" -s >/dev/null 2>&1; then
		say err "ctsyncd is not answering on its control socket; starting it"
		# (without the hook's lock on fd 9: the daemon would hold it forever)
		if ! "$bin" -C "$conf" -d 9>&-; then
			say err "cannot start ctsyncd with $conf"
			exit 1
		fi
	fi
	# 2. In PurgeTimeout seconds, delete from the kernel the states this
	#    firewall created as the primary (the new primary owns them now),
	#    and flush the internal cache.  With HotStandby this also restarts
	#    the writing of received states into the kernel, and the purge
	#    keeps every state that the primary has.
	step "schedule the purge of the kernel table" -t
	# 3. Ask the primary for all its states.
	step "ask the primary for a full resynchronisation" -n
	;;
fault)
	# A link is down: do not take over; forget our states in due time.
	step "schedule the purge of the kernel table" -t
	;;
*)
	say err "unknown transition '$action'"
	echo "usage: $0 primary|backup|fault [CONFIG]" >&2
	exit 1
	;;
esac
exit $status
