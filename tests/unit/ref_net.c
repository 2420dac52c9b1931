/* Comparing nets with reference fixtures. */
#include "ref_net.h"

#include <stdio.h>

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
