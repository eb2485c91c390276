/* passes/plan/remat_order.c -- other orders for the planners to work over:
 * topological orders of the Dag's data edges (accumulation before reads;
 * once-only nodes keep their base order, the exact solver's search space),
 * chosen greedily by the bytes each step adds or at random, and a local
 * search that lowers an order's peak by moving steps, with no recompute.
 * On random layered graphs the least-bytes order alone starts 2-20% below
 * the reference order's peak, which the budget then need not buy with
 * recompute. Reads the Dag; every order is scored by lv_eval. */
#include <stdlib.h>
#include <string.h>

#include "remat_int.h"

/* evaluations x size for order_improve: about 0.05 s */

static int64_t
owned(const Dag *d, int t)
{
	return d->t[t].view_src >= 0 || d->t[t].persistent_view ? 0 : d->t[t].bytes;
}

/* The order's peak and how many steps reach it, by lv_eval (scratch in
 * C); false when the order is invalid. */
static bool
order_key(RmCtx *C, int *ord, int64_t *peak, int *npeak)
{
	Schedule s = {C->n, ord};

	ar_free(&C->scratch);
	lv_eval(C->d, &s, &C->ev, &C->scratch);
	C->evals++;
	if (!C->ev.valid)
		return false;
	*peak = C->ev.peak;
	*npeak = 0;
	for (int i = 0; i < C->ev.nsteps; i++)
		*npeak += C->ev.live_bytes[i] == C->ev.peak;
	return true;
}

/* buf = ord with the step at i moved to index j of the result. */
static void
order_move(const int *ord, int n, int i, int j, int *buf)
{
	int k = 0;

	for (int x = 0; x < n; x++) {
		if (x == i)
			continue;
		if (k == j)
			buf[k++] = ord[i];
		buf[k++] = ord[x];
	}
	if (k == j)
		buf[k++] = ord[i];
}

/* Lowers the peak of an order without recompute: for the tensors live
 * across the first peak step p, largest first, moves the producer to just
 * before its first use after p, or the last reader to just after its last
 * input is made (if that is before p); keeps the first move that lowers
 * (peak, steps at the peak). Only recomputable nodes move. At most evals
 * evaluations. */
