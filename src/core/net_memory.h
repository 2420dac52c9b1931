/* The memory plan of a net's activation slab: when each layer's buffers (output, delta,
 * pre-activations, private state) are live during a pass, and where they go so that buffers
 * never live at the same time share memory (core/liveness.h). net_resize lays the slab out by it.
 *
 * The timeline is the steps of one training pass in the order net_forward and net_backward run
 * them: every layer's forward, then segment by segment (gradient checkpointing, core/net.h) the
 * segment's replayed forward and its layers' backward, last layer first. A buffer is live from
 * the step that writes it to the last step that reads it:
 *   out    its forward (and replay) to the last forward, replay or backward that reads it: its
 *          readers' forward, their backward unless LayerType.backward_ignores_inputs, its own
 *          backward when its activation is not linear or the family does not set
 *          backward_ignores_output; the last layer's output lives to the end;
 *   delta  from the backward of the last layer that reads the output (its first writer, where
 *          net_backward zeroes it; its own backward when none does) to its own backward; the
 *          last layer's, which the caller seeds, over the whole pass; frozen layers have none;
 *   pre    forward (and replay) to its backward; none when the activation runs in place
 *          (net_pre_in_place);
 *   state  forward (and replay) to its backward;
 *   work   its forward, its replay and its backward, each alone (layer_work_floats);
 *   kept   the whole pass, and so every pass: what a layer carries from one pass of a step to the
 *          next (layer_kept_floats) shares memory with nothing.
 * A net without gradients has only the forward steps. A net that can generate token by token
 * (net_can_forward_at: every layer has forward_at, which reads what the forward left, and no
 * gradient checkpointing) keeps every output, pre-activation and state buffer to the end. [net]
 * memory_plan=0 makes every buffer live over the whole pass: nothing is shared and no activation
 * runs in place. */
#ifndef CDL_NET_MEMORY_H
#define CDL_NET_MEMORY_H

#include "core/liveness.h"
#include "core/net.h"

/* The buffers of layer i are buffers[i * NET_BUFFERS + kind]. */
enum {
    NET_BUF_OUT,
    NET_BUF_DELTA,
    NET_BUF_PRE,
    NET_BUF_STATE_FLOATS,
    NET_BUF_STATE_BYTES,
    NET_BUF_WORK,
    NET_BUF_KEPT,
    NET_BUFFERS
};

/* Buffers start at multiples of this many bytes (a cache line). */
#define NET_BUFFER_ALIGN 64

/* 1 when layer l's activation runs in place, l->pre being l->out: the plan is on and nothing
 * reads the pre-activation values after the forward (a net without gradients, a frozen layer, or
 * an activation whose derivative reads only its output: relu, leaky, logistic, tanh). */
int net_pre_in_place(const Net *net, const Layer *l);

/* Plans the slab of a mini-batch of batch samples (the layers' state measured into
 * Layer.state_floats, state_bytes, work_floats and kept_floats): buffers[n_layers * NET_BUFFERS]
 * receive each buffer's size and offset (bytes 0: the buffer does not exist), *bytes the slab's
 * size. buffers is the caller's. Fails only when out of memory. */
int net_memory_plan(const Net *net, int batch, LiveBuffer *buffers, size_t *bytes, Error *e);

#endif
