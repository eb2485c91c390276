/* driver/viz.c -- the command-line side of the pictures and
 * exports: storing their options and writing every file asked for after
 * one analysis, each through out_write (no partial files). */
#include <getopt.h>
#include <string.h>

#include "driver.h"

bool
viz_option(VizOptions *v, int c, const char *arg)
{
	switch (c) {
	case VIZ_OPT_PLOT: v->plot = arg; return true;
	case VIZ_OPT_HTML: v->html = arg; return true;
	case VIZ_OPT_TRACE: v->trace = arg; return true;
	case VIZ_OPT_MEMVIZ: v->memviz = arg; return true;
	case VIZ_OPT_DOT: v->dot = arg; return true;
	case VIZ_OPT_DOT_BACKWARD: v->dot_backward = true; return true;
	case VIZ_OPT_CSV: v->csv = arg; return true;
	case VIZ_OPT_SWEEP: v->sweep = arg; return true;
	default: return false;
	}
}

bool
viz_any_file(const VizOptions *v)
{
	return v->plot || v->html || v->trace || v->memviz || v->dot || v->csv;
}

int
viz_write_files(const VizOptions *v, const Analysis *an)
{
	VizDot dot = {an, v->dot_backward};
	const struct { const char *path; OutWriter fn; const void *ctx; } w[] = {
		{v->plot, viz_write_plot, an}, {v->html, viz_write_html, an},
		{v->trace, viz_write_trace, an}, {v->memviz, viz_write_memviz, an},
		{v->dot, viz_write_dot, &dot}, {v->csv, viz_write_csv, an},
	};
	int rc;

	for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
		if (w[i].path && (rc = out_write(w[i].path, w[i].fn, w[i].ctx)))
			return rc;
	return 0;
}
