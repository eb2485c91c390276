/* codegen/runtime_dist.h -- the data-parallel end of the prelude (copied
 * verbatim after runtime.h and runtime_ops.h): a program emitted with
 * --ranks, --zero or --offload runs ONE rank of the step
 * (docs/distributed.md, "Running it").
 *
 * Built with -DREMAT_MPI it runs under `mpirun -np N`: each rank keeps only
 * its shards and the collectives are real, through MPI in host mode, through
 * NCCL under nvcc (the NCCL communicator is set up over MPI). Without
 * REMAT_MPI a program planned for one rank (offload alone) still runs.
 *
 * Layouts, shared by the emitter (codegen/emit.c) and these functions:
 * - a buffer of E elements is sharded in s = ceil(E / N): rank r holds
 *   elements [r s, r s + rt_shard_n(E, s, r)), its shard buffer has s
 *   elements (the padding is zero);
 * - an all-gather writes param p's full weights at its byte offset in the
 *   unit's gathered buffer: the rank copies its part into place, then every
 *   part is gathered in place (MPI_Allgatherv; NCCL: one broadcast per
 *   rank), so no buffer is needed beyond the gathered one the model counts;
 * - a gradient bucket is the block rt_tblock points at (the model's bucket
 *   buffer: the all-reduce step's temporary block, or the tensor a pack
 *   step fills and its reduce-scatter step reads): per gradient dtype a region, the gradients packed into it in
 *   bucket order (all-reduce) or rank-major (reduce-scatter: rank r's parts
 *   of every gradient, then rank r+1's), summed in place, and copied back
 *   (all-reduce) or into the gradient shards (reduce-scatter) scaled by 1/N:
 *   ranks average their gradients, as DDP, FSDP and DeepSpeed do.
 *   -DREMAT_FAULT_SUM leaves out the 1/N (a wrong reduction, for the tests'
 *   negative control). Gradient shards are added to (zeroed when made),
 *   so that the micro-batches of a pipeline stage accumulate into them.
 *
 * Pipeline stages (--stages K, docs/distributed.md "Running a pipeline"):
 * world rank w is rank w mod N of stage w / N; the collectives run over
 * the stage's N ranks (rt_comm). A boundary tensor goes to the same data
 * rank of the peer stage with MPI_Bsend, into a buffer attached outside the
 * counted memory (the transport's, as NCCL's and MPI's eager buffers are),
 * so a send completes at once and a rank waits only in its receives; under
 * nvcc it is staged through host memory. Message tags are IR tensor x M +
 * micro-batch. -DREMAT_FAULT_RECV adds 1 to the first element of every
 * received activation (the tests' negative control).
 */
#ifdef REMAT_MPI
#include <mpi.h>
#ifdef RT_GPU
#include <nccl.h>
static ncclComm_t rt_nccl;
#endif
#endif

static void **rt_hostp;         /* host allocations, freed by rt_dist_end */
static int64_t rt_nhost;
static int rt_stage;            /* pipeline stage */
static double *rt_mb_loss;      /* a pipeline's loss per micro-batch */
static int rt_nmb;
#ifdef REMAT_MPI
static int rt_world;            /* world rank */
static MPI_Comm rt_comm;        /* the ranks of this stage */
static void *rt_bsend;          /* the attached send buffer */
#endif

/* Elements of a buffer of E, sharded in s, that rank r holds. */
RT_FN int64_t
rt_shard_n(int64_t E, int64_t s, int r)
{
	int64_t c = E - (int64_t)r * s;
	return c < 0 ? 0 : c > s ? s : c;
}

/* MPI counts are ints. */
RT_FN int
rt_count(int64_t n)
{
	if (n > 2147483647)
		rt_die("a collective of more than 2^31 elements");
	return (int)n;
}

#ifdef REMAT_MPI
#ifdef RT_GPU
RT_FN void
rt_ncclok(ncclResult_t r, const char *what)
{
	if (r != ncclSuccess) {
		fprintf(stderr, "remat runtime: %s: %s\n", what, ncclGetErrorString(r));
		exit(2);
	}
}

