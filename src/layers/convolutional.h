/* The convolutional layer's knobs and state for tests (layers/convolutional.c): images per gemm,
 * chained outputs. */
#ifndef CDL_CONVOLUTIONAL_H
#define CDL_CONVOLUTIONAL_H

#include "core/layer.h"

/* From the next resize, l (a [convolutional] layer; others are left alone) puts images images side
 * by side in one gemm where it can (at most its thread's share of the batch); 1 runs image by
 * image, 0 (the default) chooses from the map size. */
void conv_set_images_per_gemm(Layer *l, int images);

#endif
