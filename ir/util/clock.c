/* ir/util/clock.c -- a monotonic clock for timings in reports and the
 * planners' work budgets. Reads nothing; writes nothing. */
#include <time.h>

#include "util.h"

double
util_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
