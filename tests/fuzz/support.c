/* The fuzz targets' shared helpers (tests/fuzz/fuzz.h): set-up, input files, size limits. */
#include "fuzz.h"

#include <cblas.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/net.h"
#include "data/image.h"

enum { MAX_FILES = 16 };

static char dir[256];
static struct {
    char *name, *path;
} files[MAX_FILES];
static int n_files;

void fuzz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fuzz: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

static void remove_dir(void)
{
    for (int i = 0; i < n_files; i++)
        unlink(files[i].path);
    rmdir(dir);
}

void fuzz_setup(void)
{
    if (dir[0])
        return;
    omp_set_num_threads(1);
    openblas_set_num_threads(1);
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/cdl-fuzz-XXXXXX", base ? base : "/tmp");
    if (!mkdtemp(dir))
        fuzz_fail("cannot make a temporary folder %s", dir);
    atexit(remove_dir);
}

const char *fuzz_write_file(const char *name, const void *bytes, size_t size)
{
    fuzz_setup();
    int i = 0;
    while (i < n_files && strcmp(files[i].name, name))
        i++;
    if (i == n_files) {
        if (n_files == MAX_FILES)
            fuzz_fail("more than %d file names", MAX_FILES);
        size_t len = strlen(dir) + strlen(name) + 2;
        files[i].name = strdup(name);
        files[i].path = malloc(len);
        if (!files[i].name || !files[i].path)
            fuzz_fail("out of memory");
        snprintf(files[i].path, len, "%s/%s", dir, name);
        n_files++;
    }
    FILE *f = fopen(files[i].path, "wb");
    if (!f || (size && fwrite(bytes, 1, size, f) != size) || fclose(f))
        fuzz_fail("cannot write %s", files[i].path);
    return files[i].path;
}

void fuzz_split(const uint8_t *data, size_t size, const uint8_t **a, size_t *a_size,
                const uint8_t **b, size_t *b_size)
{
    size_t n = size >= 2 ? (size_t)data[0] | (size_t)data[1] << 8 : 0;
    size_t rest = size >= 2 ? size - 2 : 0;
    *a = data + (size >= 2 ? 2 : size);
    *a_size = n < rest ? n : rest;
    *b = *a + *a_size;
    *b_size = rest - *a_size;
}

int fuzz_net_is_small(const char *cfg_text)
{
    Net net;
    Error e;
    if (net_build_from_text_uninitialised(&net, cfg_text, "fuzz.cfg", 0, 1, &e))
        return 0;
    size_t per_sample = shape_size(net.in_shape);
    double flops = 0;
    for (int i = 0; i < net.n_layers; i++) {
        const Layer *l = &net.layers[i];
        per_sample += 3 * shape_size(l->out_shape) + l->scratch_per_sample;
        flops += l->flops;
    }
    const int small = net.n_params + net.n_state <= FUZZ_NET_MAX_FLOATS &&
                      per_sample <= FUZZ_NET_MAX_FLOATS && flops <= FUZZ_NET_MAX_FLOPS;
    net_free(&net);
    return small;
}

static uint32_t be16(const uint8_t *p)
{
    return (uint32_t)p[0] << 8 | p[1];
}

static uint32_t be32(const uint8_t *p)
{
    return be16(p) << 16 | be16(p + 2);
}

/* The pixel count a PNG's IHDR or a JPEG's first SOFn marker declares; 0 when none is found. */
static uint64_t declared_pixels(const uint8_t *d, size_t size)
{
    if (size >= 24 && d[0] == 0x89 && !memcmp(d + 12, "IHDR", 4))
        return (uint64_t)be32(d + 16) * be32(d + 20);
    size_t at = 2;
    while (size >= 2 && d[0] == 0xFF && d[1] == 0xD8 && at + 4 <= size) {
        if (d[at] != 0xFF)
            return 0;
        const uint8_t marker = d[at + 1];
        if (marker == 0xFF || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) {
            at += marker == 0xFF ? 1 : 2;
            continue;
        }
        const int sof =
            marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
        if (sof && at + 9 <= size)
            return (uint64_t)be16(d + at + 5) * be16(d + at + 7);
        at += 2 + be16(d + at + 2);
    }
    return 0;
}

int fuzz_image(const uint8_t *data, size_t size, const uint8_t *magic, size_t magic_size)
{
    fuzz_setup();
    const int has_magic = size >= magic_size && !memcmp(data, magic, magic_size);
    const size_t total = size + (has_magic ? 0 : magic_size);
    uint8_t *file = malloc(total ? total : 1);
    if (!file)
        return 0;
    if (!has_magic)
        memcpy(file, magic, magic_size);
    memcpy(file + (has_magic ? 0 : magic_size), data, size);
    const char *path = fuzz_write_file("fuzz.img", file, total);
    const uint64_t pixels = declared_pixels(file, total);
    free(file);
    if (pixels > FUZZ_IMAGE_MAX_PIXELS)
        return 0;
    Image img;
    Error e;
    if (image_load(path, &img, &e) == CDL_OK) {
        float out[3 * 7 * 5 + 16 * 16];
        if (image_to_input(&img, 3, 7, 5, out) || image_to_input(&img, 1, 16, 16, out))
            fuzz_fail("image_to_input failed on a %dx%dx%d image", img.c, img.h, img.w);
        image_free(&img);
    }
    return 0;
}
