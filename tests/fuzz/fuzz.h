/* What the fuzz targets share (tests/fuzz/support.c): the libFuzzer entry point every target
 * defines, inputs written to files for the parsers that read paths, and the size limits that
 * keep a target exploring parsing instead of allocating or computing for seconds. */
#ifndef CDL_FUZZ_H
#define CDL_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* Each fuzz_*.c defines it; libFuzzer (make fuzz) or tests/fuzz/replay.c (make test) calls it
 * once per input. Returns 0 (libFuzzer's convention); a bug aborts through a sanitizer or
 * fuzz_fail. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One-time set-up, idempotent: one thread (OpenMP and OpenBLAS) and a private temporary
 * folder (on /dev/shm when it is writable), removed at exit. */
void fuzz_setup(void);

/* Writes bytes to NAME inside the private folder, replacing what was there, and returns its
 * path (valid until exit; a target uses a few fixed names). Aborts on failure. */
const char *fuzz_write_file(const char *name, const void *bytes, size_t size);

/* Splits data into two parts: the first 2 bytes (little-endian) give the first part's length,
 * clamped to what is there; the second part is the rest. For targets that read two files. */
void fuzz_split(const uint8_t *data, size_t size, const uint8_t **a, size_t *a_size,
                const uint8_t **b, size_t *b_size);

/* An oracle failed: prints the message and aborts (the fuzzer records the input). */
void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Limits of a net the targets build and run (batch FUZZ_NET_BATCH, whatever the cfg says):
 * parameters and state, the activations and scratch of one sample, forward FLOPs. */
enum { FUZZ_NET_BATCH = 2 };
#define FUZZ_NET_MAX_FLOATS ((size_t)1 << 16)
#define FUZZ_NET_MAX_FLOPS 1e6

/* 1 when the cfg text builds a net within those limits (built without initialisation, which
 * allocates lazily), 0 when it does not build or is too large. */
int fuzz_net_is_small(const char *cfg_text);

/* Image targets: data (a PNG when magic is the PNG signature, a JPEG for FF D8) decoded with
 * image_load, magic prepended when data does not start with it (so that mutations explore the
 * decoder, not the format sniffing), then converted and resized to two small inputs. Images
 * whose header declares more than FUZZ_IMAGE_MAX_PIXELS pixels are not decoded: the decoder
 * allocates their pixels before it reads them, and image.c's own limit is 2^28. */
#define FUZZ_IMAGE_MAX_PIXELS ((uint64_t)1 << 16)
int fuzz_image(const uint8_t *data, size_t size, const uint8_t *magic, size_t magic_size);

#endif
