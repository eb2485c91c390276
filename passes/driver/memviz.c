/* passes/driver/memviz.c -- --memory-viz: a memory snapshot in the pickle
 * format PyTorch's memory_viz viewer reads (torch.cuda.memory._snapshot()):
 *   {"segments": [one segment: the arena at the peak step, its blocks
 *                 active_allocated or inactive, tiling it exactly],
 *    "device_traces": [[one "alloc" and one "free_completed" per owning
 *                 instance and per step's temporary block, in schedule
 *                 order; the persistent buffers are allocated first and
 *                 never freed]]}
 * Addresses are VIZ_BASE plus the memory planner's offsets; each block and
 * event carries one frame {filename, line, name}: the .net file, the line
 * of the tensor (or of the op, for temporaries) and the tensor's name and
 * category. The pickle is protocol 2, written by hand: dicts, lists,
 * strings and integers are all it needs. Reads an Analysis; writes bytes. */
#include <stdlib.h>
#include <string.h>

#include "viz.h"

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
typedef struct Block {
	int64_t addr, size;
	int line;
	const char *name;       /* tensor name and category, or an op's temps */
} Block;

static void
frames(FILE *f, const Analysis *an, const Block *b)
{
	p_str(f, "frames");
	p_list(f);
	p_dict(f);
	p_key_str(f, "filename", an->g.file ? an->g.file : "?");
	p_key_int(f, "line", b->line);
	p_key_str(f, "name", b->name);
	p_dict_end(f);
	p_list_end(f);
}

static Block
inst_block(const Analysis *an, int k, Arena *a)
{
	const Instance *in = &an->ev.inst[k];
	const DagTensor *t = &an->d.t[in->tensor];

	return (Block){VIZ_BASE + in->offset, in->owned, viz_tensor_line(an, in->tensor),
	               ar_printf(a, "%s (%s)", t->name, memcat_name(t->cat))};
}

static Block
temp_block(const Analysis *an, int s, Arena *a)
{
	return (Block){VIZ_BASE + an->ev.temp_offset[s], an->ev.temp_bytes[s],
	               viz_step_line(an, s), ar_printf(a, "%s %s (temporaries)",
	               step_kind_name(an->ev.kind[s]), an->d.node[an->plan.sched.step[s]].name)};
}

static Block
pers_block(const Analysis *an, int i, Arena *a)
{
	const Dag *d = &an->d;
	int ir = d->persistent_ir ? d->persistent_ir[i] : -1;
	const char *name = ir >= 0 ? an->g.t[ir].id : "param";

	return (Block){VIZ_BASE + an->ev.persistent_offset[i], d->persistent_buf[i],
	               ir >= 0 ? an->g.t[ir].loc.line : 0,
	               ar_printf(a, "%s (%s)", name, memcat_name(d->persistent_cat[i]))};
}

static void
event(FILE *f, const Analysis *an, const char *action, const Block *b, int time)
{
	p_dict(f);
	p_key_str(f, "action", action);
	p_key_int(f, "addr", b->addr);
	p_key_int(f, "size", b->size);
	p_key_int(f, "stream", 0);
	p_key_int(f, "time_us", time);
	frames(f, an, b);
	p_dict_end(f);
}

/* Every allocation and free, in schedule order: at each step its
 * temporaries and products are allocated, then the temporaries and the
 * instances whose last step it is are freed (the cursor's end lists). */
