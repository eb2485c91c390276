/* driver/analyze.c -- the passes, as a straight list of calls:
 * instantiate -> infer shapes -> autodiff -> lower (analyze_graph), then
 * plan -> liveness -> baselines -> memory plan (analyze_dag, which the
 * Checkmate import enters with its DAG). Reading analyze() tells the whole
 * design. Between passes, after_pass() runs the invariant check of what
 * the pass made and prints its dump when asked (remat -d PASS). */
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__              /* defined by the headers above */
#include <malloc.h>
#endif

#include "driver.h"

static const char *const pass_names[PASS_COUNT] = {
	"instantiate", "shape", "autodiff", "lower", "plan", "liveness", "memplan",
};

const char *
pass_name(Pass p)
{
	ir_assert(p >= 0 && p < PASS_COUNT);
	return pass_names[p];
}

int
pass_from_name(const char *s)
{
	for (int p = 0; p < PASS_COUNT; p++)
		if (!strcmp(s, pass_names[p]))
			return p;
	return -1;
}

bool
pass_checks_default(void)
{
	const char *env = getenv("REMAT_CHECK");

#ifdef REMAT_DEBUG
	if (!env)
		return true;
#endif
	return env && *env && strcmp(env, "0");
}

/* The check of pass p's result; false + why on a violation. */
static bool
check_pass(const Analysis *an, Pass p, const Schedule *s, Arena *a, char *why, size_t n)
{
	switch (p) {
	case PASS_INSTANTIATE: return graph_check(&an->g, GS_INSTANTIATED, why, n);
	case PASS_SHAPE: return graph_check(&an->g, GS_SHAPED, why, n);
	case PASS_AUTODIFF: return graph_check(&an->g, GS_DIFFERENTIATED, why, n);
	case PASS_LOWER: return dag_check(&an->d, a, why, n);
	case PASS_PLAN: return dag_check_schedule(&an->d, s, a, why, n);
	case PASS_LIVENESS:
	case PASS_MEMPLAN:
	case PASS_COUNT: break;
	}
	return true;    /* the evaluators validate as they go (MemEval.valid) */
}

static void
dump_pass(const Analysis *an, Pass p, const Schedule *s, Arena *a, FILE *out)
{
	fprintf(out, "# after %s\n", pass_name(p));
	switch (p) {
	case PASS_INSTANTIATE:
	case PASS_SHAPE: ir_dump(&an->g, out); break;
	case PASS_AUTODIFF: ir_dump_backward(&an->g, out); break;
	case PASS_LOWER: dag_dump(&an->d, out); break;
	case PASS_PLAN: schedule_dump(&an->d, s, a, out); break;
	case PASS_LIVENESS: eval_dump(&an->d, &an->ev, false, out); break;
	case PASS_MEMPLAN: eval_dump(&an->d, &an->ev, true, out); break;
	case PASS_COUNT: break;
	}
}

/* After pass p: its check (when on) and its dump (when asked);
 * ST_INTERNAL after reporting a broken invariant. s is the schedule for
 * PASS_PLAN. */
static Status
after_pass(const Analysis *an, Pass p, const Schedule *s, const PassOptions *po, Arena *a)
{
	char why[256];

	if (po->check) {
		Arena scratch;  /* the checks' tables: gone before the next pass */
		bool ok;
		ar_init(&scratch);
		ok = check_pass(an, p, s, &scratch, why, sizeof why);
		ar_free(&scratch);
		if (!ok) {
			fprintf(stderr, "remat: internal error: after %s: %s\n", pass_name(p), why);
			return ST_INTERNAL;
		}
	}
	if (po->dump & (1u << p))
		dump_pass(an, p, s, a, po->dump_out ? po->dump_out : stdout);
	return ST_OK;
}

/* The lower bound's parts, and for a planned level the plans
 * users write by hand (sqrt(n) and per-def checkpointing), replayed
 * through the verifier with --verify. */