RT_FN ncclDataType_t
rt_nccl_type(int dt)
{
	switch (dt) {
	case RT_DT_F64: return ncclFloat64;
	case RT_DT_F32: return ncclFloat32;
	case RT_DT_F16: return ncclFloat16;
	case RT_DT_BF16: return ncclBfloat16;
	default: rt_die("NCCL has no sum for this gradient dtype"); return ncclUint8;
	}
}
#else
/* A sum in the dtype's arithmetic for the dtypes MPI has no type for. */
#define RT_SUMFN(name, DT) \
static void \
name(void *in, void *io, int *n, MPI_Datatype *t) \
{ \
	int64_t m = *n; \
	RtT a = rt_desc(in, DT, 1, &m), b = rt_desc(io, DT, 1, &m); \
	(void)t; \
	for (int64_t i = 0; i < m; i++) \
		rt_put(&b, i, rt_get(&a, i) + rt_get(&b, i)); \
}
RT_SUMFN(rt_sum_f16, RT_DT_F16)
RT_SUMFN(rt_sum_bf16, RT_DT_BF16)
RT_SUMFN(rt_sum_f8e4m3, RT_DT_F8E4M3)
RT_SUMFN(rt_sum_f8e5m2, RT_DT_F8E5M2)
static MPI_Op rt_mpi_ops[4];

RT_FN MPI_Datatype
rt_mpi_type(int dt)
{
	return dt == RT_DT_F64 ? MPI_DOUBLE : dt == RT_DT_F32 ? MPI_FLOAT :
	       rt_esize(dt) == 2 ? MPI_UINT16_T : MPI_BYTE;
}

RT_FN MPI_Op
rt_mpi_sum(int dt)
{
	switch (dt) {
	case RT_DT_F64: case RT_DT_F32: return MPI_SUM;
	case RT_DT_F16: return rt_mpi_ops[0];
	case RT_DT_BF16: return rt_mpi_ops[1];
	case RT_DT_F8E4M3: return rt_mpi_ops[2];
	default: return rt_mpi_ops[3];
	}
}
#endif
#endif

/* Before rt_start: joins the K x N ranks (world rank w: rank w mod N of
 * stage w / N; the device of a GPU rank is w modulo the devices present);
 * returns this rank's stage. */
RT_FN int
rt_dist_start(int *argc, char ***argv, int ranks, int stages)
{
#ifdef REMAT_MPI
	int world = 1;
	MPI_Init(argc, argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rt_world);
	MPI_Comm_size(MPI_COMM_WORLD, &world);
	if (world != ranks * stages) {
		if (rt_world == 0) {
			fprintf(stderr, "remat runtime: planned for %d ranks, running on %d: "
			        "mpirun -np %d", ranks * stages, world, ranks * stages);
			if (stages > 1)
				fprintf(stderr, " (%d pipeline stages x %d ranks)", stages, ranks);
			fprintf(stderr, "\n");
		}
		MPI_Finalize();
		exit(2);
	}
	rt_stage = rt_world / ranks;
	rt_rank = rt_world % ranks;
	rt_nranks = ranks;
	MPI_Comm_split(MPI_COMM_WORLD, rt_stage, rt_rank, &rt_comm);
	rt_data_rank = rt_rank;
	if (world > 1) {
		snprintf(rt_who, sizeof rt_who, "rank %d: ", rt_world);
		rt_who_rank = rt_world;
	}
#ifdef RT_GPU
	int ndev = 1;
	ncclUniqueId id;
	rt_cuda(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount");
	rt_cuda(cudaSetDevice(rt_world % ndev), "cudaSetDevice");
	if (rt_rank == 0)
		rt_ncclok(ncclGetUniqueId(&id), "ncclGetUniqueId");
	MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, rt_comm);
	rt_ncclok(ncclCommInitRank(&rt_nccl, rt_nranks, id, rt_rank), "ncclCommInitRank");
#else
	MPI_Op_create(rt_sum_f16, 1, &rt_mpi_ops[0]);
	MPI_Op_create(rt_sum_bf16, 1, &rt_mpi_ops[1]);
	MPI_Op_create(rt_sum_f8e4m3, 1, &rt_mpi_ops[2]);
	MPI_Op_create(rt_sum_f8e5m2, 1, &rt_mpi_ops[3]);
#endif
#else
	(void)argc;
	(void)argv;
	if (ranks * stages != 1)
		rt_die("this program runs as several ranks: build it with -DREMAT_MPI "
		       "(mpicc) and run it with mpirun");
#endif
	return rt_stage;        /* one rank alone: stage 0 */
}

