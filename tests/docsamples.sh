#!/bin/sh
# tests/docsamples.sh -- every code sample in README.md and docs/*.md runs.
# Prints TAP. The fence's info string says what a sample is:
#   ```net [FLAGS...]        a whole .net program; remat FLAGS model.net
#                            must exit 0 with nothing on stderr
#   ```net warns [FLAGS...]  the same, but stderr may hold warnings; when
#                            the next fence is ```text, they are exactly
#                            its lines (source lines and carets left out)
#   ```net fails [FLAGS...]  must exit 1; when the next fence is ```text,
#                            its lines are the exact start of stderr (the
#                            program is saved as model.net, so messages
#                            read "model.net:LINE:COL: error: ...")
#   ```console               each "$ remat ..." line runs from the source
#                            tree and must exit 0, or N when the line ends
#                            in "# exit N"; the lines shown after a command
#                            must each appear in what it printed
# Other fences (grammar notation, install commands, C) are not run.
set -u
: "${REMAT:?}" "${SRCDIR:?}" "${BUILDDIR:?}"
out="$BUILDDIR/tests/out/docsamples"
rm -rf "$out"
mkdir -p "$out"
cd "$SRCDIR" || exit 99

# Cut the samples out: $out/N/{kind,where,flags,body,expect}.
awk -v out="$out" '
function emit(f, s) { printf "%s", s > (dir "/" f); close(dir "/" f) }
FNR == 1 { infence = 0; pending = "" }
/^```/ && !infence {
	infence = 1; body = ""; info = substr($0, 4); start = FNR
	n_words = split(info, w, " ")
	kind = ""
	if (w[1] == "net" || w[1] == "console") kind = w[1]
	if (w[1] == "text" && pending != "") { kind = "expect" }
	else pending = ""
	next
}
/^```/ && infence {
	infence = 0
	if (kind == "expect") { dir = pending; emit("expect", body); pending = ""; next }
	if (kind == "") next
	n++; dir = out "/" n
	system("mkdir -p \"" dir "\"")
	mode = "ok"; flags = ""
	for (i = 2; i <= n_words; i++)
		if (w[i] == "fails" || w[i] == "warns") mode = w[i]
		else flags = flags " " w[i]
	emit("kind", kind "\n"); emit("mode", mode "\n")
	emit("where", FILENAME ":" start "\n"); emit("flags", flags "\n")
	emit("body", body)
	if (kind == "net" && mode != "ok") pending = dir
	next
}
infence { body = body $0 "\n" }
' README.md docs/*.md

n=$(find "$out" -mindepth 1 -maxdepth 1 -type d | wc -l)
echo "1..$((n + 4))"

