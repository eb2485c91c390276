/* tests/fuzz/replay.c -- a check test: replays every kept input through a
 * fuzz target, printing TAP. Linked once per target: with fuzz_frontend.c
 * (parse, instantiate, shapes) and fuzz_pipeline.c (all the passes)
 * over tests/fuzz/regress/, tests/bad/, the corpus and the examples; with
 * fuzz_checkmate.c over tests/fuzz/regress-checkmate/ and its corpus; with
 * fuzz_onnx.c over tests/fuzz/regress-onnx/, the ONNX fixtures and bad
 * models, each also after eight runs of the target's structure-aware
 * mutator. A crash, a sanitizer report or a leak fails the run. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "frontend.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n);
#ifdef REPLAY_ONNX
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed);

/* libFuzzer's byte mutator, which the custom one falls back on for one
 * input in eight and for bytes that do not unpack: here one byte
 * changed, the same each time. */
size_t
LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max)
{
	(void)max;
	if (size)
		data[size / 2] ^= 0x5a;
	return size;
}

/* The input after mutation with seeds 1..8, each through the target. */
static void
replay_mutations(const unsigned char *buf, size_t n)
{
	size_t max = 2 * n + 4096;
	uint8_t *m = xmalloc(max);

	for (unsigned seed = 1; seed <= 8; seed++) {
		memcpy(m, buf, n);
		LLVMFuzzerTestOneInput(m, LLVMFuzzerCustomMutator(m, n, max, seed));
	}
	free(m);
}
#endif

static int
replay_dir(const char *dir, int *k)
{
	DIR *dp = opendir(dir);
	struct dirent *de;

	if (!dp)
		return 0;
	while ((de = readdir(dp))) {
		char path[4096 + 512];
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		FILE *f = fopen(path, "rb");
		if (!f)
			continue;
		size_t cap = 1 << 16, n = 0, got;
		unsigned char *buf = xmalloc(cap);
		while ((got = fread(buf + n, 1, cap - n, f)) > 0)
			if ((n += got) == cap)
				buf = xrealloc(buf, cap *= 2);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, n);
#ifdef REPLAY_ONNX
		replay_mutations(buf, n);
#endif
		free(buf);
		printf("ok %d - %s\n", ++*k, path);
	}
	closedir(dp);
	return 0;
}

/* Which inputs each target replays (REPLAY_CHECKMATE: the JSON importer's). */
static const char *const dirs[] = {
#ifdef REPLAY_CHECKMATE
	"tests/fuzz/regress-checkmate", "tests/fuzz/corpus-checkmate",
#elif defined REPLAY_ONNX
	"tests/fuzz/regress-onnx", "tests/fuzz/corpus-onnx", "tests/onnx/bad", "tests/onnx",
#else
	"tests/fuzz/regress", "tests/bad", "tests/fuzz/corpus", "examples",
#endif
	NULL
};

int
main(void)
{
	const char *src = getenv("SRCDIR");
	char dir[4096];
	int k = 0;

	if (!src)
		src = ".";
	for (const char *const *d = dirs; *d; d++) {
		snprintf(dir, sizeof dir, "%s/%s", src, *d);
		replay_dir(dir, &k);
	}
	printf("1..%d\n", k);
	return 0;
}
