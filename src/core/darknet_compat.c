/* The darknet sections and keys cdl knows without implementing them (pjreddie's darknet as
 * Debian ships it): what is refused, what is ignored, and why. */
#include "core/darknet_compat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/layer.h"

static const struct {
    const char *name, *what;
} unsupported_sections[] = {
    {"detection", "YOLOv1's detection layer: cdl runs classifiers, not detectors"},
    {"crnn", "a convolutional recurrent layer, which cdl does not have"},
    {"local", "a locally connected layer (unshared weights), which cdl does not have"},
    {"deconvolutional", "a transposed convolution, which cdl does not have"},
    {"deconv", "a transposed convolution, which cdl does not have"},
    {"normalization", "local response normalisation, which cdl does not have"},
    {"lrn", "local response normalisation, which cdl does not have"},
    {"activation", "a standalone activation layer: put activation= on the layer before"},
    {"logistic", "a logistic-regression loss, which cdl does not have"},
    {"l2norm", "L2 normalisation, which cdl does not have"},
    {"iseg", "an instance segmentation layer, which cdl does not have"},
};

/* How a listed key is handled when its value is not `noop` (every value when noop is NULL). */
typedef enum { KEY_IGNORE, KEY_REFUSE } KeyPolicy;

static const struct {
    const char *section, *key;
    const char *noop; /* the value that changes nothing: accepted silently */
    KeyPolicy policy;
    const char *why;
} darknet_keys[] = {
    {"net", "seen", NULL, KEY_IGNORE, "darknet does not read it either"},
    {"convolutional", "binary", "0", KEY_REFUSE, "binarised weights are not supported"},
    {"convolutional", "xnor", "0", KEY_REFUSE, "XNOR convolutions are not supported"},
    {"convolutional", "flipped", "0", KEY_REFUSE,
     "darknet transposes such weights when loading them; cdl does not"},
    {"convolutional", "dilation", "1", KEY_REFUSE, "dilated convolutions are not supported"},
    {"convolutional", "dot", "0", KEY_IGNORE,
     "cdl has no darknet filter-similarity penalty (a GPU-training-only regulariser)"},
    {"softmax", "temperature", "1", KEY_REFUSE, "a softmax temperature is not supported"},
    {"softmax", "tree", NULL, KEY_REFUSE, "hierarchical (tree) softmax is not supported"},
    {"softmax", "spatial", "0", KEY_REFUSE, "a softmax per position is not supported"},
    {"softmax", "noloss", "0", KEY_REFUSE, "[softmax] is always the loss in cdl"},
    {"crop", "angle", "0", KEY_IGNORE, "darknet's CPU crop layer ignores it too (GPU only)"},
    {"crop", "saturation", "1", KEY_IGNORE, "darknet's CPU crop layer ignores it too (GPU only)"},
    {"crop", "exposure", "1", KEY_IGNORE, "darknet's CPU crop layer ignores it too (GPU only)"},
    {"crop", "shift", "0", KEY_IGNORE, "darknet's CPU crop layer ignores it too (GPU only)"},
    {"cost", "type", NULL, KEY_IGNORE,
     "after [softmax] the loss is the softmax's cross-entropy alone (darknet adds the [cost] "
     "gradient to it)"},
    {"cost", "scale", NULL, KEY_IGNORE, "the [cost] after [softmax] adds no loss in cdl"},
    {"cost", "ratio", NULL, KEY_IGNORE, "the [cost] after [softmax] adds no loss in cdl"},
    {"cost", "noobj", NULL, KEY_IGNORE, "the [cost] after [softmax] adds no loss in cdl"},
    {"cost", "thresh", NULL, KEY_IGNORE, "the [cost] after [softmax] adds no loss in cdl"},
    {"reorg", "reverse", "0", KEY_REFUSE, "only the forward reorg is supported"},
    {"reorg", "flatten", "0", KEY_REFUSE, "only the forward reorg is supported"},
    {"reorg", "extra", "0", KEY_REFUSE, "only the forward reorg is supported"},
    {"rnn", "batch_normalize", "0", KEY_REFUSE, "cdl's recurrent layers have no batch norm"},
    {"lstm", "batch_normalize", "0", KEY_REFUSE, "cdl's recurrent layers have no batch norm"},
    {"gru", "batch_normalize", "0", KEY_REFUSE, "cdl's recurrent layers have no batch norm"},
    {"region", "absolute", NULL, KEY_IGNORE, "darknet's region loss does not read it either"},
    {"region", "log", NULL, KEY_IGNORE, "darknet's region loss does not read it either"},
    {"region", "sqrt", NULL, KEY_IGNORE, "darknet's region loss does not read it either"},
    {"region", "classfix", NULL, KEY_IGNORE, "darknet's region loss does not read it either"},
    {"region", "mask_scale", NULL, KEY_IGNORE, "it weighs mask coordinates (coords > 4) only"},
    {"region", "tree", NULL, KEY_REFUSE, "hierarchical (tree) softmax is not supported"},
    {"rnn", "shortcut", "0", KEY_REFUSE,
     "darknet's shortcut through time (adding h_{t-1} to the state) is not supported"},
};