static Status
baselines(Analysis *an, const PlanGoal *goal, const PlanBaselines *made_by_search,
          bool verify, Arena *a)
{
	PlanResult *b[2] = {&an->sqrtn, &an->perblock};
	/* one that does not apply: the -O0 peak, as rm_plan_sqrtn would
	 * find it by evaluating the base again (20 MB on 300k ops) */
	PlanResult none = {.peak = an->base.peak, .fits = true, .lower_bound = an->lb.bytes};
	MemEval ev;
	Status st;

	if (goal->level == 0)
		return ST_OK;
	an->has_baselines = true;
	/* the plan's search made them where it scored them as candidates */
	const PlanBaselines *s = made_by_search->made ? made_by_search : NULL;
	an->sqrtn = !rm_sqrtn_applies(&an->d) ? none : s ? s->sqrtn : rm_plan_sqrtn(&an->d, a);
	an->perblock = !rm_perblock_applies(&an->d) ? none :
	               s ? s->perblock : rm_plan_perblock(&an->d, a);
	for (int i = 0; i < 2 && verify; i++)
		if (b[i]->sched.n > 0 &&
		    (st = vf_evaluate(&an->d, &b[i]->sched, &ev, true, a)))
			return st;
	return ST_OK;
}

/* Whether a plan is the base schedule itself (nothing to recompute helped:
 * an inference graph, a short one); its evaluation is then the base's. */
static bool
same_steps(const Schedule *x, const Schedule *y)
{
	return x->n == y->n &&
	       (x->n == 0 || !memcmp(x->step, y->step, sizeof *x->step * (size_t)x->n));
}

/* While the syntax tree lives, arena chunks (64 KiB and up) are mapped, so
 * that freeing one gives it back: glibc raises its mapping threshold with
 * each mapped block freed, after which the tree's pieces, freed during
 * instantiation, would stay in the heap unused (100 MB of a 300k-statement
 * file). Once the tree is gone, blocks come from the heap again and are
 * reused there: the planners make and free tens of thousands of blocks,
 * and mapping each one took as much system time as the planning itself. */
void
heap_for_tree(void)
{
#ifdef __GLIBC__
	mallopt(M_MMAP_THRESHOLD, 64 * 1024);
#endif
}

static void
heap_after_tree(void)
{
#ifdef __GLIBC__
	mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);   /* glibc's own ceiling */
	mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
#endif
}

/* Gives the heap's free pages back to the system, with the arena's kept
 * chunks (ar_trim). The passes after the
 * base evaluation free scratch (the evaluation's, the lower bound's, the
 * memory planner's) that the next pass, sized differently, does not
 * reuse: kept, it raised the peak of 300k ops by 4 MB. */
