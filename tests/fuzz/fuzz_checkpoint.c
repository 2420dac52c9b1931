/* Fuzz target: a checkpoint file loaded as `predict` (inference: inputs of even size) or as
 * `train --resume` (with the optimizer's state: odd size) loads it. The CRC-32 is recomputed over
 * the input first, since a fuzzer cannot forge it and every other check would stay unexplored (the
 * checksum's own refusal is tested in tests/unit/test_checkpoint_file.c). A checkpoint whose cfg
 * describes a net larger than fuzz_net_is_small allows is opened but not loaded. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fuzz.h"
#include "io/checkpoint_file.h"
#include "model/model_io.h"

/* The CRC-32 sits before the 8-byte end magic (io/checkpoint_file.h). */
enum { CRC_BYTES = 4, END_BYTES = 8, MIN_FILE = 52 };

static int small_model(const char *path)
{
    CheckpointReader r;
    cJSON *header = NULL;
    Error e;
    if (checkpoint_file_open(&r, path, &header, &e))
        return 0;
    const char *cfg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(header, "cfg"));
    const int small = cfg && fuzz_net_is_small(cfg);
    cJSON_Delete(header);
    checkpoint_file_close(&r);
    return small;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_setup();
    uint8_t *file = malloc(size ? size : 1);
    if (!file)
        return 0;
    memcpy(file, data, size);
    if (size >= MIN_FILE) {
        const size_t at = size - CRC_BYTES - END_BYTES;
        const uLong crc = crc32(0L, file, (uInt)at);
        for (int k = 0; k < CRC_BYTES; k++)
            file[at + k] = (uint8_t)(crc >> (8 * k));
    }
    const char *path = fuzz_write_file("fuzz.cdl", file, size);
    free(file);
    if (!small_model(path))
        return 0;
    Net net;
    ModelMeta meta;
    Error e;
    Optimizer opt;
    const int resume = size % 2;
    if (model_load(path, &net, resume, resume ? &opt : NULL, &meta, &e) == CDL_OK) {
        net_free(&net);
        model_meta_free(&meta);
    }
    if (resume)
        optimizer_free(&opt);
    return 0;
}
