/* tests/fuzz/fuzz_frontend.c -- libFuzzer target: any bytes through
 * net_parse, net_instantiate and (with FUZZ_SHAPE) shape_infer. Must never
 * crash, hang or overrun; errors are expected and go to /dev/null. Also
 * linked into tests/fuzz/replay, which replays the kept inputs. */
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "frontend.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n);

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t n)
{
	static FILE *sink;
	char *text = xmalloc(n + 1);
	Source src = {"fuzz.net", text, n};
	NetOptions o = {.max_tensors = 200000};
	Arena a;
	Diag d;
	Graph g;
	Program *p;

	if (!sink)
		sink = fopen("/dev/null", "w");
	memcpy(text, data, n);
	text[n] = 0;
	ar_init(&a);
	diag_init(&d, &src, sink);
	p = net_parse(&src, &a, &d);
	if (p) {
		ir_graph_init(&g, &a, src.name);
		if (net_instantiate(p, &o, &g, &d) == 0) {
#ifdef FUZZ_SHAPE
			shape_infer(&g, &d);
#endif
		}
	}
	ar_free(&a);
	free(text);
	return 0;
}
