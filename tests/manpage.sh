#!/bin/sh
# tests/manpage.sh -- the documentation agrees with the program. Prints TAP.
#   1. every option of driver/cli.c (the long_options table and the short
#      options of getopt_long's string) is listed by `remat --help`, with
#      an argument exactly when the option takes one, and --help lists no
#      other option;
#   2. docs/remat.1 lists the same options as --help with the same
#      argument forms (the first line after each .TP of OPTIONS);
#   3. every relative link of README.md and docs/*.md names a file of the
#      repository, and no text there points outside it (../shared/...).
# A failure names each option or link that differs.
set -u
: "${REMAT:?}" "${SRCDIR:?}" "${BUILDDIR:?}"
# sort and join must agree on the order ("--dot" before "--dot-backward")
LC_ALL=C
export LC_ALL
out="$BUILDDIR/tests/out/manpage"
mkdir -p "$out"
cd "$SRCDIR" || exit 99
echo "1..3"
tap() {   # tap N DIFFS FAIL-TEXT OK-TEXT: not ok with each difference, or ok
	if [ -s "$2" ]; then
		echo "not ok $1 - $3"
		sed 's/^/# /' "$2"
	else
		echo "ok $1 - $4"
	fi
}

# An option column, "-O0 | -O1 | -O2" or "--help, --version" or
# "--zero 0|1|2|3", as one line per option: NAME<TAB>ARGUMENT.
print_opts='
function print_opts(spec,    n, w, k, name, arg) {
	n = split(spec, w, " ")
	name = ""; arg = ""
	for (k = 1; k <= n; k++) {
		if (w[k] == "|" && substr(w[k + 1], 1, 1) == "-")
			continue
		if (name != "" && substr(w[k], 1, 1) == "-" && (arg == "" || arg ~ /,$/)) {
			sub(/,$/, "", arg); sub(/,$/, "", name)
			print name "\t" arg
			name = ""; arg = ""
		}
		if (name == "") name = w[k]
		else arg = arg == "" ? w[k] : arg " " w[k]
	}
	if (name != "") print name "\t" arg
}'

# --help's option lines start with two spaces and a dash; the option column
# ends at the first run of two spaces. "-O0 | -O1" and "--help, --version"
# list several options.
"$REMAT" --help >"$out/help.txt" 2>&1 || { echo "Bail out! remat --help failed"; exit 1; }
awk "$print_opts"'
/^  -/ {
	spec = substr($0, 3)
	if ((i = index(spec, "  ")) > 0)
		spec = substr(spec, 1, i - 1)
	print_opts(spec)
}' "$out/help.txt" | sort -u >"$out/help.opts"

