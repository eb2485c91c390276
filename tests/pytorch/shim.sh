# tests/pytorch/shim.sh -- sourced by check.sh and torch2.sh: a temporary
# folder ($tmp, removed on exit) holding the allocation shim
# ($tmp/allocshim.so) built with $CC; skips (77) when it cannot be built.
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
$CC -O2 -shared -fPIC -o "$tmp/allocshim.so" "$SRCDIR/tests/pytorch/allocshim.c" -ldl ||
	{ echo "1..0 # SKIP cannot build the allocation shim"; exit 77; }
