/* report/memviz.c -- --memory-viz: a memory snapshot in the pickle
 * format PyTorch's memory_viz viewer reads (torch.cuda.memory._snapshot()):
 *   {"segments": [one segment: the arena at the peak step, its blocks
 *                 active_allocated or inactive, tiling it exactly],
 *    "device_traces": [[one "alloc" and one "free_completed" per owning
 *                 instance and per step's temporary extent, in schedule
 *                 order; the persistent buffers are allocated first and
 *                 never freed]]}
 * Addresses are VIZ_BASE plus the memory planner's offsets; each block and
 * event carries one frame {filename, line, name}: the .net file, the line
 * of the tensor (or of the op, for temporaries) and the tensor's name and
 * category. The pickle is protocol 2, written by hand: dicts, lists,
 * strings, integers and the memo (a block's frames are written once) are
 * all it needs. Reads an Analysis; writes bytes. */
#include <stdlib.h>
#include <string.h>

#include "report.h"

#define VIZ_BASE ((int64_t)0x7f0000000000)

/* ---- the pickle opcodes we use */
static void
p_int(FILE *f, int64_t v)
{
	unsigned char b[9];

	if (v >= INT32_MIN && v <= INT32_MAX) {
		fputc('J', f);                          /* BININT: 4 bytes LE */
		for (int i = 0; i < 4; i++)
			b[i] = (unsigned char)((uint64_t)v >> (8 * i));
		fwrite(b, 1, 4, f);
		return;
	}
	fputc(0x8a, f);                                 /* LONG1: n, n bytes LE */
	b[0] = 8;
	for (int i = 0; i < 8; i++)
		b[i + 1] = (unsigned char)((uint64_t)v >> (8 * i));
	fwrite(b, 1, 9, f);
}

/* BINUNICODE; bytes outside ASCII become '?', so the text is valid UTF-8. */
static void
p_str(FILE *f, const char *s)
{
	size_t n = strlen(s);
	unsigned char b[4];

	fputc('X', f);
	for (int i = 0; i < 4; i++)
		b[i] = (unsigned char)(n >> (8 * i));
	fwrite(b, 1, 4, f);
	for (; *s; s++)
		fputc((unsigned char)*s < 0x80 ? *s : '?', f);
}

static void p_dict(FILE *f) { fputs("}(", f); }        /* EMPTY_DICT MARK */
static void p_dict_end(FILE *f) { fputc('u', f); }      /* SETITEMS */
static void p_list(FILE *f) { fputs("](", f); }        /* EMPTY_LIST MARK */
static void p_list_end(FILE *f) { fputc('e', f); }      /* APPENDS */

static void
p_key_int(FILE *f, const char *k, int64_t v)
{
	p_str(f, k);
	p_int(f, v);
}

static void
p_key_str(FILE *f, const char *k, const char *v)
{
	p_str(f, k);
	p_str(f, v);
}

/* ---- what the blocks are */
typedef enum { B_GAP, B_INST, B_TEMP, B_PERS } BlockKind;

typedef struct Block {
	int64_t addr, size;
	BlockKind kind;
	int idx;                /* instance, step or persistent buffer */
} Block;

/* The pickle memo: a block's frames list is written once and fetched
 * again (LONG_BINGET) by every later event, so the file stays a few dozen
 * bytes per event. Memo slot 0 holds the file name. */
typedef struct Memo {
	const Analysis *an;
	bool *put;              /* [nslots] */
	uint32_t words;         /* first slot of the event's fixed strings */
	Arena *a;
} Memo;

/* The strings every event repeats, memoized too. */
static const char *const words[] = {
	"action", "addr", "size", "stream", "time_us", "alloc", "free_completed",
};
enum { W_ACTION, W_ADDR, W_SIZE, W_STREAM, W_TIME, W_ALLOC, W_FREE, W_COUNT };

