/* Convolution through oneDNN's C API: primitive descriptors for plain NCHW tensors and plain
 * weights, user-mode scratchpads, memory objects whose data handles each call points at the
 * caller's buffers. One CPU engine and one in-order stream serve the whole process. */
#include "ops/dnnl_conv.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef CDL_DNNL
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>

int dnnl_conv_built(void)
{
    return 1;
}

static const char *isa_name(dnnl_cpu_isa_t isa)
{
    switch (isa) {
    case dnnl_cpu_isa_sse41:
        return "sse41";
    case dnnl_cpu_isa_avx:
        return "avx";
    case dnnl_cpu_isa_avx2:
        return "avx2";
    case dnnl_cpu_isa_avx2_vnni:
        return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core:
        return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
        return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
        return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
        return "avx512_core_amx";
    default:
        return "other";
    }
}

void dnnl_describe(char *buf, size_t size)
{
    const dnnl_version_t *v = dnnl_version();
    snprintf(buf, size, "%d.%d.%d, ISA %s, %s threading", v->major, v->minor, v->patch,
             isa_name(dnnl_get_effective_cpu_isa()),
             v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "non-OpenMP");
}

static dnnl_engine_t engine;
static dnnl_stream_t stream;
static dnnl_status_t engine_status = dnnl_runtime_error;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;

static void make_engine(void)
{
    engine_status = dnnl_engine_create(&engine, dnnl_cpu, 0);
    if (engine_status == dnnl_success)
        engine_status = dnnl_stream_create(&stream, engine, dnnl_stream_default_flags);
}

void dnnl_conv_release(DnnlConv *d)
{
    for (int i = 0; i < DNNL_CONV_PRIMS; i++)
        if (d->prim[i])
            dnnl_primitive_destroy(d->prim[i]);
    for (int i = 0; i < DNNL_CONV_MEMS; i++)
        if (d->mem[i])
            dnnl_memory_destroy(d->mem[i]);
    memset(d, 0, sizeof *d);
}

/* The descriptors of one convolution: x, y, bias, and weights ([groups][out/g][in/g][k][k] as
 * goihw when grouped, else oihw: the same bytes as cdl's [out_c][in_c/groups][k][k]). */
typedef struct Mds {
    dnnl_memory_desc_t x, w, b, y, none;
    /* Padding is symmetric, as PyTorch gives it: oneDNN's output size (in + 2 pad - size) /
     * stride + 1 rounds down as ours does, leaving what the last window misses unread. */
    dnnl_dims_t strides, pad;
} Mds;

static dnnl_status_t make_mds(const DnnlConvDesc *c, Mds *m)
{
    memset(m, 0, sizeof *m);
    const dnnl_dims_t x = {c->batch, c->in_c, c->in_h, c->in_w};
    const dnnl_dims_t y = {c->batch, c->out_c, c->out_h, c->out_w};
    const dnnl_dims_t b = {c->out_c};
    dnnl_status_t s = dnnl_memory_desc_init_by_tag(&m->x, 4, x, dnnl_f32, dnnl_nchw);
    s = s ? s : dnnl_memory_desc_init_by_tag(&m->y, 4, y, dnnl_f32, dnnl_nchw);
    s = s ? s : dnnl_memory_desc_init_by_tag(&m->b, 1, b, dnnl_f32, dnnl_x);
    if (c->groups > 1) {
        const dnnl_dims_t w = {c->groups, c->out_c / c->groups, c->in_c / c->groups, c->size,
                               c->size};
        s = s ? s : dnnl_memory_desc_init_by_tag(&m->w, 5, w, dnnl_f32, dnnl_goihw);
    } else {
        const dnnl_dims_t w = {c->out_c, c->in_c, c->size, c->size};
        s = s ? s : dnnl_memory_desc_init_by_tag(&m->w, 4, w, dnnl_f32, dnnl_oihw);
    }
    m->strides[0] = m->strides[1] = c->stride;
    m->pad[0] = m->pad[1] = c->padding;
    return s;
}

/* Makes the primitive of pd into d->prim[k] and its memory-scratchpad descriptor's size. */
static dnnl_status_t make_prim(DnnlConv *d, int k, dnnl_primitive_desc_t pd, size_t *scratch)
{
    dnnl_status_t s = dnnl_primitive_create(&d->prim[k], pd);
    const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    *scratch = sp ? dnnl_memory_desc_get_size(sp) : 0;
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success)
        snprintf(d->impl[k], sizeof d->impl[k], "%s", impl);
    if (s == dnnl_success && *scratch)
        s = dnnl_memory_create(&d->mem[DNNL_CONV_SCRATCH_FWD + k], sp, engine, DNNL_MEMORY_NONE);
    return s;
}

