/* Inception v3's modules with tensors in torch's order (torchvision_names.h), which the layers
 * with tensors of cfg/inception_v3.cfg follow block by block. */
#include <stdio.h>
#include <string.h>

#include "model/torchvision_names.h"

/* Each block's modules: a BasicConv2d is a convolution with batch norm (NAME.conv, NAME.bn), an
 * "fc" a [connected]. */
static const char *const inception_stem[] = {"Conv2d_1a_3x3", "Conv2d_2a_3x3", "Conv2d_2b_3x3",
                                             "Conv2d_3b_1x1", "Conv2d_4a_3x3", NULL};
static const char *const inception_a[] = {
    "branch1x1",      "branch5x5_1",    "branch5x5_2", "branch3x3dbl_1",
    "branch3x3dbl_2", "branch3x3dbl_3", "branch_pool", NULL};
static const char *const inception_b[] = {"branch3x3", "branch3x3dbl_1", "branch3x3dbl_2",
                                          "branch3x3dbl_3", NULL};
static const char *const inception_c[] = {"branch1x1",
                                          "branch7x7_1",
                                          "branch7x7_2",
                                          "branch7x7_3",
                                          "branch7x7dbl_1",
                                          "branch7x7dbl_2",
                                          "branch7x7dbl_3",
                                          "branch7x7dbl_4",
                                          "branch7x7dbl_5",
                                          "branch_pool",
                                          NULL};
static const char *const inception_aux[] = {"conv0", "conv1", "fc", NULL};
static const char *const inception_d[] = {
    "branch3x3_1",   "branch3x3_2", "branch7x7x3_1", "branch7x7x3_2", "branch7x7x3_3",
    "branch7x7x3_4", NULL};
static const char *const inception_e[] = {
    "branch1x1",      "branch3x3_1",     "branch3x3_2a",    "branch3x3_2b", "branch3x3dbl_1",
    "branch3x3dbl_2", "branch3x3dbl_3a", "branch3x3dbl_3b", "branch_pool",  NULL};
static const char *const inception_head[] = {"fc", NULL};

static const struct {
    const char *block; /* the module's prefix ("": none) */
    const char *const *modules;
} inception_blocks[] = {
    {"", inception_stem},         {"Mixed_5b", inception_a}, {"Mixed_5c", inception_a},
    {"Mixed_5d", inception_a},    {"Mixed_6a", inception_b}, {"Mixed_6b", inception_c},
    {"Mixed_6c", inception_c},    {"Mixed_6d", inception_c}, {"Mixed_6e", inception_c},
    {"AuxLogits", inception_aux}, {"Mixed_7a", inception_d}, {"Mixed_7b", inception_e},
    {"Mixed_7c", inception_e},    {"", inception_head},
};

int torchvision_inception_module(int k, char *path, size_t bytes, int *fc)
{
    const int n_blocks = (int)(sizeof inception_blocks / sizeof inception_blocks[0]);
    for (int b = 0; b < n_blocks; b++) {
        const char *const *modules = inception_blocks[b].modules;
        int n = 0;
        while (modules[n])
            n++;
        if (k >= n) {
            k -= n;
            continue;
        }
        const char *prefix = inception_blocks[b].block;
        snprintf(path, bytes, "%s%s%s", prefix, *prefix ? "." : "", modules[k]);
        *fc = !strcmp(modules[k], "fc");
        return 1;
    }
    return 0;
}