static uint32_t
memo_slot(const Memo *m, const Block *b)
{
	const MemEval *ev = &m->an->ev;

	switch (b->kind) {
	case B_INST: return 1 + (uint32_t)b->idx;
	case B_TEMP: return 1 + (uint32_t)ev->ninst + (uint32_t)b->idx;
	default: return 1 + (uint32_t)ev->ninst + (uint32_t)ev->nsteps + (uint32_t)b->idx;
	}
}

static void
p_memo(FILE *f, char op, uint32_t slot)
{
	unsigned char b[4];

	fputc(op, f);                   /* 'r' LONG_BINPUT, 'j' LONG_BINGET */
	for (int i = 0; i < 4; i++)
		b[i] = (unsigned char)(slot >> (8 * i));
	fwrite(b, 1, 4, f);
}

static void
p_word(FILE *f, Memo *m, int w)
{
	uint32_t slot = m->words + (uint32_t)w;

	if (m->put[slot]) {
		p_memo(f, 'j', slot);
		return;
	}
	p_str(f, words[w]);
	p_memo(f, 'r', slot);
	m->put[slot] = true;
}

static void
p_word_int(FILE *f, Memo *m, int w, int64_t v)
{
	p_word(f, m, w);
	p_int(f, v);
}

static int
block_line(const Analysis *an, const Block *b)
{
	int ir;

	switch (b->kind) {
	case B_INST: return viz_tensor_line(an, an->ev.inst[b->idx].tensor);
	case B_TEMP: return viz_step_line(an, b->idx);
	case B_PERS:
		ir = an->d.persistent_ir ? an->d.persistent_ir[b->idx] : -1;
		return ir >= 0 ? an->g.t[ir].loc.line : 0;
	default: return 0;
	}
}

static const char *
block_name(const Analysis *an, const Block *b, Arena *a)
{
	const Dag *d = &an->d;
	const DagTensor *t;
	int ir;

	switch (b->kind) {
	case B_INST:
		t = &d->t[an->ev.inst[b->idx].tensor];
		return ar_printf(a, "%s (%s)", t->name, memcat_name(t->cat));
	case B_TEMP:
		return ar_printf(a, "%s %s (temporaries)", step_kind_name(an->ev.kind[b->idx]),
		                 d->node[an->plan.sched.step[b->idx]].name);
	case B_PERS:
		ir = d->persistent_ir ? d->persistent_ir[b->idx] : -1;
		return ar_printf(a, "%s (%s)", ir >= 0 ? an->g.t[ir].id : "param",
		                 memcat_name(d->persistent_cat[b->idx]));
	default:
		return "";
	}
}

/* "frames": [{filename, line, name}], memoized per block. */
static void
frames(FILE *f, Memo *m, const Block *b)
{
	uint32_t slot = memo_slot(m, b);

	p_str(f, "frames");
	if (m->put[slot]) {
		p_memo(f, 'j', slot);
		return;
	}
	p_list(f);
	p_dict(f);
	p_str(f, "filename");
	if (m->put[0]) {
		p_memo(f, 'j', 0);
	} else {
		p_str(f, m->an->g.file ? m->an->g.file : "?");
		p_memo(f, 'r', 0);
		m->put[0] = true;
	}
	p_key_int(f, "line", block_line(m->an, b));
	p_key_str(f, "name", block_name(m->an, b, m->a));
	p_dict_end(f);
	p_list_end(f);
	p_memo(f, 'r', slot);
	m->put[slot] = true;
}

static Block
inst_block(const Analysis *an, int k)
{
	return (Block){VIZ_BASE + ev_offset(&an->ev, k), an->ev.inst[k].owned, B_INST, k};
}

static Block
temp_block(const Analysis *an, int s)
{
	return (Block){VIZ_BASE + an->ev.temp_offset[s], ev_temp(&an->ev, s), B_TEMP, s};
}

