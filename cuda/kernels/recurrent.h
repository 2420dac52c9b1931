/* The recurrent cells' element-wise steps on the device (recurrent.cu): C entry points, float32.
 * G gates and S saved values per hidden unit (rnn 1 and 0, lstm 4 and 2, gru 3 and 1). */
#ifndef CDL_CUDA_RECURRENT_H
#define CDL_CUDA_RECURRENT_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The cells (layers/recurrent.h's CellKind, in its order). */
enum { RECURRENT_RNN, RECURRENT_LSTM, RECURRENT_GRU };

/* Step t of every sample: gates row t (holding W_ih x_t) gets the biases and hh (W_hh h_{t-1},
 * NULL at t = 0), then the lstm's and gru's gate values, saved values and h_t (out row t); the
 * rnn's a_t, whose activation the caller applies. saved NULL for the rnn. fused (lstm): tanh taken
 * as the CPU's fused lstm takes it, 2 sigmoid(2x) - 1, else tanhf. */
cudaError_t cuda_recurrent_step_forward(int kind, int fused, float *gates, const float *hh,
                                        const float *b_ih, const float *b_hh, float *saved,
                                        float *out, int batch, int T, int H, int G, int S, int t,
                                        cudaStream_t stream);
/* Step t of the backward through time: dL/dh_t = delta row t + carry; gates row t becomes
 * dL/da_t (lstm, gru; dhh row t dL/d(W_hh h_{t-1}) for the gru), carry the part of dL/dh_{t-1}
 * that does not pass W_hh, dc the lstm's dL/dc_{t-1}; the rnn writes dL/dh_t into dh (its
 * activation's backward and cuda_recurrent_store follow). */
cudaError_t cuda_recurrent_step_backward(int kind, float *gates, float *dhh, const float *saved,
                                         const float *out, const float *delta, float *dh,
                                         float *carry, float *dc, int batch, int T, int H, int G,
                                         int S, int t, cudaStream_t stream);
/* gates row t of every sample (G = 1) = dh [batch][H]. */
cudaError_t cuda_recurrent_store(float *gates, const float *dh, int batch, int T, int H, int t,
                                 cudaStream_t stream);
/* h_prev [batch][T][H] = out shifted one step later, zeros at t = 0. */
cudaError_t cuda_recurrent_shift(float *h_prev, const float *out, int batch, int T, int H,
                                 cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
