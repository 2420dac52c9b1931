/* NumPy .npy writer (see npy.h). Format 1.0: the magic "\x93NUMPY", version 1.0, a
 * little-endian uint16 header length, then a Python dict literal padded with spaces and a
 * newline so that the data starts at a multiple of 64 bytes. */
#include "io/npy.h"

#include <stdio.h>
#include <string.h>

#include "util/atomic_file.h"

#define NPY_ALIGN 64

/* header = the padded dict, terminated by '\n'; returns its length. */
static size_t npy_header(char *header, size_t cap, int n_dims, const int64_t *dims)
{
    char shape[256] = "";
    size_t used = 0;
    for (int k = 0; k < n_dims; k++)
        used += (size_t)snprintf(shape + used, sizeof shape - used, "%lld,%s", (long long)dims[k],
                                 k + 1 < n_dims ? " " : "");
    if (n_dims > 1)
        shape[used - 1] = '\0'; /* "(3, 4)" but "(5,)" */
    size_t len = (size_t)snprintf(header, cap,
                                  "{'descr': '<f4', 'fortran_order': False, "
                                  "'shape': (%s), }",
                                  shape);
    const size_t preamble = 10; /* magic, version, header length */
    while ((preamble + len + 1) % NPY_ALIGN)
        header[len++] = ' ';
    header[len++] = '\n';
    return len;
}

int npy_write(const char *path, const float *data, int n_dims, const int64_t *dims, Error *e)
{
    char header[512];
    const size_t header_len = npy_header(header, sizeof header - NPY_ALIGN, n_dims, dims);
    const unsigned char preamble[10] = {0x93,
                                        'N',
                                        'U',
                                        'M',
                                        'P',
                                        'Y',
                                        1,
                                        0,
                                        (unsigned char)(header_len & 0xff),
                                        (unsigned char)(header_len >> 8)};
    size_t count = 1;
    for (int k = 0; k < n_dims; k++)
        count *= (size_t)dims[k];
    AtomicFile f;
    int st = atomic_file_open(&f, path, FILE_KIND_NPY, e);
    if (st)
        return st;
    fwrite(preamble, 1, sizeof preamble, f.file);
    fwrite(header, 1, header_len, f.file);
    for (size_t i = 0; i < count; i++) {
        uint32_t bits;
        memcpy(&bits, &data[i], sizeof bits);
        const unsigned char le[4] = {(unsigned char)bits, (unsigned char)(bits >> 8),
                                     (unsigned char)(bits >> 16), (unsigned char)(bits >> 24)};
        fwrite(le, 1, sizeof le, f.file);
    }
    return atomic_file_commit(&f, e);
}
