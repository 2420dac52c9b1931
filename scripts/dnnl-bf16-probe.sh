#!/bin/sh
# Does the installed oneDNN (libdnnl-dev) have bf16 matmul and convolution kernels for this
# CPU? Builds and runs a small C program that prints oneDNN's version, the ISA it dispatches
# to (dnnl_get_effective_cpu_isa) and, for f32 and bf16, whether a matmul and a convolution
# primitive descriptor can be created (the implementation it picks, or "unimplemented").
# Usage: scripts/dnnl-bf16-probe.sh   (needs cc and libdnnl-dev; writes only to a temp dir)
set -eu
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/probe.c" <<'C'
#include <dnnl.h>
#include <stdio.h>

static const char *isa_name(dnnl_cpu_isa_t isa)
{
    switch (isa) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "other";
    }
}

/* "impl NAME" or the status of a primitive descriptor made from desc. */
static void report(const char *what, const void *desc, dnnl_engine_t engine)
{
    dnnl_primitive_desc_t pd;
    const dnnl_status_t st = dnnl_primitive_desc_create(&pd, desc, NULL, engine, NULL);
    const char *impl = "";
    if (st == dnnl_success)
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    printf("%-34s %s%s\n", what,
           st == dnnl_success ? "impl " : st == dnnl_unimplemented ? "unimplemented" : "error",
           impl);
    if (st == dnnl_success)
        dnnl_primitive_desc_destroy(pd);
}

int main(void)
{
    const dnnl_version_t *v = dnnl_version();
    printf("oneDNN %d.%d.%d, effective ISA %s\n", v->major, v->minor, v->patch,
           isa_name(dnnl_get_effective_cpu_isa()));
    dnnl_engine_t engine;
    if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success)
        return 1;
    const dnnl_data_type_t types[] = {dnnl_f32, dnnl_bf16};
    const char *names[] = {"f32", "bf16"};
    for (int t = 0; t < 2; t++) {
        dnnl_memory_desc_t a, b, c;
        dnnl_dims_t da = {64, 256}, db = {256, 128}, dc = {64, 128};
        dnnl_memory_desc_init_by_tag(&a, 2, da, types[t], dnnl_ab);
        dnnl_memory_desc_init_by_tag(&b, 2, db, types[t], dnnl_ab);
        dnnl_memory_desc_init_by_tag(&c, 2, dc, dnnl_f32, dnnl_ab);
        dnnl_matmul_desc_t md;
        dnnl_matmul_desc_init(&md, &a, &b, NULL, &c);
        char what[64];
        snprintf(what, sizeof what, "matmul %s x %s -> f32", names[t], names[t]);
        report(what, &md, engine);

        dnnl_memory_desc_t src, wei, dst;
        dnnl_dims_t ds = {8, 16, 28, 28}, dw = {32, 16, 3, 3}, dd = {8, 32, 28, 28};
        dnnl_dims_t strides = {1, 1}, pad = {1, 1};
        dnnl_memory_desc_init_by_tag(&src, 4, ds, types[t], dnnl_format_tag_any);
        dnnl_memory_desc_init_by_tag(&wei, 4, dw, types[t], dnnl_format_tag_any);
        dnnl_memory_desc_init_by_tag(&dst, 4, dd, dnnl_f32, dnnl_format_tag_any);
        dnnl_convolution_desc_t cd;
        dnnl_convolution_forward_desc_init(&cd, dnnl_forward_training, dnnl_convolution_direct,
                                           &src, &wei, NULL, &dst, strides, pad, pad);
        snprintf(what, sizeof what, "convolution 3x3 %s -> f32", names[t]);
        report(what, &cd, engine);
    }
    dnnl_engine_destroy(engine);
    return 0;
}
C
cc -O1 -o "$dir/probe" "$dir/probe.c" -ldnnl
"$dir/probe"
