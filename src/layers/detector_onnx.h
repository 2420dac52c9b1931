/* The ONNX form of a detection layer's output ([yolo], [region]): the activations darknet applies
 * to the convolution's output, per anchor and cell.
 *
 *   in, out [N][anchors (classes + 5)][h][w]; entries per anchor: x, y, w, h, objectness, classes
 *   out: x, y = scale_x_y logistic(in) - (scale_x_y - 1)/2; w, h as they come in; objectness
 *        logistic(in); classes softmax over the classes (softmax_classes) or logistic each */
#ifndef CDL_DETECTOR_ONNX_H
#define CDL_DETECTOR_ONNX_H

#include "core/onnx_graph.h"

typedef struct DetectorActivations {
    int anchors, classes;
    float scale_x_y;     /* 1: the plain logistic on x, y */
    int softmax_classes; /* 1: softmax over the classes; 0: logistic each */
} DetectorActivations;

/* Appends l's output to g: its input reshaped to [N][anchors][classes + 5][h w], the entries
 * sliced ("layer<i>.xy", ".wh", ".objectness", ".classes"), activated and concatenated back. */
void detector_export_onnx(const Layer *l, OnnxGraph *g, const DetectorActivations *a);

#endif
