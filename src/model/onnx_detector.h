/* The graph outputs of a detector's ONNX export (a net with [yolo] or [region] layers).
 *
 * Raw heads (the default): one output per detection layer, named "<family><index>" ("yolo16",
 * "yolo23" in yolov3-tiny), [N][anchors (classes + 5)][h][w], the layer's own output: x, y,
 * objectness and classes after darknet's logistic (softmax for a [region] softmax=1), x, y with
 * scale_x_y, w and h as the convolution gives them. That is darknet's l.output and what cdl
 * decodes, so the file is checked against `cdl detect` with nothing left out.
 *
 * Decoded (decode set): the heads' boxes appended as two outputs, every anchor of every cell of
 * every head, in layer order, then anchor, then cell row by row:
 *   boxes  [N][B][4]  centre x, centre y, width, height in pixels of the net input
 *   scores [N][B][C]  objectness x class probability (darknet's prob, before any threshold)
 * with B = sum over heads of anchors x h x w. Thresholds and NMS stay outside the graph
 * (ONNX NonMaxSuppression reads these boxes with center_point_box=1). */
#ifndef CDL_ONNX_DETECTOR_H
#define CDL_ONNX_DETECTOR_H

#include "core/onnx_graph.h"

/* Declares net's detector outputs in g, after onnx_build_graph (see above). A net without a
 * detection layer adds nothing, or fails with CDL_EUSAGE when decode is asked for. */
int onnx_detector_outputs(const Net *net, OnnxGraph *g, int decode, Error *e);

#endif
