/* The ONNX form of a detection layer's output (see detector_onnx.h). */
#include "layers/detector_onnx.h"

#include <stdio.h>

/* y = Sigmoid(x) * scale - (scale - 1) / 2 (the plain Sigmoid when scale is 1). */
static void scaled_logistic(OnnxGraph *g, const char *x, float scale, const char *y)
{
    if (scale == 1.0f) {
        onnx_node(g, "Sigmoid", 1, &x, y, 0, NULL);
        return;
    }
    char logistic[2 * ONNX_NAME_MAX], scaled[2 * ONNX_NAME_MAX], k[2 * ONNX_NAME_MAX],
        shift[2 * ONNX_NAME_MAX];
    snprintf(logistic, sizeof logistic, "%s.logistic", y);
    snprintf(scaled, sizeof scaled, "%s.scaled", y);
    snprintf(k, sizeof k, "%s.scale_x_y", y);
    snprintf(shift, sizeof shift, "%s.shift", y);
    onnx_scalar(g, k, scale);
    onnx_scalar(g, shift, 0.5f * (scale - 1));
    onnx_node(g, "Sigmoid", 1, &x, logistic, 0, NULL);
    onnx_node(g, "Mul", 2, (const char *[]){logistic, k}, scaled, 0, NULL);
    onnx_node(g, "Sub", 2, (const char *[]){scaled, shift}, y, 0, NULL);
}

void detector_export_onnx(const Layer *l, OnnxGraph *g, const DetectorActivations *a)
{
    const int64_t entries = a->classes + 5, cells = (int64_t)l->out_shape.h * l->out_shape.w;
    char in[ONNX_NAME_MAX], rows[ONNX_NAME_MAX], shape[ONNX_NAME_MAX], out_shape[ONNX_NAME_MAX];
    onnx_input_nchw(g, l, 0, in);
    onnx_name(rows, l, "entries");
    onnx_name(shape, l, "entries_shape");
    onnx_name(out_shape, l, "out_shape");
    onnx_int64s(g, shape, 4, (const int64_t[]){-1, a->anchors, entries, cells});
    onnx_int64s(g, out_shape, 4,
                (const int64_t[]){-1, l->out_shape.c, l->out_shape.h, l->out_shape.w});
    onnx_node(g, "Reshape", 2, (const char *[]){in, shape}, rows, 0, NULL);

    /* [N][anchors][entries][h w]: slices along axis 2, each with its activation */
    const char *const part_names[] = {"xy", "wh", "objectness", "classes"};
    const int64_t bounds[] = {0, 2, 4, 5, entries};
    char part[4][ONNX_NAME_MAX], active[4][ONNX_NAME_MAX + 8];
    for (int k = 0; k < 4; k++) {
        onnx_name(part[k], l, part_names[k]);
        onnx_slice(g, rows, 2, bounds[k], bounds[k + 1], part[k]);
        snprintf(active[k], sizeof active[k], "%s.out", part[k]);
    }
    scaled_logistic(g, part[0], a->scale_x_y, active[0]);
    snprintf(active[1], sizeof active[1], "%s", part[1]);
    onnx_node(g, "Sigmoid", 1, (const char *[]){part[2]}, active[2], 0, NULL);
    const OnnxAttr axis = onnx_attr_int("axis", 2);
    if (a->softmax_classes)
        onnx_node(g, "Softmax", 1, (const char *[]){part[3]}, active[3], 1, &axis);
    else
        onnx_node(g, "Sigmoid", 1, (const char *[]){part[3]}, active[3], 0, NULL);
    char joined[ONNX_NAME_MAX];
    onnx_name(joined, l, "activated");
    onnx_node(g, "Concat", 4, (const char *[]){active[0], active[1], active[2], active[3]}, joined,
              1, &axis);
    onnx_node(g, "Reshape", 2, (const char *[]){joined, out_shape}, onnx_output(g, l, 0), 0, NULL);
}
