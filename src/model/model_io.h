/* Checkpoints of a whole model: the cfg text, the tensor table, class names, training
 * progress and the slabs (parameters, state and, when training, the optimizer's state and the
 * EMA of the weights), stored in the checkpoint container (io/checkpoint_file.h).
 *
 * The blob holds, as float32: the parameter slab [n_params], the state slab [n_state], then,
 * when the header has an "optimizer" record {"kind": "sgd|adam|adamw", "floats": N, "steps":
 * "T"}, the optimizer's slab [N] (train/optimizer.h; older checkpoints flag SGD velocity
 * [n_params] with "has_velocity": true instead), then, when "ema_floats" is not 0, the EMA
 * shadow [n_params + n_state] (train/ema.h). */
#ifndef CDL_MODEL_IO_H
#define CDL_MODEL_IO_H

#include "core/net.h"
#include "train/model_meta.h"
#include "train/optimizer.h"

/* Writes atomically. opt adds the optimizer's state and the EMA; NULL leaves them out (a resume
 * then starts the optimizer afresh). */
int model_save(const char *path, const Net *net, const Optimizer *opt, const ModelMeta *meta,
               Error *e);

/* model_save as a TrainPlan.save_checkpoint (ctx unused). */
int model_save_checkpoint(void *ctx, const char *path, const Net *net, const Optimizer *opt,
                          const ModelMeta *meta, Error *e);

/* Rebuilds the net from the checkpoint's own cfg and loads its tensors. Without opt (inference)
 * the weights are the EMA's when the checkpoint has one, else the raw ones. With opt (training;
 * want_grads): the raw weights, and *opt set up by optimizer_init, then given the checkpoint's
 * optimizer state, step count and EMA where it has them; a checkpoint whose optimizer state is
 * of another kind than its cfg's optimizer= is refused. Free *opt with optimizer_free, even
 * after a failure. meta->names and meta->vocab are malloc'd: free with model_meta_free
 * (train/model_meta.h). */
int model_load(const char *path, Net *net, int want_grads, Optimizer *opt, ModelMeta *meta,
               Error *e);

/* model_load onto a backend (where): loaded on the host, then its weights, and with opt its
 * optimizer's state, EMA and step count, uploaded into a net built there from the checkpoint's
 * cfg. Fails as model_load does, or as net_build_on does there. */
int model_load_on(const char *path, NetPlacement where, Net *net, int want_grads, Optimizer *opt,
                  ModelMeta *meta, Error *e);

#endif
