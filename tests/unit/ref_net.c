/* Comparing nets with reference fixtures. */
#include "ref_net.h"

#include <stdio.h>
#include <string.h>

#include "check.h"

void ref_expect_close(const RefFixture *f, const char *name, const float *got, size_t count)
{
    const RefTensor *t = ref_fixture_get(f, name);
    check_count++;
    if (!t || t->count != count) {
        check_failures++;
        fprintf(stderr, "FAIL %s: fixture tensor missing or %zu values, cdl has %zu\n", name,
                t ? t->count : 0, count);
        return;
    }
    double err = ref_max_rel_error(got, t->data, count);
    if (!(err <= REF_TOLERANCE)) {
        check_failures++;
        fprintf(stderr, "FAIL %s: relative error %.3g > %g\n", name, err, REF_TOLERANCE);
    }
}

void ref_expect_params(const RefFixture *f, const Net *net, const char *prefix, int gradients,
                       RefParams which)
{
    for (int i = 0; i < net->n_layers; i++)
        for (int k = 0; k < net->layers[i].n_params; k++) {
            const Param *p = &net->layers[i].params[k];
            if ((which == REF_TRAINABLE_ONLY && !p->trainable) ||
                (which == REF_STATE_ONLY && p->trainable))
                continue;
            char name[96];
            snprintf(name, sizeof name, "%slayer%d.%s", prefix, i, p->name);
            ref_expect_close(f, name, gradients ? p->grad : p->data, p->count);
        }
}

int ref_load_params(const RefFixture *f, Net *net)
{
    for (int i = 0; i < net->n_layers; i++)
        for (int k = 0; k < net->layers[i].n_params; k++) {
            Param *p = &net->layers[i].params[k];
            char name[96];
            snprintf(name, sizeof name, "layer%d.%s", i, p->name);
            const RefTensor *t = ref_fixture_get(f, name);
            if (!t || t->count != p->count) {
                fprintf(stderr, "FAIL fixture lacks %s\n", name);
                return -1;
            }
            for (size_t j = 0; j < p->count; j++)
                p->data[j] = t->data[j];
        }
    return 0;
}

int ref_net_build(Net *net, const RefFixture *f, const char *cfg_path, const char *const *overrides,
                  int n_overrides, int batch)
{
    Error e = {0};
    if (net_build_from_file(net, cfg_path, overrides, n_overrides, 1, 1, &e) ||
        net_resize(net, batch, 1, &e)) {
        fprintf(stderr, "FAIL setup: %s\n", e.msg);
        return -1;
    }
    const RefTensor *input = ref_fixture_get(f, "input"), *labels = ref_fixture_get(f, "labels");
    const size_t in_n = (size_t)batch * shape_size(net->in_shape);
    const size_t labels_n = (size_t)batch * (size_t)net_labels_per_sample(net);
    if (ref_load_params(f, net) || !input || input->count != in_n ||
        (labels && labels->count != labels_n)) {
        fprintf(stderr,
                "FAIL setup: the fixture lacks the input (%zu values) or labels (%zu) of %s\n",
                in_n, labels_n, cfg_path);
        net_free(net);
        return -1;
    }
    memcpy(net->input, input->data, in_n * sizeof *net->input);
    for (size_t i = 0; labels && i < labels_n; i++)
        net->labels[i] = (int)labels->data[i];
    return 0;
}

void ref_expect_outputs(const RefFixture *f, const Net *net)
{
    for (int i = 0; i < net->n_layers; i++) {
        char name[16];
        snprintf(name, sizeof name, "out%d", i);
        ref_expect_close(f, name, net->layers[i].out,
                         (size_t)net->batch * shape_size(net->layers[i].out_shape));
    }
}

void ref_expect_sum_loss_grads(const RefFixture *f, Net *net, const char *prefix)
{
    Layer *last = &net->layers[net->n_layers - 1];
    const RefTensor *r = ref_fixture_get(f, "r");
    const size_t in_n = (size_t)net->batch * shape_size(net->in_shape);
    const size_t out_n = (size_t)net->batch * shape_size(last->out_shape);
    check_count++;
    if (!r || r->count != out_n) {
        check_failures++;
        fprintf(stderr, "FAIL the fixture lacks r, the gradient of the %zu outputs\n", out_n);
        return;
    }
    char name[64];
    net->train = 1;
    net_forward(net);
    snprintf(name, sizeof name, "%sout", prefix);
    ref_expect_close(f, name, last->out, out_n);
    net_zero_grads(net);
    memcpy(last->delta, r->data, out_n * sizeof *last->delta);
    net_backward(net);
    snprintf(name, sizeof name, "%sgrad.input", prefix);
    ref_expect_close(f, name, net->input_delta, in_n);
    snprintf(name, sizeof name, "%sgrad.", prefix);
    ref_expect_params(f, net, name, 1, REF_TRAINABLE_ONLY);
}

void ref_expect_sum_loss_fixture(const char *name, int batch)
{
    char cfg_path[96], ref_path[96];
    snprintf(cfg_path, sizeof cfg_path, "tests/ref/%s.cfg", name);
    snprintf(ref_path, sizeof ref_path, "tests/ref/%s.ref", name);
    RefFixture f;
    Net net;
    const int ready = ref_fixture_load(ref_path, &f) == 0 &&
                      ref_net_build(&net, &f, cfg_path, NULL, 0, batch) == 0;
    CHECK(ready);
    if (ready) {
        ref_expect_sum_loss_grads(&f, &net, "");
        net_free(&net);
    }
    ref_fixture_free(&f);
}
