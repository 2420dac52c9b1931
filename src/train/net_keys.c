/* The [net] keys that are not the net's own, checked when a net is built (core/net.h
 * net_read_foreign_keys): training's settings, the data's augmentation, and the CPU backend's
 * options, which a net on another backend keeps for the CPU (a checkpoint of it runs there), and
 * the GPU's gpu_engine=, which a net on the CPU keeps for the GPU. */
#include "train/net_keys.h"

#include "backend/cpu/cpu_options.h"
#include "train/train_settings.h"

int net_read_foreign_keys(Cfg *cfg, Shape in, Error *e)
{
    TrainSettings t;
    AugmentConfig a;
    CpuOptions o;
    static const char *const gpu_engines[] = {"cudnn", "ref"}; /* the GPU's (cuda/gpu.h) */
    int gpu_engine, st = augment_config_parse(cfg, &cfg->sections[0], in.c, in.h, in.w, &a, e);
    st = st ? st : train_settings_read(cfg, &t, e);
    st = st ? st
            : cfg_get_named(cfg, &cfg->sections[0], "gpu_engine", gpu_engines, 2, &gpu_engine, e);
    return st ? st : cpu_options_read(cfg, 0, &o, e);
}

int net_augment(const Net *net, AugmentConfig *a, Error *e)
{
    const Shape in = net->in_shape;
    const int st = augment_config_parse(&net->cfg, &net->cfg.sections[0], in.c, in.h, in.w, a, e);
    for (int i = 0; !st && i < net->n_layers; i++) {
        const LayerType *t = net->layers[i].type;
        if (t->reads_truth && t->box_jitter)
            a->box_jitter = t->box_jitter(&net->layers[i]);
        if (t->reads_truth && t->multi_scale) {
            float random = 0, resize = 0;
            t->multi_scale(&net->layers[i], &random, &resize);
            a->box_resize = random == 0 && resize > 1 ? resize : 0; /* else multi-scale's */
        }
    }
    return st;
}
