/* TensorBoard event files without TensorFlow: Event protobufs (scalar summaries) in
 * TFRecord framing, written to DIR/events.out.tfevents.<unix time>.<hostname>. */
#ifndef CDL_TFEVENTS_H
#define CDL_TFEVENTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/error.h"

typedef struct TfEvents TfEvents;

/* CRC-32C (Castagnoli polynomial, reflected 0x82F63B78), as TFRecord uses it. */
uint32_t crc32c(const void *data, size_t n);

/* TFRecord's checksum: the CRC-32C rotated right by 15 bits plus 0xa282ead8. */
uint32_t tfrecord_masked_crc(const void *data, size_t n);

/* Writes one record: uint64 length (little-endian), uint32 masked CRC of those 8 bytes, the
 * n data bytes, uint32 masked CRC of the data. Returns 0, or -1 when the stream fails. */
int tfrecord_write(FILE *f, const void *data, size_t n);

/* Creates dir (and missing parents) and a new event file in it whose first record carries
 * file_version "brain.Event:2". An existing file of the same name is never overwritten: a
 * ".1", ".2", ... suffix is added instead. */
int tfevents_open(const char *dir, TfEvents **out, Error *e);

/* Appends an Event {wall_time, step, summary {value {tag, simple_value}}}; wall_time in
 * seconds since the Unix epoch. Allocates only while the first records grow its buffers. */
int tfevents_add_scalar(TfEvents *w, const char *tag, int64_t step, float value, double wall_time,
                        Error *e);

/* Pushes buffered records to the file. */
int tfevents_flush(TfEvents *w, Error *e);

/* Flushes, closes and frees w (NULL is a no-op); reports a failed final write. */
int tfevents_close(TfEvents *w, Error *e);

/* The event file's path. */
const char *tfevents_path(const TfEvents *w);

#endif
