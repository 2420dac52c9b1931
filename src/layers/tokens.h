/* [tokens]: a vision transformer's input tokens from a patch embedding's feature map (layers/
 * tokens.c has the meaning, backend/cpu/tokens.c the CPU kernels). */
#ifndef CDL_TOKENS_H
#define CDL_TOKENS_H

#include "core/layer.h"

typedef struct Tokens {
    int class_token; /* 1: a learned token comes first */
    int positional;  /* 1: a learned embedding is added to every token */
    int channels;    /* C: the map's channels, each token's features */
    int patches;     /* P = h * w: the map's positions */
    int token_param; /* index in l->params of "class_token" [C], -1 without */
    int pos_param;   /* index in l->params of "positional" [T][C], -1 without */
} Tokens;

#endif
