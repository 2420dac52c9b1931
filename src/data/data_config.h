/* The darknet-style `.data` file: class count, datasets and their kinds, class names, validation
   split, and opening the sets it names. */
#ifndef CDL_DATA_CONFIG_H
#define CDL_DATA_CONFIG_H

#include "data/dataset.h"
#include "data/source.h"
#include "util/error.h"

/* Keys (one `key=value` per line; lines starting with # or ; and text after a whitespace-led
   # or ; are comments):
     classes=N            number of classes (may be omitted when names= is given, when train= is
                          an image folder or CIFAR)
     train=PATH           training set, any of the kinds below
     train_labels=PATH    training labels (IDX images only)
     valid=PATH           validation set; valid_labels=PATH its labels (IDX)
     names=PATH           one class name per line
     labels=PATH          alias of names=; when both are given (darknet's imagenet .data), labels=
                          holds the strings a darknet list's paths are matched against and names=
                          the names shown, class by class
     type=KIND            forces the kind of train= and valid=: cifar10, cifar100, folder, list,
                          csv, idx or digits (idx and digits both mean dataset_load's formats), or
                          text (plain text for sequence nets: data/text_data.h; no classes), or
                          pairs (paired text for sequence-to-sequence nets, read as text:
                          source<TAB>target lines, or with train_target= two aligned files;
                          data/text_pairs.h), or coco (a COCO-style JSON of detection labels:
                          data/source_coco.h)
     train_target=PATH    type=pairs: the targets, line by line, of the sources in train=
     valid_target=PATH    type=pairs: the same for valid=
     tokens=char|byte|bpe type=text or pairs: tokens are characters (UTF-8 code points), bytes, or
                          byte-level BPE tokens learned from the training text [char]
     vocab_size=N         tokens=bpe (required there): the BPE's tokens, 256 bytes plus N-256
                          merges (DATA_BPE_MIN_VOCAB..DATA_BPE_MAX_VOCAB; fewer when the text
                          runs out of pairs to merge)
     bucket=N             type=pairs: every training batch draws its pairs from one bucket of N
                          pairs of similar length (data/text_pairs.h) [0: from all the pairs]
     valid_split=F        without valid=, hold out this fraction of train (0 <= F < 1): the tail
                          for in-memory sets (IDX, digits, CIFAR); for image files about F of
                          each class, picked by split_seed (source_files_split)
     backup=, top=        darknet keys, accepted and ignored
   Without type=, a dataset's kind follows its path: a directory is CIFAR when it holds the
   downloaded batches (cifar_detect) and else an image folder (root/<class>/<image>); *.txt and
   *.list are darknet lists (names= required); *.json is COCO-style JSON (detection nets only;
   class names from its categories unless names= gives them; no valid_split); *.csv is a CSV of
   path,label lines when its first field is not a number, else digits pixels; *.bin (a
   comma-separated list of batches allowed) is CIFAR-10 or -100 by file name or size; anything else
   is IDX or digits CSV by content. Class names: from names= when given, else the train folder's
   class folders, else "0".."N-1". A dataset may also be named without a .data file
   (data_config_load tells them apart by content, except that a *.data name is always read as one):
     a directory          CIFAR batches (the test batch validates); else DIR/train with DIR/val
                          (or DIR/valid) when there are such folders, each an image folder;
                          else one image folder with valid_split=DATA_FOLDER_VALID_SPLIT
     a text file          (not starting with a .data key) type=text, tokens=char, train=FILE,
                          valid_split=DATA_TEXT_VALID_SPLIT; a text whose lines all name images
                          is refused (a darknet list needs names=)
   anything else (an image, a cfg, a checkpoint, a binary file) is refused saying what it is.
   Relative paths are tried as given (from the current directory, as darknet does), then
   relative to the .data file's directory; paths are stored resolved (each part of a comma list
   separately). */
/* The validation shares of a dataset named without a .data file. */
#define DATA_FOLDER_VALID_SPLIT 0.1f
#define DATA_TEXT_VALID_SPLIT 0.05f
/* The split seed data_config_load sets: the commands' default --seed. */
#define DATA_SPLIT_SEED 1

