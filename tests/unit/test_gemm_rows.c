/* The dense layer's fused products (backend/cpu/gemm_rows.h) against the unfused passes they
 * replace
 * ([linear]'s OpenBLAS path: the biases copied into the output, gemm with beta 1, then
 * activation_forward; activation_backward, sum_rows_add into the biases' gradient, then gemm into
 * the input gradient), within 1e-5
 * relative on every [linear] shape the cfgs train (gpt_tiny's 128 -> 512 gelu, 512 -> 128 and
 * tied 128 -> 63 over 4096 tokens, char_lstm's 256 -> 111) and on small odd ones: pre, out, the
 * delta after the derivative, the biases' gradient and the input gradient (added to, and with beta
 * 0 written over old NaNs); the same bits at 1 and 2 threads and on a rerun. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/gemm.h"
#include "backend/cpu/gemm_packed.h"
#include "backend/cpu/gemm_rows.h"
#include "backend/cpu/sum_rows.h"
#include "check.h"

/* One forward and backward of a dense layer both ways: m rows, inputs -> outputs. */
typedef struct Case {
    int m, inputs, outputs;
    ActivationKind act;
    int has_bias;
} Case;

/* The fused path's results at `threads` threads: pre, out, delta and dx (each [m][..]; dx =
 * delta W + dx_beta dx0), the biases' gradient db [outputs]. */
typedef struct Run {
    float *pre, *out, *delta, *dx, *db;
} Run;

static float *floats(size_t n)
{
    return malloc(n * sizeof(float));
}

static Run fused(const Case *c, const float *x, const float *w, const float *bias, const float *dy,
                 const float *dx0, float dx_beta, const float *db0, int threads)
{
    const size_t rows_out = (size_t)c->m * c->outputs, rows_in = (size_t)c->m * c->inputs;
    const size_t fwd = gemm_packed_floats(c->inputs, c->outputs),
                 bwd = gemm_packed_floats(c->outputs, c->inputs);
    float *packed = floats(fwd > bwd ? fwd : bwd);
    float *sums = floats(gemm_act_backward_sums_floats(c->m, c->outputs));
    Run r = {floats(rows_out), floats(rows_out), floats(rows_out), floats(rows_in),
             floats((size_t)c->outputs)};
    memcpy(r.db, db0, (size_t)c->outputs * sizeof(float));
    memcpy(r.delta, dy, rows_out * sizeof(float));
    memcpy(r.dx, dx0, rows_in * sizeof(float));
    omp_set_num_threads(threads);
    gemm_pack(1, c->inputs, c->outputs, w, c->inputs, packed);
    gemm_bias_act(c->m, c->outputs, c->inputs, x, c->inputs, packed, bias, c->act, r.pre, r.out);
    if (c->act == CDL_ACT_LINEAR)
        memcpy(r.out, r.pre, rows_out * sizeof(float));
    gemm_pack(0, c->outputs, c->inputs, w, c->inputs, packed);
    gemm_act_backward(c->m, c->inputs, c->outputs, r.delta, r.pre, r.out, c->act, packed, dx_beta,
                      r.dx, c->has_bias ? r.db : NULL, sums);
    omp_set_num_threads(1);
    free(packed);
    free(sums);
    return r;
}

static void run_free(Run *r)
{
    free(r->pre);
    free(r->out);
    free(r->delta);
    free(r->dx);
    free(r->db);
}

static int same_bits(const float *a, const float *b, size_t n)
{
    return !memcmp(a, b, n * sizeof(float));
}

