/* The darknet-style `.data` file: class count, dataset paths, class names, validation split. */
#ifndef CDL_DATA_CONFIG_H
#define CDL_DATA_CONFIG_H

#include "data/dataset.h"
#include "util/error.h"

/* Keys (one `key=value` per line; lines starting with # or ; and text after a whitespace-led
   # or ; are comments):
     classes=N            number of classes (may be omitted when names= is given)
     train=PATH           training images (IDX or CSV, .gz or raw)
     train_labels=PATH    training labels (IDX images only)
     valid=PATH           validation images; valid_labels=PATH their labels
     names=PATH           one class name per line (alias: labels=)
     valid_split=F        without valid=, hold out this tail fraction of train (0 <= F < 1)
     backup=, top=        darknet keys, accepted and ignored
   Relative paths are tried as given (from the current directory, as darknet does), then
   relative to the .data file's directory; paths are stored resolved. */
typedef struct DataConfig {
    char *path; /* the .data file */
    int classes;
    char *train, *train_labels, *valid, *valid_labels, *names_path; /* NULL when absent */
    float valid_split;
    char **names; /* [n_names]; "0".."classes-1" when names= is absent */
    int n_names;  /* == classes */
} DataConfig;

/* Parses path and loads the class names. Errors (code CDL_EUSAGE) name FILE:LINE: unknown key
   (listing the valid ones), bad value, duplicate key, names count != classes; a missing .data
   file is CDL_EUSAGE naming it. On failure dc is left zeroed. */
int data_config_load(const char *path, DataConfig *dc, Error *e);

/* Frees everything and zeroes dc; safe on a zeroed DataConfig. */
void data_config_free(DataConfig *dc);

/* Loads the train set and the valid set: from valid=, else the valid_split tail of train, else
   an empty set (n = 0). Checks every label < classes and that both sets share one sample shape;
   both get classes = dc->classes. On failure both are left zeroed. */
int data_config_load_sets(const DataConfig *dc, Dataset *train, Dataset *valid, Error *e);

#endif