# driver/cli.c: {"name", required_argument, ...} rows, and the short
# options of the getopt_long string (X: takes a value). NAME<TAB>arg|none.
awk '
/static const struct option long_options/ { intab = 1; next }
intab && /^};/ { intab = 0 }
intab && /\{"/ {
	line = $0
	sub(/^[^"]*"/, "", line)
	name = line; sub(/".*/, "", name)
	print "--" name "\t" (line ~ /no_argument/ ? "none" : "arg")
}
/getopt_long\(/ {
	s = $0
	sub(/^[^"]*"/, "", s); sub(/".*/, "", s)
	for (i = 1; i <= length(s); i++) {
		c = substr(s, i, 1)
		if (c == ":") continue
		print "-" c "\t" (substr(s, i + 1, 1) == ":" ? "arg" : "none")
	}
}' driver/cli.c | sort -u >"$out/cli.opts"

# remat.1: in OPTIONS, the macro line after each .TP. Alternating-font
# macros (.BI, .BR, ...) join their arguments, .B and .I put spaces.
awk "$print_opts"'
function decode(s) {
	gsub(/\\-/, "-", s); gsub(/\\f[BIRP]/, "", s); gsub(/\\&/, "", s)
	gsub(/\\e/, "\\", s)
	return s
}
function args(line, alt,    s, r, q, a) {
	s = line; r = ""
	while (s != "") {
		sub(/^[ \t]+/, "", s)
		if (s == "") break
		if (substr(s, 1, 1) == "\"") {
			s = substr(s, 2); q = index(s, "\"")
			a = q ? substr(s, 1, q - 1) : s
			s = q ? substr(s, q + 1) : ""
		} else {
			q = match(s, /[ \t]/)
			a = q ? substr(s, 1, q - 1) : s
			s = q ? substr(s, q) : ""
		}
		r = r == "" ? a : r (alt ? "" : " ") a
	}
	return r
}
/^\.SH / { inopts = ($0 ~ /^\.SH OPTIONS/); next }
inopts && /^\.TP/ { tp = 1; next }
inopts && tp {
	tp = 0
	m = $1; rest = substr($0, length(m) + 1)
	if (m !~ /^\.(B|I|BI|IB|BR|RB|IR|RI)$/) next
	text = decode(args(rest, m != ".B" && m != ".I"))
	if (substr(text, 1, 1) != "-") next
	print_opts(text)
}' docs/remat.1 | sort -u >"$out/man.opts"

# 1. cli.c against --help. A short option in --help may carry its value
# (-O0): it counts as -O with an argument. The two lists are joined by
# name, "-" standing for a side that lacks the option.
awk -F '\t' '{
	name = $1; has = $2 != ""
	if (name !~ /^--/ && length(name) > 2) { name = substr(name, 1, 2); has = 1 }
	print name "\t" (has ? "arg" : "none") "\t" $1
}' "$out/help.opts" | sort -u -t "$(printf '\t')" -k1,1 >"$out/help.names"
join -t "$(printf '\t')" -a 1 -a 2 -e - -o 0,1.2,2.2,2.3 "$out/cli.opts" "$out/help.names" |
	while IFS="$(printf '\t')" read -r name cli help shown; do
		if [ "$help" = - ]; then
			echo "--help does not list $name (driver/cli.c accepts it)"
		elif [ "$cli" = - ]; then
			echo "--help lists $shown, which driver/cli.c does not accept"
		elif [ "$cli" != "$help" ]; then
			echo "--help shows $shown with$([ "$help" = none ] && echo out) an" \
			     "argument but driver/cli.c says it takes $([ "$cli" = arg ] && echo one || echo none)"
		fi
	done | sort >"$out/cli.diff"
tap 1 "$out/cli.diff" "driver/cli.c and --help differ" \
	"driver/cli.c and --help list the same $(wc -l <"$out/cli.opts") options"

# 2. --help against remat.1, by name, then by argument form.
awk -F '\t' '
FNR == NR { help[$1] = $2; next }
{ man[$1] = $2 }
END {
	for (o in help)
		if (!(o in man))
			print "docs/remat.1 does not list " o (help[o] == "" ? "" : " " help[o])
		else if (man[o] != help[o])
			print o ": --help says \"" help[o] "\", docs/remat.1 says \"" man[o] "\""
	for (o in man)
		if (!(o in help))
			print "docs/remat.1 lists " o ", which --help does not"
}' "$out/help.opts" "$out/man.opts" | sort >"$out/man.diff"
tap 2 "$out/man.diff" "--help and docs/remat.1 differ" \
	"--help and docs/remat.1 list the same $(wc -l <"$out/help.opts") options"

# 3. Markdown links: [text](target) and [label]: target, the target cut at
# '#'; web and mail links are not checked. A link may span lines, so each
# file is read whole. A relative target must resolve, from the file's
# folder, to a file inside the repository. Paths to ../shared (the
# development machine's data and specification) are out of users' reach
# in any form, link or code span.
: >"$out/links.diff"
for f in README.md docs/*.md; do
	dir=$(dirname "$f")
	tr '\n' ' ' <"$f" | grep -o '\](\([^)]*\))' | sed 's/^](//; s/)$//' >"$out/links"
	grep -o '^\[[^]]*\]: *[^ ]*' "$f" | sed 's/^\[[^]]*\]: *//' >>"$out/links"
	while IFS= read -r target; do
		target=${target%%#*}
		case $target in
		'' | http://* | https://* | mailto:*) continue ;;
		esac
		path=$dir/$target
		real=$(realpath -m "$path")
		case $real in
		"$(realpath "$SRCDIR")"/*) ;;
		*)
			echo "$f: link '$target' leaves the repository"
			continue
			;;
		esac
		[ -f "$path" ] || echo "$f: link '$target' names no file ($path)"
	done <"$out/links" >>"$out/links.diff"
	grep -n '\.\./shared\|/shared/spec\|/shared/data' "$f" |
		sed "s|^\([0-9]*\):.*|$f:\1: points outside the repository (../shared)|" >>"$out/links.diff"
done
tap 3 "$out/links.diff" "documentation links outside the repository or to nothing" \
	"every link of README.md and docs/*.md names a file of the repository"
