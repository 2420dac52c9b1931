/* Central-difference gradient checker (Caffe's scheme: tolerance scaled by the gradient's
 * magnitude, kinks detected by disagreeing step sizes and skipped). */
#include "gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/net.h"

#define GRADCHECK_MAX_ELEMENTS 256
/* float32 forward passes lose ~1e-7 relative per value; with eps = 1e-3 the central
 * difference carries ~1e-4 absolute noise on O(1) losses, so 1e-3 + 1% is well above
 * round-off and well below any real error (a wrong term is O(gradient)). */
#define GRADCHECK_EPS 1e-3f
#define GRADCHECK_ABS_TOL 1e-3
#define GRADCHECK_REL_TOL 1e-2

typedef struct Probe {
    Net *net;
    const float *r; /* output weights when the last layer is not softmax */
    int softmax_loss;
} Probe;

static double probe_loss(const Probe *p)
{
    net_forward(p->net);
    if (p->softmax_loss)
        return p->net->loss;
    const Layer *last = &p->net->layers[p->net->n_layers - 1];
    size_t n = (size_t)p->net->batch * shape_size(last->out_shape);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += (double)last->out[i] * p->r[i];
    return sum;
}

static double numeric_derivative(const Probe *p, float *x, float eps)
{
    float saved = *x;
    *x = saved + eps;
    double plus = probe_loss(p);
    *x = saved - eps;
    double minus = probe_loss(p);
    *x = saved;
    return (plus - minus) / (2.0 * (double)eps);
}

/* Compares analytic[i] with the numeric derivative w.r.t. values[i]; returns failures. */
static int check_tensor(const Probe *p, const char *label, const char *what, float *values,
                        const float *analytic, size_t count, int *skipped)
{
    int failures = 0;
    size_t stride = count > GRADCHECK_MAX_ELEMENTS ? count / GRADCHECK_MAX_ELEMENTS : 1;
    for (size_t i = 0; i < count; i += stride) {
        double num = numeric_derivative(p, &values[i], GRADCHECK_EPS);
        double a = analytic[i];
        double tol = GRADCHECK_ABS_TOL + GRADCHECK_REL_TOL * fmax(fabs(a), fabs(num));
        if (fabs(a - num) <= tol)
            continue;
        double finer = numeric_derivative(p, &values[i], GRADCHECK_EPS / 4);
        if (fabs(finer - num) > tol) { /* a kink within eps: the estimate is meaningless */
            (*skipped)++;
            continue;
        }
        if (failures < 5)
            fprintf(stderr, "FAIL gradcheck %s: d/d %s[%zu]: analytic %.6g, numeric %.6g\n", label,
                    what, i, a, num);
        failures++;
    }
    return failures;
}

/* cfg_text with engine=ref in its [net] section: the checks are of the reference kernels
 * (tests/unit/test_dnnl_conv.c compares oneDNN's with them). NULL when it does not fit. */
static char *on_reference(const char *cfg_text)
{
    const char *net = "[net]\n";
    const size_t head = strlen(net), n = strlen(cfg_text);
    char *text = malloc(n + 32);
    if (text && !strncmp(cfg_text, net, head))
        snprintf(text, n + 32, "%sengine=ref\n%s", net, cfg_text + head);
    else if (text)
        memcpy(text, cfg_text, n + 1);
    return text;
}

/* A sequence-to-sequence net's samples as paired text pads them: sample b's last b source and
 * target tokens are padding (-1), and so are the labels of those target positions. */
static void pad_pairs(Net *net, int batch)
{
    const int rows = net->in_shape.h;
    for (int b = 0; b < batch; b++)
        for (int k = 0; k < b && k < net->source - 1 && k < net->seq - 1; k++) {
            net->input[(size_t)b * rows + (size_t)(net->source - 1 - k)] = -1.0f;
            net->input[(size_t)b * rows + (size_t)(rows - 1 - k)] = -1.0f;
            net->labels[b * net->seq + net->seq - 1 - k] = -1;
        }
}

int gradcheck_cfg(const char *label, const char *cfg_text)
{
    Error e = {0};
    Net net;
    check_count++;
    char *text = on_reference(cfg_text);
    const int built = text && !net_build_from_text(&net, text, label, 1, 42, &e);
    free(text);
    if (!built) {
        fprintf(stderr, "FAIL gradcheck %s: cannot build: %s\n", label, e.msg);
        check_failures++;
        return 1;
    }
    int batch = net.hyper.batch / net.hyper.subdivisions;
    if (net_resize(&net, batch, 1, &e)) {
        fprintf(stderr, "FAIL gradcheck %s: %s\n", label, e.msg);
        net_free(&net);
        check_failures++;
        return 1;
    }
    net.train = 1;
    net.draw_id = 7;
    Rng rng;
    rng_seed(&rng, 1234, 1);
    size_t in_n = (size_t)batch * shape_size(net.in_shape);
    /* An [embedding] first reads token ids: integers, no gradient (none is checked), drawn from
     * its whole table (its own vocab= where [net] has none: all ids 0 would check one row). */
    const int token_ids = net.layers[0].type->reads_token_ids;
    const uint32_t tokens = token_ids ? (uint32_t)net.layers[0].params[0].dims[0] : 0;
    for (size_t i = 0; i < in_n; i++)
        net.input[i] = token_ids ? (float)rng_below(&rng, tokens) : rng_normal(&rng);
    for (int b = 0; b < batch * net_labels_per_sample(&net); b++)
        net.labels[b] = (int)rng_below(&rng, (uint32_t)net.classes);
    if (net.source)
        pad_pairs(&net, batch);
    if (in_n > 1)
        check_varies(label, net.input, in_n); /* one value would check one path of the layer */
    Layer *last = &net.layers[net.n_layers - 1];
    size_t out_n = (size_t)batch * shape_size(last->out_shape);
    float *r = malloc(out_n * sizeof *r);
    float *analytic = malloc((net.n_params + in_n) * sizeof *analytic);
    for (size_t i = 0; i < out_n; i++)
        r[i] = rng_normal(&rng);
    Probe probe = {&net, r, last->type->is_loss};

    net_zero_grads(&net);
    probe_loss(&probe);
    memcpy(last->delta, r, out_n * sizeof *r);
    net_backward(&net);
    memcpy(analytic, net.grads, net.n_params * sizeof *analytic);
    memcpy(analytic + net.n_params, net.input_delta, in_n * sizeof *analytic);

    int failures = 0, skipped = 0;
    if (!token_ids)
        failures += check_tensor(&probe, label, "input", net.input, analytic + net.n_params, in_n,
                                 &skipped);
    for (int i = 0; i < net.n_layers; i++) {
        Layer *l = &net.layers[i];
        for (int k = 0; k < l->n_params; k++) {
            Param *pa = &l->params[k];
            if (!pa->trainable)
                continue;
            char what[96];
            snprintf(what, sizeof what, "layer%d.%s", i, pa->name);
            failures += check_tensor(&probe, label, what, pa->data,
                                     analytic + (pa->data - net.params), pa->count, &skipped);
        }
    }
    if (skipped > 8) {
        fprintf(stderr, "FAIL gradcheck %s: %d elements skipped as kinks\n", label, skipped);
        failures++;
    }
    free(r);
    free(analytic);
    net_free(&net);
    if (failures)
        check_failures++;
    return failures;
}
