/* A zoo net's tensors to and from a safetensors file under torchvision's state-dict names
 * (model/torchvision_names.h): how pretrained PyTorch weights come in and go back. */
#ifndef CDL_SAFETENSORS_WEIGHTS_H
#define CDL_SAFETENSORS_WEIGHTS_H

#include "core/net.h"
#include "model/finetune.h"

/* Loads every tensor of net from the safetensors file at path (F32, F16 or BF16, converted to
 * float32; num_batches_tracked ignored). Every name and shape is checked before anything is
 * copied: tensors the file lacks, tensors the net does not have, shapes that differ and
 * non-float dtypes are listed (the first few of each) in one CDL_EUSAGE message naming the
 * file, and nothing is loaded. The one exception is a deliberate head change: when only the
 * last layer with parameters (fc, classifier.N) differs in shape, that layer keeps its initial
 * values and is reported in m as skipped ("68 [connected] (shape 10x512 vs 1000x512)", cfg vs
 * file); m->loaded counts the layers loaded. Free m with weights_match_free, even after a
 * failure. */
int safetensors_load_net(Net *net, const char *path, WeightsMatch *m, Error *e);

/* Writes net's tensors to path (atomically) as F32 under torchvision's names, in torch's
 * state-dict order, each batch norm's num_batches_tracked as an I64 0, with
 * __metadata__ {"format": "pt"}: what torch's load_state_dict takes. */
int safetensors_save_net(const Net *net, const char *path, Error *e);

#endif
