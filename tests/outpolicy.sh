#!/bin/sh
# tests/outpolicy.sh -- the one output policy (issue 29 item 3,
# docs/limits.md "Output files"), TAP. Every output flag is run against
# every kind of target: the input itself, a symlink and a hard link to it,
# a directory, a FIFO, a character device (a private copy of /dev/null,
# then /dev/null itself), "-" and an unwritable path. Each run checks the
# exit status, the message, that the input is unchanged, that no temporary
# file is left, that specials stay specials and that stdout carries exactly
# one document (the same bytes the flag writes to a regular file, the
# report on stderr). Then: two writers on stdout or on one file, stdin as
# the input, files a standalone mode would drop, and SIGHUP under nohup.
set -u
: "${REMAT:?}" "${SRCDIR:?}" "${BUILDDIR:?}"
out="$BUILDDIR/tests/out/outpolicy"
chmod -R u+w "$out" 2>/dev/null
rm -rf "$out"
mkdir -p "$out" || exit 99
cd "$out" || exit 99
cp "$SRCDIR/examples/tiny.net" m.net || exit 99
cp "$SRCDIR/tests/onnx/mlp_dynbatch.onnx" m.onnx || exit 99
mkdir orig && cp m.net m.onnx orig/ || exit 99
i=0 failed=0
ok() { i=$((i + 1)); echo "ok $i - $*"; }
notok() { i=$((i + 1)); failed=1; echo "not ok $i - $*"; }
skip() { i=$((i + 1)); echo "ok $i - $1 # SKIP $2"; }
sum() { cksum <"$1"; }
root=false
[ "$(id -u)" = 0 ] && root=true

# The flags: a name, the input, and the command before the target path
# (the target follows the last word). The report each run prints is
# "peak:" except for --sweep, whose table is the report.
flags='-o|m.net|-o
--plot|m.net|--plot
--html|m.net|--html
--trace|m.net|--trace
--memory-viz|m.net|--memory-viz
--dot|m.net|--dot
--csv|m.net|--csv
--emit-torch|m.net|--emit-torch
--sweep--plot|m.net|--sweep B=1,2 --plot
--emit-net|m.onnx|--import onnx --infer -Dbatch=2 --emit-net'
report_of() { case $1 in --sweep--plot) echo "^sweep B:" ;; *) echo "^peak:" ;; esac; }

# run NAME INPUT TARGET ARGS...: remat ARGS TARGET INPUT, stdout in
# run.out, stderr in run.err, exit status in rc; never waits past 60 s
# (a FIFO nobody reads would block the write).
run() {
	run_in=$2 run_tgt=$3
	shift 3
	# shellcheck disable=SC2086
	timeout 60 "$REMAT" $* "$run_tgt" "$run_in" >run.out 2>run.err
	rc=$?
}
# no temporary file anywhere under the work directory
no_tmp() { [ -z "$(find . -name '*.tmp[0-9]*' 2>/dev/null)" ]; }
# check NAME WANT_RC GREP: the exit status, the message (a grep of
# stderr, "" for none), the input unchanged, no temporary file
check() {
	what=$1 want=$2 msg=$3
	bad=
	[ "$rc" = "$want" ] || bad="exit $rc, expected $want"
	if [ -z "$bad" ] && [ -n "$msg" ] && ! grep -q -- "$msg" run.err; then
		bad="stderr lacks '$msg'"
	fi
	if [ -z "$bad" ] && [ "$want" != 0 ] && ! grep -q '^remat: ' run.err; then
		bad="no 'remat: ' message"
	fi
	if [ "$(sum "$in")" != "$insum" ]; then
		bad="${bad:+$bad; }the input changed"
		cat "orig/$in" >"$in"   # the next runs need it whole
	fi
	[ -z "$bad" ] && ! no_tmp && bad="a temporary file is left"
	if [ -z "$bad" ]; then ok "$what"
	else notok "$what: $bad"; sed 's/^/# /' run.err | head -4; fi
}

mkfifo fifo 2>/dev/null || rm -f fifo
chardev=false
if $root && mknod -m 666 null c 1 3 2>/dev/null && [ -c null ]; then chardev=true; fi
mkdir dir
if $root; then unwritable=nodir/sub/x   # permissions do not stop root
else mkdir ro && chmod 0500 ro && unwritable=ro/x; fi

