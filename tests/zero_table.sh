#!/bin/sh
# tests/zero_table.sh -- every cell of `remat --zero-table` is the peak
# that `remat --ranks R --zero Z` reports, also for the cells it takes
# from another (driver/zero_table.c, same_cell: at 1 rank with nothing
# offloaded every stage is ZeRO-0's; ZeRO-0 from 2 ranks up is the 2-rank
# cell), with and without offload and pipeline stages. Prints TAP.
set -u
: "${REMAT:?}" "${SRCDIR:?}"
cd "$SRCDIR" || exit 99
tiny_gpt2="-DB=2 -DS=16 -DD=32 -DH=2 -DL=2 -DV=64 examples/gpt2.net"
tiny_llama="-DB=1 -DS=16 -DD=32 -DH=2 -DL=2 -DF=64 -DV=64 examples/llama.net"
set -- \
	"-O2 $tiny_gpt2" \
	"-O1 --offload optimizer $tiny_gpt2" \
	"-O2 --zero 3 --offload optimizer,params $tiny_llama" \
	"-O0 --stages 2 $tiny_llama" \
	"-O2 --ranks 16 examples/tiny.net"
echo "1..$#"
i=0
fails=0
for args in "$@"; do
	i=$((i + 1))
	# shellcheck disable=SC2086 # args is a word list
	table=$("$REMAT" --zero-table $args 2>&1) || {
		echo "not ok $i - --zero-table $args exits non-zero"
		fails=$((fails + 1))
		continue
	}
	bad=""
	rows=$(printf '%s\n' "$table" | awk 'NR > 2 { print $1 }')
	for r in $rows; do
		for z in 0 1 2 3; do
			cellv=$(printf '%s\n' "$table" |
				awk -v r="$r" -v c=$((2 * z + 2)) 'NR > 2 && $1 == r { print $c " " $(c + 1) }')
			# the cell's own --ranks and --zero; params offload only at ZeRO-3
			off=$(printf '%s' "$args" | sed 's/--ranks [0-9]* //; s/--zero [0-9] //')
			[ "$z" -eq 3 ] || off=$(printf '%s' "$off" | sed 's/optimizer,params/optimizer/')
			# shellcheck disable=SC2086
			want=$("$REMAT" --ranks "$r" --zero "$z" $off 2>/dev/null |
				sed -n 's/^peak: \(.*\) (.*/\1/p')
			# with --stages the table is the largest stage's peak
			[ -n "$want" ] || want=$("$REMAT" --ranks "$r" --zero "$z" $off 2>/dev/null |
				sed -n 's/.*largest stage.*peak: \([^ ]* [^ ]*\).*/\1/p' | head -1)
			[ "$cellv" = "$want" ] || bad="$bad; $r ranks ZeRO-$z: table $cellv, run $want"
		done
	done
	if [ -z "$bad" ] && [ -n "$rows" ]; then
		echo "ok $i - --zero-table $args: $(printf '%s\n' $rows | wc -l) rows, every cell the run's peak"
	else
		echo "not ok $i - --zero-table $args${bad:-: no rows}"
		fails=$((fails + 1))
	fi
done
[ "$fails" -eq 0 ]
