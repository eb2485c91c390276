#!/bin/sh
# tests/golden.sh -- end-to-end golden tests: for every case listed in
# tests/golden/cases, run remat from the source tree (so file names in the
# output are stable) and compare stdout with tests/golden/<name>.<ext> using
# diff -u. Prints TAP. With --update, rewrites the golden files instead.
#
# A line of tests/golden/cases is:  name ext  remat-arguments...
set -u
: "${REMAT:?}" "${SRCDIR:?}" "${BUILDDIR:?}"
# --gpu reads it (report/gpu.c): the goldens are of the defaults
unset PYTORCH_CUDA_ALLOC_CONF
update=no
[ "${1:-}" = "--update" ] && update=yes
out="$BUILDDIR/tests/out/golden"
mkdir -p "$out"
cd "$SRCDIR" || exit 99
n=$(grep -cv '^\s*\(#\|$\)' tests/golden/cases)
echo "1..$n"
i=0
grep -v '^\s*\(#\|$\)' tests/golden/cases | while read -r name ext args; do
	i=$((i + 1))
	got="$out/$name.$ext"
	want="tests/golden/$name.$ext"
	# shellcheck disable=SC2086
	"$REMAT" $args >"$got" 2>"$got.stderr"
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "not ok $i - $name.$ext: remat exited $rc"
		sed 's/^/# /' "$got.stderr" | head -20
		continue
	fi
	if [ $update = yes ]; then
		cp "$got" "$want"
		echo "ok $i - $name.$ext # updated"
	elif diff -u "$want" "$got" >"$got.diff" 2>&1; then
		echo "ok $i - $name.$ext"
	else
		echo "not ok $i - $name.$ext differs from the golden file"
		head -40 "$got.diff" | sed 's/^/# /'
	fi
done
