/* ir/optab.c -- the op library of ops.md as one table: one row per op.
 * Shape rules, FLOPs and saves are keyed by the same OpKind in
 * passes/shape.c and passes/autodiff.c. */
#include <string.h>

#include "ir.h"

#define EW(nm) {nm, 1, 1, 0, "", false, 0, {0}, 1, false}

const OpInfo ir_optab[OP_COUNT] = {
	[OP_RELU] = EW("relu"),
	[OP_GELU] = EW("gelu"),
	[OP_SILU] = EW("silu"),
	[OP_SIGMOID] = EW("sigmoid"),
	[OP_TANH] = EW("tanh"),
	[OP_EXP] = EW("exp"),
	[OP_LOG] = EW("log"),
	[OP_SQRT] = EW("sqrt"),
	[OP_NEG] = EW("neg"),
	[OP_SCALE] = {"scale", 1, 1, 0, "c", false, 0, {0}, 1, false},
	[OP_CAST] = {"cast", 1, 1, 0, "dtype", false, 0, {0}, 1, false},
	[OP_DROPOUT] = {"dropout", 1, 1, 0, "p", false, 1, {"mask"}, 1, false},
	[OP_ADD] = {"add", 2, 2, 0, "", false, 0, {0}, 1, false},
	[OP_SUB] = {"sub", 2, 2, 0, "", false, 0, {0}, 1, false},
	[OP_MUL] = {"mul", 2, 2, 0, "", false, 0, {0}, 1, true},
	[OP_DIV] = {"div", 2, 2, 0, "", false, 0, {0}, 1, true},
	[OP_MATMUL] = {"matmul", 2, 2, 0, "", false, 0, {0}, 1, true},
	[OP_CONV2D] = {"conv2d", 2, 2, 0, "stride padding dilation groups", false, 0, {0}, 1, true},
	[OP_ATTENTION] = {"attention", 3, 3, 0, "causal", false, 1, {"lse"}, 2.5, false},
	[OP_LAYERNORM] = {"layernorm", 3, 3, 0, "", false, 2, {"mean", "rstd"}, 1, false},
	[OP_RMSNORM] = {"rmsnorm", 2, 2, 0, "", false, 1, {"rstd"}, 1, false},
	[OP_BATCHNORM] = {"batchnorm", 3, 3, 0, "", false, 2, {"mean", "rstd"}, 1, false},
	[OP_SOFTMAX] = {"softmax", 1, 1, 0, "axis", false, 0, {0}, 1, false},
	[OP_LOG_SOFTMAX] = {"log_softmax", 1, 1, 0, "axis", false, 0, {0}, 1, false},
	[OP_MAXPOOL2D] = {"maxpool2d", 1, 1, 0, "k stride padding", false, 1, {"indices"}, 1, false},
	[OP_AVGPOOL2D] = {"avgpool2d", 1, 1, 0, "k stride padding", false, 0, {0}, 1, false},
	[OP_GLOBAL_AVGPOOL] = EW("global_avgpool"),
	[OP_UPSAMPLE2D] = {"upsample2d", 1, 1, 0, "scale", false, 0, {0}, 1, false},
	[OP_SUM] = {"sum", 1, 1, 0, "axis", false, 0, {0}, 1, false},
	[OP_MEAN] = {"mean", 1, 1, 0, "axis", false, 0, {0}, 1, false},
	[OP_CROSS_ENTROPY] = {"cross_entropy", 2, 2, 0, "", false, 1, {"lsm"}, 1, false},
	[OP_MSE_LOSS] = {"mse_loss", 2, 2, 0, "", false, 0, {0}, 1, false},
	[OP_EMBEDDING] = {"embedding", 2, 2, 0, "", false, 0, {0}, 1, false},
	[OP_RESHAPE] = {"reshape", 1, 1, 1, "", true, 0, {0}, 1, false},
	[OP_FLATTEN] = {"flatten", 1, 1, 0, "start", true, 0, {0}, 1, false},
	[OP_TRANSPOSE] = {"transpose", 1, 1, 2, "", true, 0, {0}, 1, false},
	[OP_PERMUTE] = {"permute", 1, 1, 1, "", true, 0, {0}, 1, false},
	[OP_SLICE] = {"slice", 1, 1, 0, "axis start end", true, 0, {0}, 1, false},
	[OP_SPLIT] = {"split", 1, 1, 1, "axis", true, 0, {0}, 1, false},
	[OP_CONCAT] = {"concat", 1, -1, 0, "axis", false, 0, {0}, 1, false},
	[OP_CUSTOM] = {"<custom>", 0, -1, 0, "", false, 0, {0}, 1, false},
};

int
ir_op_from_name(const char *name)
{
	for (int k = 0; k < OP_CUSTOM; k++)
		if (!strcmp(ir_optab[k].name, name))
			return k;
	return -1;
}
