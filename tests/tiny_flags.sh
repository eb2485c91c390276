# tests/tiny_flags.sh -- sourced by the end-to-end tests that build and
# run the examples' programs (tests/codegen/run.sh, tests/bitident.sh):
# tiny_flags EXAMPLE prints the example's tiny -D flags (examples/README.md),
# at which its host-mode program runs in well under a second; it fails for
# an example it does not know, so that a new example is not left out.
tiny_flags() {
	case $1 in
	tiny) echo "" ;;
	mlp) echo "-DB=4 -DHW=4 -DHID=16 -DK=3" ;;
	resnet50) echo "-DB=2 -DHW=32 -DW=4 -DK=10" ;;
	gpt2) echo "-DB=2 -DS=16 -DD=32 -DH=2 -DL=2 -DV=64" ;;
	unet) echo "-DB=2 -DHW=32 -DW=4" ;;
	llama) echo "-DB=1 -DS=16 -DD=32 -DH=2 -DKV=1 -DL=2 -DF=64 -DV=64" ;;
	mobilenetv2) echo "-DB=2 -DHW=32 -DK=10" ;;
	moe) echo "-DB=2 -DS=16 -DD=32 -DH=2 -DL=2 -DV=64 -DE=4" ;;
	lora) echo "-DB=2 -DS=16 -DD=32 -DH=2 -DL=2 -DV=64 -DR=4" ;;
	bert) echo "-DB=2 -DS=16 -DD=32 -DH=2 -DL=2 -DV=64" ;;
	vit) echo "-DB=2 -DHW=32 -DP=8 -DD=32 -DH=2 -DL=2 -DF=64 -DK=10" ;;
	densenet) echo "-DB=2 -DHW=32 -DG=4 -DK=10" ;;
	whisper) echo "-DB=2 -DNMEL=4 -DT=16 -DD=32 -DH=2 -DLE=1 -DLD=1 -DF=64 -DV=64 -DS=8" ;;
	sd_unet) echo "-DB=1 -DHW=8 -DC=8 -DG=4 -DH=2 -DTX=3 -DCTX=8" ;;
	*) return 1 ;;
	esac
}
