/* ir/util/checked.h -- checked 64-bit arithmetic, the one helper family
 * every module uses where bytes, elements, FLOPs or costs are summed or
 * multiplied. Two forms:
 *  - ck_add/ck_sub/ck_mul store the exact result and return true, or store
 *    the saturated value (INT64_MAX or INT64_MIN) and return false;
 *  - ck_sat_* return the saturated result, for running totals whose
 *    overflow is reported once at the end (a saturated total never wraps
 *    back into a plausible wrong number).
 * CK_LIMIT (2^62) is the documented cap on any byte or FLOP total that
 * reaches a report (docs/limits.md): sums of values under it never wrap. */
#ifndef REMAT_CHECKED_H
#define REMAT_CHECKED_H

#include <stdbool.h>
#include <stdint.h>

#define CK_LIMIT ((int64_t)1 << 62)

static inline int64_t
ck_saturate(bool negative)
{
	return negative ? INT64_MIN : INT64_MAX;
}

static inline bool
ck_add(int64_t a, int64_t b, int64_t *r)
{
	if (!__builtin_add_overflow(a, b, r))
		return true;
	*r = ck_saturate(a < 0);
	return false;
}

static inline bool
ck_sub(int64_t a, int64_t b, int64_t *r)
{
	if (!__builtin_sub_overflow(a, b, r))
		return true;
	*r = ck_saturate(a < 0);
	return false;
}

static inline bool
ck_mul(int64_t a, int64_t b, int64_t *r)
{
	if (!__builtin_mul_overflow(a, b, r))
		return true;
	*r = ck_saturate((a < 0) != (b < 0));
	return false;
}

static inline int64_t
ck_sat_add(int64_t a, int64_t b)
{
	int64_t r;

	ck_add(a, b, &r);
	return r;
}

static inline int64_t
ck_sat_sub(int64_t a, int64_t b)
{
	int64_t r;

	ck_sub(a, b, &r);
	return r;
}

static inline int64_t
ck_sat_mul(int64_t a, int64_t b)
{
	int64_t r;

	ck_mul(a, b, &r);
	return r;
}

/* A finite double in [lo, hi] to int64 (rounded toward zero); false for
 * NaN, infinities and anything out of range, which C leaves undefined. */
static inline bool
ck_from_double(double v, int64_t lo, int64_t hi, int64_t *r)
{
	if (!(v >= (double)lo && v <= (double)hi) || v >= 9223372036854775807.0)
		return false;
	*r = (int64_t)v;
	return true;
}

#endif
