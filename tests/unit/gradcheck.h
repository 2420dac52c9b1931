/* Finite-difference gradient check of a whole net built from cfg text. */
#ifndef CDL_TEST_GRADCHECK_H
#define CDL_TEST_GRADCHECK_H

/* Builds a net from cfg_text (first section [net] with batch, width, height, channels)
 * in training mode with random N(0,1) input and random labels, and compares the
 * analytic dL/d(input) and dL/d(every trainable parameter) with central differences.
 * L is the softmax cross-entropy when the last layer is [softmax], else sum(out * r)
 * for a fixed random r. Up to 256 elements per tensor are checked. Sequence nets ([net] seq=T)
 * get one label per token; when the first layer is [embedding] the input holds random token
 * ids below [net] vocab and its gradient is not checked; in a sequence-to-sequence net ([net]
 * source=S) sample b's last b source and target tokens are padding (-1, labels too). Prints each
 * mismatch with label; returns the number of failures (0 also adds a passing check). */
int gradcheck_cfg(const char *label, const char *cfg_text);

#endif
