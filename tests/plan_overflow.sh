#!/bin/sh
# tests/plan_overflow.sh -- the planners' sums near the Dag caps (issue 15
# item 2): Checkmate training chains whose cost_ram and cost_cpu total
# close to 2^60 go through -O1, -O2, --budget and --exact and give an
# answer (exit 0, or 3 for a budget nothing meets) or a clear error, never
# a sanitizer report or a nan; values near 2^63 are refused with exit 1
# naming the field. Meant for the ASan+UBSan build, where a wrapped sum
# aborts; the plain build checks the answers. Prints TAP.
set -u
: "${REMAT:?}"
tmp=${TMPDIR:-/tmp}/remat-overflow.$$
mkdir -p "$tmp" || exit 99
trap 'rm -rf "$tmp"' EXIT
i=0
ok() { i=$((i + 1)); echo "ok $i - $1"; }
bad() { i=$((i + 1)); echo "not ok $i - $1"; }

# chain NAME N COST RAM: N forward nodes in a chain, N backward nodes
# reading them; COST and RAM are awk expressions in i (0..N-1) and b (1 for
# a backward node), evaluated in double and printed as integers.
chain() {
	awk -v n="$2" -v name="$1" "function cost(i, b) { return $3 }
	function ram(i, b) { return $4 }
	BEGIN {
		C = 2 ^ 60
		printf \"{\\\"directed\\\": true, \\\"graph\\\": {\\\"name\\\": \\\"%s\\\"}, \\\"nodes\\\": [\", name
		for (k = 0; k < 2 * n; k++) {
			i = k < n ? k : k - n; b = k >= n
			printf \"%s{\\\"id\\\": %d, \\\"name\\\": \\\"n%d\\\", \\\"backward\\\": %s, \\\"cost_cpu\\\": %.0f, \\\"cost_ram\\\": %.0f}\", k ? \", \" : \"\", k, k, b ? \"true\" : \"false\", cost(i, b), ram(i, b)
		}
		printf \"], \\\"links\\\": [\"
		sep = \"\"
		for (k = 0; k + 1 < n; k++) { printf \"%s{\\\"source\\\": %d, \\\"target\\\": %d}\", sep, k, k + 1; sep = \", \" }
		printf \"%s{\\\"source\\\": %d, \\\"target\\\": %d}\", sep, n - 1, 2 * n - 1
		for (k = 0; k < n; k++) {
			printf \", {\\\"source\\\": %d, \\\"target\\\": %d}\", k, n + k
			if (k + 1 < n) printf \", {\\\"source\\\": %d, \\\"target\\\": %d}\", n + k + 1, n + k
		}
		print \"]}\"
	}" >"$tmp/$1.json"
}
n=12
chain ram-cap $n '1' 'int(C / (2 * n + 1))'
chain both-cap $n 'int(C / (2 * n + 1))' 'int(C / (2 * n + 1))'
chain heavy-cost $n '(i == 0 && !b) ? C - 4096 : 1' '1000'
chain mid-heavy $n '(i == int(n / 2) && !b) ? C - 4096 : 1' 'int(C / (2 * n + 1))'
chain wide 20 'int(C / 41)' 'int(C / 41)'
chain cost-2p63 $n '(i == 0) ? 9223372036854774784 : 1' '1'
chain ram-2p63 $n '1' '(i == 1) ? 9223372036854774784 : 1'

modes="-O1|-O2|-O2 --max-recompute inf|--budget 1000000B|--budget 100000000000000000B|--exact"
echo "1..42"
for g in ram-cap both-cap heavy-cost mid-heavy wide cost-2p63 ram-2p63; do
	old_ifs=$IFS; IFS='|'
	for m in $modes; do
		IFS=$old_ifs
		# shellcheck disable=SC2086
		"$REMAT" --import checkmate $m "$tmp/$g.json" >"$tmp/out" 2>"$tmp/err"
		rc=$?
		what="$g $m: exit $rc"
		if grep -q 'runtime error\|AddressSanitizer' "$tmp/err"; then
			bad "$what, $(grep -m1 'runtime error\|AddressSanitizer' "$tmp/err")"
		elif grep -qi 'nan' "$tmp/out"; then
			bad "$what, nan in the report"
		else case $g:$rc in
		*-2p63:1)
			field=cost_cpu; [ "$g" = ram-2p63 ] && field=cost_ram
			if grep -q "'$field'" "$tmp/err"; then ok "$what, refused naming '$field'"
			else bad "$what, message: $(cat "$tmp/err")"; fi ;;
		*-2p63:*) bad "$what, not refused" ;;
		*:0) if grep -q '^planned peak: [0-9]' "$tmp/out"; then ok "$what"
		     else bad "$what, no planned peak"; fi ;;
		*:3) if grep -q '^error: no schedule fits' "$tmp/err"; then ok "$what, no fit"
		     else bad "$what, message: $(cat "$tmp/err")"; fi ;;
		*:1) if grep -q '^remat: ' "$tmp/err"; then ok "$what, $(head -1 "$tmp/err")"
		     else bad "$what, no message"; fi ;;
		*) bad "$what" ;;
		esac fi
		IFS='|'
	done
	IFS=$old_ifs
done
