/* Helpers for tests of single layers on small nets written as cfg text. */
#include "layer_test.h"

#include <stdio.h>
#include <string.h>

#include "check.h"

int build_test_net(const char *text, Net *net)
{
    Error e = {0};
    int st = net_build_from_text(net, text, "t.cfg", 1, 1, &e);
    if (st == CDL_OK && (st = net_resize(net, net->hyper.batch, 0, &e)) != CDL_OK)
        net_free(net);
    if (st)
        fprintf(stderr, "cannot build test net: %s\n", e.msg);
    CHECK(st == CDL_OK);
    return st;
}

void set_param(Layer *l, const char *name, const float *values, size_t n)
{
    Param *p = layer_param(l, name);
    CHECK(p != NULL && p->count == n);
    if (p && p->count == n)
        memcpy(p->data, values, n * sizeof *values);
}

void check_values(const float *got, const float *want, size_t n, double tol)
{
    for (size_t i = 0; i < n; i++)
        CHECK_NEAR(got[i], want[i], tol);
}
