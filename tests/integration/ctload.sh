#!/bin/bash
# The benchmark's load generator against the real kernel, in a namespace of
# its own: 1000 entries of each protocol and family are created, counted
# (ctload and conntrack agree), spot-checked with conntrack -L -o extended
# (state, mark, zone, timeout), updated (new mark), deleted (count 0); a
# second create of the same entries reports EEXIST and exits 1; the event
# listener counts what it sees; bad arguments are named.
. "$(dirname "$0")/../lib/common.sh"
require_root
require_cmd conntrack ip

CTLOAD=${CTLOAD:-$(built_tool bench/ctload)}
if [[ ! -x $CTLOAD ]]; then
	echo "$TEST_NAME: $CTLOAD is not built (make)" >&2
	exit 99
fi

N=1000
ZONE=3
MARK=7
TIMEOUT=500

ns=$(make_netns ctload) || { echo "$TEST_NAME: cannot create a namespace" >&2; exit 99; }
ctload() { ip netns exec "$ns" "$CTLOAD" "$@"; }
ct() { ip netns exec "$ns" conntrack "$@" 2>/dev/null; }

# field KEY LINE: the value of KEY=... in a ctload result line.
field() { grep -oE "(^| )$1=[^ ]*" <<<"$2" | head -n1 | cut -d= -f2; }
family_name() { [[ $1 == 4 ]] && echo ipv4 || echo ipv6; }
l4_name() { [[ $1 == icmp && $2 == 6 ]] && echo icmpv6 || echo "$1"; }
ct_lines() { ct -L -f "$(family_name "$2")" -p "$(l4_name "$1" "$2")" "${@:3}" | grep -c .; }

# --- create, count, attributes ------------------------------------------------
for fam in 4 6; do
	for proto in tcp udp icmp; do
		what="$proto/ipv$fam"
		out=$(ctload create $N --proto $proto --family $fam --zone $ZONE --mark $MARK \
			--timeout $TIMEOUT 2>&1); rc=$?
		check "create $N $what succeeds (rc=$rc): $out" test $rc -eq 0
		check "create $what reports ok=$N failed=0" \
			test "$(field ok "$out")" = $N -a "$(field failed "$out")" = 0
		n=$(ct_lines $proto $fam)
		check "conntrack -L lists $N $what entries (got $n)" test "$n" = $N

		line=$(ct -L -o extended -f "$(family_name $fam)" -p "$(l4_name $proto $fam)" | shuf -n1)
		# "ipv4 2 tcp 6 499 ESTABLISHED src=..." : the timeout is the 5th field.
		t=$(awk '{print $5}' <<<"$line")
		check "$what timeout within (400, $TIMEOUT]: $line" test "$t" -gt 400 -a "$t" -le $TIMEOUT
		check "$what mark=$MARK" contains "$line" " mark=$MARK "
		check "$what zone=$ZONE" contains "$line" " zone=$ZONE "
		check "$what assured" contains "$line" '\[ASSURED\]'
		if [[ $proto == tcp ]]; then
			check "$what ESTABLISHED" contains "$line" ' ESTABLISHED src='
		fi
		if [[ $proto == icmp ]]; then
			check "$what echo request/reply tuples" \
				contains "$line" "type=$([[ $fam == 4 ]] && echo 8 || echo 128) code=0 .* type=$([[ $fam == 4 ]] && echo 0 || echo 129) code=0"
		fi
	done
done

total=$((6 * N))
out=$(ctload count); n=$(field entries "$out")
check "ctload count sees $total (got $n)" test "$n" = $total
n=$(ct -C)
check "conntrack -C agrees: $total (got $n)" test "$n" = $total
out=$(ctload count --stats); n=$(field entries "$out")
check "ctload count --stats agrees: $total (got $n)" test "$n" = $total
out=$(ctload count --family 6); n=$(field entries "$out")
check "ctload count --family 6 sees $((3 * N)) (got $n)" test "$n" = $((3 * N))

# --- errors: the same entries twice -------------------------------------------
out=$(ctload create $N --zone $ZONE 2>&1); rc=$?
check "creating existing entries exits 1 (rc=$rc)" test $rc -eq 1
check "reports $N EEXIST failures: $out" contains "$out" "failed=$N errors=EEXIST:$N "
check "names the first failed entry" contains "$out" 'first: entry 0 \(tcp src=198\.18\.0\.1 .*EEXIST'
out=$(ctload create $N --zone $ZONE --allow-failures --json 2>/dev/null); rc=$?
check "--allow-failures exits 0 (rc=$rc)" test $rc -eq 0
check "--json reports the errors by name: $out" contains "$out" "\"failed\":$N,\"errors\":\\{\"EEXIST\":$N\\}"
out=$(ctload update $N --zone 0 2>&1); rc=$?
check "updating entries of another zone fails with ENOENT (rc=$rc)" \
	test $rc -eq 1 -a "$(field errors "$out")" = "ENOENT:$N"

