/* Checking a Net against a reference fixture (ref_fixture.h): building the fixture's net from
 * its initial tensors, and comparing values with the fixture's, counted as check.h's checks. */
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

/* Builds the net of cfg_path with the cfg overrides ("0.causal=0"; none when n_overrides is 0),
 * sizes it for batch with an input gradient, and copies in the fixture's parameters
 * (ref_load_params), its "input" and, when the fixture has them, its "labels". Returns 0, or
 * -1 after a message on stderr, the net then freed. */
int ref_net_build(Net *net, const RefFixture *f, const char *cfg_path, const char *const *overrides,
                  int n_overrides, int batch);

/* One check per layer I: its output matches the fixture's tensor outI. */
void ref_expect_outputs(const RefFixture *f, const Net *net);

/* For a net whose last layer's output gets the fixture's r as its gradient (loss sum(out * r)):
 * a training forward and backward, then one check each that the output, the input gradient and
 * every trainable parameter's gradient match the fixture's PREFIXout, PREFIXgrad.input and
 * PREFIXgrad.layerI.NAME. */
void ref_expect_sum_loss_grads(const RefFixture *f, Net *net, const char *prefix);

/* The fixture tests/ref/NAME.cfg and NAME.ref, built at batch (one check that it loads), through
 * ref_expect_sum_loss_grads: the output, the input gradient and every parameter gradient. */
void ref_expect_sum_loss_fixture(const char *name, int batch);

#endif