static void
order_improve(RmCtx *C, int *ord, long evals)
{
	const Dag *d = C->d;
	int n = C->n, npeak;
	int *buf = xcalloc((size_t)n + 1, sizeof *buf);
	int *pos = xcalloc((size_t)d->nnode + 1, sizeof *pos);
	int *maker = xcalloc((size_t)d->nt + 1, sizeof *maker);
	int64_t peak;
	bool better = order_key(C, ord, &peak, &npeak);

	for (int t = 0; t < d->nt; t++)
		maker[t] = -1;
	for (int v = 0; v < d->nnode; v++)
		for (int j = 0; j < d->node[v].nout; j++)
			maker[d->node[v].out[j]] = v;
	while (better && evals > 0) {
		better = false;
		order_key(C, ord, &peak, &npeak);
		int p = C->ev.peak_step, ni = 0;
		for (int x = 0; x < n; x++)
			pos[ord[x]] = x;
		/* instances live across p, by bytes (a short selection) */
		int *cand = buf;
		for (int k = 0; k < C->ev.ninst && ni < n; k++) {
			const Instance *in = &C->ev.inst[k];
			if (in->start >= 0 && in->start <= p && in->end > p && in->owned > 0)
				cand[ni++] = k;
		}
		int *sel = xcalloc((size_t)ni + 1, sizeof *sel);
		memcpy(sel, cand, sizeof *sel * (size_t)ni);
		Instance *inst = xcalloc((size_t)C->ev.ninst + 1, sizeof *inst);
		memcpy(inst, C->ev.inst, sizeof *inst * (size_t)C->ev.ninst);
		for (int a = 1; a < ni; a++)
			for (int b = a; b > 0 && inst[sel[b]].owned > inst[sel[b - 1]].owned; b--) {
				int tmp = sel[b];
				sel[b] = sel[b - 1];
				sel[b - 1] = tmp;
			}
		for (int c = 0; c < ni && !better && evals > 0; c++) {
			const Instance *in = &inst[sel[c]];
			int v = ord[in->start], w = ord[in->end], fu = -1;
			for (int x = p + 1; x < n && fu < 0; x++)
				for (int k = C->uofs[ord[x]]; k < C->uofs[ord[x] + 1]; k++)
					if (C->use[k] == in->tensor)
						fu = x;
			if (!d->node[v].once && fu > p) {
				int64_t pk;
				int np;
				order_move(ord, n, in->start, fu - 1, buf);
				evals--;
				if (order_key(C, buf, &pk, &np) &&
				    (pk < peak || (pk == peak && np < npeak))) {
					memcpy(ord, buf, sizeof *ord * (size_t)n);
					better = true;
					break;
				}
			}
			int early = 0;
			for (int k = C->uofs[w]; k < C->uofs[w + 1]; k++)
				if (maker[C->use[k]] >= 0 && pos[maker[C->use[k]]] + 1 > early)
					early = pos[maker[C->use[k]]] + 1;
			if (!d->node[w].once && !d->t[in->tensor].to_end &&
			    early <= p && early < in->end) {
				int64_t pk;
				int np;
				order_move(ord, n, in->end, early, buf);
				evals--;
				if (order_key(C, buf, &pk, &np) &&
				    (pk < peak || (pk == peak && np < npeak))) {
					memcpy(ord, buf, sizeof *ord * (size_t)n);
					better = true;
				}
			}
		}
		free(sel);
		free(inst);
	}
	free(buf);
	free(pos);
	free(maker);
}

/* Another order of d's nodes for the simulation: a topological order of
 * the data edges (and of accumulation before reads), taking at each step
 * the ready node that adds the fewest bytes (seed 0; ties by base
 * position), or a random ready node. Once-only (backward) nodes keep
 * their base order, as the exact solver assumes. False on a cycle. */