static void test_case(const Case *c)
{
    const size_t rows_out = (size_t)c->m * c->outputs, rows_in = (size_t)c->m * c->inputs;
    unsigned seed = 7u + (unsigned)c->outputs;
    float *x = floats(rows_in), *w = floats((size_t)c->outputs * c->inputs);
    float *bias = c->has_bias ? floats((size_t)c->outputs) : NULL;
    float *dy = floats(rows_out), *dx0 = floats(rows_in), *db0 = floats((size_t)c->outputs);
    check_fill_uniform(x, rows_in, -1.0f, &seed);
    check_fill_uniform(w, (size_t)c->outputs * c->inputs, -1.0f, &seed);
    if (bias)
        check_fill_uniform(bias, (size_t)c->outputs, -1.0f, &seed);
    check_fill_uniform(dy, rows_out, -1.0f, &seed);
    check_fill_uniform(dx0, rows_in, -1.0f, &seed);
    check_fill_uniform(db0, (size_t)c->outputs, -1.0f, &seed);

    /* The reference: the unfused passes on OpenBLAS. */
    float *pre = floats(rows_out), *out = floats(rows_out), *delta = floats(rows_out);
    float *dx = floats(rows_in);
    for (int r = 0; r < c->m; r++)
        for (int j = 0; j < c->outputs; j++)
            pre[(size_t)r * c->outputs + j] = bias ? bias[j] : 0.0f;
    gemm(0, 1, c->m, c->outputs, c->inputs, 1.0f, x, c->inputs, w, c->inputs, 1.0f, pre,
         c->outputs);
    activation_forward(pre, out, rows_out, c->act);
    memcpy(delta, dy, rows_out * sizeof(float));
    activation_backward(pre, out, delta, rows_out, c->act);
    float *db = floats((size_t)c->outputs);
    memcpy(db, db0, (size_t)c->outputs * sizeof(float));
    if (bias)
        sum_rows_add(db, delta, (size_t)c->m, (size_t)c->outputs);
    memcpy(dx, dx0, rows_in * sizeof(float));
    gemm(0, 0, c->m, c->inputs, c->outputs, 1.0f, delta, c->outputs, w, c->inputs, 1.0f, dx,
         c->inputs);

    Run one = fused(c, x, w, bias, dy, dx0, 1.0f, db0, 1),
        two = fused(c, x, w, bias, dy, dx0, 1.0f, db0, 2);
    Run again = fused(c, x, w, bias, dy, dx0, 1.0f, db0, 2);
    /* beta 0: dx written whole, its old NaNs ignored */
    float *nans = floats(rows_in), *dx_fresh = floats(rows_in);
    for (size_t i = 0; i < rows_in; i++)
        nans[i] = NAN;
    gemm(0, 0, c->m, c->inputs, c->outputs, 1.0f, delta, c->outputs, w, c->inputs, 0.0f, dx_fresh,
         c->inputs);
    Run fresh = fused(c, x, w, bias, dy, nans, 0.0f, db0, 2);
    CHECK(check_rel_error(fresh.dx, dx_fresh, rows_in) <= 1e-5);
    run_free(&fresh);
    free(nans);
    free(dx_fresh);
    CHECK(check_rel_error(one.pre, pre, rows_out) <= 1e-5);
    CHECK(check_rel_error(one.out, out, rows_out) <= 1e-5);
    CHECK(check_rel_error(one.delta, delta, rows_out) <= 1e-5);
    CHECK(check_rel_error(one.dx, dx, rows_in) <= 1e-5);
    CHECK(check_rel_error(one.db, db, (size_t)c->outputs) <= 1e-5);
    CHECK(same_bits(one.db, two.db, (size_t)c->outputs) &&
          same_bits(two.db, again.db, (size_t)c->outputs));
    CHECK(same_bits(one.out, two.out, rows_out) && same_bits(one.dx, two.dx, rows_in));
    CHECK(same_bits(one.delta, two.delta, rows_out));
    CHECK(same_bits(two.out, again.out, rows_out) && same_bits(two.dx, again.dx, rows_in));
    run_free(&one);
    run_free(&two);
    run_free(&again);
    free(x);
    free(w);
    free(bias);
    free(dy);
    free(dx0);
    free(db0);
    free(db);
    free(pre);
    free(out);
    free(delta);
    free(dx);
}

int main(void)
{
    static const Case cases[] = {
        {4096, 128, 512, CDL_ACT_GELU, 1},   /* gpt_tiny's MLP in */
        {4096, 512, 128, CDL_ACT_LINEAR, 1}, /* gpt_tiny's MLP out */
        {4096, 128, 63, CDL_ACT_LINEAR, 1},  /* gpt_tiny's tied output (KJV's 63 characters) */
        {4096, 256, 111, CDL_ACT_LINEAR, 1}, /* char_lstm's output (the fortunes' 111) */
        {1, 1, 1, CDL_ACT_GELU, 1},          {7, 33, 17, CDL_ACT_GELU, 0},
        {53, 5, 40, CDL_ACT_RELU, 1},        {100, 20, 3, CDL_ACT_TANH, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        test_case(&cases[i]);
    return check_report("test_gemm_rows");
}
