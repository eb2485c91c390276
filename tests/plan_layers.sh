#!/bin/sh
# tests/plan_layers.sh -- the planner files call each other one way only:
# each passes/plan/*.c may call rm_* functions defined in its own file or in
# a file of a lower layer below, never higher or sideways, so there is no
# call cycle. A planner file not listed is a planner (layer 3). Prints TAP.
#   0 remat_model.c   the shared model: gap table, builder, scoring, pool
#   1 remat_order.c   topological orders; remat_delta.c  the descent's
#                     incremental scorer
#   2 remat_chain.c remat_dtr.c remat_ls.c remat_o1.c   candidate generators
#     (remat_o1.c's sqrt(n) cuts also serve baseline.c and -O2)
#   3 baseline.c remat_exact.c remat_trim.c (and any other planner)
#   4 remat_o2.c      the -O2 recipe
#   5 remat.c         the dispatcher
set -u
: "${SRCDIR:?}"
cd "$SRCDIR/passes/plan" || exit 99
layer() {
	case $1 in
	remat_model.c) echo 0 ;; remat_order.c|remat_delta.c) echo 1 ;;
	remat_chain.c|remat_dtr.c|remat_ls.c|remat_o1.c) echo 2 ;;
	baseline.c|remat_exact.c|remat_trim.c) echo 3 ;;
	remat_o2.c) echo 4 ;; remat.c) echo 5 ;; *) echo 3 ;;
	esac
}
defs() { grep -o '^rm_[a-z0-9_]*(' "$1" | tr -d '(' ; }
n=$(ls ./*.c | wc -l)
echo "1..$n"
i=0
for f in *.c; do
	i=$((i + 1))
	bad=
	for fn in $(grep -o '\brm_[a-z0-9_]*(' "$f" | tr -d '(' | sort -u); do
		defs "$f" | grep -qx "$fn" && continue
		home=$(grep -l "^$fn(" ./*.c | head -1)
		[ -z "$home" ] && continue
		home=${home#./}
		[ "$(layer "$home")" -lt "$(layer "$f")" ] || bad="$bad $fn ($home)"
	done
	if [ -z "$bad" ]; then
		echo "ok $i - $f calls only lower layers"
	else
		echo "not ok $i - $f calls up or sideways:$bad"
	fi
done
