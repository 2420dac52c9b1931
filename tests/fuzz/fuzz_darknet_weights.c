/* Fuzz target: darknet `.weights` files loaded into a small net with every layer family that
 * holds darknet tensors: convolutions with and without batch norm, a connected layer with batch
 * norm and a [batchnorm] (darknet_weights_load). */
#include "core/net.h"
#include "fuzz.h"
#include "model/darknet_weights.h"

/* tests/fuzz/make-corpus.sh writes the seeds' .weights from the same cfg (keep them in step). */
static const char cfg[] = "[net]\nwidth=4\nheight=4\nchannels=2\n"
                          "[convolutional]\nfilters=4\nsize=3\npad=1\nbatch_normalize=1\n"
                          "activation=leaky\n"
                          "[convolutional]\nfilters=2\nsize=1\ngroups=2\nactivation=linear\n"
                          "[batchnorm]\n"
                          "[connected]\noutput=3\nbatch_normalize=1\nactivation=linear\n"
                          "[softmax]\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_setup();
    static Net net;
    static int built;
    Error e;
    if (!built) {
        if (net_build_from_text(&net, cfg, "fuzz.cfg", 0, 1, &e))
            fuzz_fail("%s", e.msg);
        built = 1;
    }
    const char *path = fuzz_write_file("fuzz.weights", data, size);
    DarknetHeader header;
    darknet_weights_load(&net, path, &header, &e);
    return 0;
}
