/* The memory a training step holds, as train allocates it, against what the process may use
 * (util/mem_limit.h): `cdl check` reports both, a training session refuses a step that does
 * not fit before it allocates, rather than being killed by the kernel without a word. */
#include <stdio.h>
#include <stdlib.h>

#include "cdl_model.h"
#include "train/ema.h"
#include "util/mem_limit.h"

const char *cdl_format_bytes(uint64_t bytes, char text[16])
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB"};
    double v = (double)bytes;
    int u = 0;
    for (; v >= 1024 && u < 3; u++)
        v /= 1024;
    snprintf(text, 16, u ? "%.1f %s" : "%.0f %s", v, units[u]);
    return text;
}

int api_net_copy_on(const Net *net, NetPlacement where, int want_grads, Net *copy, Error *e)
{
    char *text = cfg_to_text(&net->cfg);
    if (!text)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    Cfg cfg;
    char vocab[64];
    snprintf(vocab, sizeof vocab, "net.vocab=%d", net->vocab);
    int st = cfg_parse_text(text, net->cfg.path ? net->cfg.path : "model", &cfg, e);
    free(text);
    if (st)
        return st;
    if (net->seq > 0 && (st = cfg_apply_override(&cfg, vocab, e))) {
        cfg_free(&cfg);
        return st;
    }
    if ((st = net_build_on(copy, &cfg, want_grads, 1, where, e))) {
        cfg_free(&cfg);
        return st;
    }
    copy->precision = net->precision;
    for (int i = 0; i < net->n_layers; i++)
        copy->layers[i].precision = net->layers[i].precision;
    return CDL_OK;
}

int api_step_memory(Net *net, int pass, ApiStepMemory *m, Error *e)
{
    TrainSettings t; /* read and checked when the net was built */
    train_settings_read(&net->cfg, &t, e);
    const size_t ema = t.ema > 0 ? ema_floats(net) : 0;
    *m = (ApiStepMemory){.params = (net->n_params + net->n_state) * sizeof(float),
                         .grads = net->n_params * sizeof(float),
                         .optimizer = (optimizer_state_floats(t.optimizer, net->n_params) + ema) *
                                      sizeof(float),
                         .optimizer_name = train_optimizer_name(t.optimizer)};
    int st = net_batch_bytes(net, pass, 1, &m->activations, &m->scratch, e);
    m->total = m->params + m->grads + m->optimizer + m->activations;
    return st;
}

void api_memory_limit_text(const MemLimit *limit, char *out, size_t size)
{
    char t[2][16];
    snprintf(out, size, "%s is %s%s%s%s", limit->what, cdl_format_bytes(limit->limit_bytes, t[0]),
             limit->used_bytes ? " and " : "",
             limit->used_bytes ? cdl_format_bytes(limit->used_bytes, t[1]) : "",
             limit->used_bytes ? " of it is in use" : "");
}

int api_check_step_fits(const ApiStepMemory *m, const MemLimit *limit, const char *where, Error *e)
{
    const size_t to_take = m->total - m->params; /* the parameters are in memory already */
    if (to_take <= limit->left_bytes)
        return CDL_OK;
    char t[7][16], limit_text[400];
    api_memory_limit_text(limit, limit_text, sizeof limit_text);
    return error_set(e, CDL_ERUNTIME,
                     "%s: a training step needs %s (parameters %s, gradients %s, %s state %s, "
                     "activations %s), %s of it still to take, but only %s is left: %s; lower "
                     "batch, raise subdivisions or set recompute_every (train --no-memory-check "
                     "tries anyway)",
                     where, cdl_format_bytes(m->total, t[0]), cdl_format_bytes(m->params, t[1]),
                     cdl_format_bytes(m->grads, t[2]), m->optimizer_name,
                     cdl_format_bytes(m->optimizer, t[3]), cdl_format_bytes(m->activations, t[4]),
                     cdl_format_bytes(to_take, t[5]), cdl_format_bytes(limit->left_bytes, t[6]),
                     limit_text);
}
