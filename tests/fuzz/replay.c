/* tests/fuzz/replay.c -- a check test: replays every file of
 * tests/fuzz/regress/ and tests/bad/ through the fuzz target (parse,
 * instantiate, shape inference), printing TAP. A crash fails the run. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "graphpass.h"
#include "frontend.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n);

static int
replay_dir(const char *dir, int *k)
{
	DIR *dp = opendir(dir);
	struct dirent *de;

	if (!dp)
		return 0;
	while ((de = readdir(dp))) {
		char path[4096];
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
		free(buf);
		printf("ok %d - %s\n", ++*k, path);
	}
	closedir(dp);
	return 0;
}

int
main(void)
{
	const char *src = getenv("SRCDIR");
	char dir[4096];
	int k = 0;

	if (!src)
		src = ".";
	snprintf(dir, sizeof dir, "%s/tests/fuzz/regress", src);
	replay_dir(dir, &k);
	snprintf(dir, sizeof dir, "%s/tests/bad", src);
	replay_dir(dir, &k);
	snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus", src);
	replay_dir(dir, &k);
	printf("1..%d\n", k);
	return 0;
}