static void
heap_return(void)
{
	ar_trim();
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

/* The work of a pipeline: each of the K stages analyses the whole step
 * once (about 2 us a node), and builds M copies of its share of it (about
 * 1 us and 240 bytes a node copied, all stages together), so stages x
 * nodes and micro-batches x nodes (of the step's DAG) bound it; past
 * either, a usage error (docs/limits.md, "Bounded work"). At the cap,
 * 64 stages of a 30k-op chain take about 8 s, and M copies of a stage
 * about 4 s and 1 GB. */
#define PIPE_WORK_CAP ((int64_t)1 << 22)

/* --stages needs as many blocks (outermost def calls) as stages, and --stage-blocks
 * must name every one. */
static Status
check_stages(const Graph *g, const Dag *d)
{
	const PipeOptions *po = &g->settings.pipe;
	int nb = pipeline_blocks(d), sum = 0;

	if ((int64_t)po->stages * d->nnode > PIPE_WORK_CAP)
		diag_usage("--stages: %d stages x %d operations in %s's training step pass the "
		           "cap of %lld (see docs/limits.md)", po->stages, d->nnode, g->file,
		           (long long)PIPE_WORK_CAP);
	if ((int64_t)po->micro_batches * d->nnode > PIPE_WORK_CAP)
		diag_usage("--micro-batches: %d micro-batches x %d operations in %s's training "
		           "step pass the cap of %lld (see docs/limits.md)", po->micro_batches,
		           d->nnode, g->file, (long long)PIPE_WORK_CAP);
	if (nb < po->stages) {
		fprintf(stderr, "remat: --stages %d: %s has %d outermost def call%s; each stage "
		        "needs at least one\n", po->stages, g->file, nb, nb == 1 ? "" : "s");
		return ST_ERROR;
	}
	for (int s = 0; s < po->nsplit; s++)
		sum += po->split[s];
	if (po->nsplit && sum != nb) {
		fprintf(stderr, "remat: --stage-blocks: the counts add up to %d, %s has %d "
		        "outermost def calls\n", sum, g->file, nb);
		return ST_ERROR;
	}
	return ST_OK;
}


/* The DAG's totals must stay below 2^60 (dag_excess): an error at the
 * tensor or op whose sum passes it. */
static Status
check_excess(const Analysis *an, const char *file, Diag *d)
{
	const Dag *dg = &an->d;
	DagExcess x;
	Loc at;

	if (!dag_excess(dg, &x))
		return ST_OK;
	at = x.tensor >= 0 && dg->t[x.tensor].ir_tensor >= 0
	     ? an->g.t[dg->t[x.tensor].ir_tensor].loc
	     : x.node >= 0 && dg->node[x.node].ir_op >= 0
	     ? ir_op_loc(&an->g, &an->g.op[dg->node[x.node].ir_op])
	     : x.ir >= 0 ? an->g.t[x.ir].loc : loc_make(file, 0, 0);
	diag_error(d, at, "network too large: the total of its %s passes 2^60 at '%s' (see "
	           "docs/limits.md)", x.what, x.tensor >= 0 ? dg->t[x.tensor].name
	           : x.node >= 0 ? dg->node[x.node].name
	           : x.ir >= 0 ? an->g.t[x.ir].id : "the parameters");
	return ST_ERROR;
}

/* --grad-sync auto where it has a choice: analyze_syncs decides. */
static bool
sync_auto(const Analysis *an)
{
	return an->g.train && an->g.settings.dist.grad_sync == SYNC_AUTO &&
	       dist_sync_choice(&an->g.settings);
}

/* --shard-weights auto where it has a choice: analyze_weights decides.
 * Only a model whose weights form one gathered unit may peak lower with
 * them whole: that unit is gathered at every step that reads a weight, so
 * sharding adds the shard beside it there; with two units or more, each
 * gathered while the others are sharded, sharding has paid on every
 * network measured (docs/distributed.md, "One gathered unit"). Not with
 * --offload params (the weights are on the host), nor in a pipeline
 * stage. */
static bool
weights_auto(const Analysis *an)
{
	const DistOptions *o = &an->g.settings.dist;

	return an->g.train && dist_gathers(o) && o->shard_weights == SHARD_AUTO &&
	       !o->offload_params && an->g.settings.pipe.stages <= 1 && an->dist.nunits == 1;
}

Status
analyze_graph(const Job *job, Analysis *an, Arena *a, Diag *d)
{
	const PassOptions *po = &job->passes;
	Status st;

	memset(an, 0, sizeof *an);
	an->goal = job->goal;
	ir_graph_init(&an->g, a, job->file);
	if (net_instantiate(job->prog, &job->net, &an->g, d))
		return ST_ERROR;
	if (po->tree) {
		ar_free(po->tree);      /* the largest thing alive on a big file */
		heap_after_tree();
	}
	if ((st = after_pass(an, PASS_INSTANTIATE, NULL, po, a)))
		return st;
	if (shape_infer(&an->g, d))
		return ST_ERROR;
	/* precision = mixed under PyTorch is torch.autocast: its casts are ops
	 * (--infer: autocast under torch.inference_mode) */
	if (an->g.settings.pytorch && an->g.settings.mixed &&
	    autocast(&an->g, d))
		return ST_ERROR;
	if ((st = after_pass(an, PASS_SHAPE, NULL, po, a)))
		return st;
	graph_warn_unused_inputs(&an->g, d);
	if (an->g.train && autodiff(&an->g, d))
		return ST_ERROR;
	if ((st = after_pass(an, PASS_AUTODIFF, NULL, po, a)))
		return st;
	lower_graph(&an->g, &an->d, a);
	if ((st = check_excess(an, job->file, d)))
		return st;
	if (an->g.settings.pipe.stages > 1 && (st = check_stages(&an->g, &an->d)))
		return st;
	if (an->g.settings.pipe.stages > 1)
		pipeline_stage(&an->g, &an->d, &an->g.settings.pipe, an->g.settings.pipe.stage,
		               &an->pipe, a);
	distribute(&an->g, &an->d, &an->g.settings.dist, &an->dist, a);
	if (sync_auto(an) || weights_auto(an))
		return ST_OK;   /* analyze_syncs or analyze_weights checks and
		                   dumps the one it keeps */
	return after_pass(an, PASS_LOWER, NULL, po, a);
}

/* The stage-below plans an automatic choice's two analyses made, by the
 * settings they were lowered with: under ZeRO-2 the stage below is
 * ZeRO-1, whose lowering knows no --grad-sync, so both sides of that
 * choice would search the same DAG for the same plan. */
typedef struct SeedMemo {
	bool made;
	DistOptions o;
	Schedule sched;
} SeedMemo;

/* The settings the stage below is lowered with, with a --grad-sync that
 * its lowering ignores made SYNC_AUTO, so that equal means the same DAG. */
static DistOptions
seed_key(const Analysis *an, DistOptions o2)
{
	Settings set = an->g.settings;

	set.dist = o2;
	if (!dist_sync_choice(&set))
		o2.grad_sync = SYNC_AUTO;
	return o2;
}

static bool
same_dist(const DistOptions *x, const DistOptions *y)
{
	return x->ranks == y->ranks && x->zero == y->zero && x->bucket == y->bucket &&
	       x->offload_optimizer == y->offload_optimizer &&
	       x->offload_params == y->offload_params && x->prefetch == y->prefetch &&
	       x->grad_sync == y->grad_sync && x->shard_weights == y->shard_weights;
}

/* The plan of the stage below on d2 (lowered with o2): memo's, when it
 * has the same settings' plan, else searched (and kept in memo). */
static Schedule
stage_below_plan(const Analysis *an, const Dag *d2, const DistOptions *o2, const PlanGoal *g2,
                 SeedMemo *memo, Arena *a)
{
	DistOptions key = seed_key(an, *o2);

	if (memo && memo->made && same_dist(&memo->o, &key))
		return memo->sched;
	Schedule s = rm_plan_search(d2, g2, NULL, a).sched;
	if (memo)
		*memo = (SeedMemo){true, key, s};
	return s;
}

/* ZeRO-3 at -O2: the ZeRO-2 plan of the same training step, replayed
 * with the gathers (dist_seed), joins -O2's candidates, so that sharding
 * the weights never makes -O2's plan worse than the ZeRO-2 one replayed
 * (docs/distributed.md, "Checkpointing under ZeRO-3"). ZeRO-2 (and 3
 * with nothing to gather) takes the ZeRO-1 plan the same way, its buckets
 * turned into reduce-scatters (dist_shard_seed). Not with --prefetch,
 * whose gathers run ahead, nor in a pipeline stage. */
static Schedule
stage_below_seed(const Analysis *an, const PlanGoal *goal, SeedMemo *memo, Arena *a)
{
	const DistOptions *o = &an->g.settings.dist;
	DistOptions o2 = *o;
	PlanGoal g2 = *goal;
	Schedule s = {0, NULL}, below;
	DistStats st;
	Dag d2;

	if (goal->level < 2 || goal->budget >= 0 || goal->exact || !an->g.train ||
	    !dist_grad_shards(o) || o->prefetch > 0 ||
	    an->g.settings.pipe.stages > 1)
		return s;
	bool gathers = dist_gathers(o);
	o2.zero = gathers ? 2 : 1;      /* the stage below ZeRO-3's, ZeRO-2's */
	o2.offload_params = false;
	lower_graph(&an->g, &d2, a);
	distribute(&an->g, &d2, &o2, &st, a);
	g2.seed = s;
	below = stage_below_plan(an, &d2, &o2, &g2, memo, a);
	if (!(gathers ? dist_seed : dist_shard_seed)(&an->d, &d2, &below, &s, a))
		s.n = 0;
	return s;
}

/* The plan for the job's goal and its evaluation in an->ev; base is the
 * base order, already evaluated in an->base. */
static Status
choose_plan(const Job *job, Analysis *an, Schedule base, PlanShare *share, Arena *a)
{
	const PlanGoal *goal = &job->goal;
	Status st;

	if (!goal->exact && ((goal->level == 0 && goal->budget < 0) ||
	                     (goal->level >= 2 && an->base.peak == an->lb.bytes))) {
		/* -O0 is the base schedule: no planning, no second evaluation;
		 * so is -O2 when the base meets the lower bound (rm_plan would
		 * find the same: nothing beats it, whatever the goal) */
		an->plan.sched = base;
		an->plan.peak = an->base.peak;
		an->plan.fits = goal->budget < 0 || an->base.peak <= goal->budget;
		an->plan.lower_bound = an->lb.bytes;
		an->ev = an->base;
		return after_pass(an, PASS_PLAN, &an->plan.sched, &job->passes, a);
	}
	/* the test rm_plan would make first is made above */
	PlanGoal seeded = *goal;
	seeded.seed = stage_below_seed(an, goal, job->seeds, a);
	an->plan = rm_plan_search(&an->d, &seeded, share, a);
	if (an->plan.error) {   /* --exact on a graph too large to search */
		fprintf(stderr, "remat: %s\n", an->plan.error);
		return ST_ERROR;
	}
	if ((st = after_pass(an, PASS_PLAN, &an->plan.sched, &job->passes, a)))
		return st;
	if (same_steps(&an->plan.sched, &base)) {
		an->ev = an->base;      /* the same evaluation, not a second copy */
		return ST_OK;
	}
	return vf_evaluate(&an->d, &an->plan.sched, &an->ev, job->verify, a);
}

/* The memory plan of an's plan: its offsets and an->arena_bytes. */
static Status
place_arena(const Job *job, Analysis *an, Arena *a)
{
	heap_return();
	an->arena_bytes = mp_plan_share(&an->d, &an->ev, rm_work_share(&job->goal), a);
	heap_return();
	return after_pass(an, PASS_MEMPLAN, NULL, &job->passes, a);
}

Status
analyze_dag(const Job *job, Analysis *an, Arena *a)
{
	const PassOptions *po = &job->passes;
	/* the base order itself, not a copy (1.2 MB on 300k ops): no pass
	 * writes into a schedule it is given */
	Schedule base = {an->d.nbase, an->d.base_order};
	/* the plan's search takes the bound and the base's evaluation, and
	 * gives back the baselines where it makes them */
	PlanShare share = {&an->lb, &an->base, {.made = false}};
	Status st;

	an->goal = job->goal;
	/* once: the plan and the baselines. Before the base evaluation, and
	 * its scratch given back: it was the peak of 300k statements at -O0,
	 * 10 MB on top of the evaluation (100.6 -> 93.5 MB) */
	an->lb = rm_lower_bound_parts(&an->d);
	heap_return();
	if ((st = vf_evaluate(&an->d, &base, &an->base, job->verify, a)))
		return st;
	if ((st = choose_plan(job, an, base, &share, a)))
		return st;
	heap_return();
	if ((st = after_pass(an, PASS_LIVENESS, NULL, po, a)))
		return st;
	if ((st = baselines(an, &job->goal, &share.baselines, job->verify, a)))
		return st;
	if (!job->no_arena && (st = place_arena(job, an, a)))
		return st;
	return an->plan.fits ? ST_OK : ST_NO_FIT;
}

/* Whether plan x beats plan y, x being the alternative: one that fits
 * first, then under --budget the lower recompute, else (and where neither
 * fits: the smallest peak found) the lower peak; a tie keeps y. */
static bool
better_plan(const Analysis *x, const Analysis *y)
{
	const MemEval *ex = &x->ev, *ey = &y->ev;

	if (x->plan.fits != y->plan.fits)
		return x->plan.fits;
	if (x->goal.budget >= 0 && x->plan.fits && ex->recompute_cost != ey->recompute_cost)
		return ex->recompute_cost < ey->recompute_cost;
	if (ex->peak != ey->peak)
		return ex->peak < ey->peak;
	return ex->recompute_cost < ey->recompute_cost;
}

/* Whether alt, the other lowering of an's step (lowered, not yet
 * analyzed), can beat an's plan, or with tie match it: not when its lower
 * bound is above an's peak (at it, unless tie), nor, when an's plan fits a
 * --budget, where the bound passes the budget or, unless tie, that plan
 * recomputes nothing. Where the buckets are small beside the model (most
 * models), the bound alone settles --grad-sync auto, so it costs one
 * lowering rather than a second search. An alt with a --grad-sync choice
 * of its own is lowered reducing each micro-batch's gradients, whose
 * bound says nothing of the other sync: it is always tried
 * (analyze_syncs weighs both). */
static bool
alt_may_win(const Analysis *an, const Analysis *alt, bool tie)
{
	if (sync_auto(alt))
		return true;
	int64_t lb = rm_lower_bound_parts(&alt->d).bytes;

	if (an->goal.budget < 0 || !an->plan.fits)
		return tie ? lb <= an->ev.peak : lb < an->ev.peak;
	return lb <= an->goal.budget && (tie || an->ev.recompute_cost > 0);
}

static void
set_sync(DistOptions *o, bool last)
{
	o->grad_sync = last ? SYNC_LAST : SYNC_EACH;
}

/* An automatic choice between two lowerings of the same step: an, lowered
 * the first way (set(.., false)), and alt, lowered the other. Each is
 * analyzed by run, without dumps; alt only where alt_may_win says it can
 * beat an, and it stays in an where it does (on a tie too, with
 * alt_on_tie), after kept (unless NULL) has read the plan it replaces.
 * The one kept is checked, and dumped when asked for. */
typedef struct Choice {
	void (*set)(DistOptions *o, bool alt);
	Status (*run)(const Job *job, Analysis *an, Arena *a);
	bool alt_on_tie;
	void (*kept)(Analysis *alt, const Analysis *replaced);
} Choice;

static Status
analyze_choice(const Job *job, Analysis *an, const Choice *c, Arena *a)
{
	Analysis *alt = ar_alloc(a, sizeof *alt);
	Job quiet = *job;
	Status st, sa = ST_OK;
	SeedMemo *seeds = ar_alloc(a, sizeof *seeds);

	quiet.seeds = seeds;    /* both sides' stage below, searched once
	                           where it is the same (stage_below_plan) */

	*alt = *an;     /* the same graph, read only from here on */
	c->set(&an->g.settings.dist, false);
	c->set(&alt->g.settings.dist, true);
	lower_graph(&alt->g, &alt->d, a);
	distribute(&alt->g, &alt->d, &alt->g.settings.dist, &alt->dist, a);
	quiet.passes.dump = 0;
	quiet.no_arena = true;  /* the choice reads no arena: only the kept
	                           plan is placed, below */
	st = c->run(&quiet, an, a);
	if (st != ST_OK && st != ST_NO_FIT)
		return st;
	bool tried = alt_may_win(an, alt, c->alt_on_tie);
	if (tried && (sa = c->run(&quiet, alt, a)) != ST_OK && sa != ST_NO_FIT)
		return sa;
	if (tried && (c->alt_on_tie ? !better_plan(an, alt) : better_plan(alt, an))) {
		if (c->kept)
			c->kept(alt, an);
		*an = *alt;
		st = sa;
	}
	Status ck = after_pass(an, PASS_LOWER, NULL, &job->passes, a);
	if (ck == ST_OK && !job->passes.dump && !job->no_arena)
		ck = place_arena(job, an, a);
	if (ck != ST_OK || !job->passes.dump)
		return ck != ST_OK ? ck : st;
	return analyze_dag(job, an, a);         /* again, with its dumps */
}

/* --grad-sync auto: an is lowered with each micro-batch reducing its
 * gradients; the same step with the last one reducing them all is
 * analyzed beside it, and the better plan stays in an (docs/distributed.md,
 * "Gradient accumulation"). Reducing each micro-batch's gradients into
 * persistent shards wins where the buckets are small beside the model;
 * accumulating them whole holds no step above ZeRO-1 (its plan replays
 * ZeRO-1's, dist_shard_seed), so auto keeps ZeRO-2 at or below ZeRO-1. */
static Status
analyze_syncs(const Job *job, Analysis *an, Arena *a)
{
	static const Choice syncs = {set_sync, analyze_dag, false, NULL};

	return analyze_choice(job, an, &syncs, a);
}

/* The analysis of a lowered step: with --grad-sync auto, of both syncs. */
static Status
analyze_step(const Job *job, Analysis *an, Arena *a)
{
	return sync_auto(an) ? analyze_syncs(job, an, a) : analyze_dag(job, an, a);
}

static void
set_weights(DistOptions *o, bool whole)
{
	o->shard_weights = whole ? SHARD_WHOLE : SHARD_ALWAYS;
}

/* the report says what the plan with the weights sharded peaked at */
static void
whole_kept(Analysis *whole, const Analysis *sharded)
{
	whole->sharded_peak = sharded->ev.peak;
}

/* --shard-weights auto (weights_auto): an is lowered with the weights
 * sharded; the same step with them whole (ZeRO-2's, nothing gathered) is
 * analyzed beside it, and the better plan stays in an, whole on a tie, as
 * the one that gathers nothing. So ZeRO-3 never peaks above ZeRO-2 (at
 * the same level: each level decides for itself). */
static Status
analyze_weights(const Job *job, Analysis *an, Arena *a)
{
	static const Choice weights = {set_weights, analyze_step, true, whole_kept};

	return analyze_choice(job, an, &weights, a);
}

Status
analyze(const Job *job, Analysis *an, Arena *a, Diag *d)
{
	double t0 = util_now();
	Status st = analyze_graph(job, an, a, d);

	if (st == ST_OK)
		st = weights_auto(an) ? analyze_weights(job, an, a) : analyze_step(job, an, a);
	if (st == ST_OK || st == ST_NO_FIT)
		an->seconds = util_now() - t0;
	return st;
}

Status
analyze_shapes(const Job *job, Graph *g, Arena *a, Diag *d)
{
	ir_graph_init(g, a, job->file);
	if (net_instantiate(job->prog, &job->net, g, d) || shape_infer(g, d) ||
	    autodiff_check_loss(g, d))
		return ST_ERROR;
	return ST_OK;
}

void
no_fit_error(const Analysis *an)
{
	fprintf(stderr, "error: no schedule fits in %lld bytes; smallest peak found: %lld bytes "
	        "(%.2f GiB)\n", (long long)an->goal.budget, (long long)an->plan.peak,
	        (double)an->plan.peak / (1024.0 * 1024.0 * 1024.0));
}
