#!/bin/sh
# tests/bad.sh -- the bad-input corpus: every tests/bad/X.net must make
# remat exit with status 1 and print exactly tests/bad/X.err on stderr,
# writing nothing to stdout and no output file. Prints TAP. Extra flags for
# a case come from a first line of the form "# flags: ...". With --update,
# rewrites the .err files.
set -u
: "${REMAT:?}" "${SRCDIR:?}" "${BUILDDIR:?}"
update=no
[ "${1:-}" = "--update" ] && update=yes
out="$BUILDDIR/tests/out/bad"
mkdir -p "$out"
cd "$SRCDIR" || exit 99
set -- tests/bad/*.net
echo "1..$#"
i=0
for src in "$@"; do
	i=$((i + 1))
	name=$(basename "$src" .net)
	flags=$(sed -n '1s/^# flags: //p' "$src")
	rm -f "$out/$name.cu"
	# shellcheck disable=SC2086
	"$REMAT" $flags -o "$out/$name.cu" "$src" >"$out/$name.stdout" 2>"$out/$name.err"
	rc=$?
	want=${src%.net}.err
	if [ $update = yes ]; then
		cp "$out/$name.err" "$want"
	fi
	if [ $rc -ne 1 ]; then
		echo "not ok $i - $name: exit status $rc, expected 1"
		sed 's/^/# /' "$out/$name.err" | head -10
	elif [ -s "$out/$name.stdout" ] || [ -e "$out/$name.cu" ]; then
		echo "not ok $i - $name: wrote output despite errors"
	elif ! diff -u "$want" "$out/$name.err" >"$out/$name.diff" 2>&1; then
		echo "not ok $i - $name: diagnostics differ"
		head -30 "$out/$name.diff" | sed 's/^/# /'
	else
		echo "ok $i - $name"
	fi
done
