#!/bin/sh
# tests/warn.sh -- the warning corpus: every tests/warn/X.net must make
# remat exit 0 and print exactly tests/warn/X.err on stderr (an empty .err
# says "no diagnostics": the case shows a habit that is accepted). Prints
# TAP. Extra flags come from a first line "# flags: ...". With --update,
# rewrites the .err files.
set -u
: "${REMAT:?}" "${SRCDIR:?}" "${BUILDDIR:?}"
update=no
[ "${1:-}" = "--update" ] && update=yes
out="$BUILDDIR/tests/out/warn"
mkdir -p "$out"
cd "$SRCDIR" || exit 99
set -- tests/warn/*.net
echo "1..$#"
i=0
for src in "$@"; do
	i=$((i + 1))
	name=$(basename "$src" .net)
	flags=$(sed -n '1s/^# flags: //p' "$src")
	# shellcheck disable=SC2086
	"$REMAT" $flags "$src" >"$out/$name.stdout" 2>"$out/$name.err"
	rc=$?
	want=${src%.net}.err
	[ $update = yes ] && cp "$out/$name.err" "$want"
	if [ $rc -ne 0 ]; then
		echo "not ok $i - $name: exit status $rc, expected 0"
		sed 's/^/# /' "$out/$name.err" | head -10
	elif ! diff -u "$want" "$out/$name.err" >"$out/$name.diff" 2>&1; then
		echo "not ok $i - $name: diagnostics differ"
		head -30 "$out/$name.diff" | sed 's/^/# /'
	else
		echo "ok $i - $name"
	fi
done