i=0
while [ $i -lt "$n" ]; do
	i=$((i + 1))
	d="$out/$i"
	kind=$(cat "$d/kind") mode=$(cat "$d/mode") where=$(cat "$d/where")
	flags=$(cat "$d/flags")
	if [ "$kind" = net ]; then
		cp "$d/body" "$d/model.net"
		# shellcheck disable=SC2086
		(cd "$d" && "$REMAT" $flags model.net >stdout 2>stderr)
		rc=$?
		if [ $mode = fails ]; then
			if [ $rc -ne 1 ]; then
				echo "not ok $i - $where: exit status $rc, expected 1"
			elif [ -f "$d/expect" ] &&
			     ! head -n "$(wc -l <"$d/expect")" "$d/stderr" | diff -u "$d/expect" - >"$d/diff"; then
				echo "not ok $i - $where: diagnostics differ"
				sed 's/^/# /' "$d/diff"
			else
				echo "ok $i - $where (fails as shown)"
			fi
		elif [ $rc -ne 0 ]; then
			echo "not ok $i - $where: exit status $rc"
			sed 's/^/# /' "$d/stderr" | head -10
		elif [ $mode = warns ] && [ -f "$d/expect" ] &&
		     ! grep ': warning: ' "$d/stderr" | diff -u "$d/expect" - >"$d/diff"; then
			echo "not ok $i - $where: warnings differ"
			sed 's/^/# /' "$d/diff"
		elif [ $mode = ok ] && [ -s "$d/stderr" ]; then
			echo "not ok $i - $where: unexpected diagnostics"
			sed 's/^/# /' "$d/stderr" | head -10
		else
			echo "ok $i - $where"
		fi
		continue
	fi
	# console: run each "$ remat" line; check its shown output lines.
	bad=""
	k=0
	cmd=""
	: >"$d/shown"
	{ cat "$d/body"; echo '$ '; } | while IFS= read -r line; do
		case $line in
		'$ '*)
			if [ -n "$cmd" ]; then
				k=$((k + 1))
				want=0
				case $cmd in *'# exit '*) want=${cmd##*# exit }; cmd=${cmd%%#*} ;; esac
				run=$(printf '%s' "$cmd" | sed "s|^remat |\"\$REMAT\" |")
				sh -c "$run" >"$d/out$k" 2>&1
				rc=$?
				if [ "$rc" -ne "$want" ]; then
					echo "$cmd: exit status $rc, expected $want" >>"$d/fail"
				fi
				while IFS= read -r s; do
					grep -qxF -- "$s" "$d/out$k" ||
						echo "$cmd: no line '$s' in its output" >>"$d/fail"
				done <"$d/shown"
				: >"$d/shown"
			fi
			cmd=${line#\$ }
			case $cmd in remat\ *|'') ;; *) cmd="" ;; esac
			;;
		*) [ -n "$cmd" ] && printf '%s\n' "$line" >>"$d/shown" ;;
		esac
	done
	if [ -s "$d/fail" ]; then
		echo "not ok $i - $where"
		sed 's/^/# /' "$d/fail"
	else
		echo "ok $i - $where"
	fi
done

# The op table and docs/ops.md list the same ops: one "### name" each.
grep '^[[:space:]]*\[OP_[A-Z0-9_]*\] = ' ir/net/optab.c |
	sed -n 's/^[^"]*"\([a-z_0-9]*\)".*/\1/p' | sort >"$out/optab.ops"
sed -n 's/^### \([a-z_0-9]*\)$/\1/p' docs/ops.md | sort >"$out/doc.ops"
if [ -s "$out/optab.ops" ] && diff -u "$out/optab.ops" "$out/doc.ops" >"$out/ops.diff"; then
	echo "ok $((n + 1)) - docs/ops.md has a section for every op of ir/net/optab.c"
else
	echo "not ok $((n + 1)) - docs/ops.md and ir/net/optab.c list different ops"
	sed 's/^/# /' "$out/ops.diff"
fi

# The man pages: remat-net(5)'s synopsis is a program that runs, it names
# every op, and both pages render without a groff warning.
sed -n '/^\.SH SYNOPSIS/,/^\.SH DESCRIPTION/p' docs/remat-net.5 |
	sed -n '/^\.nf/,/^\.fi/p' | grep -v '^\.' >"$out/synopsis.net"
if "$REMAT" "$out/synopsis.net" >/dev/null 2>"$out/synopsis.err" &&
   [ -s "$out/synopsis.net" ] && ! [ -s "$out/synopsis.err" ]; then
	echo "ok $((n + 2)) - docs/remat-net.5: the synopsis runs"
else
	echo "not ok $((n + 2)) - docs/remat-net.5: the synopsis does not run"
	sed 's/^/# /' "$out/synopsis.err"
fi
missing=""
for op in $(cat "$out/optab.ops"); do
	grep -q "\\<$op\\>" docs/remat-net.5 || missing="$missing $op"
done
if [ -z "$missing" ]; then
	echo "ok $((n + 3)) - docs/remat-net.5 names every op"
else
	echo "not ok $((n + 3)) - docs/remat-net.5 lacks:$missing"
fi
if ! command -v groff >/dev/null 2>&1; then
	echo "ok $((n + 4)) - man pages render # SKIP no groff"
elif groff -man -ww -z docs/remat.1 docs/remat-net.5 2>"$out/groff.err" &&
     ! [ -s "$out/groff.err" ]; then
	echo "ok $((n + 4)) - man pages render without warnings"
else
	echo "not ok $((n + 4)) - man pages: groff warnings"
	sed 's/^/# /' "$out/groff.err"
fi
