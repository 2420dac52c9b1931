/* The detection layers' per-class keys, as darknet reads them: map=FILE (read_map: the class a
 * truth box of each class is learned as, [yolo] and [region]) and counters_per_class=N1,N2,..
 * (AlexeyAB's get_classes_multipliers: the weight of each class in [yolo]'s loss). The tables are
 * fixed arrays in the layer's configuration, which the GPU's kernels take by value. */
#ifndef CDL_CLASS_KEYS_H
#define CDL_CLASS_KEYS_H

#include "io/cfg.h"
#include "util/error.h"

/* The most classes a layer with map= or counters_per_class= may have. */
#define CLASS_TABLE_MAX 128

/* cdl's key for map='s table written out: class_map=C0,C1,.. (C_k the class truth class k is
 * learned as). */
#define CLASS_MAP_KEY "class_map"

/* map=FILE, FILE a text file whose line k + 1 holds the class (an integer in [0, classes)) that a
 * truth box of class k is learned as; lines past the classes' are not read. Once read, the entry
 * becomes class_map=C0,.. (the file's table), so that the cfg's text, and with it a checkpoint,
 * needs no side file; class_map= given instead is read as that table (both: refused). Absent:
 * *has_map 0 and map the identity. A file that cannot be read, has fewer lines than classes or a
 * line that is not such a class is CDL_EUSAGE naming the cfg's line and the file's. */
int class_map_parse(const Cfg *cfg, CfgSection *s, int classes, int *map, int *has_map, Error *e);

/* counters_per_class=N1,..,N_classes (positive): multipliers[k] = max N / N_k, at most max_delta.
 * Absent: *has 0 and every multiplier 1. */
int class_multipliers_parse(const Cfg *cfg, CfgSection *s, int classes, float max_delta,
                            float *multipliers, int *has, Error *e);

#endif
