/* frontend/hints.c -- "did you mean" for the frontend's unknown words:
 * tensor names, ops and dims. Each gathers the candidates from the name
 * tables of Inst and hands them to the one chooser, suggest_add()
 * (ir/util/suggest.c). Reads the tables; writes nothing. */
#include <string.h>

#include "inst.h"

/* Every name of map m bound in scope `scope` (any when < 0). */
static void
hint_map(const Map *m, int scope, Suggest *sg)
{
	for (int i = 0; i < m->cap; i++) {
		const MapEntry *e = &m->e[i];
		if (e->name && (scope < 0 || e->scope == scope) && strcmp(e->name, "return"))
			suggest_add(sg, e->name);
	}
}

const char *
inst_hint_name(Inst *in, int scope, bool top, const char *word, char *buf, size_t n)
{
	Suggest sg;

	suggest_init(&sg, word);
	hint_map(&in->names, scope, &sg);
	if (!top)
		hint_map(&in->topdecl, 0, &sg);
	return suggest_hint(&sg, buf, n);
}

const char *
inst_hint_op(Inst *in, const char *word, char *buf, size_t n)
{
	Suggest sg;

	suggest_init(&sg, word);
	for (int k = 0; k < OP_CUSTOM; k++)
		suggest_add(&sg, ir_optab[k].name);
	hint_map(&in->defs, -1, &sg);
	hint_map(&in->customs, -1, &sg);
	return suggest_hint(&sg, buf, n);
}

const char *
inst_hint_dim(Inst *in, const char *word, char *buf, size_t n)
{
	Suggest sg;

	suggest_init(&sg, word);
	hint_map(&in->dims, -1, &sg);
	return suggest_hint(&sg, buf, n);
}

const char *
inst_hint_word(const char *const *words, int nwords, const char *word, char *buf,
               size_t n)
{
	Suggest sg;

	suggest_init(&sg, word);
	for (int i = 0; i < nwords; i++)
		suggest_add(&sg, words[i]);
	return suggest_hint(&sg, buf, n);
}