bool
rm_topo_order(const RmCtx *C, uint64_t seed, int *out)
{
	const Dag *d = C->d;
	int nn = d->nnode, nt = d->nt, ne = 0, k = 0;
	int *maker = xcalloc((size_t)nt + 1, sizeof *maker);
	int *cnt = xcalloc((size_t)nn + 1, sizeof *cnt);
	int *rd = xcalloc((size_t)nt + 1, sizeof *rd);
	int *ready = xcalloc((size_t)nn + 1, sizeof *ready);
	int *eofs = xcalloc((size_t)nn + 2, sizeof *eofs);
	int *edge, nready = 0;
	bool ok;

	/* edges: maker of a used tensor -> user; contributor -> readers */
	for (int t = 0; t < nt; t++)
		maker[t] = -1;
	for (int v = 0; v < nn; v++)
		for (int j = 0; j < d->node[v].nout; j++)
			maker[d->node[v].out[j]] = v;
	for (int v = 0; v < nn; v++)
		for (int i = C->uofs[v]; i < C->uofs[v + 1]; i++)
			rd[C->use[i]]++;
	/* readers of each tensor, CSR */
	int *rofs = xcalloc((size_t)nt + 2, sizeof *rofs);
	int *reader = xcalloc((size_t)C->uofs[nn] + 1, sizeof *reader);
	for (int t = 0; t < nt; t++)
		rofs[t + 1] = rofs[t] + rd[t];
	for (int v = 0; v < nn; v++)
		for (int i = C->uofs[v]; i < C->uofs[v + 1]; i++)
			reader[rofs[C->use[i] + 1] - rd[C->use[i]]--] = v;
	for (int v = 0; v < nn; v++)
		for (int i = C->uofs[v]; i < C->uofs[v + 1]; i++)
			rd[C->use[i]]++;
	for (int v = 0; v < nn; v++) {
		for (int i = C->uofs[v]; i < C->uofs[v + 1]; i++)
			ne += maker[C->use[i]] >= 0;
		for (int j = 0; j < d->node[v].nacc; j++)
			ne += rd[d->node[v].acc[j].tensor];
	}
	ne += C->n;
	edge = xcalloc((size_t)ne + 1, sizeof *edge);
	int *efrom = xcalloc((size_t)ne + 1, sizeof *efrom);
	ne = 0;
	for (int x = 0, prev = -1; x < C->n; x++) {
		int v = d->base_order[x];
		if (!d->node[v].once)
			continue;
		if (prev >= 0) {
			efrom[ne] = prev;
			edge[ne++] = v;
		}
		prev = v;
	}
	for (int v = 0; v < nn; v++) {
		for (int i = C->uofs[v]; i < C->uofs[v + 1]; i++)
			if (maker[C->use[i]] >= 0 && maker[C->use[i]] != v) {
				efrom[ne] = maker[C->use[i]];
				edge[ne++] = v;
			}
		for (int j = 0; j < d->node[v].nacc; j++) {
			int t = d->node[v].acc[j].tensor;
			for (int i = rofs[t]; i < rofs[t + 1]; i++)
				if (reader[i] != v) {
					efrom[ne] = v;
					edge[ne++] = reader[i];
				}
		}
	}
	int *sorted = xcalloc((size_t)ne + 1, sizeof *sorted);
	for (int e = 0; e < ne; e++) {
		eofs[efrom[e] + 2]++;
		cnt[edge[e]]++;
	}
	for (int v = 0; v < nn; v++)
		eofs[v + 2] += eofs[v + 1];
	for (int e = 0; e < ne; e++)
		sorted[eofs[efrom[e] + 1]++] = edge[e];
	for (int v = 0; v < nn; v++)
		if (cnt[v] == 0)
			ready[nready++] = v;
	while (nready > 0) {
		int bi = 0;
		if (seed) {
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			bi = (int)(seed % (uint64_t)nready);
		} else {
			int64_t bd = 0;
			for (int i = 0; i < nready; i++) {
				const DagNode *n = &d->node[ready[i]];
				int64_t dl = 0;
				for (int j = 0; j < n->nout; j++)
					dl += owned(d, n->out[j]);
				for (int u = C->uofs[ready[i]]; u < C->uofs[ready[i] + 1]; u++)
					if (rd[C->use[u]] == 1 && !d->t[C->use[u]].to_end)
						dl -= owned(d, C->use[u]);
				if (i == 0 || dl < bd || (dl == bd &&
				    C->pos[ready[i]] < C->pos[ready[bi]])) {
					bd = dl;
					bi = i;
				}
			}
		}
		int v = ready[bi];
		ready[bi] = ready[--nready];
		out[k++] = v;
		for (int u = C->uofs[v]; u < C->uofs[v + 1]; u++)
			rd[C->use[u]]--;
		for (int e = eofs[v]; e < eofs[v + 1]; e++)
			if (--cnt[sorted[e]] == 0)
				ready[nready++] = sorted[e];
	}
	ok = k == nn && nn == d->nbase;
	free(maker);
	free(cnt);
	free(rd);
	free(ready);
	free(eofs);
	free(edge);
	free(efrom);
	free(sorted);
	free(rofs);
	free(reader);
	return ok;
}

const int *
rm_least_bytes_order(RmCtx *C)
{
	long size = C->n + C->uofs[C->d->nnode] + 1;
	long work = C->eff->order_work;

	if (C->lborder_done)
		return C->lborder;
	C->lborder_done = true;
	C->lborder = ar_alloc(&C->mem, sizeof *C->lborder * ((size_t)C->d->nnode + 1));
	if (!rm_topo_order(C, 0, C->lborder)) {
		C->lborder = NULL;
		return NULL;
	}
	order_improve(C, C->lborder, work / size + 1);
	return C->lborder;
}
