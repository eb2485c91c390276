/* passes/eval/treap.c -- an ordered set of distinct keys (k1, k2), a treap
 * over nodes that the caller keeps in an array (index -1: none). The memory
 * planner's free ranges (memplan.c) and the caching allocator's free blocks
 * (cuda_alloc.c) are such sets; they own the nodes, set each one's keys and
 * priority before tp_insert, and may reuse a node after tp_erase. */
#include "eval.h"

static bool
key_lt(const TpNode *x, int64_t k1, int64_t k2)
{
	return x->k1 < k1 || (x->k1 == k1 && x->k2 < k2);
}

/* Splits t into keys < (k1, k2) and keys >= (k1, k2). */
static void
split(TpNode *n, int t, int64_t k1, int64_t k2, int *l, int *r)
{
	if (t < 0) {
		*l = *r = -1;
	} else if (key_lt(&n[t], k1, k2)) {
		split(n, n[t].kid[1], k1, k2, &n[t].kid[1], r);
		*l = t;
	} else {
		split(n, n[t].kid[0], k1, k2, l, &n[t].kid[0]);
		*r = t;
	}
}

/* Joins a and b, every key of a below every key of b. */
static int
join(TpNode *n, int a, int b)
{
	if (a < 0 || b < 0)
		return a < 0 ? b : a;
	if (n[a].pri > n[b].pri) {
		n[a].kid[1] = join(n, n[a].kid[1], b);
		return a;
	}
	n[b].kid[0] = join(n, a, n[b].kid[0]);
	return b;
}

/* The link that points at key (k1, k2), or the -1 where it would go. */
static int *
tp_link(TpNode *n, int *root, int64_t k1, int64_t k2)
{
	int *link = root;

	while (*link >= 0 && (n[*link].k1 != k1 || n[*link].k2 != k2))
		link = key_lt(&n[*link], k1, k2) ? &n[*link].kid[1] : &n[*link].kid[0];
	return link;
}

void
tp_insert(TpNode *n, int *root, int x)
{
	int *link = root;

	/* descend to where x's priority puts it, then split only the subtree
	 * below: the same treap as splitting and joining at the root */
	while (*link >= 0 && n[*link].pri > n[x].pri)
		link = key_lt(&n[*link], n[x].k1, n[x].k2) ? &n[*link].kid[1] : &n[*link].kid[0];
	split(n, *link, n[x].k1, n[x].k2, &n[x].kid[0], &n[x].kid[1]);
	*link = x;
}

int
tp_erase(TpNode *n, int *root, int64_t k1, int64_t k2)
{
	int *link = tp_link(n, root, k1, k2), m = *link;

	ir_assert(m >= 0);
	*link = join(n, n[m].kid[0], n[m].kid[1]);
	return m;
}

int
tp_erase_ceil(TpNode *n, int *root, int64_t k1, int64_t k2)
{
	int *link = root, *best = NULL, m;

	/* the link to the last node the descent passed on its left is the
	 * link to the smallest key >= (k1, k2): nothing changes on the way
	 * down, so it can be cut there without a second descent */
	while (*link >= 0) {
		if (key_lt(&n[*link], k1, k2)) {
			link = &n[*link].kid[1];
		} else {
			best = link;
			link = &n[*link].kid[0];
		}
	}
	if (!best)
		return -1;
	m = *best;
	*best = join(n, n[m].kid[0], n[m].kid[1]);
	return m;
}

/* The nearest key to (k1, k2): the smallest >= it, or the largest below. */
static int
nearest(const TpNode *n, int root, int64_t k1, int64_t k2, bool below)
{
	int best = -1;

	for (int t = root; t >= 0;) {
		bool lt = key_lt(&n[t], k1, k2);
		if (lt == below)
			best = t;
		t = n[t].kid[lt];
	}
	return best;
}

int
tp_ceil(const TpNode *n, int root, int64_t k1, int64_t k2)
{
	return nearest(n, root, k1, k2, false);
}

int
tp_below(const TpNode *n, int root, int64_t k1, int64_t k2)
{
	return nearest(n, root, k1, k2, true);
}