static void
trace(FILE *f, const Analysis *an, Arena *a)
{
	const MemEval *ev = &an->ev;
	VizCursor c;
	Block b;

	viz_cursor_init(&c, &an->d, ev, a);
	p_list(f);
	for (int i = 0; i < an->d.npersistent; i++)
		if (an->d.persistent_buf[i] > 0)
			event(f, an, "alloc", (b = pers_block(an, i, a), &b), 0);
	for (int s = -1; s < ev->nsteps; s++) {
		int t = s < 0 ? 0 : s;
		if (s >= 0 && ev->temp_bytes[s] > 0)
			event(f, an, "alloc", (b = temp_block(an, s, a), &b), t);
		for (int k = ev->step_prod[s + 1]; k < ev->step_prod[s + 2]; k++)
			if (ev->inst[k].owned > 0 && ev->inst[k].end >= t)
				event(f, an, "alloc", (b = inst_block(an, k, a), &b), t);
		if (s < 0)
			continue;
		if (ev->temp_bytes[s] > 0)
			event(f, an, "free_completed", (b = temp_block(an, s, a), &b), t);
		for (int k = c.end_head[s]; k >= 0; k = c.end_next[k])
			event(f, an, "free_completed", (b = inst_block(an, k, a), &b), t);
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
live_blocks(const Analysis *an, int s, Block *out, Arena *a)
{
	const MemEval *ev = &an->ev;
	int n = 0;

	for (int i = 0; i < an->d.npersistent; i++)
		if (an->d.persistent_buf[i] > 0)
			out[n++] = pers_block(an, i, a);
	for (int k = 0; k < ev->ninst; k++)
		if (ev->inst[k].owned > 0 && ev->inst[k].start <= s && s <= ev->inst[k].end)
			out[n++] = inst_block(an, k, a);
	if (ev->temp_bytes[s] > 0)
		out[n++] = temp_block(an, s, a);
	qsort(out, (size_t)n, sizeof *out, by_addr);
	return n;
}

static void
block(FILE *f, const Analysis *an, const Block *b, bool active)
{
	p_dict(f);
	p_key_int(f, "address", b->addr);
	p_key_int(f, "size", b->size);
	p_key_int(f, "requested_size", active ? b->size : 0);
	p_key_str(f, "state", active ? "active_allocated" : "inactive");
	if (active) {
		frames(f, an, b);
		p_str(f, "history");
		p_list(f);
		p_dict(f);
		p_key_int(f, "addr", b->addr);
		p_key_int(f, "real_size", b->size);
		frames(f, an, b);
		p_dict_end(f);
		p_list_end(f);
	}
	p_dict_end(f);
}

/* The arena at the peak step: its live blocks and the gaps between them. */
static void
segment(FILE *f, const Analysis *an, Arena *a)
{
	const MemEval *ev = &an->ev;
	Block *b = ar_alloc(a, sizeof *b * (size_t)(ev->ninst + an->d.npersistent + 2));
	int n = ev->nsteps ? live_blocks(an, ev->peak_step, b, a) : 0;
	int64_t pos = VIZ_BASE, used = 0, end = VIZ_BASE + an->arena_bytes;

	p_list(f);
	p_dict(f);
	p_key_int(f, "device", 0);
	p_key_int(f, "address", VIZ_BASE);
	p_key_int(f, "total_size", an->arena_bytes);
	p_key_int(f, "stream", 0);
	p_key_str(f, "segment_type", "large");
	for (int i = 0; i < n; i++)
		used += b[i].size;
	p_key_int(f, "allocated_size", used);
	p_key_int(f, "active_size", used);
	p_key_int(f, "requested_size", used);
	p_str(f, "blocks");
	p_list(f);
	for (int i = 0; i < n; i++) {
		ir_assert(b[i].addr >= pos && b[i].addr + b[i].size <= end);
		if (b[i].addr > pos)
			block(f, an, &(Block){pos, b[i].addr - pos, 0, ""}, false);
		block(f, an, &b[i], true);
		pos = b[i].addr + b[i].size;
	}
	if (end > pos)
		block(f, an, &(Block){pos, end - pos, 0, ""}, false);
	p_list_end(f);
	p_dict_end(f);
	p_list_end(f);
}

int
viz_write_memviz(FILE *f, const void *ctx)
{
	const Analysis *an = ctx;
	Arena a;

	ar_init(&a);
	fputs("\x80\x02", f);                           /* PROTO 2 */
	p_dict(f);
	p_str(f, "segments");
	segment(f, an, &a);
	p_str(f, "device_traces");
	p_list(f);
	trace(f, an, &a);
	p_list_end(f);
	p_dict_end(f);
	fputc('.', f);                                  /* STOP */
	ar_free(&a);
	return 0;
}
