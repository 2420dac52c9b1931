/* What src/cdl_eval.c shares with the other files that implement cdl.h (internal: not part of
 * the public API, and not for src/cli). */
#ifndef CDL_EVAL_H
#define CDL_EVAL_H

#include "cdl.h"
#include "train/evaluate.h"

/* Moves r's figures and confusion matrix into out (r is left empty). */
void api_eval_result_take(EvalResult *r, cdl_eval_result *out);

#endif
