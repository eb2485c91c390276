/* driver/outfile.c -- the one way remat writes an output file (-o,
 * --plot, --html, --trace, --memory-viz, --dot, --csv, --emit-torch,
 * --emit-net).
 * A regular file (or a new path) is written to a temporary file beside its
 * real target (symlinks followed) and renamed over it only once complete,
 * so an error leaves no partial file and the old one intact; SIGINT,
 * SIGTERM, SIGHUP and SIGPIPE remove the temporary file (the handler only
 * unlinks a path built beforehand). Devices, pipes and sockets
 * (/dev/null, /dev/full, a FIFO) are written in place, never replaced;
 * "-" is stdout. Writing onto the input file itself is refused. */
#define _XOPEN_SOURCE 700     /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver.h"

static char *volatile pending;  /* the temporary file, while it exists */

static void
on_signal(int sig)
{
	char *p = pending;

	if (p)
		unlink(p);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void
catch_signals(bool on)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on ? on_signal : SIG_DFL;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		sigaction(sigs[i], &sa, NULL);
}

bool
out_is_input(const char *out, const char *in)
{
	struct stat so, si;

	if (!strcmp(out, "-") || !strcmp(in, "-"))
		return false;
	return stat(out, &so) == 0 && stat(in, &si) == 0 && so.st_dev == si.st_dev &&
	       so.st_ino == si.st_ino;
}

Status
out_open(OutFile *o, const char *path)
{
	struct stat st;
	char *real;
	int fd;

	memset(o, 0, sizeof *o);
	o->path = path;
	if (!strcmp(path, "-")) {
		o->f = stdout;
		return ST_OK;
	}
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		if (!(o->f = fopen(path, "w")))
			goto fail;
		return ST_OK;
	}
	/* the real target: a symlink is written through, not replaced */
	real = realpath(path, NULL);
	o->target = real ? real : strcpy(xmalloc(strlen(path) + 1), path);
	o->tmp = xmalloc(strlen(o->target) + 32);
	sprintf(o->tmp, "%s.tmp%ld", o->target, (long)getpid());
	pending = o->tmp;
	catch_signals(true);
	fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
	if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		out_abort(o);
		errno = e;
		goto fail;
	}
	return ST_OK;
fail:
	fprintf(stderr, "remat: cannot write '%s': %s\n", path, strerror(errno));
	return ST_ERROR;
}

void
out_abort(OutFile *o)
{
	if (o->f && o->f != stdout)
		fclose(o->f);
	o->f = NULL;
	if (o->tmp) {
		pending = NULL;
		unlink(o->tmp);
		catch_signals(false);
		free(o->tmp);
		o->tmp = NULL;
	}
	free(o->target);
	o->target = NULL;
}

Status
out_commit(OutFile *o)
{
	int e = 0;

	if (fflush(o->f) || ferror(o->f))
		e = errno ? errno : EIO;
	if (o->f != stdout && fclose(o->f) && !e)
		e = errno ? errno : EIO;
	o->f = NULL;
	if (!e && o->tmp && rename(o->tmp, o->target))
		e = errno;
	if (e) {
		fprintf(stderr, "remat: cannot write '%s': %s\n", o->path, strerror(e));
		out_abort(o);
		return ST_ERROR;
	}
	pending = NULL;
	if (o->tmp)
		catch_signals(false);
	free(o->tmp);
	free(o->target);
	o->tmp = o->target = NULL;
	return ST_OK;
}

Status
out_write(const char *path, OutWriter fn, const void *ctx)
{
	OutFile o;

	if (out_open(&o, path))
		return ST_ERROR;
	if (fn(o.f, ctx) && !ferror(o.f)) {     /* a write error: out_commit says why */
		fprintf(stderr, "remat: cannot generate '%s'\n", path);
		out_abort(&o);
		return ST_ERROR;
	}
	return out_commit(&o);
}