static Block
pers_block(const Analysis *an, int i)
{
	return (Block){VIZ_BASE + an->ev.persistent_offset[i], an->d.persistent_buf[i], B_PERS, i};
}

static void
event(FILE *f, Memo *m, int action, Block b, int time)
{
	p_dict(f);
	p_word(f, m, W_ACTION);
	p_word(f, m, action);
	p_word_int(f, m, W_ADDR, b.addr);
	p_word_int(f, m, W_SIZE, b.size);
	p_word_int(f, m, W_STREAM, 0);
	p_word_int(f, m, W_TIME, time);
	frames(f, m, &b);
	p_dict_end(f);
}

/* Every allocation and free, in schedule order: at each step its
 * temporaries and products are allocated, then the temporaries and the
 * instances whose last step it is are freed (the cursor's end lists). A
 * step with out_of_place gradient sums runs in liveness's two phases
 * (viz_counted): its products, then its dying inputs freed and its largest
 * sum made; then the rest of its frees, and its other sums. */
static void
trace(FILE *f, Memo *m)
{
	const Analysis *an = m->an;
	const MemEval *ev = &an->ev;
	VizCursor c;

	viz_cursor_init(&c, &an->d, ev, m->a);
	p_list(f);
	for (int i = 0; i < an->d.npersistent; i++)
		if (an->d.persistent_buf[i] > 0)
			event(f, m, W_ALLOC, pers_block(an, i), 0);
	for (int s = -1; s < ev->nsteps; s++) {
		int t = s < 0 ? 0 : s, most = s < 0 ? -1 : viz_largest_sum(&c, s);
		if (s >= 0 && ev_temp(ev, s) > 0)
			event(f, m, W_ALLOC, temp_block(an, s), t);
		for (int k = ev->step_prod[s + 1]; k < ev->step_prod[s + 2]; k++)
			if (ev->inst[k].owned > 0 && ev->inst[k].end >= t && !ev->inst[k].replaces)
				event(f, m, W_ALLOC, inst_block(an, k), t);
		if (s < 0)
			continue;
		if (most >= 0) {
			for (int k = c.end_head[s]; k >= 0; k = c.end_next[k])
				if (viz_dying(&c, s, k))
					event(f, m, W_FREE, inst_block(an, k), t);
			if (ev->inst[most].owned > 0)
				event(f, m, W_ALLOC, inst_block(an, most), t);
		}
		if (ev_temp(ev, s) > 0)
			event(f, m, W_FREE, temp_block(an, s), t);
		for (int k = c.end_head[s]; k >= 0; k = c.end_next[k])
			if (most < 0 || (!viz_dying(&c, s, k) && !(ev->inst[k].replaces && ev->inst[k].start == s)))
				event(f, m, W_FREE, inst_block(an, k), t);
		if (most < 0)
			continue;
		for (int k = ev->step_prod[s + 1]; k < ev->step_prod[s + 2]; k++)
			if (ev->inst[k].owned > 0 && ev->inst[k].replaces && k != most)
				event(f, m, W_ALLOC, inst_block(an, k), t);
		for (int k = c.end_head[s]; k >= 0; k = c.end_next[k])
			if (ev->inst[k].replaces && ev->inst[k].start == s)
				event(f, m, W_FREE, inst_block(an, k), t);
	}
	p_list_end(f);
}

static int
by_addr(const void *x, const void *y)
{
	const Block *p = x, *q = y;

	return p->addr < q->addr ? -1 : p->addr > q->addr;
}

/* The blocks live at step s, by address. */
static int
live_blocks(const Analysis *an, int s, Block *out)
{
	const MemEval *ev = &an->ev;
	int n = 0;

	for (int i = 0; i < an->d.npersistent; i++)
		if (an->d.persistent_buf[i] > 0)
			out[n++] = pers_block(an, i);
	for (int k = 0; k < ev->ninst; k++)
		if (ev->inst[k].owned > 0 && ev->inst[k].start <= s && s <= ev->inst[k].end)
			out[n++] = inst_block(an, k);
	if (ev_temp(ev, s) > 0)
		out[n++] = temp_block(an, s);
	qsort(out, (size_t)n, sizeof *out, by_addr);
	return n;
}

