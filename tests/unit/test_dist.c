/* Data-parallel equivalence below MPI: a mini-batch split in two at sample_offset draws the
 * dropout masks (also attention's) and crop windows the whole mini-batch draws, and the
 * one-process build of train/dist.h is rank 0 of 1. */
#include <string.h>

#include "check.h"
#include "core/net.h"
#include "train/dist.h"

/* Output of the last layer for samples [first, first + n) of a batch of 4 inputs, run as a
 * mini-batch of n at sample_offset first, in training mode at draw id 7. */
static void forward_part(const char *cfg, int first, int n, float *out, size_t per_out)
{
    Net net = {0};
    Error e = {0};
    CHECK(net_build_from_text(&net, cfg, "split.cfg", 1, 5, &e) == CDL_OK);
    CHECK(net_resize(&net, n, 0, &e) == CDL_OK);
    const size_t per_in = shape_size(net.in_shape);
    for (size_t i = 0; i < (size_t)n * per_in; i++)
        net.input[i] = (float)((first * per_in + i) % 13) * 0.25f - 1.0f;
    net.train = 1;
    net.draw_id = 7;
    net.sample_offset = first;
    net_forward(&net);
    memcpy(out, net.layers[net.n_layers - 1].out, (size_t)n * per_out * sizeof *out);
    net_free(&net);
}

static void check_split(const char *cfg, size_t per_out)
{
    float whole[4 * 64], parts[4 * 64];
    CHECK(per_out <= 64);
    forward_part(cfg, 0, 4, whole, per_out);
    forward_part(cfg, 0, 2, parts, per_out);
    forward_part(cfg, 2, 2, parts + 2 * per_out, per_out);
    CHECK(!memcmp(whole, parts, 4 * per_out * sizeof *whole));
}

static void test_dropout_masks_follow_the_sample_not_the_rank(void)
{
    check_split("[net]\nbatch=4\nwidth=4\nheight=4\nchannels=2\n"
                "[dropout]\nprobability=0.5\n",
                32);
}

static void test_crop_windows_follow_the_sample_not_the_rank(void)
{
    check_split("[net]\nbatch=4\nwidth=6\nheight=6\nchannels=1\n"
                "[crop]\ncrop_width=4\ncrop_height=4\nflip=1\n",
                16);
}

static void test_attention_dropout_follows_the_sample_not_the_rank(void)
{
    check_split("[net]\nbatch=4\nseq=4\ninputs=4\n"
                "[attention]\nheads=2\ndropout=0.5\n",
                16);
}

static void test_one_process_is_rank_0_of_1(void)
{
    int report = 0;
    CHECK(dist_rank() == 0 && dist_size() == 1);
    CHECK(dist_agree(CDL_EUSAGE, &report) == CDL_EUSAGE && report == 1);
    CHECK(dist_agree(CDL_OK, &report) == CDL_OK && report == 0);
}

int main(void)
{
    test_dropout_masks_follow_the_sample_not_the_rank();
    test_crop_windows_follow_the_sample_not_the_rank();
    test_attention_dropout_follows_the_sample_not_the_rank();
    test_one_process_is_rank_0_of_1();
    return check_report("test_dist");
}
