/* ir/util/suggest.c -- "did you mean 'X'?": the one place that picks the
 * nearest known word to a misspelt one, for unknown names, ops, attributes,
 * settings and command-line options alike. Callers feed the candidates one
 * by one (they live in different tables) and ask for the best at the end.
 * Distance is Damerau-Levenshtein (optimal string alignment) with letters
 * compared case-blind, so `Relu`, `sotfmax` and `--bugdet` all find theirs. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/* Words longer than this are not compared: nobody misspells a paragraph. */
enum { SG_MAXLEN = 63 };

void
suggest_init(Suggest *s, const char *word)
{
	s->word = word;
	s->best[0] = 0;
	s->dist = 0;
}

static int
lower(char c)
{
	return tolower((unsigned char)c);
}

/* Edit distance with adjacent transpositions counting one edit. */
static int
distance(const char *a, const char *b)
{
	int n = (int)strlen(a), m = (int)strlen(b);
	int d[SG_MAXLEN + 1][SG_MAXLEN + 1];

	for (int i = 0; i <= n; i++)
		d[i][0] = i;
	for (int j = 0; j <= m; j++)
		d[0][j] = j;
	for (int i = 1; i <= n; i++)
		for (int j = 1; j <= m; j++) {
			int cost = lower(a[i - 1]) != lower(b[j - 1]);
			int v = d[i - 1][j - 1] + cost;
			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
			    lower(a[i - 2]) == lower(b[j - 1]) && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[n][m];
}

/* The most edits a word of n letters may be away from its suggestion:
 * one for short words, two up to eight letters, three beyond. */
static int
tolerance(size_t n)
{
	return n <= 4 ? 1 : n <= 8 ? 2 : 3;
}

void
suggest_addn(Suggest *s, const char *cand, size_t m)
{
	size_t n = strlen(s->word);
	char c[SG_MAXLEN + 1];
	int dist;

	if (n == 0 || n > SG_MAXLEN || m == 0 || m > SG_MAXLEN)
		return;
	memcpy(c, cand, m);
	c[m] = 0;
	if (!strcmp(c, s->word))
		return;
	dist = distance(s->word, c);
	if (dist > tolerance(n) || (size_t)dist >= (n > m ? n : m))
		return;
	if (!s->best[0] || dist < s->dist) {    /* ties: the first one fed */
		memcpy(s->best, c, m + 1);
		s->dist = dist;
	}
}

void
suggest_add(Suggest *s, const char *cand)
{
	if (cand)
		suggest_addn(s, cand, strlen(cand));
}

const char *
suggest_hint(const Suggest *s, char *buf, size_t n)
{
	if (!s->best[0]) {
		buf[0] = 0;
		return buf;
	}
	snprintf(buf, n, " (did you mean '%s'?)", s->best);
	return buf;
}
