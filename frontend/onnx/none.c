/* frontend/onnx/none.c -- onnx_import() in a build without protobuf-c:
 * configure found no libprotobuf-c or protoc-c, so --import onnx says so. */
#include "onnx.h"

int
onnx_import(const char *path, const OnnxOptions *o, NetOptions *net,
            Arena *a, Source *out)
{
	(void)path, (void)o, (void)net, (void)a, (void)out;
	fprintf(stderr, "remat: ONNX support was not built: configure found no "
	        "protobuf-c (apt-get install libprotobuf-c-dev protobuf-c-compiler, "
	        "then re-run configure)\n");
	return 1;
}
