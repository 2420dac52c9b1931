/* The CPU backend (core/backend.h): its memory is the host's, on cache lines
 * (util/cache_lines.h), its kernels run when called, and each family's kernel table is found
 * here by family. */
#include "backend/cpu/cpu_backend.h"

#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_options.h"

#include "layers/families.h"
#include "util/cache_lines.h"

extern const LayerKernels cpu_convolutional_kernels, cpu_connected_kernels, cpu_batchnorm_kernels,
    cpu_maxpool_kernels, cpu_avgpool_kernels, cpu_dropout_kernels, cpu_shortcut_kernels,
    cpu_route_kernels, cpu_softmax_kernels, cpu_crop_kernels, cpu_cost_kernels, cpu_reorg_kernels,
    cpu_upsample_kernels, cpu_embedding_kernels, cpu_positional_kernels, cpu_layernorm_kernels,
    cpu_linear_kernels, cpu_attention_kernels, cpu_recurrent_kernels, cpu_scale_channels_kernels,
    cpu_shuffle_kernels, cpu_pad_kernels, cpu_yolo_kernels, cpu_layer_scale_kernels,
    cpu_tokens_kernels, cpu_select_token_kernels, cpu_region_kernels;

static const struct {
    const LayerType *type;
    const LayerKernels *kernels;
} cpu_kernel_table[] = {
    {&convolutional_layer, &cpu_convolutional_kernels},
    {&connected_layer, &cpu_connected_kernels},
    {&batchnorm_layer, &cpu_batchnorm_kernels},
    {&maxpool_layer, &cpu_maxpool_kernels},
    {&avgpool_layer, &cpu_avgpool_kernels},
    {&dropout_layer, &cpu_dropout_kernels},
    {&drop_path_layer, &cpu_dropout_kernels},
    {&shortcut_layer, &cpu_shortcut_kernels},
    {&route_layer, &cpu_route_kernels},
    {&softmax_layer, &cpu_softmax_kernels},
    {&crop_layer, &cpu_crop_kernels},
    {&cost_layer, &cpu_cost_kernels},
    {&reorg_layer, &cpu_reorg_kernels},
    {&upsample_layer, &cpu_upsample_kernels},
    {&embedding_layer, &cpu_embedding_kernels},
    {&positional_layer, &cpu_positional_kernels},
    {&layernorm_layer, &cpu_layernorm_kernels},
    {&linear_layer, &cpu_linear_kernels},
    {&yolo_layer, &cpu_yolo_kernels},
    {&region_layer, &cpu_region_kernels},
    {&attention_layer, &cpu_attention_kernels},
    {&rnn_layer, &cpu_recurrent_kernels},
    {&lstm_layer, &cpu_recurrent_kernels},
    {&gru_layer, &cpu_recurrent_kernels},
    {&scale_channels_layer, &cpu_scale_channels_kernels},
    {&shuffle_layer, &cpu_shuffle_kernels},
    {&pad_layer, &cpu_pad_kernels},
    {&layer_scale_layer, &cpu_layer_scale_kernels},
    {&tokens_layer, &cpu_tokens_kernels},
    {&select_token_layer, &cpu_select_token_kernels},
};

static const LayerKernels *cpu_kernels(const LayerType *t)
{
    for (size_t i = 0; i < sizeof cpu_kernel_table / sizeof cpu_kernel_table[0]; i++)
        if (cpu_kernel_table[i].type == t)
            return cpu_kernel_table[i].kernels;
    return NULL;
}

/* The CPU's kernels run when called: no stream; its handles are its options (cpu_options). */
static int cpu_open(ExecContext *exec, Cfg *cfg, int device, Error *e)
{
    (void)device;
    *exec = (ExecContext){0};
    CpuOptions *o = calloc(1, sizeof *o);
    if (!o)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    const int st = cpu_options_read(cfg, 1, o, e);
    if (st) {
        free(o);
        return st;
    }
    exec->handles = o;
    return CDL_OK;
}

static void cpu_close(ExecContext *exec)
{
    free(exec->handles);
    exec->handles = NULL;
}

static int cpu_train_layouts(const ExecContext *exec)
{
    return cpu_options(exec)->train_blocked;
}

static void cpu_zero(void *p, size_t bytes, const ExecContext *exec)
{
    (void)exec;
    memset(p, 0, bytes);
}

static void cpu_copy(void *to, const void *from, size_t bytes)
{
    memcpy(to, from, bytes);
}

static int cpu_sync(const ExecContext *exec, Error *e)
{
    (void)exec, (void)e;
    return CDL_OK;
}

const BackendOps cpu_backend = {
    .kind = CDL_BACKEND_CPU,
    .name = "CPU",
    .host_visible = 1,
    .open = cpu_open,
    .close = cpu_close,
    .kernels = cpu_kernels,
    .train_layouts = cpu_train_layouts,
    .slab = &cpu_slab_kernels,
    .alloc = zeroed_lines,
    .free = free_lines,
    .zero = cpu_zero,
    .upload = cpu_copy,
    .download = cpu_copy,
    .sync = cpu_sync,
};