static dnnl_status_t make_mem(DnnlConv *d, int k, const dnnl_memory_desc_t *md)
{
    return dnnl_memory_create(&d->mem[k], md, engine, DNNL_MEMORY_NONE);
}

static dnnl_status_t build(DnnlConv *d, const DnnlConvDesc *c)
{
    Mds m;
    dnnl_status_t s = make_mds(c, &m);
    /* Both with user scratchpads; the backward ones without the forward's post-op. */
    dnnl_primitive_attr_t attr = NULL, battr = NULL;
    dnnl_post_ops_t ops = NULL;
    s = s ? s : dnnl_primitive_attr_create(&attr);
    s = s ? s : dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    s = s ? s : dnnl_primitive_attr_create(&battr);
    s = s ? s : dnnl_primitive_attr_set_scratchpad_mode(battr, dnnl_scratchpad_mode_user);
    if (!s && c->eltwise) {
        s = dnnl_post_ops_create(&ops);
        s = s ? s : dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_relu, c->slope, 0.0f);
        s = s ? s : dnnl_primitive_attr_set_post_ops(attr, ops);
    }
    const dnnl_prop_kind_t prop =
        c->backward || c->data_grad ? dnnl_forward_training : dnnl_forward_inference;
    dnnl_convolution_desc_t fd, bd, wd;
    dnnl_primitive_desc_t fpd = NULL, bpd = NULL, wpd = NULL;
    size_t sf = 0, sb = 0, sw = 0;
    s = s ? s
          : dnnl_convolution_forward_desc_init(&fd, prop, dnnl_convolution_direct, &m.x, &m.w,
                                               c->bias ? &m.b : NULL, &m.y, m.strides, m.pad,
                                               m.pad);
    s = s ? s : dnnl_primitive_desc_create(&fpd, &fd, attr, engine, NULL);
    s = s ? s : make_prim(d, DNNL_CONV_FWD, fpd, &sf);
    if (!s && c->data_grad) {
        s = dnnl_convolution_backward_data_desc_init(&bd, dnnl_convolution_direct, &m.x, &m.w, &m.y,
                                                     m.strides, m.pad, m.pad);
        s = s ? s : dnnl_primitive_desc_create(&bpd, &bd, battr, engine, fpd);
        s = s ? s : make_prim(d, DNNL_CONV_BWD_DATA, bpd, &sb);
    }
    if (!s && c->backward) {
        s = dnnl_convolution_backward_weights_desc_init(&wd, dnnl_convolution_direct, &m.x, &m.w,
                                                        c->bias ? &m.b : NULL, &m.y, m.strides,
                                                        m.pad, m.pad);
        s = s ? s : dnnl_primitive_desc_create(&wpd, &wd, battr, engine, fpd);
        s = s ? s : make_prim(d, DNNL_CONV_BWD_WEIGHTS, wpd, &sw);
    }
    /* One memory object per argument; gradients share their tensors' descriptors. */
    const dnnl_memory_desc_t *mds[DNNL_CONV_SCRATCH_FWD] = {&m.x, &m.w, &m.b, &m.y,
                                                            &m.x, &m.w, &m.b, &m.y};
    for (int k = 0; k < DNNL_CONV_SCRATCH_FWD && !s; k++)
        s = make_mem(d, k, mds[k]);
    size_t most = sf > sb ? sf : sb;
    most = most > sw ? most : sw;
    d->scratch_bytes = most ? most + 64 : 0;
    dnnl_primitive_desc_destroy(fpd);
    dnnl_primitive_desc_destroy(bpd);
    dnnl_primitive_desc_destroy(wpd);
    dnnl_post_ops_destroy(ops);
    dnnl_primitive_attr_destroy(attr);
    dnnl_primitive_attr_destroy(battr);
    return s;
}

int dnnl_conv_prepare(DnnlConv *d, const DnnlConvDesc *desc, Error *e)
{
    if (d->prepared && !memcmp(&d->desc, desc, sizeof *desc))
        return CDL_OK;
    dnnl_conv_release(d);
    pthread_once(&engine_once, make_engine);
    dnnl_status_t s = engine_status;
    s = s ? s : build(d, desc);
    if (s) {
        dnnl_conv_release(d);
        return error_set(e, CDL_ERUNTIME,
                         "oneDNN: no convolution for %dx%dx%d -> %dx%dx%d, size %d, stride %d, "
                         "padding %d, groups %d (status %d)",
                         desc->in_c, desc->in_h, desc->in_w, desc->out_c, desc->out_h, desc->out_w,
                         desc->size, desc->stride, desc->padding, desc->groups, (int)s);
    }
    d->desc = *desc;
    d->prepared = 1;
    return CDL_OK;
}

