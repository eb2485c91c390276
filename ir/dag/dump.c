/* ir/dag/dump.c -- stable text dumps of the DAG, of a schedule and of an
 * evaluation, for `remat -d lower|plan|liveness|memplan` and the golden
 * tests that compare them. One line per node, step or instance, in index
 * order, integers only. Reads; writes text. */
#include <inttypes.h>

#include "dag.h"

static void
dump_list(FILE *out, const char *label, const int *v, int n, const Dag *d)
{
	fprintf(out, " %s=[", label);
	for (int i = 0; i < n; i++)
		fprintf(out, "%s%s", i ? "," : "", d->t[v[i]].name);
	fputc(']', out);
}

void
dag_dump(const Dag *d, FILE *out)
{
	fprintf(out, "dag nodes=%d tensors=%d forward_cost=%" PRId64 " total_cost=%" PRId64 "\n",
	        d->nnode, d->nt, d->forward_cost, d->total_cost);
	for (int c = 0; c < CAT_COUNT; c++)
		if (d->persistent[c])
			fprintf(out, "persistent %s=%" PRId64 "\n", memcat_name((MemCat)c),
			        d->persistent[c]);
	for (int t = 0; t < d->nt; t++) {
		const DagTensor *x = &d->t[t];
		fprintf(out, "t%d %s bytes=%" PRId64 " cat=%s%s%s%s", t, x->name, x->bytes,
		        memcat_name(x->cat), x->from_start ? " from_start" : "",
		        x->to_end ? " to_end" : "", x->persistent_view ? " persistent_view" : "");
		if (x->view_src >= 0)
			fprintf(out, " view_of=%s", d->t[x->view_src].name);
		fputc('\n', out);
	}
	for (int v = 0; v < d->nnode; v++) {
		const DagNode *nd = &d->node[v];
		fprintf(out, "n%d %s cost=%" PRId64 "%s%s", v, nd->name, nd->cost,
		        nd->is_backward ? " backward" : "", nd->once ? " once" : "");
		if (dag_workspace(d, v))
			fprintf(out, " workspace=%" PRId64, dag_workspace(d, v));
		if (nd->fwd_plus1)
			fprintf(out, " after=n%d", nd->fwd_plus1 - 1);
		dump_list(out, "in", nd->in, nd->nin, d);
		dump_list(out, "out", nd->out, nd->nout, d);
		if (nd->nacc) {
			fputs(" acc=[", out);
			for (int i = 0; i < nd->nacc; i++)
				fprintf(out, "%s%s", i ? "," : "", d->t[nd->acc[i].tensor].name);
			fputc(']', out);
		}
		fputc('\n', out);
	}
}

void
schedule_dump(const Dag *d, const Schedule *s, Arena *scratch, FILE *out)
{
	bool *seen = ar_alloc(scratch, (size_t)d->nnode + 1);

	fprintf(out, "schedule steps=%d\n", s->n);
	for (int i = 0; i < s->n; i++) {
		int v = s->step[i];
		fprintf(out, "s%d %s %s\n", i, step_kind_name(dag_step_kind(d, s, i, seen)),
		        d->node[v].name);
		seen[v] = true;
	}
}

void
eval_dump(const Dag *d, const MemEval *ev, bool offsets, FILE *out)
{
	fprintf(out, "eval peak=%" PRId64 " peak_step=%d recompute_cost=%" PRId64 "\n",
	        ev->peak, ev->peak_step, ev->recompute_cost);
	for (int s = 0; s < ev->nsteps; s++)
		fprintf(out, "s%d live=%" PRId64 " temp=%" PRId64 "\n", s, ev->live_bytes[s],
		        ev_temp(ev, s));
	for (int i = 0; i < ev->ninst; i++) {
		const Instance *in = &ev->inst[i];
		fprintf(out, "i%d %s steps=%d..%d owned=%" PRId64, i, d->t[in->tensor].name,
		        in->start, in->end, in->owned);
		if (in->base != i)
			fprintf(out, " base=i%d", in->base);
		if (offsets)
			fprintf(out, " offset=%" PRId64, ev_offset(ev, i));
		fputc('\n', out);
	}
	if (offsets && ev->persistent_offset)
		for (int p = 0; p < d->npersistent; p++)
			fprintf(out, "p%d %s bytes=%" PRId64 " offset=%" PRId64 "\n", p,
			        memcat_name(d->persistent_cat[p]), d->persistent_buf[p],
			        ev->persistent_offset[p]);
}
