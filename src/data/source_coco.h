/* Detection sets in a COCO-style JSON file: `images` (id, file_name, width, height),
 * `annotations` (image_id, category_id, bbox [x, y, w, h] in pixels from the top-left corner,
 * iscrowd) and `categories` (id, name), read with cJSON into a sample source whose boxes are the
 * annotations, in darknet's truth layout (data/boxes.h). */
#ifndef CDL_SOURCE_COCO_H
#define CDL_SOURCE_COCO_H

#include "data/source.h"

/* The names of json_path's categories in the file's order, which is their class order (category
 * i is class i): *names malloc'd, each name too. A category without an integer id or a string
 * name, a repeated id, or no category at all is CDL_EUSAGE naming the file and categories[i]. */
int coco_category_names(const char *json_path, char ***names, int *n, Error *e);

/* Opens json_path as a detection source of `classes` classes (its category count must be that):
 * the images in the file's order, each file_name resolved as a darknet list's paths are (as given,
 * else relative to the JSON's directory); every label 0; read_boxes gives an image's annotations
 * in the file's order, bbox [x, y, w, h] becoming the box of centre ((x + w/2) / width,
 * (y + h/2) / height) and size (w / width, h / height), its class the category's index. iscrowd=1
 * annotations are skipped (crowd regions are no object boxes; darknet's COCO labels leave them
 * out). Every annotation is checked when the file is opened, by the rules darknet label lines
 * follow (boxes_read): an unknown image_id or category_id, a bbox that is not four finite
 * numbers, w or h <= 0, a centre outside (0, 1) or a size above 1 of the image is CDL_EUSAGE naming
 * FILE: annotations[i] (id N) and the field; so are images without a positive integer width and
 * height, a string file_name or a unique id. A decoded image of another size than the file says is
 * CDL_ERUNTIME when read. */
int source_coco_open(SampleSource *s, const char *json_path, int classes, Error *e);

#endif
