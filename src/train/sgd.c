/* SGD with momentum over the parameter slab. */
#include "train/sgd.h"

#include <string.h>

void sgd_step(Net *net, float *velocity, float lr)
{
    const float momentum = net->hyper.momentum;
    for (int i = 0; i < net->n_layers; i++) {
        Layer *l = &net->layers[i];
        for (int k = 0; k < l->n_params; k++) {
            Param *p = &l->params[k];
            if (!p->trainable)
                continue;
            const float decay = p->decay ? net->hyper.decay : 0.0f;
            float *w = p->data, *g = p->grad, *v = velocity + (p->data - net->params);
            const long n = (long)p->count;
#pragma omp parallel for simd if (n > 65536) schedule(static)
            for (long j = 0; j < n; j++) {
                float vj = momentum * v[j] + g[j] + decay * w[j];
                v[j] = vj;
                w[j] -= lr * vj;
            }
        }
    }
    net_zero_grads(net);
}
