// The element-wise steps of [rnn], [lstm] and [gru] on the device, float32, as
// backend/cpu/recurrent.c's cells compute them, between the cuBLAS products of cuda/recurrent.c:
// a thread per (sample, hidden unit) of one time step, reading the unit's gate values; the rnn's
// activation runs apart (cuda_activation_forward/backward), these kernels only add its terms and
// route its gradient.
//   gates, dhh: (batch, T, G*H), row (b, t) at (b T + t) G H   saved: (batch, T, S*H)
//   out, delta: (batch, T, H)   hh: (batch, G*H) W_hh h_{t-1} of the step   dh, carry, dc: (batch,
//   H)
#include "recurrent.h"

#include "launch.h"

__device__ __forceinline__ float recurrent_sigmoid(float x)
{
    return 1.0f / (1.0f + expf(-x));
}

// tanh as the CPU's fused lstm takes it (backend/cpu/lstm_fused.c's gate_tanh): 2 sigmoid(2x) - 1,
// within ~2e-7 of tanh (absolute), the same formula so that its rounding near 0 is the same too.
__device__ __forceinline__ float recurrent_gate_tanh(float x, int fused)
{
    return fused ? 2.0f / (1.0f + expf(-2.0f * x)) - 1.0f : tanhf(x);
}

// Step t: gates row t holds W_ih x_t; hh is NULL at t = 0 (the zero state), as are the previous
// saved values and h_{t-1}. rnn: gates = a_t (h_t = act(a_t) follows); lstm: i, f, g, o and saved
// c_t, tanh(c_t), h_t (fused: tanh as the CPU's fused lstm); gru: r, z, n and saved
// W_hn h_{t-1} + b_hn, h_t.
__global__ void recurrent_step_forward_kernel(int kind, int fused, float *gates, const float *hh,
                                              const float *b_ih, const float *b_hh, float *saved,
                                              float *out, int batch, int T, int H, int G, int S,
                                              int t)
{
    const int n = batch * H;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const int b = i / H, j = i % H;
        const size_t row = (size_t)b * T + t;
        float *a = gates + row * G * H;
        const float *hb = hh ? hh + (size_t)b * G * H : NULL;
        float *h = out + row * H;
        const float h_prev = t > 0 ? h[j - H] : 0.0f;
        float *s = saved ? saved + row * S * H : NULL;
        const float *s_prev = saved && t > 0 ? s - (size_t)S * H : NULL;
        const int add_gates = kind == RECURRENT_GRU ? 2 : G;
        for (int k = 0; k < add_gates; k++) {
            const int at = k * H + j;
            a[at] += b_ih[at] + (hb ? hb[at] : 0.0f) + b_hh[at];
        }
        if (kind == RECURRENT_LSTM) {
            const float in = recurrent_sigmoid(a[j]), f = recurrent_sigmoid(a[H + j]);
            const float g = recurrent_gate_tanh(a[2 * H + j], fused);
            const float o = recurrent_sigmoid(a[3 * H + j]);
            const float c = f * (s_prev ? s_prev[j] : 0.0f) + in * g;
            const float tanh_c = recurrent_gate_tanh(c, fused);
            a[j] = in, a[H + j] = f, a[2 * H + j] = g, a[3 * H + j] = o;
            s[j] = c, s[H + j] = tanh_c;
            h[j] = o * tanh_c;
        } else if (kind == RECURRENT_GRU) {
            const float r = recurrent_sigmoid(a[j]), z = recurrent_sigmoid(a[H + j]);
            const float hn = (hb ? hb[2 * H + j] : 0.0f) + b_hh[2 * H + j];
            const float nn = tanhf(a[2 * H + j] + (b_ih[2 * H + j] + r * hn));
            a[j] = r, a[H + j] = z, a[2 * H + j] = nn;
            s[j] = hn;
            h[j] = (1.0f - z) * nn + z * h_prev;
        }
    }
}

