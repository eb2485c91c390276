/* report/trace.c -- --trace: the schedule in Chrome's trace-event
 * JSON (Perfetto, chrome://tracing). Time is the schedule: step i runs
 * from ts = i to i + 1 microseconds. One complete slice ("ph": "X") per
 * step, named by its kind, op and .net line, and one counter track per
 * memory category ("ph": "C", named by memcat_name, value "bytes"), written
 * at step 0 and whenever it changes; the counters of a step sum to its
 * live_bytes. Reads an Analysis; writes text. */
#include <inttypes.h>
#include <string.h>

#include "report.h"

static void
slice(const Analysis *an, int s, FILE *f)
{
	const char *op = an->d.node[an->plan.sched.step[s]].name;
	int line = viz_step_line(an, s);
	char name[512];

	snprintf(name, sizeof name, "%s %s (line %d)", step_kind_name(an->ev.kind[s]), op, line);
	fputs(",\n{\"name\": ", f);
	json_put_str(f, name);
	fprintf(f, ", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %d, \"dur\": 1, \"pid\": 1, \"tid\": 1, "
	        "\"args\": {\"step\": %d, \"op\": ", step_kind_name(an->ev.kind[s]), s, s);
	json_put_str(f, op);
	fprintf(f, ", \"line\": %d, \"live_bytes\": %" PRId64 "}}", line, an->ev.live_bytes[s]);
}

static void
header(const Analysis *an, FILE *f)
{
	Arena a;

	ar_init(&a);
	fputs("{\"displayTimeUnit\": \"ns\",\n\"otherData\": {\"tool\": \"remat\", \"settings\": ", f);
	json_put_str(f, viz_settings(an, &a));
	fprintf(f, ", \"time\": \"1 us = 1 schedule step\", \"peak_bytes\": %" PRId64
	        ", \"peak_step\": %d},\n\"traceEvents\": [\n", an->ev.peak, an->ev.peak_step);
	fputs("{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"args\": {\"name\": ", f);
	json_put_str(f, viz_settings(an, &a));
	fputs("}},\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 1, "
	      "\"args\": {\"name\": \"schedule\"}}", f);
	ar_free(&a);
}

int
viz_write_trace(FILE *f, const void *ctx)
{
	const Analysis *an = ctx;
	int64_t cat[CAT_COUNT], last[CAT_COUNT];
	VizCursor c;
	Arena a;
	int s;

	ar_init(&a);
	header(an, f);
	viz_cursor_init(&c, &an->d, &an->ev, &a);
	while ((s = viz_cursor_step(&c, cat)) >= 0) {
		slice(an, s, f);
		for (int k = 0; k < CAT_COUNT; k++) {
			if (s > 0 && cat[k] == last[k])
				continue;
			fprintf(f, ",\n{\"name\": \"%s\", \"ph\": \"C\", \"ts\": %d, \"pid\": 1, "
			        "\"args\": {\"bytes\": %" PRId64 "}}", memcat_name((MemCat)k), s, cat[k]);
			last[k] = cat[k];
		}
	}
	fputs("\n]}\n", f);
	ar_free(&a);
	return 0;
}
