/* driver/progress.c -- the progress line of long runs (planning,
 * --max-batch and --sweep probes) on stderr, only when stderr is a
 * terminal. A timer signal redraws "remat: LABEL... 2.3 s" four times a
 * second once the work has run for a second (REMAT_PROGRESS_DELAY seconds,
 * for tests), so the planners need no hooks; the
 * handler only formats into a static buffer and calls write(2), both
 * async-signal-safe. The label is swapped with the signal blocked. */
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"

static char label[160];
static volatile sig_atomic_t drawn;     /* a line is on the screen */
static struct timespec t0;
static bool active;
static long delay_ds = 10;              /* tenths of a second before drawing */

/* Appends the decimal digits of v to p; returns the new end. */
static char *
put_uint(char *p, unsigned long v)
{
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

static void
on_tick(int sig)
{
	struct timespec now;
	char line[256], *p = line;
	long ds;

	(void)sig;
	clock_gettime(CLOCK_MONOTONIC, &now);
	ds = (now.tv_sec - t0.tv_sec) * 10 + (now.tv_nsec - t0.tv_nsec) / 100000000;
	if (ds < delay_ds)
		return;
	memcpy(p, "\r\033[Kremat: ", 11);
	p += 11;
	for (const char *s = label; *s && p < line + 200; s++)
		*p++ = *s;
	memcpy(p, "... ", 4);
	p = put_uint(p + 4, (unsigned long)(ds / 10));
	*p++ = '.';
	p = put_uint(p, (unsigned long)(ds % 10));
	memcpy(p, " s", 2);
	p += 2;
	if (write(STDERR_FILENO, line, (size_t)(p - line)) > 0)
		drawn = 1;
}

static void
set_timer(long usec)
{
	struct itimerval it = {{0, usec}, {0, usec}};

	setitimer(ITIMER_REAL, &it, NULL);
}

void
progress_begin(const char *fmt, ...)
{
	sigset_t set, old;
	va_list ap;

	if (!isatty(STDERR_FILENO))
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	sigprocmask(SIG_BLOCK, &set, &old);
	va_start(ap, fmt);
	vsnprintf(label, sizeof label, fmt, ap);
	va_end(ap);
	if (!active) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_tick;
		sa.sa_flags = SA_RESTART;
		sigaction(SIGALRM, &sa, NULL);
		const char *e = getenv("REMAT_PROGRESS_DELAY");        /* for tests */
		delay_ds = e && *e ? (long)(strtod(e, NULL) * 10) : 10;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		set_timer(250000);
		active = true;
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
}

void
progress_end(void)
{
	if (!active)
		return;
	set_timer(0);
	signal(SIGALRM, SIG_IGN);
	active = false;
	if (drawn && write(STDERR_FILENO, "\r\033[K", 4) < 0)
		drawn = 0;
	drawn = 0;
}
