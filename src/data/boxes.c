/* darknet's label files for detection: where an image's lies, reading and checking its lines,
 * and moving its boxes as the image is framed and flipped. */
#include "data/boxes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/file.h"

BoxPlacement box_placement_identity(void)
{
    return (BoxPlacement){1.0f, 1.0f, 0.0f, 0.0f, 0};
}

/* The start of the last occurrence of needle in s, or NULL. */
static const char *last_occurrence(const char *s, const char *needle)
{
    const char *last = NULL;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
        last = p;
    return last;
}

/* path with the extension of its file name (from its last '.') replaced by .txt, or .txt
 * appended when it has none (malloc'd). */
static char *with_txt_extension(const char *path)
{
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    const size_t stem = dot && (!slash || dot > slash) ? (size_t)(dot - path) : strlen(path);
    char *out = malloc(stem + sizeof ".txt");
    if (out) {
        memcpy(out, path, stem);
        strcpy(out + stem, ".txt");
    }
    return out;
}

char *boxes_label_path(const char *image_path, int *found)
{
    char *beside = with_txt_extension(image_path);
    if (!beside)
        return NULL;
    const char *images = last_occurrence(image_path, "/images/");
    const char *jpeg = last_occurrence(image_path, "/JPEGImages/");
    const int jpeg_last = jpeg && (!images || jpeg > images);
    const char *cut = jpeg_last ? jpeg : images;
    *found = access(beside, F_OK) == 0;
    if (!cut)
        return beside;
    /* The folder comes before the file name, so beside holds the same text up to it. */
    const size_t head = (size_t)(cut - image_path);
    const char *tail = beside + head + strlen(jpeg_last ? "/JPEGImages/" : "/images/");
    char *moved = malloc(head + strlen("/labels/") + strlen(tail) + 1);
    if (!moved) {
        free(beside);
        return NULL;
    }
    memcpy(moved, beside, head);
    strcpy(moved + head, "/labels/");
    strcat(moved, tail);
    const int moved_found = access(moved, F_OK) == 0;
    if (moved_found || !*found) { /* a missing file is named where darknet looks first */
        *found = moved_found;
        free(beside);
        return moved;
    }
    free(moved);
    return beside;
}

static const char *const field_names[TRUTH_FLOATS] = {"class", "x", "y", "w", "h"};

/* Parses one line of a label file into box (x, y, w, h, class); *fields = its field count (0:
 * a blank line, box untouched). */
static int parse_line(char *text, int classes, const char *path, int line, float *box, int *fields,
                      Error *e)
{
    char *tokens[TRUTH_FLOATS], *save = NULL;
    int count = 0;
    for (char *t = strtok_r(text, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save))
        if (count++ < TRUTH_FLOATS)
            tokens[count - 1] = t;
    *fields = count;
    if (count == 0)
        return CDL_OK;
    if (count != TRUTH_FLOATS)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: %d fields, expected 5: class x y w h (x, y the box's centre; all "
                         "but the class relative to the image)",
                         path, line, count);
    char *end;
    const long cls = strtol(tokens[0], &end, 10);
    if (end == tokens[0] || *end || cls < 0 || cls >= classes)
        return error_set(e, CDL_EUSAGE,
                         "%s:%d: class '%s' is not a class id (0..%d for classes=%d)", path, line,
                         tokens[0], classes - 1, classes);
    for (int k = 0; k < 4; k++) {
        const char *t = tokens[k + 1];
        const float v = strtof(t, &end);
        const int centre = k < 2;
        if (end == t || *end)
            return error_set(e, CDL_EUSAGE, "%s:%d: %s '%s' is not a number", path, line,
                             field_names[k + 1], t);
        if (!(v > 0 && (centre ? v < 1 : v <= 1))) /* NaN fails too */
            return error_set(e, CDL_EUSAGE, "%s:%d: %s = %s is outside %s", path, line,
                             field_names[k + 1], t,
                             centre ? "(0, 1): a box's centre must lie inside the image"
                                    : "(0, 1]: a box's size is a positive part of the image's");
        box[TRUTH_X + k] = v;
    }
    box[TRUTH_CLASS] = (float)cls;
    return CDL_OK;
}

int boxes_read(const char *label_path, int classes, float *truth, int max_boxes, int *n, Error *e)
{
    memset(truth, 0, (size_t)max_boxes * TRUTH_FLOATS * sizeof *truth);
    *n = 0;
    FILE *f = fopen(label_path, "r");
    if (!f)
        return error_set(e, CDL_ERUNTIME, "%s: cannot open label file: %s", label_path,
                         strerror(errno));
    char *buf = NULL;
    size_t cap = 0;
    int st = CDL_OK;
    for (int line = 1; !st && getline(&buf, &cap, f) >= 0; line++) {
        float box[TRUTH_FLOATS];
        int fields;
        st = parse_line(buf + (line == 1 ? file_bom_bytes(buf) : 0), classes, label_path, line, box,
                        &fields, e);
        if (!st && fields && *n < max_boxes)
            memcpy(truth + (size_t)(*n)++ * TRUTH_FLOATS, box, sizeof box);
    }
    if (!st && ferror(f))
        st = error_set(e, CDL_ERUNTIME, "%s: cannot read label file", label_path);
    free(buf);
    fclose(f);
    if (st) {
        memset(truth, 0, (size_t)max_boxes * TRUTH_FLOATS * sizeof *truth);
        *n = 0;
    }
    return st;
}

static float clamp(float v, float lo, float hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

void boxes_place(float *truth, int max_boxes, const BoxPlacement *p)
{
    const BoxClip frame = {0, 0, 1, 1};
    boxes_place_within(truth, max_boxes, p, &frame);
}

void boxes_place_within(float *truth, int max_boxes, const BoxPlacement *p, const BoxClip *clip)
{
    int kept = 0;
    for (int i = 0; i < max_boxes && truth[(size_t)i * TRUTH_FLOATS + TRUTH_X] != 0; i++) {
        const float *b = truth + (size_t)i * TRUTH_FLOATS;
        float x = b[TRUTH_X] * p->scale_x + p->offset_x, w = b[TRUTH_W] * p->scale_x;
        float y = b[TRUTH_Y] * p->scale_y + p->offset_y, h = b[TRUTH_H] * p->scale_y;
        if (p->flip)
            x = 1.0f - x;
        /* a box inside the clip keeps its values exactly; one reaching past is clipped */
        if (x - w / 2 < clip->left || x + w / 2 > clip->right) {
            const float left = clamp(x - w / 2, clip->left, clip->right),
                        right = clamp(x + w / 2, clip->left, clip->right);
            x = (left + right) / 2;
            w = right - left;
        }
        if (y - h / 2 < clip->top || y + h / 2 > clip->bottom) {
            const float top = clamp(y - h / 2, clip->top, clip->bottom),
                        bottom = clamp(y + h / 2, clip->top, clip->bottom);
            y = (top + bottom) / 2;
            h = bottom - top;
        }
        if (w < 0.001f || h < 0.001f)
            continue;
        float *to = truth + (size_t)kept++ * TRUTH_FLOATS;
        to[TRUTH_CLASS] = b[TRUTH_CLASS];
        to[TRUTH_X] = x;
        to[TRUTH_Y] = y;
        to[TRUTH_W] = w;
        to[TRUTH_H] = h;
    }
    memset(truth + (size_t)kept * TRUTH_FLOATS, 0,
           (size_t)(max_boxes - kept) * TRUTH_FLOATS * sizeof *truth);
}
