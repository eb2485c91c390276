/* passes/graph/graph.h -- the passes over the network graph, in
 * pass order: shape and dtype inference (shape.c), autodiff (autodiff.c),
 * the invariant check run between them (check.c), and the lowering of the
 * training graph to the plain DAG (lower.c). This is the only module that
 * knows both net.h and dag.h: below it nothing knows .net.
 */
#ifndef REMAT_GRAPH_H
#define REMAT_GRAPH_H

#include "net.h"
#include "dag.h"

/* ---------------------------------------------------------------- passes/graph/shape.c */

/* Infers dtype, shape, bytes, needs_grad and forward FLOPs for every op in
 * program order, reporting errors at the op's location. An op with a
 * poisoned input (ndim -1) is skipped silently and poisons its outputs.
 * Returns the number of errors. */
int shape_infer(Graph *g, Diag *d);
int shape_infer_op(Graph *g, int o, Diag *d);  /* one op; 0 on success */

/* ---------------------------------------------------------------- passes/graph/autocast.c */

/* `precision = mixed` under a PyTorch runtime: torch.autocast
 * (docs/runtime-pytorch.md). Makes floating params and inputs f32, inserts
 * the casts autocast makes (CUDA's op lists, or the CPU's under
 * pytorch-cpu) and retypes every op's outputs. Between shape_infer and
 * autodiff. Returns the number of errors. */
int autocast(Graph *g, Diag *d);

/* ---------------------------------------------------------------- passes/graph/autodiff.c */

/* Decides which ops have a backward, what each saves (Op.saves,
 * Tensor.saved), its FLOPs, and creates grad(t) tensors (Tensor.grad).
 * Warns about grad-needing outputs that cannot reach the loss. */
int autodiff(Graph *g, Diag *d);
/* The training-output checks alone (one output, a float scalar that depends
 * on a param), for --dump-ir; errors reported. */
int autodiff_check_loss(const Graph *g, Diag *d);

/* ---------------------------------------------------------------- passes/graph/lower.c */
/* Builds the Dag of g's training step (or inference pass), per the
 * conventions above. g has been through shape_infer and autodiff. */
void lower_graph(const Graph *g, Dag *d, Arena *a);

/* ---------------------------------------------------------------- passes/graph/warn.c */
/* Warnings, not errors: one per dead branch (grad-needing ops that cannot
 * reach the loss, after autodiff), one per input that no op reads. */
void graph_warn_dead(const Graph *g, Diag *d);
void graph_warn_unused_inputs(const Graph *g, Diag *d);

/* ---------------------------------------------------------------- passes/graph/lower_torch.c */
/* --runtime pytorch: rewrites the Dag lower_graph made so that it counts
 * PyTorch eager autograd's allocations (docs/runtime-pytorch.md): views and
 * copies by strides, aliased and out-of-place gradient sums, saved
 * statistics in PyTorch's dtypes, inputs and the loss held to the end. */
void lower_torch(const Graph *g, Dag *d, Arena *a);

/* ---------------------------------------------------------------- passes/graph/distribute.c */
/* What the rewrite for one rank found, for the reports. */
typedef struct DistStats {
	int64_t host[CAT_COUNT];        /* bytes offloaded to the host, by category */
	int nbuckets;                   /* gradient buckets */
	int64_t max_bucket;             /* the largest bucket's bytes */
	int nunits;                     /* ZeRO-3: units with weights to gather
	                                   (0 otherwise) */
	int64_t max_gather;             /* ZeRO-3: the largest unit's weights */
	int64_t grad_shards;            /* ZeRO-2/3: device bytes of the
	                                   gradient shards, persistent or made
	                                   by their first bucket */
} DistStats;
/* Whether the options ask for anything beyond one plain rank. */
bool dist_active(const DistOptions *o);
/* Rewrites the lowered Dag of g into the Dag of one data-parallel rank:
 * shards, gradient buckets, ZeRO-3 gathers, offload. Nothing when
 * !dist_active(o). */
void distribute(const Graph *g, Dag *d, const DistOptions *o, DistStats *st, Arena *a);
/* ZeRO-3: the schedule s2 of the ZeRO-2 Dag d2 of the same graph and
 * options, replayed on the ZeRO-3 Dag d3 (the same nodes, the gathers
 * added): each unit gathered right before a step that reads its weights
 * unless the step before that read any gathered weights read them too,
 * the backward gather (once) at the first such point from the first
 * backward step on. In *out (in a); false when d2 is not d3 less its
 * gathers. */
bool dist_seed(const Dag *d3, const Dag *d2, const Schedule *s2, Schedule *out, Arena *a);
/* ZeRO-2: the schedule s1 of the ZeRO-1 Dag d1 of the same graph and
 * options, replayed on the ZeRO-2 Dag d2: each bucket where d1's
 * all-reduce of it ran, or at one rank right after the step completing
 * its last gradient. In *out (in a); false when d2 is not d1 with its
 * buckets changed. */
bool dist_shard_seed(const Dag *d2, const Dag *d1, const Schedule *s1, Schedule *out, Arena *a);

/* ---------------------------------------------------------------- passes/graph/pipeline.c */
/* What one pipeline stage holds, for the reports. */
typedef struct PipeStats {
	int stage;                      /* 0..K-1 */
	int first_block, last_block;    /* its blocks (outermost calls) */
	int nblocks;                    /* in the whole model */
	int in_flight;                  /* micro-batches whose activations it holds */
	int micro_batches;              /* M: a training step runs each once */
	int64_t send_bytes, recv_bytes; /* activations crossing its boundaries
	                                   over the step's M micro-batches */
} PipeStats;
/* Blocks (outermost calls) in the lowered Dag (its largest block). */
int pipeline_blocks(const Dag *d);
/* Replaces the lowered Dag of g by the Dag of pipeline stage `stage`:
 * its nodes, in-flight copies, boundary send/recv nodes and its params. */
void pipeline_stage(const Graph *g, Dag *d, const PipeOptions *o, int stage,
                    PipeStats *st, Arena *a);

/* ---------------------------------------------------------------- passes/graph/check.c */
/* How far the graph has come: each stage adds invariants to check. */
typedef enum GraphStage { GS_INSTANTIATED, GS_SHAPED, GS_DIFFERENTIATED } GraphStage;
/* The invariants every later pass relies on (indices, program order,
 * producers; then dtypes, ranks and bytes; then gradient links and saves).
 * Returns false with the first violation in why. */
bool graph_check(const Graph *g, GraphStage after, char *why, size_t n);

#endif