int darknet_check_section(const Cfg *cfg, const CfgSection *s, Error *e)
{
    for (size_t i = 0; i < sizeof unsupported_sections / sizeof unsupported_sections[0]; i++)
        if (!strcmp(s->name, unsupported_sections[i].name))
            return error_set(e, CDL_EUSAGE, "%s:%d: unsupported section [%s]: %s", cfg->path,
                             s->line, s->name, unsupported_sections[i].what);
    return CDL_OK;
}

/* True when value is numerically noop ("0", "0.0", " 1"), or the same text. */
static int is_noop(const char *value, const char *noop)
{
    char *end;
    double v = strtod(value, &end);
    if (end != value && *end == '\0')
        return v == strtod(noop, NULL);
    return !strcmp(value, noop);
}

/* The section's family name as darknet_keys spells it: "net" or the layer type's name. */
static const char *family(const CfgSection *s)
{
    if (!strcmp(s->name, "net") || !strcmp(s->name, "network"))
        return "net";
    const LayerType *t = layer_type_find(s->name);
    return t ? t->name : s->name;
}

int darknet_check_keys(Cfg *cfg, CfgSection *s, Error *e)
{
    const char *name = family(s);
    for (int j = 0; j < s->n_entries; j++) {
        CfgEntry *en = &s->entries[j];
        for (size_t i = 0; i < sizeof darknet_keys / sizeof darknet_keys[0] && !en->used; i++) {
            if (strcmp(darknet_keys[i].section, name) || strcmp(darknet_keys[i].key, en->key))
                continue;
            en->used = 1;
            if (darknet_keys[i].noop && is_noop(en->value, darknet_keys[i].noop))
                continue;
            if (darknet_keys[i].policy == KEY_REFUSE) {
                char only[64] = "";
                if (darknet_keys[i].noop)
                    snprintf(only, sizeof only, " (cdl accepts only %s=%s)", en->key,
                             darknet_keys[i].noop);
                return error_set(e, CDL_EUSAGE,
                                 "%s: unsupported value '%s' for key '%s' in [%s]: %s%s",
                                 cfg_where(cfg, s, en).text, en->value, en->key, s->name,
                                 darknet_keys[i].why, only);
            }
            char marker[128];
            snprintf(marker, sizeof marker, "key '%s' in [%s] is ignored", en->key, s->name);
            if (!cfg->warnings || !strstr(cfg->warnings, marker))
                cfg_warn(cfg, "%s: warning: darknet %s: %s (reported once)",
                         cfg_where(cfg, s, en).text, marker, darknet_keys[i].why);
        }
    }
    return CDL_OK;
}
