/* passes/driver/outfile.c -- the one way remat writes a file: into a
 * temporary file beside the target, renamed over it only when everything
 * was written and closed, so an error never leaves a partial file (-o and
 * every --plot/--html/--trace/... output go through it). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver.h"

int
out_write(const char *path, OutWriter fn, const void *ctx)
{
	size_t n = strlen(path) + 32;
	char *tmp = xmalloc(n);
	FILE *f;
	int bad;

	snprintf(tmp, n, "%s.tmp%ld", path, (long)getpid());
	if (!(f = fopen(tmp, "w"))) {
		fprintf(stderr, "remat: cannot write '%s': %s\n", path, strerror(errno));
		free(tmp);
		return 1;
	}
	bad = fn(f, ctx);
	bad |= ferror(f);
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path)) {
		fprintf(stderr, "remat: cannot write '%s'\n", path);
		remove(tmp);
		free(tmp);
		return 4;
	}
	free(tmp);
	return 0;
}
