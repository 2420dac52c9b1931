/* Checking a Net against a reference fixture (ref_fixture.h): loading the fixture's initial
 * tensors into the net, and comparing values with the fixture's, counted as check.h's checks. */
#ifndef CDL_TESTS_REF_NET_H
#define CDL_TESTS_REF_NET_H

#include <stddef.h>

#include "core/net.h"
#include "ref_fixture.h"

/* The accepted ref_max_rel_error. */
#define REF_TOLERANCE 1e-4

/* One check: got [count] matches the fixture's tensor called name. */
void ref_expect_close(const RefFixture *f, const char *name, const float *got, size_t count);

typedef enum RefParams { REF_ALL_PARAMS, REF_TRAINABLE_ONLY, REF_STATE_ONLY } RefParams;

/* One check per tensor of the net picked by which: its values (or, with gradients, its
 * gradients) match the fixture's tensor PREFIXlayerI.NAME ("step3.layer0.weights"). */
void ref_expect_params(const RefFixture *f, const Net *net, const char *prefix, int gradients,
                       RefParams which);

/* Copies the fixture's tensors layerI.NAME into every parameter and running statistic of the
 * net. Returns 0, or -1 (with a message on stderr) when one is missing or of another size. */
int ref_load_params(const RefFixture *f, Net *net);

#endif