echo "$flags" | while IFS='|' read -r name in args; do
	insum=$(sum "$in")
	rm -f sym hard
	ln -s "$in" sym
	ln "$in" hard
	# a regular file: the document every other target is compared with
	run "$name" "$in" doc $args
	check "$name FILE" 0 ""
	cp doc "doc$name" 2>/dev/null
	# replacing a file keeps its permissions
	chmod 0640 doc
	run "$name" "$in" doc $args
	if [ "$rc" = 0 ] && cmp -s doc "doc$name" && [ "$(stat -c %a doc)" = 640 ]; then
		ok "$name FILE again: replaced, mode 0640 kept"
	else notok "$name FILE again: exit $rc, mode $(stat -c %a doc)"; fi
	rm -f doc

	for t in "$in" sym hard; do
		run "$name" "$in" "$t" $args
		check "$name onto $t (the input)" 2 "is the input file; refusing to overwrite it"
	done
	if [ -L sym ] && [ "$(stat -c %h "$in")" = 2 ]; then ok "$name: the links are intact"
	else notok "$name: a link to the input was replaced"; fi

	run "$name" "$in" dir $args
	check "$name onto a directory" 1 "cannot write 'dir': Is a directory"
	if [ -d dir ] && [ -z "$(ls dir)" ]; then ok "$name: the directory is untouched"
	else notok "$name: the directory changed"; fi

	fifo_ok=false
	if [ -p fifo ]; then
		timeout 60 cat fifo >fifo.got &
		reader=$!
		run "$name" "$in" fifo $args
		[ "$rc" = 0 ] || kill $reader 2>/dev/null     # it never opened the FIFO
		wait $reader
		check "$name onto a FIFO" 0 ""
		if [ -p fifo ] && cmp -s fifo.got "doc$name"; then
			ok "$name: the FIFO stays a FIFO and carries the document"; fifo_ok=true
		else notok "$name: FIFO replaced or its content differs"; fi
	else
		skip "$name onto a FIFO" "no mkfifo"; skip "FIFO content" "no mkfifo"
	fi

	dev_ok=false
	if $chardev; then
		run "$name" "$in" null $args
		check "$name onto a character device (a copy of /dev/null)" 0 ""
		if [ -c null ]; then ok "$name: the device stays a device"; dev_ok=true
		else notok "$name: the device was replaced"; rm -f null; chardev=false; fi
	else
		skip "$name onto a character device" "mknod needs root"
		skip "the device stays" "mknod needs root"
		dev_ok=$fifo_ok         # the FIFO took the same in-place path
	fi
	# /dev/null itself only once the private targets showed the in-place path
	if $dev_ok; then
		run "$name" "$in" /dev/null $args
		check "$name onto /dev/null" 0 ""
		if [ -c /dev/null ]; then ok "$name: /dev/null stays a device"
		else
			notok "$name: /dev/null was replaced"
			$root && rm -f /dev/null && mknod -m 666 /dev/null c 1 3
		fi
	else
		skip "$name onto /dev/null" "the in-place path is unproven"
		skip "/dev/null stays" "the in-place path is unproven"
	fi

	run "$name" "$in" - $args
	check "$name -" 0 ""
	if cmp -s run.out "doc$name" && grep -q "$(report_of "$name")" run.err; then
		ok "$name -: stdout is the one document, the report is on stderr"
	else notok "$name -: stdout is not exactly the document"; fi
	[ -e ./- ] && notok "$name -: a file named '-'" && rm -f ./-

	if $root; then
		run "$name" "$in" "$unwritable" $args
		check "$name onto a path under a missing directory" 1 \
			"cannot write '$unwritable': No such file or directory"
	else
		run "$name" "$in" "$unwritable" $args
		check "$name onto a read-only directory" 1 \
			"cannot write '$unwritable': Permission denied"
	fi
	[ -e "$unwritable" ] && notok "$name: the unwritable path was created"
	rm -f sym hard
done >tap.body
# the while loop ran in a subshell: its count and failures come back in
# the TAP text
cat tap.body
n=$(grep -c '^\(not \)\?ok ' tap.body)
i=$n
grep -q '^not ok' tap.body && failed=1
insum=$(sum m.net) in=m.net