/* After rt_finish: leaves the ranks; the exit status is rt_finish's. */
RT_FN int
rt_dist_end(int bad)
{
	for (int64_t i = 0; i < rt_nhost; i++)
		rt_sys_free(rt_hostp[i], 1);
	free(rt_hostp);
	free(rt_mb_loss);
#ifdef REMAT_MPI
	if (rt_bsend) {         /* waits for the buffered sends to leave */
		int n;
		MPI_Buffer_detach(&rt_bsend, &n);
		free(rt_bsend);
	}
#ifdef RT_GPU
	ncclCommDestroy(rt_nccl);
#else
	for (int i = 0; i < 4; i++)
		MPI_Op_free(&rt_mpi_ops[i]);
#endif
	MPI_Comm_free(&rt_comm);
	MPI_Finalize();
#endif
	return bad;
}

/* A buffer offloaded to the host: outside the device count (pinned under
 * CUDA, where the kernels reach it through unified addressing). */
RT_FN void *
rt_host_alloc(int64_t bytes)
{
	void *p;
	void **l = (void **)realloc(rt_hostp, sizeof *l * (size_t)(rt_nhost + 1));
	if (!l)
		rt_die("out of memory");
	rt_hostp = l;
	p = rt_sys_alloc(bytes, 1);
	rt_hostp[rt_nhost++] = p;
	rt_host_bytes += bytes;
	return p;
}

RT_FN RtT
rt_shard(void *p, int dt, int64_t s)
{
	return rt_desc(p, dt, 1, &s);
}

/* T: a param's shard; its elements are the full param's [first, first +
 * valid), initialised (and --fd perturbed) as rt_param does them. */
RT_K
k_init_shard(const RtT *T, int64_t n, uint64_t key, int64_t first, int64_t valid, double eps)
{
	RT_FOR(i, n) {
		uint64_t j = (uint64_t)(first + i);
		rt_put(&T[0], i, i < valid ? (rt_real)0.2 * rt_unit(key, j) - (rt_real)0.1 : 0);
		if (eps != 0 && i < valid)
			rt_put(&T[0], i, rt_get(&T[0], i) + (rt_real)eps * (2 * rt_unit(~key, j) - 1));
	}
}

/* This rank's shard of a param of E elements. */
RT_FN void
rt_param_shard(RtT t, uint64_t key, int64_t E)
{
	RT_GO(k_init_shard, t.n)(rt_args(&t, 1), t.n, key, (int64_t)rt_rank * t.n,
	                         rt_shard_n(E, t.n, rt_rank), rt_fd_eps);
	rt_after();
}

/* Every rank's part of E elements of size es, sharded in s, gathered in
 * place into full (this rank's part is there already). */
RT_FN void
rt_allgather_in_place(unsigned char *full, int64_t E, int64_t s, int64_t es)
{
#ifdef REMAT_MPI
	int *cnt = (int *)malloc(sizeof(int) * 2 * (size_t)rt_nranks), *dis = cnt + rt_nranks;
	if (!cnt)
		rt_die("out of memory");
	for (int r = 0; r < rt_nranks; r++) {
		cnt[r] = rt_count(rt_shard_n(E, s, r) * es);
		dis[r] = rt_count(cnt[r] ? (int64_t)r * s * es : 0);
	}
#ifdef RT_GPU
	rt_ncclok(ncclGroupStart(), "ncclGroupStart");
	for (int r = 0; r < rt_nranks; r++)
		if (cnt[r])
			rt_ncclok(ncclBroadcast(full + dis[r], full + dis[r], (size_t)cnt[r], ncclUint8,
			                        r, rt_nccl, 0), "ncclBroadcast");
	rt_ncclok(ncclGroupEnd(), "ncclGroupEnd");
#else
	MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, full, cnt, dis, MPI_BYTE, rt_comm);
#endif
	free(cnt);
#else
	(void)full; (void)E; (void)s; (void)es;
#endif
}

/* Param of E elements from every rank's shard into buf at byte off. */
RT_FN void
rt_gather(RtT shard, RtT buf, int64_t off, int64_t E)
{
	int64_t s = shard.n, es = rt_esize(shard.dt), c = rt_shard_n(E, s, rt_rank);
	unsigned char *full = (unsigned char *)buf.p + off;
	if (c)
		rt_copy(rt_narrow(shard, 0, 0, c), rt_shard(full + rt_rank * s * es, shard.dt, c), 0);
	rt_allgather_in_place(full, E, s, es);
}

/* A weight in the gathered buffer, shaped as the param. */
RT_FN RtT
rt_gathered(RtT buf, int64_t off, const RtInst *par)
{
	return rt_desc((unsigned char *)buf.p + off, par->dt, par->nd, par->shape);
}

