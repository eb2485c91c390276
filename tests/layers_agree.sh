#!/bin/sh
# tests/layers_agree.sh -- issue 28: the human report (--bytes), --json's
# "layers" and the HTML page's per-layer table show the same figures for
# every layer, to the byte: saved for backward (a saved view holds its
# base's storage), live at the peak, and the activations kept and
# recomputed (JSON and HTML). One function computes them (report/layers.c);
# this reads them back out of the three outputs independently, for several
# examples at -O0 and -O2. (--csv, --trace and --memory-viz are per step and
# have no per-layer figures; viz.sh checks them against --json's
# live_bytes.) Prints TAP.
: "${SRCDIR:?}"
# shellcheck source=tests/tap.sh
. "$SRCDIR/tests/tap.sh"
tap_init layers_agree

# The human report's table: "NAME SAVED PEAK" in bytes. --bytes prints
# "1.50 KiB (1536 bytes)" above 1 KiB and "512 B" below.
text_layers() {
	sed -n '/^activations per layer/,/^$/p' "$1" | sed '1d;/^$/d' |
		sed -E 's/[0-9.]+ [KMGT]iB \(([0-9]+) bytes\)/\1/g; s/([0-9]+) B( |$)/\1\2/g' |
		awk '{ print $1, $2, $4 }'
}
# --json's layers (one per line): "NAME SAVED PEAK KEPT RECOMPUTED".
json_layers() {
	sed -n 's/^ *{"name": "\([^"]*\)", "saved_bytes": \([0-9]*\), "live_at_peak_bytes": \([0-9]*\), "kept": \([0-9]*\), "kept_bytes": [0-9]*, "recomputed": \([0-9]*\), .*/\1 \2 \3 \4 \5/p' "$1"
}
# The page's table: the exact bytes are in the cells' titles.
html_layers() {
	sed -n '/<section id="layers">/,/<\/section>/p' "$1" |
		sed -n 's|^<tr><td>\([^<]*\)</td><td class="n" title="\([0-9]*\) bytes">[^<]*</td><td class="n" title="\([0-9]*\) bytes">[^<]*</td><td class="n">\([0-9]*\)[^<]*</td><td class="n">\([0-9]*\)[^<]*</td></tr>$|\1 \2 \3 \4 \5|p'
}

for ex in gpt2 resnet50 llama unet mlp whisper; do
	for lvl in 0 2; do
		p="$out/$ex-O$lvl"
		if ! "$REMAT" "-O$lvl" --bytes "examples/$ex.net" >"$p.txt" 2>"$p.err" ||
		   ! "$REMAT" "-O$lvl" --json --html "$p.html" "examples/$ex.net" >"$p.json" 2>>"$p.err"; then
			notok "$ex -O$lvl runs"
			sed 's/^/# /' "$p.err" | head -5
			continue
		fi
		json_layers "$p.json" >"$p.jl"
		html_layers "$p.html" >"$p.hl"
		text_layers "$p.txt" >"$p.tl"
		# every layer is read, none silently dropped by a pattern
		n=$(grep -c '"saved_bytes"' "$p.json")
		if [ "$n" -gt 0 ] && [ "$(wc -l <"$p.jl")" -eq "$n" ] && [ "$(wc -l <"$p.hl")" -eq "$n" ]; then
			ok "$ex -O$lvl: $n layers in --json and --html"
		else
			notok "$ex -O$lvl: layers read: json $(wc -l <"$p.jl") html $(wc -l <"$p.hl") of $n"
		fi
		if diff "$p.jl" "$p.hl" >"$p.diff"; then
			ok "$ex -O$lvl: --html agrees with --json"
		else
			notok "$ex -O$lvl: --html and --json differ"
			head -10 "$p.diff" | sed 's/^/# /'
		fi
		# the report lists the def calls, not the top-level runs
		grep -v '^(top level) ' "$p.jl" | awk '{ print $1, $2, $3 }' >"$p.jd"
		if [ "$(wc -l <"$p.tl")" -eq "$(wc -l <"$p.jd")" ] && diff "$p.jd" "$p.tl" >"$p.diff"; then
			ok "$ex -O$lvl: the report agrees with --json ($(wc -l <"$p.tl") def calls)"
		else
			notok "$ex -O$lvl: the report and --json differ"
			diff "$p.jd" "$p.tl" | head -10 | sed 's/^/# /'
		fi
	done
done

# A saved view holds its base: GPT-2's block saves views (reshape/transpose
# of q, k, v) whose bases are not saved themselves; 192.50 MiB, not the
# 156.50 MiB the page showed before (issue 28).
if grep -q '^block.0 201850880 ' "$out/gpt2-O0.jl"; then
	ok "gpt2 block.0 saves 192.50 MiB, views' bases included"
else
	notok "gpt2 block.0: $(grep '^block.0 ' "$out/gpt2-O0.jl")"
fi
echo "1..$i"
exit $failed