/* Points memory object k at p (const only to oneDNN's reading of it). */
static void bind(DnnlConv *d, int k, const void *p)
{
    dnnl_memory_set_data_handle(d->mem[k], (void *)(uintptr_t)p);
}

/* Runs primitive k with its arguments (args[i] names memory object mems[i]), the scratchpad
 * aligned within scratch, and waits for it. */
static void run(DnnlConv *d, int k, int n, const int *args, const int *mems, void *scratch)
{
    dnnl_exec_arg_t a[5];
    for (int i = 0; i < n; i++)
        a[i] = (dnnl_exec_arg_t){args[i], d->mem[mems[i]]};
    dnnl_memory_t sp = d->mem[DNNL_CONV_SCRATCH_FWD + k];
    if (sp) {
        const uintptr_t at = ((uintptr_t)scratch + 63) & ~(uintptr_t)63;
        dnnl_memory_set_data_handle(sp, (void *)at);
        a[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, sp};
    }
    dnnl_primitive_execute(d->prim[k], stream, n, a);
    dnnl_stream_wait(stream);
}

void dnnl_conv_forward(DnnlConv *d, const float *x, const float *w, const float *b, float *y,
                       void *scratch)
{
    bind(d, DNNL_CONV_X, x);
    bind(d, DNNL_CONV_W, w);
    bind(d, DNNL_CONV_Y, y);
    const int args[] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS};
    const int mems[] = {DNNL_CONV_X, DNNL_CONV_W, DNNL_CONV_Y, DNNL_CONV_B};
    if (d->desc.bias)
        bind(d, DNNL_CONV_B, b);
    run(d, DNNL_CONV_FWD, d->desc.bias ? 4 : 3, args, mems, scratch);
}

void dnnl_conv_backward_data(DnnlConv *d, const float *dy, const float *w, float *dx, void *scratch)
{
    bind(d, DNNL_CONV_DY, dy);
    bind(d, DNNL_CONV_W, w);
    bind(d, DNNL_CONV_DX, dx);
    const int args[] = {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC};
    const int mems[] = {DNNL_CONV_DY, DNNL_CONV_W, DNNL_CONV_DX};
    run(d, DNNL_CONV_BWD_DATA, 3, args, mems, scratch);
}

void dnnl_conv_backward_weights(DnnlConv *d, const float *x, const float *dy, float *dw, float *db,
                                void *scratch)
{
    bind(d, DNNL_CONV_X, x);
    bind(d, DNNL_CONV_DY, dy);
    bind(d, DNNL_CONV_DW, dw);
    const int args[] = {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS, DNNL_ARG_DIFF_BIAS};
    const int mems[] = {DNNL_CONV_X, DNNL_CONV_DY, DNNL_CONV_DW, DNNL_CONV_DB};
    if (d->desc.bias)
        bind(d, DNNL_CONV_DB, db);
    run(d, DNNL_CONV_BWD_WEIGHTS, d->desc.bias ? 4 : 3, args, mems, scratch);
}

#else /* built without oneDNN (make DNNL=0) */

int dnnl_conv_built(void)
{
    return 0;
}

void dnnl_describe(char *buf, size_t size)
{
    snprintf(buf, size, "not built (make DNNL=0)");
}

int dnnl_conv_prepare(DnnlConv *d, const DnnlConvDesc *desc, Error *e)
{
    (void)d;
    (void)desc;
    return error_set(e, CDL_ERUNTIME, "this cdl is built without oneDNN (make DNNL=0)");
}

void dnnl_conv_release(DnnlConv *d)
{
    memset(d, 0, sizeof *d);
}

void dnnl_conv_forward(DnnlConv *d, const float *x, const float *w, const float *b, float *y,
                       void *scratch)
{
    (void)d, (void)x, (void)w, (void)b, (void)y, (void)scratch;
}

void dnnl_conv_backward_data(DnnlConv *d, const float *dy, const float *w, float *dx, void *scratch)
{
    (void)d, (void)dy, (void)w, (void)dx, (void)scratch;
}

void dnnl_conv_backward_weights(DnnlConv *d, const float *x, const float *dy, float *dw, float *db,
                                void *scratch)
{
    (void)d, (void)x, (void)dy, (void)dw, (void)db, (void)scratch;
}

#endif