# --- update ------------------------------------------------------------------
for fam in 4 6; do
	for proto in tcp udp icmp; do
		out=$(ctload update $N --proto $proto --family $fam --zone $ZONE --mark 9 \
			--timeout 200 2>&1); rc=$?
		check "update $proto/ipv$fam (rc=$rc): $out" test $rc -eq 0 -a "$(field ok "$out")" = $N
		n=$(ct_lines $proto $fam -m 9)
		check "$N $proto/ipv$fam entries carry the new mark (got $n)" test "$n" = $N
		line=$(ct -L -o extended -f "$(family_name $fam)" -p "$(l4_name $proto $fam)" | shuf -n1)
		t=$(awk '{print $5}' <<<"$line")
		check "$proto/ipv$fam new timeout within (150, 200]: $t" test "$t" -gt 150 -a "$t" -le 200
	done
done

# --- events, paced creates -----------------------------------------------------
ip netns exec "$ns" "$CTLOAD" listen --until-count $((2 * N)) --seconds 20 --json \
	>"$WORK/listen.out" 2>"$WORK/listen.err" &
listener=$!
track_pid $listener
check "the listener starts" wait_until 5 grep -q listening "$WORK/listen.err"
out=$(ctload create $N --proto udp --family 4 --offset 100000 --rate 10000 2>&1); rc=$?
el=$(field elapsed_s "$out")
check "paced create ($N at 10000/s) succeeds (rc=$rc)" test $rc -eq 0
check "and takes about 0.1 s (took $el)" awk -v e="$el" 'BEGIN { exit !(e >= 0.08 && e < 2) }'
ctload delete $N --proto udp --family 4 --offset 100000 >/dev/null
wait $listener; rc=$?
out=$(cat "$WORK/listen.out")
check "the listener exits 0 (rc=$rc)" test $rc -eq 0
check "and saw $N new and $N destroy events: $out" \
	contains "$out" "\"new\":$N,\"update\":0,\"destroy\":$N,\"total\":$((2 * N)),\"enobufs\":0"

# --- delete, flush ------------------------------------------------------------
for fam in 4 6; do
	for proto in tcp udp icmp; do
		out=$(ctload delete $N --proto $proto --family $fam --zone $ZONE 2>&1); rc=$?
		check "delete $proto/ipv$fam (rc=$rc)" test $rc -eq 0 -a "$(field ok "$out")" = $N
	done
done
n=$(ct -C)
check "the table is empty after the deletes (conntrack -C: $n)" test "$n" = 0
out=$(ctload delete 10 2>&1); rc=$?
check "deleting missing entries fails with ENOENT (rc=$rc)" \
	test $rc -eq 1 -a "$(field errors "$out")" = "ENOENT:10"

out=$(ctload raw-rate 5000 --proto mixed --family 6); rc=$?
check "raw-rate 5000 (rc=$rc): $out" test $rc -eq 0 -a "$(field in_table "$out")" = 5000
ctload create 100 >/dev/null
out=$(ctload flush); rc=$?
check "flush (rc=$rc)" test $rc -eq 0 -a "$(ct -C)" = 0

# --- bad arguments --------------------------------------------------------------
bad() {
	local pattern=$1 out rc named=no
	shift
	out=$(ctload "$@" 2>&1); rc=$?
	contains "$out" "$pattern" && named=yes
	check "ctload $* exits 1 naming the problem (rc=$rc): $out" test $rc -eq 1 -a $named = yes
}
bad "'12x' has an unknown suffix" create 12x
bad 'missing the number of entries' create
bad "--proto: 'sctp'" create 10 --proto sctp
bad "--family: '5'" create 10 --family 5
bad "--zone: 70000 is out of range" create 10 --zone 70000
bad "--base-addr: '10.0.0.1' is not an IPv6" create 10 --family 6 --base-addr 10.0.0.1
bad 'option --rate does not apply to count' count --rate 5
bad "unknown option '--bogus'" create 10 --bogus
bad "unknown command 'frobnicate'" frobnicate
bad "option '--seconds' needs a value" listen --seconds
check "nothing was created by the bad commands" test "$(ct -C)" = 0

finish