/* Elements [start, start + n) of gradient g to the step's block at byte
 * off (unpack 0), or back from it, averaged over the ranks (unpack 1:
 * replacing them; 2: added to them). */
RT_FN void
rt_pack(RtT g, int64_t start, int64_t n, int64_t off, int unpack)
{
	RtT flat = rt_narrow(rt_reshape(g, 1, &g.n), 0, start, n), b = rt_shard(rt_tblock + off, g.dt, n);
#ifdef REMAT_FAULT_SUM
	double scale = 1;
#else
	double scale = 1.0 / rt_nranks;
#endif
	if (!n)
		return;
	if (unpack)
		rt_b_unary(RT_SCALE, rt_none(), b, flat, unpack == 2, scale);
	else
		rt_copy(flat, b, 0);
}

/* Sums n elements of dtype dt at byte off of the step's block over the
 * ranks, in place. */
RT_FN void
rt_allreduce(int64_t off, int64_t n, int dt)
{
#ifdef REMAT_MPI
	void *p = rt_tblock + off;
#ifdef RT_GPU
	rt_ncclok(ncclAllReduce(p, p, (size_t)n, rt_nccl_type(dt), ncclSum, rt_nccl, 0), "ncclAllReduce");
#else
	MPI_Allreduce(MPI_IN_PLACE, p, rt_count(n), rt_mpi_type(dt), rt_mpi_sum(dt), rt_comm);
#endif
#else
	(void)off; (void)n; (void)dt;
#endif
}

/* Sums the rank-major region at byte off (cnt[r] elements of dtype dt for
 * rank r) over the ranks; returns the byte offset where this rank's summed
 * part now is. */
RT_FN int64_t
rt_reduce_scatter(int64_t off, const int64_t *cnt, int dt)
{
	int64_t es = rt_esize(dt), mine = 0;
	for (int r = 0; r < rt_rank; r++)
		mine += cnt[r] * es;
#ifdef REMAT_MPI
	unsigned char *p = rt_tblock + off;
#ifdef RT_GPU
	int64_t pos = 0;
	rt_ncclok(ncclGroupStart(), "ncclGroupStart");
	for (int r = 0; r < rt_nranks; r++) {
		if (cnt[r])
			rt_ncclok(ncclReduce(p + pos, p + pos, (size_t)cnt[r], rt_nccl_type(dt), ncclSum, r,
			                     rt_nccl, 0), "ncclReduce");
		pos += cnt[r] * es;
	}
	rt_ncclok(ncclGroupEnd(), "ncclGroupEnd");
	return off + mine;
#else
	int *rc = (int *)malloc(sizeof(int) * (size_t)rt_nranks);
	if (!rc)
		rt_die("out of memory");
	for (int r = 0; r < rt_nranks; r++)
		rc[r] = rt_count(cnt[r]);
	MPI_Reduce_scatter(MPI_IN_PLACE, p, rc, rt_mpi_type(dt), rt_mpi_sum(dt), rt_comm);
	free(rc);
	(void)mine;
	return off;             /* MPI leaves the rank's part at the start */
#endif
#else
	return off + mine;
#endif
}

/* The summed part at byte off added to this rank's shard of a gradient of
 * E elements, averaged; returns the offset of the next gradient's part. */
RT_FN int64_t
rt_unpack_shard(RtT shard, int64_t off, int64_t E)
{
	int64_t c = rt_shard_n(E, shard.n, rt_rank);
	rt_pack(shard, 0, c, off, 2);
	return off + c * rt_esize(shard.dt);
}

/* After the step (nothing counted): the full gradient of E elements
 * reassembled from every rank's shard, its checksum and dirgrad. */
RT_FN void
rt_cksum_shards(const char *name, RtT shard, int64_t E, uint64_t key)
{
	unsigned char *full = (unsigned char *)rt_raw_alloc(E * rt_esize(shard.dt));
	RtT f = rt_shard(full, shard.dt, E);
	rt_gather(shard, f, 0, E);
	rt_cksum(name, f);
	rt_dirgrad(f, key);
	rt_raw_free(full);
}

/* ---------------------------------------------------------------- pipeline */

/* A stage's step of M micro-batches that sends `bytes` in `nsends`
 * messages: the loss slots and the send buffer. */