static void
block(FILE *f, Memo *m, const Block *b, bool active)
{
	p_dict(f);
	p_key_int(f, "address", b->addr);
	p_key_int(f, "size", b->size);
	p_key_int(f, "requested_size", active ? b->size : 0);
	p_key_str(f, "state", active ? "active_allocated" : "inactive");
	if (active) {
		frames(f, m, b);
		p_str(f, "history");
		p_list(f);
		p_dict(f);
		p_key_int(f, "addr", b->addr);
		p_key_int(f, "real_size", b->size);
		frames(f, m, b);
		p_dict_end(f);
		p_list_end(f);
	}
	p_dict_end(f);
}

/* The arena at the peak step: its live blocks and the gaps between them. */
static void
segment(FILE *f, Memo *m)
{
	const Analysis *an = m->an;
	const MemEval *ev = &an->ev;
	Block *b = ar_alloc(m->a, sizeof *b * (size_t)(ev->ninst + an->d.npersistent + 2));
	bool *active = ar_alloc(m->a, (size_t)(ev->ninst + an->d.npersistent + 2));
	int n = ev->nsteps ? live_blocks(an, ev->peak_step, b) : 0;
	int64_t pos = VIZ_BASE, used = 0, end = VIZ_BASE + an->arena_bytes;
	VizCursor c;

	/* a tensor that the peak step's phase does not count (an out_of_place
	 * sum not yet made, an input already freed) keeps its place, inactive */
	viz_cursor_init(&c, &an->d, ev, m->a);
	for (int i = 0; i < n; i++)
		active[i] = b[i].kind != B_INST || viz_counted(&c, ev->peak_step, b[i].idx);

	p_list(f);
	p_dict(f);
	p_key_int(f, "device", 0);
	p_key_int(f, "address", VIZ_BASE);
	p_key_int(f, "total_size", an->arena_bytes);
	p_key_int(f, "stream", 0);
	p_key_str(f, "segment_type", "large");
	for (int i = 0; i < n; i++)
		used += active[i] ? b[i].size : 0;
	p_key_int(f, "allocated_size", used);
	p_key_int(f, "active_size", used);
	p_key_int(f, "requested_size", used);
	p_str(f, "blocks");
	p_list(f);
	for (int i = 0; i < n; i++) {
		ir_assert(b[i].addr >= pos && b[i].addr + b[i].size <= end);
		if (b[i].addr > pos)
			block(f, m, &(Block){pos, b[i].addr - pos, B_GAP, 0}, false);
		block(f, m, &b[i], active[i]);
		pos = b[i].addr + b[i].size;
	}
	if (end > pos)
		block(f, m, &(Block){pos, end - pos, B_GAP, 0}, false);
	p_list_end(f);
	p_dict_end(f);
	p_list_end(f);
}

int
viz_write_memviz(FILE *f, const void *ctx)
{
	const Analysis *an = ctx;
	Arena a;
	Memo m = {an, NULL, 0, &a};

	ar_init(&a);
	m.words = 1 + (uint32_t)an->ev.ninst + (uint32_t)an->ev.nsteps +
	          (uint32_t)an->d.npersistent;
	m.put = ar_alloc(&a, (size_t)m.words + W_COUNT);
	fputs("\x80\x02", f);                           /* PROTO 2 */
	p_dict(f);
	p_str(f, "segments");
	segment(f, &m);
	p_str(f, "device_traces");
	p_list(f);
	trace(f, &m);
	p_list_end(f);
	p_dict_end(f);
	fputc('.', f);                                  /* STOP */
	ar_free(&a);
	return 0;
}
