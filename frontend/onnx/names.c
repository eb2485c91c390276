/* frontend/onnx/names.c -- sets of .net names, and fresh names for them.
 *
 * The importer names every value after its ONNX name, made a .net
 * identifier ("/layer1/layer1.0/conv1/Conv" -> layer1_layer1_0_conv1_Conv),
 * and a def names its locals after the flat names; names that clash get
 * "_2", "_3"... A set remembers, for each name asked for, the suffix where
 * its last search stopped: names never leave a set, so the ones below are
 * still taken and the next search starts there. Ten thousand values whose
 * names all become "a" then cost ten thousand probes, not fifty million
 * (11 s and 737 MB when each search started at "_2"). */
#include <stdlib.h>
#include <string.h>

#include "onnx_int.h"

/* The slot of s in an open-addressing table of cap (a power of 2) names. */
static const char **
slot(const char **tab, size_t cap, const char *s)
{
	size_t h = ox_hash(s, strlen(s)) & (cap - 1);

	for (; tab[h]; h = (h + 1) & (cap - 1))
		if (!strcmp(tab[h], s))
			break;
	return &tab[h];
}

bool
ox_names_has(const Names *s, const char *t)
{
	return s->cap && *slot(s->tab, s->cap, t);
}

void
ox_names_add(Names *s, const char *t)
{
	if (2 * (s->n + 1) > s->cap) {         /* half full at most */
		const char **old = s->tab;
		size_t oc = s->cap;
		s->cap = oc ? 2 * oc : 64;
		s->tab = xcalloc(s->cap, sizeof *s->tab);
		for (size_t i = 0; i < oc; i++)
			if (old[i])
				*slot(s->tab, s->cap, old[i]) = old[i];
		free(old);
	}
	const char **p = slot(s->tab, s->cap, t);
	if (!*p) {
		*p = t;
		s->n++;
	}
}

/* The next suffix to try for base name t (2 at first). */
static int *
next_suffix(Names *s, const char *t)
{
	size_t h;

	if (2 * (s->bn + 1) > s->bcap) {
		NameBase *old = s->bases;
		size_t oc = s->bcap;
		s->bcap = oc ? 2 * oc : 16;
		s->bases = xcalloc(s->bcap, sizeof *s->bases);
		for (size_t i = 0; i < oc; i++)
			if (old[i].base) {
				for (h = ox_hash(old[i].base, strlen(old[i].base)) & (s->bcap - 1);
				     s->bases[h].base; h = (h + 1) & (s->bcap - 1))
					;
				s->bases[h] = old[i];
			}
		free(old);
	}
	for (h = ox_hash(t, strlen(t)) & (s->bcap - 1); s->bases[h].base;
	     h = (h + 1) & (s->bcap - 1))
		if (!strcmp(s->bases[h].base, t))
			return &s->bases[h].next;
	s->bases[h] = (NameBase){t, 2};
	s->bn++;
	return &s->bases[h].next;
}

const char *
ox_names_fresh(Names *s, Arena *a, const char *want,
               bool (*bad)(void *ctx, const char *t), void *ctx)
{
	const char *t = want;
	int *k;

	if (!ox_names_has(s, t) && !bad(ctx, t))
		return t;
	k = next_suffix(s, want);
	do
		t = ar_printf(a, "%s_%d", want, (*k)++);
	while (ox_names_has(s, t) || bad(ctx, t));
	return t;
}

void
ox_names_free(Names *s)
{
	free(s->tab);
	free(s->bases);
	*s = (Names){0};
}
