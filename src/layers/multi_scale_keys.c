/* random= and resize= of the detection families (layers/multi_scale_keys.h). */
#include "layers/multi_scale_keys.h"

int parse_multi_scale(const Cfg *cfg, CfgSection *s, float *random, float *resize, Error *e)
{
    int st = cfg_get_float(cfg, s, "random", 0.0f, random, e);
    if (!st && !(*random == 0.0f || *random >= 1.0f))
        st = cfg_bad_value(cfg, s, "random", e,
                           "expected 0 (off), 1 (multi-scale training) or a size factor above 1");
    if (resize)
        *resize = 0;
    /* With random, resize= is multi-scale training's size factor (train/multi_scale.h); without,
     * AlexeyAB's random rescale of the training crop (data/augment.h box_resize). */
    if (!st && resize)
        st = cfg_get_float(cfg, s, "resize", 0.0f, resize, e);
    if (!st && resize && *resize != 0.0f && !(*resize >= 1.0f))
        st = cfg_bad_value(cfg, s, "resize", e, "expected a size factor of at least 1");
    return st;
}
