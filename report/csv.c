/* report/csv.c -- --csv: one row per step of the chosen schedule:
 * index, kind, op, .net line, bytes per category (memcat_name order) and the
 * total, which is the step's live_bytes. Reads an Analysis; writes text. */
#include <inttypes.h>

#include "report.h"

int
viz_write_csv(FILE *f, const void *ctx)
{
	const Analysis *an = ctx;
	int64_t cat[CAT_COUNT];
	VizCursor c;
	Arena a;
	int s;

	ar_init(&a);
	fputs("step,kind,op,line", f);
	for (int k = 0; k < CAT_COUNT; k++)
		fprintf(f, ",%s", memcat_name((MemCat)k));
	fputs(",total\n", f);
	viz_cursor_init(&c, &an->d, &an->ev, &a);
	while ((s = viz_cursor_step(&c, cat)) >= 0) {
		fprintf(f, "%d,%s,", s, step_kind_name(an->ev.kind[s]));
		csv_put_field(f, an->d.node[an->plan.sched.step[s]].name);
		fprintf(f, ",%d", viz_step_line(an, s));
		for (int k = 0; k < CAT_COUNT; k++)
			fprintf(f, ",%" PRId64, cat[k]);
		fprintf(f, ",%" PRId64 "\n", an->ev.live_bytes[s]);
	}
	ar_free(&a);
	return 0;
}
