/* A convolution's window over an image plane, per axis: its extent (a kernel of size_h rows by
 * size_w columns, torch's kernel_size=(h, w)), its stride and the zeros padded on both sides of
 * each axis. Square windows (size_h == size_w, ...) are darknet's and most layers'; Inception's
 * 1x7 and 7x1 factorised convolutions are not.
 *
 *   in [c][h][w] -> out [..][window_out_extent(h, size_h, stride_h, pad_h)]
 *                           [window_out_extent(w, size_w, stride_w, pad_w)] */
#ifndef CDL_WINDOW2D_H
#define CDL_WINDOW2D_H

typedef struct Window2d {
    int size_h, size_w;
    int stride_h, stride_w;
    int pad_h, pad_w; /* zeros before and after the plane along the axis */
} Window2d;

/* The same extent, stride and padding along both axes. */
static inline Window2d window2d_square(int size, int stride, int pad)
{
    return (Window2d){size, size, stride, stride, pad, pad};
}

/* Whether both axes have the same extent, stride and padding (engines written for square
 * windows read the size_h, stride_h and pad_h of these only). */
static inline int window2d_is_square(Window2d w)
{
    return w.size_h == w.size_w && w.stride_h == w.stride_w && w.pad_h == w.pad_w;
}

/* Taps of the window: size_h * size_w. */
static inline int window2d_taps(Window2d w)
{
    return w.size_h * w.size_w;
}

/* Output extent along one axis; < 1 means empty. A floor even when the window is larger than
 * the padded input. */
static inline int window_out_extent(int in, int size, int stride, int pad)
{
    const int span = in + 2 * pad - size;
    return span < 0 ? 0 : span / stride + 1;
}

#endif
