#!/bin/sh
# tests/layers.sh -- the seams at link level: every module's library may use
# only symbols defined in its own library or in the libraries of the layers
# it builds on (Makefile.am lists them). nm reads the undefined symbols of
# each library and the defined ones of every other: a symbol that a module
# uses and a module outside its allowed set defines is an upward or sideways
# reference, and fails. Prints TAP.
set -u
: "${BUILDDIR:?}"
cd "$BUILDDIR" || exit 99
command -v nm >/dev/null 2>&1 || { echo "1..0 # SKIP nm not found"; exit 0; }
# module: the modules it may use (besides itself and the C library)
allowed() {
	case $1 in
	util) echo "" ;;
	net|dag) echo "util" ;;
	frontend|parser) echo "parser frontend net util" ;;
	onnx) echo "onnxpb frontend parser net util" ;;
	onnxpb) echo "" ;;
	checkmate) echo "dag util" ;;
	graph) echo "net dag util" ;;
	eval) echo "dag util" ;;
	plan) echo "eval dag util" ;;
	codegen) echo "eval net dag util" ;;
	report) echo "plan eval graph net dag util" ;;
	driver) echo "report codegen plan eval graph onnx onnxpb checkmate frontend parser net dag util" ;;
	*) echo "?" ;;
	esac
}
mods=
# the libraries the build makes (make check passes them), else every one here
for lib in ${LAYER_LIBS:-lib*.a}; do
	m=${lib#lib}; m=${m%.a}
	mods="$mods $m"
	nm -g --defined-only "$lib" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u >"layers-def-$m.txt"
done
n=0
for m in $mods; do n=$((n + 1)); done
echo "1..$n"
i=0
for m in $mods; do
	i=$((i + 1))
	ok=$(allowed "$m")
	if [ "$ok" = "?" ]; then
		echo "not ok $i - lib$m.a: a library tests/layers.sh does not know"
		continue
	fi
	bad=
	for sym in $(nm -g --undefined-only "lib$m.a" 2>/dev/null | awk '{ print $NF }' | sort -u); do
		grep -qx "$sym" "layers-def-$m.txt" && continue
		for other in $mods; do
			[ "$other" = "$m" ] && continue
			grep -qx "$sym" "layers-def-$other.txt" || continue
			case " $ok " in *" $other "*) ;; *) bad="$bad $sym(lib$other.a)" ;; esac
		done
	done
	if [ -z "$bad" ]; then
		echo "ok $i - lib$m.a uses only its own layer and those below"
	else
		echo "not ok $i - lib$m.a uses symbols of a layer above or beside it:$bad"
	fi
done
rm -f layers-def-*.txt
