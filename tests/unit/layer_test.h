/* Helpers for tests of single layers on small nets written as cfg text: building the net,
 * setting a parameter's values and checking a layer's values against derived ones. */
#ifndef CDL_TEST_LAYER_TEST_H
#define CDL_TEST_LAYER_TEST_H

#include <stddef.h>

#include "core/net.h"

/* Builds text as "t.cfg" (a training net, parameters drawn with seed 1) sized for its [net]
 * batch, without an input gradient. One check that it built; on failure prints the message
 * and returns the status with nothing left to free. */
int build_test_net(const char *text, Net *net);

/* One check that the layer has a parameter called name of n values, then copies values in. */
void set_param(Layer *l, const char *name, const float *values, size_t n);

/* One check per value: |got[i] - want[i]| <= tol. */
void check_values(const float *got, const float *want, size_t n, double tol);

#endif