RT_FN void
rt_pipe_setup(int M, int64_t bytes, int64_t nsends)
{
	rt_nmb = M;
	rt_mb_loss = (double *)malloc(sizeof(double) * (size_t)M);
	if (!rt_mb_loss)
		rt_die("out of memory");
	for (int m = 0; m < M; m++)
		rt_mb_loss[m] = NAN;
#ifdef REMAT_MPI
	int64_t n = bytes + nsends * MPI_BSEND_OVERHEAD;
	rt_bsend = malloc((size_t)(n ? n : 1));
	if (!rt_bsend)
		rt_die("out of memory");
	MPI_Buffer_attach(rt_bsend, rt_count(n));
#else
	(void)bytes; (void)nsends;
#endif
}

/* The init key of input `name` in micro-batch mb: data rank mb N + r, as
 * the single-process program's --data-rank. */
RT_FN uint64_t
rt_dkey_mb(const char *name, int mb)
{
	return rt_key(name) + (uint64_t)((int64_t)mb * rt_nranks + rt_rank) * 0xD1B54A32D192ED03ull;
}

/* Micro-batch mb's loss (its first computation: recomputing it changes
 * nothing); the step's loss is their sum. */
RT_FN void
rt_loss_mb(RtT t, int mb)
{
	double sum = 0;
	if (rt_mb_loss[mb] == rt_mb_loss[mb])
		return;
	rt_loss_value = NAN;
	rt_loss(t);
	rt_mb_loss[mb] = rt_loss_value;
	for (int m = 0; m < rt_nmb; m++)
		if (rt_mb_loss[m] == rt_mb_loss[m])
			sum += rt_mb_loss[m];
	rt_loss_value = sum;
}

RT_FN void
rt_pipe_losses(void)
{
	for (int m = 0; m < rt_nmb; m++)
		if (rt_mb_loss[m] == rt_mb_loss[m])
			printf("%sloss of micro-batch %d: %.17g\n", rt_who, m, rt_mb_loss[m]);
}

#ifdef REMAT_MPI
RT_FN int
rt_tag(int64_t tag)
{
	int *ub, flag = 0;
	MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
	if (flag && tag > *ub)
		rt_die("a pipeline message tag past MPI_TAG_UB");
	return (int)tag;
}

/* The memory MPI sends from or receives into for t: t's own, or in a CUDA
 * build a host buffer (the pipeline's messages go through host memory),
 * which the caller copies and frees. */
RT_FN void *
rt_msg_buf(RtT t, int64_t bytes)
{
#ifdef RT_GPU
	void *h = malloc((size_t)(bytes ? bytes : 1));
	if (!h)
		rt_die("out of memory");
	(void)t;
	return h;
#else
	(void)bytes;
	return t.p;
#endif
}
#endif

/* Tensor t to the same data rank of `stage`. */
RT_FN void
rt_send(RtT t, int stage, int64_t tag)
{
#ifdef REMAT_MPI
	int64_t bytes = t.n * rt_esize(t.dt);
	void *h = rt_msg_buf(t, bytes);
#ifdef RT_GPU
	rt_cuda(cudaMemcpy(h, t.p, (size_t)bytes, cudaMemcpyDeviceToHost), "send");
#endif
	MPI_Bsend(h, rt_count(bytes), MPI_BYTE, stage * rt_nranks + rt_rank, rt_tag(tag),
	          MPI_COMM_WORLD);
#ifdef RT_GPU
	free(h);
#endif
#else
	(void)t; (void)stage; (void)tag;
#endif
}

/* Tensor t from the same data rank of `stage`. */
RT_FN void
rt_recv(RtT t, int stage, int64_t tag, int activation)
{
#ifdef REMAT_MPI
	int64_t bytes = t.n * rt_esize(t.dt);
	void *h = rt_msg_buf(t, bytes);

	MPI_Recv(h, rt_count(bytes), MPI_BYTE, stage * rt_nranks + rt_rank, rt_tag(tag),
	         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
#ifdef RT_GPU
	rt_cuda(cudaMemcpy(t.p, h, (size_t)bytes, cudaMemcpyHostToDevice), "recv");
	free(h);
#endif
#if defined(REMAT_FAULT_RECV) && !defined(RT_GPU)
	if (activation && t.n && t.dt != RT_DT_U8 && t.dt != RT_DT_BOOL)
		rt_put(&t, 0, rt_get(&t, 0) + 1);
#endif
#else
	(void)t; (void)stage; (void)tag;
#endif
	(void)activation;
}
