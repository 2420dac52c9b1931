/* The on-disk container of a checkpoint: a JSON header plus one zstd-compressed blob, checksummed
 * and written atomically. It knows nothing about networks; the caller decides what the header and
 * blob hold.
 *
 * Layout, all integers little-endian:
 *
 *   offset  size  field
 *   0       8     magic "CDLCKPT\0"
 *   8       4     uint32 format version (1)
 *   12      4     uint32 flags (0)
 *   16      8     uint64 header_bytes
 *   24      H     header: compact JSON text (cJSON_PrintUnformatted), no terminating NUL
 *   24+H    8     uint64 raw blob bytes (before compression)
 *   32+H    8     uint64 compressed bytes
 *   40+H    C     blob as one zstd frame (level 3); a 0-byte blob is still one (empty) frame
 *   40+H+C  4     uint32 CRC-32 (zlib crc32) over bytes [0, 40+H+C)
 *   44+H+C  8     end magic "CDLEND\0\0"
 *
 * The file is exactly 52+H+C bytes; anything else is refused. */
#ifndef CDL_IO_CHECKPOINT_FILE_H
#define CDL_IO_CHECKPOINT_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>
#include <zstd.h>

#include "util/error.h"

#define CHECKPOINT_FILE_VERSION 1

/* Writes atomically (util/atomic_file.h: an unnamed or temporary file in the same directory,
 * fflush+fsync, then rename() over path, and fsync the directory). On any failure the temp file
 * is removed and path is untouched. A path that holds anything but a checkpoint (a cfg given as
 * the output by mistake) is refused as file_check_output (util/file_kind.h) says. blob may be NULL
 * when blob_bytes is 0. */
int checkpoint_file_write(const char *path, const cJSON *header, const void *blob,
                          size_t blob_bytes, Error *e);

/* One piece of the blob, which is the concatenation of the slabs in order. */
typedef struct CheckpointSlab {
    const void *data; /* may be NULL when bytes is 0 */
    size_t bytes;
} CheckpointSlab;

/* checkpoint_file_write of the slabs' concatenation, compressed straight from each slab into
 * the file (no copy of the blob is made). */
int checkpoint_file_write_slabs(const char *path, const cJSON *header, const CheckpointSlab *slabs,
                                int n_slabs, Error *e);

/* Reading the blob straight into its destinations, the file streamed through a small buffer:
 * open verifies the file (magic, version, lengths, checksum: a first pass over it; header,
 * frame size) and returns the header (cJSON_Delete by caller); read_into then decompresses
 * the blob's next bytes into dst (NULL: skips them), in order; finish fails unless exactly
 * the whole blob was read. Close after open succeeded, even after a failure. */
typedef struct CheckpointReader {
    const char *path;
    FILE *file;
    size_t size;                  /* of the file */
    unsigned char *front;         /* the file up to the end of the sizes: prefix, header, sizes */
    uint64_t raw_bytes, raw_done; /* the blob's size, and how much of it was read */
    uint64_t packed_bytes, packed_left; /* the frame's size, and what is still in the file */
    unsigned char *in_buffer;           /* [in_capacity] */
    size_t in_capacity;
    ZSTD_inBuffer in; /* the frame bytes read from the file and not yet decompressed */
    ZSTD_DCtx *dctx;
    int frame_done;
} CheckpointReader;

int checkpoint_file_open(CheckpointReader *r, const char *path, cJSON **header, Error *e);
int checkpoint_file_read_into(CheckpointReader *r, void *dst, size_t bytes, Error *e);
int checkpoint_file_finish(CheckpointReader *r, Error *e);
void checkpoint_file_close(CheckpointReader *r);

/* Reads and verifies; on success *header (cJSON_Delete by caller) and *blob (free by caller),
 * *blob_bytes set. *blob is non-NULL even for a 0-byte blob. On failure all three outputs are
 * NULL/0 and nothing needs freeing. */
int checkpoint_file_read(const char *path, cJSON **header, void **blob, size_t *blob_bytes,
                         Error *e);

#endif
