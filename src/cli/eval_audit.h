/* cdl eval --audit on a detector: the labels most likely wrong, listed and drawn on one sheet. */
#ifndef CDL_EVAL_AUDIT_H
#define CDL_EVAL_AUDIT_H

#include <cjson/cJSON.h>

#include "api/cdl.h"
#include "util/error.h"

/* Prints the suspects of r as a ranked table, or adds them to o as "audit" (json). */
void audit_print(const cdl_detection_eval_result *r, const cdl_model *m, cJSON *o);

/* Writes one PNG at path: a tile per suspect, in rank order, 5 to a row, each the crop of its
 * image around the truth (green) and the detection (red, dashed for a missing label), scaled to
 * fit 160x160, under a caption "#RANK KIND". */
int audit_sheet_write(const cdl_detection_eval_result *r, const char *path, Error *e);

#endif
