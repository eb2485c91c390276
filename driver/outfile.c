/* driver/outfile.c -- the one output policy: every file remat writes (-o,
 * --plot, --html, --trace, --memory-viz, --dot, --csv, --emit-torch,
 * --emit-net, --sweep's --plot) is opened here, and cli.c checks every
 * output path with out_is_input before the run.
 * A regular file (or a new path) is written to a temporary file beside its
 * final target (symlinks followed, even a dangling one) and renamed over it
 * only once complete, so an error leaves no partial file and the old one
 * intact; SIGINT, SIGTERM, SIGHUP and SIGPIPE remove the temporary file (the
 * handler only unlinks a path built beforehand), except a signal ignored
 * when remat started (nohup), which stays ignored. Devices, pipes and
 * sockets (/dev/null, /dev/full, a FIFO) are written in place, never
 * replaced; "-" is stdout. */
#define _XOPEN_SOURCE 700     /* readlink, lstat */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver.h"

#ifndef NAME_MAX
#define NAME_MAX 255    /* POSIX leaves it undefined where it varies */
#endif

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

static const int caught[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
static struct sigaction saved[sizeof caught / sizeof caught[0]];
static bool installed[sizeof caught / sizeof caught[0]];

/* Installs on_signal while a temporary file exists, and puts the previous
 * handlers back after. A signal ignored at that point (nohup ignores
 * SIGHUP, a shell may ignore SIGINT for a background job) keeps being
 * ignored: the old handler is read first, and on_signal is not installed
 * over SIG_IGN. */
static void
catch_signals(bool on)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof caught / sizeof caught[0]; i++) {
		if (!on) {
			if (installed[i])
				sigaction(caught[i], &saved[i], NULL);
			installed[i] = false;
		} else if (!installed[i] && !sigaction(caught[i], NULL, &saved[i]) &&
		           saved[i].sa_handler != SIG_IGN) {
			installed[i] = !sigaction(caught[i], &sa, NULL);
		}
	}
}

/* The file that path names once its symlinks are followed, a dangling
 * one's missing target included (malloc'd): the temporary file goes beside
 * it and is renamed onto it, so a link stays a link. NULL and errno on a
 * loop or an unreadable link. */
static char *
final_target(const char *path)
{
	size_t len = strlen(path);
	char *p = memcpy(xmalloc(len + 1), path, len + 1);

	for (int hops = 0; hops < 40; hops++) {     /* Linux's own limit */
		char link[PATH_MAX];
		struct stat st;
		const char *slash;
		size_t dir;
		ssize_t n;
		char *q;

		if (lstat(p, &st) || !S_ISLNK(st.st_mode))
			return p;
		if ((n = readlink(p, link, sizeof link - 1)) < 0) {
			free(p);
			return NULL;
		}
		link[n] = 0;
		/* a relative link is relative to the directory that holds it */
		slash = strrchr(p, '/');
		dir = link[0] == '/' || !slash ? 0 : (size_t)(slash - p) + 1;
		q = xmalloc(dir + (size_t)n + 1);
		memcpy(q, p, dir);
		memcpy(q + dir, link, (size_t)n + 1);
		free(p);
		p = q;
	}
	free(p);
	errno = ELOOP;
	return NULL;
}

/* Where the file name starts in path. */
static const char *
base_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* The temporary file beside target (malloc'd): its name plus ".tmpPID",
 * unless that would pass the file-name limit (a 250-byte name is a valid
 * target), when it is ".remat.tmpPID" in the same directory: only one
 * temporary file exists at a time, and O_EXCL refuses a stale one. */
static char *
temp_name(const char *target)
{
	size_t dir = (size_t)(base_of(target) - target), base = strlen(target) - dir;
	char *t = xmalloc(strlen(target) + 48);

	if (base + 24 <= NAME_MAX)
		sprintf(t, "%s.tmp%ld", target, (long)getpid());
	else
		sprintf(t, "%.*s.remat.tmp%ld", (int)dir, target, (long)getpid());
	return t;
}

/* Whether a and b, two paths of which neither exists yet, name one new
 * file: the same final name (symlinks followed) in the same directory (by
 * inode), so "x", "./x" and "d/../x" are one file. */
static bool
same_new_file(const char *a, const char *b)
{
	char *ta = final_target(a), *tb = final_target(b);
	bool same = false;

	if (ta && tb && !strcmp(base_of(ta), base_of(tb))) {
		struct stat da, db;
		char *pa = ta, *pb = tb;
		/* the directory part, "." when there is none ("/" keeps its slash) */
		size_t la = (size_t)(base_of(ta) - ta), lb = (size_t)(base_of(tb) - tb);

		ta[la] = 0, tb[lb] = 0;
		if (!la)
			pa = ".";
		if (!lb)
			pb = ".";
		same = !stat(pa, &da) && !stat(pb, &db) && da.st_dev == db.st_dev &&
		       da.st_ino == db.st_ino;
	}
	free(ta);
	free(tb);
	return same;
}

/* Whether paths a and b name one regular file (an existing one by inode,
 * a new one by its directory and name): two outputs into it would keep
 * only the last. Two devices or FIFOs (/dev/null twice) are fine. */
bool
out_same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	bool ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;

	if (ea && eb)
		return S_ISREG(sa.st_mode) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	return !ea && !eb && same_new_file(a, b);
}

/* The same regular file, not the same name: a symlink or a hard link to
 * the input is the input (st_dev and st_ino). Stdin as the input ("-") is
 * compared through its descriptor, so `remat --html m.net - <m.net` is
 * caught too. */
bool
out_is_input(const char *out, const char *in)
{
	struct stat so, si;

	if (!strcmp(out, "-") || stat(out, &so) || !S_ISREG(so.st_mode))
		return false;       /* /dev/null as both stdin and output is fine */
	if (!strcmp(in, "-") ? fstat(STDIN_FILENO, &si) : stat(in, &si))
		return false;
	return so.st_dev == si.st_dev && so.st_ino == si.st_ino;
}

Status
out_open(OutFile *o, const char *path)
{
	struct stat st;
	int fd, e;

	memset(o, 0, sizeof *o);
	o->path = path;
	if (!strcmp(path, "-")) {
		o->f = stdout;
		return ST_OK;
	}
	/* a device, a FIFO, a socket: written in place, never replaced (a
	 * directory fails here: "Is a directory") */
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		if (!(o->f = fopen(path, "w")))
			goto fail;
		return ST_OK;
	}
	if (!(o->target = final_target(path)))
		goto fail;
	/* a file we could not write in place is not replaced either */
	if (stat(o->target, &st) == 0 && access(o->target, W_OK)) {
		e = errno;
		out_abort(o);
		errno = e;
		goto fail;
	}
	o->tmp = temp_name(o->target);
	pending = o->tmp;
	catch_signals(true);
	fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
	/* a replaced file keeps its permission bits (not set-id ones) */
	if (fd >= 0 && stat(o->target, &st) == 0)
		fchmod(fd, st.st_mode & 0777);
	if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
		e = errno;
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