// Step t of the backward: dh = delta_t + carry (dL/dh_t); lstm and gru turn their gate values
// into dL/da_t (gru also dL/d(W_hh h_{t-1}) into dhh) and set carry to the path past W_hh (gru:
// dh z; lstm: 0, dc carried); the rnn only leaves dh (its activation's backward and the copy to
// gates follow) and zeroes carry.
__global__ void recurrent_step_backward_kernel(int kind, float *gates, float *dhh,
                                               const float *saved, const float *out,
                                               const float *delta, float *dh_all, float *carry,
                                               float *dc_all, int batch, int T, int H, int G, int S,
                                               int t)
{
    const int n = batch * H;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const int b = i / H, j = i % H;
        const size_t row = (size_t)b * T + t;
        const float dh = delta[row * H + j] + carry[i];
        float *a = gates + row * G * H;
        if (kind == RECURRENT_RNN) {
            dh_all[i] = dh;
            carry[i] = 0.0f;
        } else if (kind == RECURRENT_LSTM) {
            const float *s = saved + row * S * H;
            const float c_prev = t > 0 ? s[j - S * H] : 0.0f, tc = s[H + j];
            const float in = a[j], f = a[H + j], g = a[2 * H + j], o = a[3 * H + j];
            const float dc = dc_all[i] + dh * o * (1 - tc * tc);
            a[j] = dc * g * in * (1 - in);
            a[H + j] = dc * c_prev * f * (1 - f);
            a[2 * H + j] = dc * in * (1 - g * g);
            a[3 * H + j] = dh * tc * o * (1 - o);
            dc_all[i] = dc * f;
            carry[i] = 0.0f;
        } else {
            const float hn = saved[row * S * H + j];
            const float h_prev = t > 0 ? out[(row - 1) * H + j] : 0.0f;
            const float r = a[j], z = a[H + j], nn = a[2 * H + j];
            const float dn = dh * (1 - z) * (1 - nn * nn);
            const float dz = dh * (h_prev - nn) * z * (1 - z);
            const float dr = dn * hn * r * (1 - r);
            float *d = dhh + row * G * H;
            carry[i] = dh * z;
            a[j] = d[j] = dr;
            a[H + j] = d[H + j] = dz;
            a[2 * H + j] = dn;
            d[2 * H + j] = dn * r;
        }
    }
}

// gates row t of every sample = dh (the rnn's dL/da_t).
__global__ void recurrent_store_kernel(float *gates, const float *dh, int batch, int T, int H,
                                       int t)
{
    const int n = batch * H;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        gates[((size_t)(i / H) * T + t) * H + i % H] = dh[i];
}

// h_prev row (b, t) = out row (b, t - 1), zeros at t = 0.
__global__ void recurrent_shift_kernel(float *h_prev, const float *out, int T, int H, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t row = i / H;
        h_prev[i] = row % T ? out[i - H] : 0.0f;
    }
}

static int grid_for(size_t n)
{
    const size_t blocks = (n + 255) / 256;
    return blocks > 4096 ? 4096 : blocks < 1 ? 1 : (int)blocks;
}

extern "C" cudaError_t cuda_recurrent_step_forward(int kind, int fused, float *gates,
                                                   const float *hh, const float *b_ih,
                                                   const float *b_hh, float *saved, float *out,
                                                   int batch, int T, int H, int G, int S, int t,
                                                   cudaStream_t stream)
{
    if (batch * H == 0)
        return cudaSuccess;
    CUDA_LAUNCH(recurrent_step_forward_kernel, grid_for((size_t)batch * H), 256, 0, stream, kind,
                fused, gates, hh, b_ih, b_hh, saved, out, batch, T, H, G, S, t);
    return cuda_launch_error();
}

extern "C" cudaError_t cuda_recurrent_step_backward(int kind, float *gates, float *dhh,
                                                    const float *saved, const float *out,
                                                    const float *delta, float *dh, float *carry,
                                                    float *dc, int batch, int T, int H, int G,
                                                    int S, int t, cudaStream_t stream)
{
    if (batch * H == 0)
        return cudaSuccess;
    CUDA_LAUNCH(recurrent_step_backward_kernel, grid_for((size_t)batch * H), 256, 0, stream, kind,
                gates, dhh, saved, out, delta, dh, carry, dc, batch, T, H, G, S, t);
    return cuda_launch_error();
}

extern "C" cudaError_t cuda_recurrent_store(float *gates, const float *dh, int batch, int T, int H,
                                            int t, cudaStream_t stream)
{
    if (batch * H == 0)
        return cudaSuccess;
    CUDA_LAUNCH(recurrent_store_kernel, grid_for((size_t)batch * H), 256, 0, stream, gates, dh,
                batch, T, H, t);
    return cuda_launch_error();
}

extern "C" cudaError_t cuda_recurrent_shift(float *h_prev, const float *out, int batch, int T,
                                            int H, cudaStream_t stream)
{
    const size_t n = (size_t)batch * T * H;
    if (n == 0)
        return cudaSuccess;
    CUDA_LAUNCH(recurrent_shift_kernel, grid_for(n), 256, 0, stream, h_prev, out, T, H, n);
    return cuda_launch_error();
}
