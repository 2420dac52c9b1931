/* Fuzz target: cfg text parsed, printed back and, when the net it describes is small
 * (fuzz_net_is_small), built and run for one training step (forward with labels, backward) at
 * batch FUZZ_NET_BATCH whatever the cfg's batch. */
#include <stdlib.h>
#include <string.h>

#include "core/net.h"
#include "fuzz.h"
#include "io/cfg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_setup();
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    Cfg cfg;
    Error e;
    if (cfg_parse_text(text, "fuzz.cfg", &cfg, &e) == CDL_OK) {
        free(cfg_to_text(&cfg));
        cfg_free(&cfg);
    }
    Net net;
    if (fuzz_net_is_small(text) &&
        net_build_from_text(&net, text, "fuzz.cfg", 1, 1, &e) == CDL_OK) {
        if (net_resize(&net, FUZZ_NET_BATCH, 1, &e) == CDL_OK) {
            net.train = 1;
            net_forward(&net);
            net_backward(&net);
        }
        net_free(&net);
    }
    free(text);
    return 0;
}
