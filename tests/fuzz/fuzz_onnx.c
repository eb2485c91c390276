/* tests/fuzz/fuzz_onnx.c -- libFuzzer target: any bytes through the ONNX
 * importer (protobuf-c unpacking, checks, shape inference and folding, .net
 * writing). Must never crash, hang or overrun; errors are expected. Seeded
 * with the fixtures under tests/onnx (make fuzz-onnx). */
#include <stdlib.h>
#include <string.h>

#include "onnx.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n);

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t n)
{
	DimOverride defs[2] = {{"batch", 2}, {"seq", 8}};   /* renamed by the import */
	NetOptions net = {.defs = defs, .ndefs = 2, .infer = true, .infer_set = true};
	OnnxOptions o = {0};
	Source out;
	Arena a;

	ar_init(&a);
	onnx_translate("fuzz.onnx", data, n, &o, &net, &a, &out);
	ar_free(&a);
	return 0;
}
