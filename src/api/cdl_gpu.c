/* Moving an opened model onto a GPU (cdl.h, cdl_model_use_gpu): the commands open a model on the
 * host as they always do (a checkpoint, a cfg with --set, --weights, --precision), then move it,
 * so that every way of opening a model works on either backend. */
#include <string.h>

#include "backend/cpu/net_quant.h"
#include "cdl.h"
#include "cdl_model.h"
#include "train/ema.h"

/* m->opt, set up for the host net that m->net was, set up again for m->net (now on the device)
 * with the same state: the optimizer's moments, the EMA of the weights and the step count. */
static int move_optimizer(cdl_model *m, Optimizer *host, Error *e)
{
    int st = optimizer_alloc(&m->opt, &m->net, e);
    if (!st) {
        m->opt.backend->upload(m->opt.slab, host->slab, host->slab_floats * sizeof(float));
        if (m->opt.ema && host->ema)
            m->opt.backend->upload(m->opt.ema, host->ema, ema_floats(&m->net) * sizeof(float));
        m->opt.steps = host->steps;
    }
    optimizer_free(host);
    return st;
}

static int use_gpu(cdl_model *m, int device, Error *e)
{
    if (net_is_quantized(&m->net))
        return error_set(e, CDL_EUSAGE,
                         "%s: int8 runs on the CPU only: run this int8 model without --gpu, or "
                         "its float checkpoint with it",
                         m->origin);
    if (m->net.backend->kind == CDL_BACKEND_GPU && m->net.device == device)
        return CDL_OK;
    const int training = m->opt.backend != NULL;
    Optimizer host = m->opt;
    int st = net_move_to(&m->net, (NetPlacement){CDL_BACKEND_GPU, device}, e);
    if (st)
        return st; /* the model is as it was, on the host */
    memset(&m->opt, 0, sizeof m->opt);
    if (training && (st = move_optimizer(m, &host, e)))
        return st;
    /* The activations were the host net's: size them again on the device. */
    const int capacity = m->capacity;
    m->capacity = 0;
    return api_model_reserve(m, capacity, e);
}

int cdl_model_use_gpu(cdl_model *model, int device, char *err, size_t err_size)
{
    Error e = {0};
    return use_gpu(model, device, &e) ? api_report(&e, err, err_size) : CDL_OK;
}

int cdl_model_on_gpu(const cdl_model *model)
{
    return model->net.backend->kind == CDL_BACKEND_GPU;
}
