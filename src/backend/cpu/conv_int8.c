/* [convolutional] with int8 weights (l->quant, `cdl quantize`) on the CPU: the reference's
 * products (conv_im2col.c, one group) through qgemm_float, the column matrices its input by
 * columns and the output by columns, the whole mini-batch's input on one grid, as
 * quantize_dynamic's. The bias or batch norm and the activation stay float32.
 *
 *   cols [kdim][n] -> out [filters][n], W [filters][kdim] in int8
 */
#include <omp.h>

#include "backend/cpu/conv.h"
#include "backend/cpu/layer_quant.h"

void conv_int8_resize(Layer *l, int columns, int threads, LayerState *st)
{
    const Conv *cv = l->priv;
    ConvInt8 *q = &cv->cpu->int8;
    const int kdim = (l->in_shape.c / cv->groups) * window2d_taps(cv->win);
    q->threads = l->quant ? threads : 0;
    q->work_bytes = l->quant ? qgemm_work_bytes(columns, cv->filters, kdim) : 0;
    q->work = layer_state_bytes(st, (size_t)q->threads * q->work_bytes);
}

/* A work buffer per thread, as many as resize took (the thread count may have grown since). */
int conv_int8_threads(const Layer *l, int image_threads)
{
    const ConvInt8 *q = &((const Conv *)l->priv)->cpu->int8;
    return l->quant && image_threads > q->threads ? q->threads : image_threads;
}

QuantParams conv_int8_input(Layer *l, const float *x, int batch)
{
    return l->quant ? layer_quant_input(l->quant, x, 1, (size_t)batch * shape_size(l->in_shape), 0)
                    : (QuantParams){1.0f, 0};
}

void conv_int8_product(const Layer *l, QuantParams xq, int n, const float *cols, float *out)
{
    const ConvInt8 *q = &((const Conv *)l->priv)->cpu->int8;
    unsigned char *work = q->work + (size_t)omp_get_thread_num() * q->work_bytes;
    qgemm_float(&l->quant->matrix, xq, n, cols, n, QGEMM_COLS, out, n, QGEMM_COLS, work);
}
