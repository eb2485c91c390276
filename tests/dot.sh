#!/bin/sh
# tests/dot.sh -- issue 28: --dot draws a def's repeated calls once. The
# calls of a def are one cluster ("block ×12") in every example, the node
# count does not grow with the depth, edges still lead into and out of the
# cluster,
# --dot-backward works on the collapsed graph, --dot-full draws every call,
# and Graphviz lays out GPT-2 and a T5-style encoder-decoder (12 + 12
# layers, tests/bench/t5.net) with their backward in under 10 s each (that
# part is a SKIP without graphviz). Prints TAP.
: "${SRCDIR:?}"
# shellcheck source=tests/tap.sh
. "$SRCDIR/tests/tap.sh"
tap_init dot

nodes() { grep -c '^  [ftb][0-9]* \[' "$1"; }
clusters() { sed -n 's/^    label="\(.*\)"; style=.*/\1/p' "$1"; }

dot_of() { # dot_of NAME ARGS...: $out/NAME.dot
	name=$1
	shift
	if ! "$REMAT" "$@" --dot "$out/$name.dot" >"$out/$name.out" 2>"$out/$name.err"; then
		notok "$name: remat $* --dot failed"
		sed 's/^/# /' "$out/$name.err" | head -5
		return 1
	fi
}

G2="examples/gpt2.net -DL=2"
dot_of gpt2 examples/gpt2.net --dot-backward
dot_of gpt2-L2 $G2 --dot-backward
dot_of gpt2-full $G2 --dot-backward --dot-full
dot_of t5 tests/bench/t5.net --dot-backward
dot_of whisper examples/whisper.net

# one cluster per def, named with its calls
if [ "$(clusters "$out/gpt2.dot")" = "block ×12 (block.0 shown)" ]; then
	ok "gpt2: one cluster, block ×12"
else
	notok "gpt2: clusters: $(clusters "$out/gpt2.dot" | tr '\n' '|')"
fi
want="enc_layer ×12 (enc_layer.0 shown)|dec_layer ×12 (dec_layer.0 shown)|"
if [ "$(clusters "$out/t5.dot" | tr '\n' '|')" = "$want" ]; then
	ok "t5: one cluster per def, ×12 each"
else
	notok "t5: clusters: $(clusters "$out/t5.dot" | tr '\n' '|')"
fi
n=$(clusters "$out/whisper.dot" | grep -c '×12')
if [ "$n" -eq 2 ]; then ok "whisper: encoder and decoder layers collapsed"
else notok "whisper: $n clusters of 12 calls"; fi

# every example: one cluster per def, whatever calls it makes in between
# (DenseNet's dense layers grow, SD-UNet's res and xattn alternate), and
# a few hundred nodes
bad=
for f in examples/*.net; do
	b=$(basename "$f" .net)
	dot_of "ex-$b" "$f" --dot-backward || continue
	defs=$(clusters "$out/ex-$b.dot" | sed 's/[ .].*//' | sort)
	n=$(nodes "$out/ex-$b.dot")
	if [ "$defs" != "$(echo "$defs" | uniq)" ] || [ "$n" -gt 700 ]; then
		bad="$bad $b($n nodes; $(echo $defs))"
	fi
done
if [ -z "$bad" ]; then ok "every example: one cluster per def, at most 700 nodes"
else notok "clusters or nodes:$bad"; fi
if clusters "$out/ex-densenet.dot" | grep -q '^dense ×58 ' &&
   grep -q 'shape varies by call, dense.0.s shown' "$out/ex-densenet.dot"; then
	ok "densenet: the growing dense layers are one cluster, their shapes marked"
else
	notok "densenet: $(clusters "$out/ex-densenet.dot" | tr '\n' '|')"
fi

# the node count does not grow with the depth; only one call is drawn
a=$(nodes "$out/gpt2-L2.dot") b=$(nodes "$out/gpt2.dot")
if [ "$a" -eq "$b" ] && [ "$b" -lt 400 ]; then ok "gpt2: $b nodes at 2 and 12 layers"
else notok "gpt2: $a nodes at 2 layers, $b at 12"; fi
a=$(nodes "$out/t5.dot")
if [ "$a" -lt 800 ]; then ok "t5: $a nodes"; else notok "t5: $a nodes"; fi
if ! grep -q 'block\.1\.' "$out/gpt2-L2.dot" && grep -q 'label="block\.0\.' "$out/gpt2-L2.dot"; then
	ok "gpt2: the first call's ops are drawn, the others are not"
