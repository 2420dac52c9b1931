/* A one-block GPT (tests/ref/transformer_block.cfg: embedding, positional, pre-LayerNorm
 * attention and MLP blocks with shortcuts, final layernorm, tied output projection, softmax)
 * against PyTorch (scripts/ref/make_transformer_block.py): every layer's output, the per-token
 * cross-entropy, every parameter gradient, and the same probabilities token by token through
 * forward_at. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "core/net.h"
#include "ref_fixture.h"
#include "ref_net.h"

/* Rows 0 .. T-1 one at a time through net_forward_at, after a forward over other tokens left
 * stale caches: the probabilities (and every output) equal the full forward's. */
static void check_token_by_token(const RefFixture *f, Net *net, const RefTensor *input)
{
    CHECK(net_can_forward_at(net));
    if (!net_can_forward_at(net))
        return;
    net->train = 0;
    for (size_t i = 0; i < input->count; i++) /* other tokens */
        net->input[i] = (float)(((int)input->data[i] + 3) % net->vocab);
    net_forward(net);
    memcpy(net->input, input->data, input->count * sizeof *net->input);
    for (int t = 0; t < net->seq; t++)
        net_forward_at(net, 0, t);
    ref_expect_outputs(f, net);
}

int main(void)
{
    RefFixture f;
    Net net;
    if (ref_fixture_load("tests/ref/transformer_block.ref", &f) ||
        ref_net_build(&net, &f, "tests/ref/transformer_block.cfg", NULL, 0, 2))
        return 1;

    net.train = 1;
    net_forward(&net);
    ref_expect_outputs(&f, &net);
    ref_expect_close(&f, "loss", &net.loss, 1);
    net_zero_grads(&net);
    net_backward(&net);
    ref_expect_params(&f, &net, "grad.", 1, REF_TRAINABLE_ONLY);

    check_token_by_token(&f, &net, ref_fixture_get(&f, "input"));

    net_free(&net);
    ref_fixture_free(&f);
    return check_report("test_ref_transformer");
}
