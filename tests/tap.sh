# tests/tap.sh -- sourced by the TAP test scripts of issue 28 (dot.sh,
# layers_agree.sh): `. "$SRCDIR/tests/tap.sh"; tap_init NAME` checks the
# environment, makes an empty $out (tests/out/NAME under the build tree)
# and enters the source tree; ok, notok and skip count in $i and set
# $failed. The script ends with: echo "1..$i"; exit $failed.
set -u
: "${REMAT:?}" "${SRCDIR:?}" "${BUILDDIR:?}"
i=0 failed=0
ok() { i=$((i + 1)); echo "ok $i - $*"; }
notok() { i=$((i + 1)); failed=1; echo "not ok $i - $*"; }
skip() { i=$((i + 1)); echo "ok $i - $1 # SKIP $2"; }
tap_init() {
	out="$BUILDDIR/tests/out/$1"
	rm -rf "$out"
	mkdir -p "$out" || exit 99
	cd "$SRCDIR" || exit 99
}
