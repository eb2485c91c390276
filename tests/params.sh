#!/bin/sh
# tests/params.sh -- the parameter counts of the example networks equal the
# published ones (params.count of the JSON report; for LoRA also the
# trainable and frozen split); a `buffer` param is resident but is not a
# parameter. Prints TAP.
set -u
: "${REMAT:?}" "${SRCDIR:?}"
cd "$SRCDIR" || exit 99
# name  expected  remat arguments   (source of the figure)
cases='
resnet50      25557032    examples/resnet50.net                          torchvision resnet50
mobilenetv2   3504872     examples/mobilenetv2.net                       torchvision mobilenet_v2
gpt2          124439808   examples/gpt2.net                              Hugging Face gpt2
bert          110106428   examples/bert.net                              BertForPreTraining, bert-base
llama2-7b     6738415616  -DD=4096 -DH=32 -DL=32 -DF=11008 examples/llama.net   LLaMA-2-7B
llama2-70b    68976648192 -DD=8192 -DH=64 -DKV=8 -DL=80 -DF=28672 examples/llama.net   meta-llama/Llama-2-70b-hf (GQA, 8 k/v heads)
lora          124734720   examples/lora.net                              PEFT, gpt2 c_attn r=8
vit           86567656    examples/vit.net                               torchvision vit_b_16
densenet      7978856     examples/densenet.net                          torchvision densenet121
whisper       241734912   examples/whisper.net                           openai/whisper-small (WhisperForConditionalGeneration, head tied)
whisper-base  72593920    -DD=512 -DH=8 -DLE=6 -DLD=6 -DF=2048 examples/whisper.net   openai/whisper-base
sd_unet       859520964   examples/sd_unet.net                           diffusers UNet2DConditionModel, stable-diffusion-v1-5
'
n=$(echo "$cases" | grep -c .)
echo "1..$((n + 3))"
i=0
field() { tr ',' '\n' | sed -n "s/.*\"$1\": *\([0-9]*\).*/\1/p" | head -1; }
echo "$cases" | grep . | while read -r name want rest; do
	i=$((i + 1))
	args=$(echo "$rest" | sed 's/\(\.net\).*/\1/')
	# shellcheck disable=SC2086
	got=$("$REMAT" --json $args | field count)
	if [ "$got" = "$want" ]; then
		echo "ok $i - $name: $got parameters"
	else
		echo "not ok $i - $name: ${got:-?} parameters, expected $want"
	fi
done
i=$((n + 1))
json=$("$REMAT" --json examples/lora.net)
tr=$(echo "$json" | field trainable) fr=$(echo "$json" | field frozen)
if [ "$tr" = 294912 ] && [ "$fr" = 124439808 ]; then
	echo "ok $i - lora: 294912 trainable, 124439808 frozen"
else
	echo "not ok $i - lora: ${tr:-?} trainable, ${fr:-?} frozen"
fi

# A `buffer` param (BatchNorm's running statistics): not in the count, no
# grad or optimizer state, but resident: the peak grows by its bytes only,
# also under mixed precision (no master copy).
i=$((n + 2))
tmp=$(mktemp -d) || exit 99
sed 's/^param w2 : f32\[HID, OUT\];/&\nparam stat : f32[100] buffer;/' examples/tiny.net >"$tmp/buf.net"
ok=1 ok3=1
for pr in declared mixed; do
	a=$("$REMAT" --json --precision $pr examples/tiny.net)
	b=$("$REMAT" --json --precision $pr "$tmp/buf.net")
	pa=$(echo "$a" | field peak_bytes) pb=$(echo "$b" | field peak_bytes)
	[ "$(echo "$b" | field count)" = "$(echo "$a" | field count)" ] &&
	[ "$(echo "$b" | field buffers)" = 100 ] && [ "$(echo "$b" | field buffer_bytes)" = 400 ] &&
	[ "$(echo "$b" | field optimizer_bytes)" = "$(echo "$a" | field optimizer_bytes)" ] &&
	[ "$(echo "$b" | field master_bytes)" = "$(echo "$a" | field master_bytes)" ] &&
	[ -n "$pa" ] && [ "$pb" = "$((pa + 400))" ] || ok=0
done
# Under --zero 3 (and --offload params) a buffer stays whole on every
# rank, unlike the sharded weights: the rank's params category is tiny's
# plus the whole 400 B, and the weights line leaves out exactly those (it
# went negative when the buffer was sharded but subtracted whole). The
# weights are sharded always: tiny's are one gathered unit, which
# --shard-weights auto may keep whole.
for d in "--zero 3 --shard-weights always:192 B" "--zero 3 --offload params:0 B"; do
	fl=${d%%:*} wline=${d#*:}
	# shellcheck disable=SC2086
	a=$("$REMAT" --json --ranks 4 $fl examples/tiny.net)
	# shellcheck disable=SC2086
	b=$("$REMAT" --json --ranks 4 $fl "$tmp/buf.net")
	# shellcheck disable=SC2086
	h=$("$REMAT" --ranks 4 $fl "$tmp/buf.net" | sed -n 's/^  weights *//p')
	[ "$(echo "$b" | field bytes)" = "$(($(echo "$a" | field bytes) + 400))" ] &&
	[ "$(echo "$b" | field peak_bytes)" = "$(($(echo "$a" | field peak_bytes) + 400))" ] &&
	[ "${h%%  *}" = "$wline" ] || { ok3=0; echo "# $fl: weights '$h'"; }
done
rm -rf "$tmp"
if [ $ok = 1 ]; then
	echo "ok $i - a buffer is not a parameter and adds its bytes to the peak"
else
	echo "not ok $i - buffer params"
fi
i=$((n + 3))
if [ $ok3 = 1 ]; then
	echo "ok $i - under --zero 3 and --offload params a buffer stays whole on every rank (the weights are sharded or offloaded) and the weights line leaves it out"
else
	echo "not ok $i - sharded buffer params"
fi
