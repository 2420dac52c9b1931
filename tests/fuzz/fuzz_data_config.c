/* Fuzz target: a `.data` file parsed (data_config_load) and the datasets it names opened
 * (data_config_open_sources, or text_data_load for type=text). The folder the input is written
 * to holds small files that a .data can name by relative path: names.txt, digits.csv,
 * list.txt, files.csv, text.txt, images.idx with labels.idx, and batch.bin (CIFAR-10). */
#include <stdio.h>
#include <string.h>

#include "data/cifar.h"
#include "data/data_config.h"
#include "data/text_data.h"
#include "fuzz.h"

static void write_text(const char *name, const char *text)
{
    fuzz_write_file(name, text, strlen(text));
}

/* The files a .data may refer to (written once). */
static void write_datasets(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    write_text("names.txt", "cat\ndog\nbird\n");
    write_text("list.txt", "a/cat/1.png\na/dog/2.png\nb/bird/3.png\nb/cat/4.png\n");
    write_text("files.csv", "path,label\nx/1.png,cat\nx/2.png,1\nx/3.png,bird\n");
    write_text("text.txt", "hello world\nthe quick brown fox\n");
    char digits[4 * 65 * 4] = "", *p = digits;
    for (int row = 0; row < 4; row++)
        for (int k = 0; k <= 64; k++)
            p += sprintf(p, "%d%c", k < 64 ? (row + k) % 17 : row % 3, k < 64 ? ',' : '\n');
    write_text("digits.csv", digits);
    /* Two 2x2 images and their labels. */
    static const uint8_t images[16 + 8] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2,
                                           0, 0, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8};
    static const uint8_t labels[8 + 2] = {0, 0, 8, 1, 0, 0, 0, 2, 1, 2};
    fuzz_write_file("images.idx", images, sizeof images);
    fuzz_write_file("labels.idx", labels, sizeof labels);
    static uint8_t batch[2 * (1 + CIFAR_PIXELS)];
    batch[0] = 3;
    batch[1 + CIFAR_PIXELS] = 7;
    fuzz_write_file("batch.bin", batch, sizeof batch);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_setup();
    write_datasets();
    const char *path = fuzz_write_file("fuzz.data", data, size);
    DataConfig dc;
    Error e;
    if (data_config_load(path, &dc, &e))
        return 0;
    if (dc.train_kind == DATA_TEXT) {
        TextData td;
        if (text_data_load(&dc, NULL, &td, &e) == CDL_OK)
            text_data_free(&td);
    } else {
        SampleSource train, valid;
        if (data_config_open_sources(&dc, &train, &valid, &e) == CDL_OK) {
            source_free(&train);
            source_free(&valid);
        }
    }
    data_config_free(&dc);
    return 0;
}