else
	notok "gpt2: calls other than the first drawn"
fi

# edges into and out of the clusters: members against the other nodes
edges_io() { # edges_io FILE: "INTO OUTOF ACTS", edges from outside into a
	# cluster and from a cluster out (fails when either is 0), and of the
	# edges into it, those from activations (red) outside every cluster
	awk '
	/^  t[0-9]* \[.*fillcolor="#e15759"/ { act[$1] = 1 }
	/^  subgraph cluster_/ { inside = 1; next }
	inside && /^  }/ { inside = 0; next }
	inside && !/label=/ { for (k = 1; k <= NF; k++) { m = $k; sub(/;$/, "", m); member[m] = 1 } next }
	/ -> / { from[++n] = $1; to[n] = $3; sub(/;$/, "", to[n]) }
	END {
		for (k = 1; k <= n; k++) {
			if (!(from[k] in member) && to[k] in member) into++
			if (!(from[k] in member) && to[k] in member && from[k] in act) acts++
			if (from[k] in member && !(to[k] in member)) outof++
		}
		printf "%d %d %d\n", into, outof, acts
		exit !(into > 0 && outof > 0)
	}' "$1"
}
if io=$(edges_io "$out/gpt2.dot"); then ok "gpt2: edges into and out of the cluster ($io)"
else notok "gpt2: edges into / out of the cluster: $io"; fi
# U-Net calls double_conv from 9 places and cbr from 4, between top-level
# ops: each call site's input is an edge from a top-level activation into
# the cluster (9 + 4 - 1: the first call's input is the image)
dot_of unet examples/unet.net
io=$(edges_io "$out/unet.dot")
if [ "${io##* }" -ge 12 ]; then ok "unet: every call site leads into the cluster ($io)"
else notok "unet: edges into / out of the clusters: $io"; fi

# --dot-backward on the collapsed graph: the first call's backward ops
if grep -q '^  b[0-9]* \[.*label="backward block\.0\.' "$out/gpt2.dot" &&
   ! grep -q 'label="backward block\.[1-9]' "$out/gpt2.dot"; then
	ok "gpt2: --dot-backward draws the first call's backward"
else
	notok "gpt2: --dot-backward on the collapsed graph"
fi

# --dot-full: every call, no cluster
if grep -q 'label="block\.1\.' "$out/gpt2-full.dot" && ! grep -q 'subgraph' "$out/gpt2-full.dot" &&
   [ "$(nodes "$out/gpt2-full.dot")" -gt "$(nodes "$out/gpt2-L2.dot")" ]; then
	ok "--dot-full draws every call ($(nodes "$out/gpt2-full.dot") nodes at 2 layers)"
else
	notok "--dot-full"
fi

# --dot-full and --dot-backward shape --dot only
"$REMAT" examples/tiny.net --dot-full >"$out/nodot.out" 2>"$out/nodot.err"
if [ $? -eq 2 ] && grep -q 'without --dot' "$out/nodot.err"; then
	ok "--dot-full without --dot is a usage error"
else
	notok "--dot-full without --dot: $(cat "$out/nodot.err")"
fi

# Graphviz lays them out in under 10 s
if command -v dot >/dev/null 2>&1; then
	for p in gpt2 t5; do
		start=$(date +%s)
		if timeout 60 dot -Tsvg "$out/$p.dot" >"$out/$p.svg" 2>"$out/$p.dot.err"; then
			s=$(($(date +%s) - start))
			if [ "$s" -lt 10 ]; then ok "$p: dot -Tsvg in ${s}s"
			else notok "$p: dot -Tsvg took ${s}s"; fi
		else
			notok "$p: dot -Tsvg failed"
			sed 's/^/# /' "$out/$p.dot.err" | head -5
		fi
	done
else
	skip "gpt2: dot -Tsvg" "no graphviz"
	skip "t5: dot -Tsvg" "no graphviz"
fi
echo "1..$i"
exit $failed