# Two writers on stdout, two on one file, the input through stdin.
run "" m.net - --html - --plot
check "--html - --plot -: a usage error" 2 "both ask for stdout"
in=m.onnx insum=$(sum m.onnx)
run "" m.onnx - --graph-json --import onnx --infer -Dbatch=2 --emit-net
check "--emit-net - with --graph-json: a usage error" 2 "both print on stdout"
run "" m.onnx - --import onnx --infer -Dbatch=2 --emit-net
check "--emit-net -: the report names the text <stdin>, as remat - would" 0 "^remat <stdin>: infer"
in=m.net insum=$(sum m.net)
run "" m.net same.svg --html same.svg --plot
check "--html F --plot F: a usage error" 2 "both write 'same.svg'"
[ -e same.svg ] && notok "same.svg written" || ok "no file written"
# One new file under two spellings: by directory inode and name.
run "" m.net same.svg --html ./same.svg --plot
check "--html ./F --plot F (F new): a usage error" 2 "both write './same.svg'"
mkdir -p sub
run "" m.net same.svg --html sub/../same.svg --plot
check "--html sub/../F --plot F (F new): a usage error" 2 "both write 'sub/../same.svg'"
ln -s same.svg dangling
run "" m.net dangling --html same.svg --plot
check "--html F --plot LINK-TO-NEW-F: a usage error" 2 "both write 'same.svg'"
rm -f dangling
[ -e same.svg ] && notok "same.svg written" || ok "no file written"
# A name near the file-name limit: its temporary file must not pass it.
long=$(printf '%0250d' 0).csv
run "" m.net "$long" --csv
check "--csv with a 254-byte file name: written" 0 ""
[ -s "$long" ] && ok "the long-named file exists" || notok "the long-named file is missing"
rm -f "$long"
"$REMAT" --html m.net - <m.net >run.out 2>run.err
rc=$?
check "stdin is the input: --html onto its file is refused" 2 "refusing to overwrite"
run "" m.net "" --html
check "--html '': a usage error" 2 "the file name is empty"
run "" m.net dropped.html --dump-ir --html
check "--dump-ir --html F: a usage error, not a silent drop" 2 "--html has no effect with --dump-ir"
run "" m.net dropped.html -d plan --html
check "-d --html F: a usage error" 2 "--html has no effect with -d"
[ -e dropped.html ] && notok "dropped.html written" || ok "no file written"

# A dangling symlink is written through: the link stays, its target appears.
ln -s made.svg dangling
run "" m.net dangling --plot
if [ "$rc" = 0 ] && [ -L dangling ] && grep -q '<svg' made.svg; then
	ok "a dangling symlink is written through"
else notok "dangling symlink: exit $rc"; fi

# SIGHUP during the write: under nohup (SIGHUP ignored at start) it stays
# ignored and the file completes; otherwise it ends remat and removes the
# temporary file. A 200,000-op chain makes a 35 MB CSV, whose temporary
# file exists long enough to be signalled.
sh "$SRCDIR/tests/bench/gen_chain.sh" 200000 >big.net
insum=$(sum big.net) in=big.net
# hup IGNORE: starts the write (with SIGHUP ignored when IGNORE is 1),
# sends SIGHUP once the temporary file exists; rc, and sent=false when the
# write ended first
hup() {
	rm -f big.csv
	if [ "$1" = 1 ]; then (trap '' HUP; exec "$REMAT" --csv big.csv big.net >/dev/null 2>run.err) &
	else "$REMAT" --csv big.csv big.net >/dev/null 2>run.err & fi
	pid=$!
	n=0
	while [ $n -lt 1200 ] && [ -z "$(find . -name 'big.csv.tmp*')" ] && kill -0 $pid 2>/dev/null; do
		sleep 0.05; n=$((n + 1))
	done
	sent=false
	[ -n "$(find . -name 'big.csv.tmp*')" ] && kill -HUP $pid 2>/dev/null && sent=true
	wait $pid
	rc=$?
}
hup 1
if ! $sent; then skip "SIGHUP under nohup" "the write ended before the signal"
else
	check "SIGHUP under nohup: ignored, exit 0" 0 ""
	if [ "$(wc -l <big.csv)" -gt 200000 ]; then ok "... and the file is complete"
	else notok "... the file is incomplete"; fi
fi
# a shell started with SIGHUP ignored cannot undo it for its children
sleep 5 &
kill -HUP $! 2>/dev/null
wait $!
hup_default=$?
hup 0
if [ "$hup_default" -le 128 ]; then skip "SIGHUP without nohup" "this shell ignores SIGHUP"
elif ! $sent; then skip "SIGHUP without nohup" "the write ended before the signal"
elif [ "$rc" -gt 128 ] && no_tmp && [ ! -e big.csv ]; then
	ok "SIGHUP without nohup ends remat, no temporary file, no output"
else notok "SIGHUP without nohup: exit $rc"; fi

echo "1..$i"
exit $failed
