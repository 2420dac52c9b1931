/* zeroed_lines (util/cache_lines.h): line-aligned, zeroed, writable to the last byte, freed by
 * free_lines; an overflowing size refused; and a net's slabs start on a line. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "core/net.h"
#include "util/cache_lines.h"

static int on_line(const void *p)
{
    return (uintptr_t)p % CACHE_LINE_BYTES == 0;
}

static void check_block(size_t count, size_t size)
{
    unsigned char *p = zeroed_lines(count, size);
    CHECK(p != NULL);
    if (!p)
        return;
    CHECK(on_line(p));
    size_t nonzero = 0;
    for (size_t i = 0; i < count * size; i++)
        nonzero += p[i] != 0;
    CHECK(nonzero == 0);
    memset(p, 0xab, count * size); /* ASan: every byte asked for is the caller's */
    free_lines(p);
}

int main(void)
{
    const size_t sizes[][2] = {
        {0, 4}, {1, 1}, {3, 4}, {16, 4}, {1000, 4}, {1, 1 << 20}, {(1 << 22) + 3, 4}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        check_block(sizes[i][0], sizes[i][1]);
    CHECK(zeroed_lines(SIZE_MAX / 2, 4) == NULL);
    CHECK(zeroed_lines(SIZE_MAX, 1) == NULL);
    free_lines(NULL);

    Net net;
    Error e = {0};
    CHECK(!net_build_from_text(&net,
                               "[net]\nbatch=3\nwidth=5\nheight=5\nchannels=1\n"
                               "[connected]\noutput=7\n[softmax]\n",
                               "t.cfg", 1, 1, &e));
    CHECK(!net_resize(&net, 3, 0, &e));
    CHECK(on_line(net.activations) && on_line(net.params) && on_line(net.grads));
    CHECK(on_line(net.input) && on_line(net.exec.workspace));
    net_free(&net);
    return check_report("test_cache_lines");
}