typedef enum DataKind {
    DATA_ARRAYS,   /* IDX images + labels or digits CSV, loaded by dataset_load */
    DATA_CIFAR10,  /* CIFAR-10 binary batches, in memory */
    DATA_CIFAR100, /* CIFAR-100 binary batches (fine labels), in memory */
    DATA_FOLDER,   /* image folder, decoded when read */
    DATA_LIST,     /* darknet list of image paths, decoded when read */
    DATA_CSV,      /* CSV of path,label lines, decoded when read */
    DATA_TEXT,     /* plain text, read by data/text_data.h */
    DATA_COCO,     /* COCO-style JSON detection labels (data/source_coco.h), decoded when read */
} DataKind;

enum { DATA_BPE_MIN_VOCAB = 256, DATA_BPE_MAX_VOCAB = 1 << 20 };

typedef struct DataConfig {
    char *path; /* the .data file */
    int classes;
    char *train, *train_labels, *valid, *valid_labels, *names_path; /* NULL when absent */
    char *labels_path;                 /* labels= when names= is given too, else NULL */
    char *type;                        /* type= or NULL */
    int pairs;                         /* type=pairs: train_kind DATA_TEXT holding paired text */
    char *train_target, *valid_target; /* type=pairs: the targets' files, NULL for TSV */
    DataKind train_kind, valid_kind;
    float valid_split;
    /* the seed of an image-file valid_split (training's --seed; DATA_SPLIT_SEED when loaded) */
    uint64_t split_seed;
    int tokens_bytes; /* type=text: 1 for tokens=byte, 0 for char */
    int tokens_bpe;   /* type=text: 1 for tokens=bpe (vocab_size tokens) */
    int vocab_size;   /* vocab_size=, 0 when absent */
    int bucket;       /* type=pairs: bucket=, the pairs of a length bucket; 0: none */
    char **names; /* [n_names]; "0".."classes-1" when neither names= nor class folders give them */
    int n_names;  /* == classes */
    char **match_names; /* [n_names] labels= strings when both labels= and names= are given */
    /* 1: the sets feed a detection net (set by the caller before data_config_open_sources): a
       darknet list's samples are read with their label files' boxes, and their paths need not
       hold class names (source_list_open with names NULL). */
    int boxes;
} DataConfig;

/* Parses path, tells the kinds of train= and valid= and loads the class names. Errors (code
   CDL_EUSAGE) name FILE:LINE: unknown key (listing the valid ones), bad value, duplicate key,
   names count != classes, a darknet list without names=, CIFAR batches of unknown variant, a
   file that is no dataset; a missing file is CDL_ERUNTIME naming it. On failure dc is left
   zeroed. */
int data_config_load(const char *path, DataConfig *dc, Error *e);
/* data_config_load for a caller that lists every problem (`cdl check`): a names= or labels= file
 * that fails to load (missing, unreadable, the wrong count) is reported in *names_problem (code
 * CDL_OK when none) while the rest loads, the classes named by number, where classes= gives their
 * count; without it the load fails as data_config_load does. */
int data_config_load_listing(const char *path, DataConfig *dc, Error *names_problem, Error *e);

/* Frees everything and zeroes dc; safe on a zeroed DataConfig. */
void data_config_free(DataConfig *dc);

/* Fails unless dc names a train= set of images (not type=text): what data_config_open_sources
   checks before it opens anything. */
int data_config_check_image_sets(const DataConfig *dc, Error *e);

/* Opens the train and valid sample sources, whatever their kind: valid from valid=, else split
   off train by valid_split (see above; the same split_seed, the same split), else an empty source
   (n = 0, no read, train's shape). An image-folder valid= set maps its class folders by name onto
   train's class folders (or onto names= when train is not a folder). Checks labels < classes and,
   for in-memory sets, that both share one sample shape; both get classes = dc->classes. Errors
   start with the .data path. On failure both are left zeroed. A darknet list's ambiguous labels are
   left for the caller to report (source_ambiguous_labels in data/source_files.h). */
int data_config_open_sources(const DataConfig *dc, SampleSource *train, SampleSource *valid,
                             Error *e);

/* Loads the train set and the valid set into memory, for in-memory kinds only (IDX, digits,
   CIFAR; image files are CDL_EUSAGE: use data_config_open_sources): from valid=, else the
   valid_split tail of train, else an empty set (n = 0). Checks every label < classes and that
   both sets share one sample shape; both get classes = dc->classes. On failure both are left
   zeroed. */
int data_config_load_sets(const DataConfig *dc, Dataset *train, Dataset *valid, Error *e);

#endif
