/* Label audit: a dataset's truths and a detector's detections ranked by how likely a label is
 * wrong. Matches are at IoU >= 0.5 within an image; `confident` is the score a detection needs to
 * accuse a label. The detector's per-truth loss is read as -log p, p the best score of the truth's
 * own class among the detections matching it (0 when none does); ranking by 1 - p is ranking by
 * that loss. Three kinds of suspect, each with a suspicion in [0, 1]:
 *   AUDIT_CLASS    the class looks wrong: a confident detection of another class matches the
 *                  truth and outscores p. Suspicion: its score x (1 - p).
 *   AUDIT_BOX      the box looks off: no confident detection of the truth's class matches it, but
 *                  the best-overlapping one of that class (0 < IoU < 0.5) is confident. Suspicion:
 *                  its score x (1 - IoU).
 *   AUDIT_MISSING  a label looks missing: a confident detection that matches no truth of any class
 *                  and is no other suspect's evidence (of such detections overlapping at IoU >= 0.5
 *                  only the highest scoring one). Suspicion: its score x (1 - its best IoU). */
#ifndef CDL_DET_AUDIT_H
#define CDL_DET_AUDIT_H

#include "detect/detection_metrics.h"

typedef enum { AUDIT_CLASS, AUDIT_BOX, AUDIT_MISSING } AuditKind;

typedef struct AuditSuspect {
    AuditKind kind;
    float suspicion;
    int image;
    int truth;     /* index into the truths; -1 for AUDIT_MISSING */
    int detection; /* index into the detections: the evidence */
    float iou;     /* of the truth and the detection (AUDIT_MISSING: the best with any truth) */
} AuditSuspect;

/* *out (malloc'd, free() it) = the *n suspects among truths [n_truths] and detections [n_found],
 * both in image order (as evaluate_detection gathers them), highest suspicion first (ties in
 * image order, then kind). CDL_ERUNTIME when out of memory. */
int det_audit(const DetBox *truths, int n_truths, const DetBox *found, int n_found, float confident,
              AuditSuspect **out, int *n, Error *e);

#endif
