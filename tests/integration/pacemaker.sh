#!/bin/bash
# Pacemaker's resource agent ocf:heartbeat:conntrackd (Debian package
# resource-agents) manages ctsyncd through its binary and config
# parameters, and Debian's conntrackd 1.4.7 as the control (the same checks
# pass with it, which shows they test the agent's contract, not ctsyncd's
# quirks).  The agent runs, with -C CONFIG: -d to start, -s to monitor (and
# finds the daemon by the socket named in the UNIX block), -n after a start,
# -c -f -R -B to promote, -t -n to demote, -k to stop.
#
# For each binary, on firewall A of a pair whose peer B runs ctsyncd: the
# actions one by one, checking the OCF exit codes (0 success, 7 not running,
# 8 running promoted) and what they did: the peer's states reach A's kernel
# on promote, and go back to the peer (-R, -B); the resync that demote asks
# for refills the external cache, and demote's purge empties A's kernel
# table; stop ends the daemon.  Then ocf-tester (every action, some twice,
# in the orders a cluster uses).  Last, the shipped ctsyncd.conf, its Sync
# block filled in, runs under the agent as it is (in a /run of its own).
# No cluster is needed: the agent's calls of crm_master go to a stand-in
# that records the scores.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/pair.sh"
. "$(dirname "$0")/../lib/interop.sh"
require_root
require_cmd conntrack conntrackd ocf-tester xmllint unshare

AGENT=${OCF_ROOT:-/usr/lib/ocf}/resource.d/heartbeat/conntrackd
[[ -x $AGENT ]] || { echo "$TEST_NAME: $AGENT is missing: run scripts/install-deps.sh" >&2; exit 99; }
CONNTRACKD=$(command -v conntrackd)
SHIPPED_CONF=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/ctsyncd.conf

pair_setup || { echo "cannot create the namespaces" >&2; exit 99; }
MODE_OPTS="PurgeTimeout 2" pair_conf A FTFW   # demote's -t purges the kernel table 2 s later
pair_conf B FTFW
# The agent reads the socket's path from a line "Path ..." inside a UNIX
# block that opens on a line of its own (an awk range): write it so.
sed -i 's|UNIX { Path \(.*\) }|UNIX {\n\t\tPath \1\n\t}|' "$WORK/A.conf"

# The agent's environment, as Pacemaker's executor gives it.  The promoted
# flag file goes to a directory of ours, and crm_master to a stand-in.
mkdir -p "$WORK/rsctmp" "$WORK/sbin"
cat >"$WORK/sbin/crm_master" <<EOF
#!/bin/sh
echo "\$*" >>"$WORK/crm_master.log"
EOF
chmod +x "$WORK/sbin/crm_master"
export OCF_ROOT=${OCF_ROOT:-/usr/lib/ocf} HA_RSCTMP=$WORK/rsctmp HA_SBIN_DIR=$WORK/sbin
export OCF_RESKEY_CRM_meta_master_max=1 OCF_RESKEY_CRM_meta_master_node_max=1
export OCF_RESKEY_CRM_meta_clone_node_max=1 OCF_RESKEY_CRM_meta_interval=10000
export OCF_RESKEY_config=$WORK/A.conf

# agent ACTION: the agent's ACTION on A; its exit status.
agent() { ip netns exec "$NS_A" timeout 25 "$AGENT" "$1" >>"$WORK/agent.log" 2>&1; }
# agent_is ACTION WANT: the agent's ACTION exits WANT (the status seen is in the line).
agent_is() {
	local rc
	agent "$1"; rc=$?
	check "$NAME: $1 exits $2 (saw $rc)" test "$rc" -eq "$2"
}
# daemon_pid: the PID of the daemon on A (1.4.7 leaves its lock file empty).
daemon_pid() {
	if [[ $BIN == "$CTSYNCD" ]]; then head -n1 "$WORK/A.lock" 2>/dev/null; else ns_pid "$NS_A" conntrackd; fi
}
a_ctl() { ip netns exec "$NS_A" "$BIN" -C "$WORK/A.conf" "$@" 2>/dev/null; }
count() { grep -c -- "$1" || true; }
a_ext_is() { [[ $(a_ctl -e | count "$1") -eq $2 ]]; }
a_kernel_is() { [[ $(ct_in A -L | count "$1") -eq $2 ]]; }
b_ext_is() { [[ $(ctl B -e 2>/dev/null | count "$1") -eq $2 ]]; }
no_daemon_on_a() { [[ -z $(ip netns pids "$NS_A") ]]; }

