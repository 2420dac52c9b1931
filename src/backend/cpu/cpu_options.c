/* The CPU backend's [net] keys (backend/cpu/cpu_options.h). */
#include "backend/cpu/cpu_options.h"

#include "backend/cpu/dnnl_conv.h"
#include "backend/cpu/winograd.h"

static const char *const engine_names[] = {"ref", "dnnl", "auto"}; /* CpuEngine */

/* engine=ref|dnnl|auto (default ref); a build without oneDNN runs dnnl cfgs on the reference,
 * with a warning, and auto ones without. */
static int read_engine(Cfg *cfg, CfgSection *s, int warn, CpuOptions *o, Error *e)
{
    /* ref by default: with AVX-512 Winograd the reference trained resnet18_cifar 1.23x and
     * fashion 1.14x faster than auto's all-oneDNN rule at 1 thread (docs/engines.md) */
    int engine = CPU_ENGINE_REF;
    if (cfg_find(s, "engine")) {
        int st = cfg_get_named(cfg, s, "engine", engine_names, 3, &engine, e);
        if (st)
            return st;
    }
    if (engine == CPU_ENGINE_DNNL && !dnnl_conv_built()) {
        if (warn)
            cfg_warn(cfg,
                     "%s: warning: engine=dnnl: this cdl is built without oneDNN (make DNNL=0); "
                     "convolutions run on the reference",
                     cfg_where(cfg, s, cfg_find(s, "engine")).text);
        engine = CPU_ENGINE_REF;
    }
    if (engine == CPU_ENGINE_AUTO && !dnnl_conv_built())
        engine = CPU_ENGINE_REF;
    o->engine = (CpuEngine)engine;
    o->engine_given = cfg_find(s, "engine") != NULL;
    return CDL_OK;
}

int cpu_options_read(Cfg *cfg, int warn, CpuOptions *o, Error *e)
{
    CfgSection *s = &cfg->sections[0];
    int st = read_engine(cfg, s, warn, o, e);
    st = st ? st : cfg_get_flag(cfg, s, "winograd", 1, &o->winograd, e);
    st = st ? st
            : cfg_get_int_min(cfg, s, "winograd_min_tiles", WINOGRAD_TRAINING_TILES, 0,
                              &o->winograd_min_tiles, e);
    /* blocked training by default with AVX-512 (nChw16c): measured faster (docs/engines.md) */
    return st ? st
              : cfg_get_flag(cfg, s, "dnnl_train_blocked", DNNL_LANES == 16, &o->train_blocked, e);
}
