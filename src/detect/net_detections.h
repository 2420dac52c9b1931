/* The detections of a net whose outputs come from [yolo] or [region] layers: decoded from every
 * such layer after a forward, mapped onto the image, then NMS as the last [yolo] layer says, or
 * IoU NMS after a [region] (darknet's get_network_boxes and do_nms_sort / diounms_sort). */
#ifndef CDL_NET_DETECTIONS_H
#define CDL_NET_DETECTIONS_H

#include "core/net.h"
#include "data/augment.h"
#include "detect/detection.h"

/* 1 when l is a [yolo] or [region] layer. */
int layer_is_detector(const Layer *l);
/* The net's last [yolo] or [region] layer (a [yolo]'s nms_kind and beta_nms are what NMS
 * follows), or NULL when the net has none (not a detector). */
const Layer *net_last_detector(const Net *net);
/* classes= of a [yolo] or [region] layer. */
int detector_classes(const Layer *l);

/* The image a sample came from and how it was framed to the net input. */
typedef struct DetectFrame {
    int image_w, image_h;
    int letterbox; /* 1: fitted inside keeping its aspect ([net] letterbox=1), 0: resized */
} DetectFrame;

/* CDL_OK when aug's eval framing is one detections map back through: letterbox or a plain
 * resize; CDL_EUSAGE for center_crop (it cuts boxes off). */
int detect_check_framing(const AugmentConfig *aug, Error *e);

/* After net_forward: list (initialised for the classes of net_last_detector, emptied first) gets
 * sample b's detections above thresh from every [yolo] and [region] layer in layer order, their
 * boxes relative to frame's image; then, when nms > 0, NMS at that threshold. */
int net_detections(const Net *net, int b, const DetectFrame *frame, float thresh, float nms,
                   DetectionList *list, Error *e);

#endif