net=70
for BIN in "$CTSYNCD" "$CONNTRACKD"; do
	NAME=$(basename "$BIN")
	export OCF_RESKEY_binary=$BIN
	export OCF_RESOURCE_INSTANCE=cts$$-$NAME
	: >"$WORK/crm_master.log"
	# A fresh peer for each binary: a ctsyncd peer spaces the walks that
	# its peers' requests cause (doc/protocol.md, deviation 21), and the
	# previous round asked for many.
	pair_start B || { fail "$NAME: the peer B starts"; continue; }

	# --- the actions one by one -----------------------------------------------------------
	out=$(ip netns exec "$NS_A" "$AGENT" meta-data 2>&1); rc=$?
	check "$NAME: meta-data exits 0 with the agent's XML" \
		bash -c '[[ $1 -eq 0 ]] && grep -q "<resource-agent name=\"conntrackd\"" <<<"$2"' _ "$rc" "$out"
	agent_is validate-all 0
	agent_is monitor 7
	agent_is start 0
	pid=$(daemon_pid)
	[[ -n $pid ]] && track_pid "$pid"
	check "$NAME: start started the daemon (pid ${pid:-none})" pid_alive "${pid:-0}"
	agent_is monitor 0

	# the peer's states: in A's external cache, not in A's kernel
	for i in 1 2 3; do
		ct_in B -I -s "10.$net.0.$i" -d 10.250.1.1 -p tcp --sport 1000 --dport 22 \
			--state ESTABLISHED -u SEEN_REPLY,ASSURED -t 600 >/dev/null
	done
	check "$NAME: the peer's 3 states reach A's external cache" wait_until 10 a_ext_is "src=10\.$net\." 3
	check "$NAME: ... and not A's kernel table, before promote" a_kernel_is "src=10\.$net\." 0

	agent_is promote 0
	check "$NAME: promote committed the peer's states into A's kernel" a_kernel_is "src=10\.$net\." 3
	check "$NAME: promote re-read the kernel (the states are in the internal cache)" \
		bash -c '[[ $(ip netns exec "$1" "$2" -C "$3" -i 2>/dev/null | grep -c "src=10\.$4\.") -eq 3 ]]' \
		_ "$NS_A" "$BIN" "$WORK/A.conf" "$net"
	check "$NAME: promote's bulk send brought them to the peer's external cache" \
		wait_until 10 b_ext_is "src=10\.$net\." 3
	check "$NAME: the promoted flag file exists" test -e "$HA_RSCTMP/conntrackd.$OCF_RESOURCE_INSTANCE.master"
	agent_is monitor 8
	agent_is promote 0

	agent_is demote 0
	check "$NAME: demote asked the peer for a resync (its states are back in A's external cache)" \
		wait_until 10 a_ext_is "src=10\.$net\." 3
	check "$NAME: demote's purge (-t) took the committed states out of A's kernel table after 2 s" \
		wait_until 10 a_kernel_is "src=10\.$net\." 0
	agent_is monitor 0
	agent_is demote 0

	agent_is stop 0
	check "$NAME: stop ended the daemon" wait_until 5 pid_gone "${pid:-0}"
	check "$NAME: stop removed the control socket" test ! -e "$WORK/A.ctl"
	agent_is monitor 7
	agent_is stop 0
	check "$NAME: A's calls of crm_master ended with the unpromoted score" \
		bash -c 'tail -n1 "$1" | grep -qx -- "-Q -l reboot -v 100"' _ "$WORK/crm_master.log"

	# --- ocf-tester -----------------------------------------------------------------------
	: >"$WORK/crm_master.log"
	out=$(ip netns exec "$NS_A" timeout 50 ocf-tester -n "$OCF_RESOURCE_INSTANCE" -o binary="$BIN" \
		-o config="$WORK/A.conf" -o CRM_meta_master_max=1 -o CRM_meta_master_node_max=1 \
		-o CRM_meta_clone_node_max=1 "$AGENT" 2>&1)
	rc=$?
	echo "$out" >"$WORK/ocf-tester.$NAME.log"
	check "$NAME: ocf-tester passes every test (exit $rc)" \
		bash -c '[[ $1 -eq 0 ]] && grep -q "passed all tests" <<<"$2"' _ "$rc" "$out"
	check "$NAME: ocf-tester promoted (score 1000) and demoted (100) it" \
		bash -c 'grep -qx -- "-Q -l reboot -v 1000" "$1" && tail -n1 "$1" | grep -qx -- "-Q -l reboot -v 100"' \
		_ "$WORK/crm_master.log"
	check "$NAME: no daemon is left after ocf-tester" wait_until 5 no_daemon_on_a
	pid=$(head -n1 "$WORK/B.lock")
	pair_stop B
	wait_until 5 pid_gone "$pid"
	net=$((net + 1))
done

# --- the shipped /etc/ctsyncd/ctsyncd.conf ---------------------------------------------------
# Its Sync block uncommented and given this pair's link; the rest as it is,
# the socket and lock file in their default places, in a /run of this test's
# own (a private mount namespace in A's network namespace).
sed -e '/^#Sync {/,/^#}/s/^#//' -e 's/192\.0\.2\.1/198.18.1.1/; s/192\.0\.2\.2/198.18.1.2/; s/eth2/syncA/' \
	"$SHIPPED_CONF" >"$WORK/shipped.conf"
export OCF_RESKEY_binary=$CTSYNCD OCF_RESKEY_config=$WORK/shipped.conf OCF_RESOURCE_INSTANCE=cts$$-shipped
seen=$(ip netns exec "$NS_A" unshare -m bash -c '
	mount -t tmpfs ctsyncd-test /run || exit
	for a in start monitor promote monitor demote monitor stop monitor; do
		timeout 10 "$1" "$a" >>"$2" 2>&1
		printf "%s=%s " "$a" "$?"
	done' _ "$AGENT" "$WORK/agent.log")
check "the shipped ctsyncd.conf under the agent: ${seen:-nothing ran}" \
	test "$seen" = "start=0 monitor=0 promote=0 monitor=8 demote=0 monitor=0 stop=0 monitor=7 "
check "no daemon is left after the agent's stop" wait_until 5 no_daemon_on_a

finish
