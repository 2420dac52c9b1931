"""Reference fixture for batch norm in training as pjreddie's darknet computes it ([net]
bn_darknet=1), in float64 numpy, written from darknet's definitions (src/batchnorm_layer.c
forward_batchnorm_layer; src/blas.c mean_cpu, variance_cpu, normalize_cpu):

    mean = sum(x) / n, var = sum((x - mean)^2) / (n - 1)   (n = batch x spatial: unbiased)
    x_hat = (x - mean) / (sqrt(var) + 0.000001),  y = x_hat * scale + bias
    rolling_mean = 0.99 * rolling_mean + 0.01 * mean, rolling_variance likewise with var

and the exact gradient of that forward (darknet's own backward, backward_batchnorm_layer, takes
sqrt(var + 0.00001) and 1/n in its place; cdl differentiates the forward it runs). With
s = sqrt(var) + 1e-6, g = dL/dy * scale:

    dL/dx = (g - mean(g)) / s - x_hat * sum(g * x_hat) / (sqrt(var) * (n - 1))

The script checks that gradient against central differences of the forward before writing.

Usage: /usr/bin/python3 scripts/ref/make_bn_darknet.py
(writes tests/ref/bn_darknet.cfg and tests/ref/bn_darknet.ref.)

The net (batch 2, a 3x4x5 image; 1x1 convolutions, so that the products are one einsum), so
that batch norm runs every path cdl has for it: its own pass and one fused with the activation,
on plain NCHW and, on oneDNN, on blocked layouts (a convolution's output that a convolution reads):
    0 [convolutional] 16 filters 1x1, batch_normalize=1, linear
    1 [convolutional] 16 filters 1x1, with a bias, leaky (slope 0.1)
    2 [convolutional] 16 filters 1x1, batch_normalize=1, leaky
    3 [convolutional] 16 filters 1x1, batch_normalize=1, relu
    4 [batchnorm] (linear)
(a bias that reaches a batch norm through linear maps alone has no gradient: none does here.)
bn_momentum is left out: with bn_darknet=1 its default is darknet's 0.01.
Stored: input, r (the loss is sum(out * r)), the parameters layerI.NAME with random running
statistics, out, grad.input, grad.layerI.NAME, and after.layerI.rolling_mean and
after.layerI.rolling_variance (the running statistics after the training forward).
"""
import numpy as np

from ref_format import write_fixture

BATCH, CHANNELS, HEIGHT, WIDTH, FILTERS = 2, 3, 4, 5, 16

CFG = f"""# scripts/ref/make_bn_darknet.py: batch norm in training as darknet's
[net]
batch={BATCH}
channels={CHANNELS}
height={HEIGHT}
width={WIDTH}
bn_darknet=1
"""
# (1x1 convolution, batch norm, activation's slope below 0) per layer: linear 1, leaky 0.1, relu 0
LAYERS = [(True, True, 1.0), (True, False, 0.1), (True, True, 0.1), (True, True, 0.0),
          (False, True, 1.0)]
ACTIVATIONS = {1.0: "linear", 0.1: "leaky", 0.0: "relu"}


def layer_cfg(i, conv, bn, slope):
    """Layer i's section of the cfg."""
    if not conv:
        return f"\n# {i}: {FILTERS}x{HEIGHT}x{WIDTH}\n[batchnorm]\n"
    return (f"\n# {i}: {FILTERS}x{HEIGHT}x{WIDTH}\n[convolutional]\nfilters={FILTERS}\nsize=1\n"
            f"batch_normalize={int(bn)}\nactivation={ACTIVATIONS[slope]}\n")


CFG += "".join(layer_cfg(i, *spec) for i, spec in enumerate(LAYERS))


def f32(a):
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def bn_forward(x, scale, bias):
    """darknet's training normalisation of x [b][c][h][w]: y, x_hat, std = sqrt(var), mean, var."""
    n = x.shape[0] * x.shape[2] * x.shape[3]
    mean = x.mean(axis=(0, 2, 3))
    var = ((x - mean[None, :, None, None]) ** 2).sum(axis=(0, 2, 3)) / (n - 1)
    std = np.sqrt(var)
    x_hat = (x - mean[None, :, None, None]) / (std + 1e-6)[None, :, None, None]
    return x_hat * scale[None, :, None, None] + bias[None, :, None, None], x_hat, std, mean, var


def bn_backward(dy, x_hat, std, scale):
    """dL/dx, dL/dscale, dL/dbias of bn_forward given dL/dy."""
    n = dy.shape[0] * dy.shape[2] * dy.shape[3]
    g = dy * scale[None, :, None, None]
    s = (std + 1e-6)[None, :, None, None]
    sum_g_xhat = (g * x_hat).sum(axis=(0, 2, 3))[None, :, None, None]
    dx = (g - g.mean(axis=(0, 2, 3))[None, :, None, None]) / s - \
        x_hat * sum_g_xhat / (std[None, :, None, None] * (n - 1))
    return dx, (dy * x_hat).sum(axis=(0, 2, 3)), dy.sum(axis=(0, 2, 3))


def activate(y, slope):
    return np.where(y > 0, y, slope * y)


def forward(x, p):
    """The net's output and what the backward needs, per layer."""
    saved = []
    for i, (conv, bn, slope) in enumerate(LAYERS):
        pre = np.einsum("fc,bchw->bfhw", p[f"layer{i}.weights"][:, :, 0, 0], x) if conv else x
        if bn:
            y, x_hat, std, mean, var = bn_forward(pre, p[f"layer{i}.scales"], p[f"layer{i}.biases"])
            saved.append(dict(x=x, y=y, x_hat=x_hat, std=std, mean=mean, var=var))
        else:
            y = pre + p[f"layer{i}.biases"][None, :, None, None]
            saved.append(dict(x=x, y=y))
        x = activate(y, slope)
    return x, saved


def backward(r, p, saved):
    grads = {}
    d = r
    for i in reversed(range(len(LAYERS))):
        conv, bn, slope = LAYERS[i]
        s = saved[i]
        d = d * np.where(s["y"] > 0, 1.0, slope)
        if bn:
            d, grads[f"layer{i}.scales"], grads[f"layer{i}.biases"] = bn_backward(
                d, s["x_hat"], s["std"], p[f"layer{i}.scales"])
        else:
            grads[f"layer{i}.biases"] = d.sum(axis=(0, 2, 3))
        if conv:
            w = p[f"layer{i}.weights"][:, :, 0, 0]
            grads[f"layer{i}.weights"] = np.einsum("bfhw,bchw->fc", d, s["x"])[:, :, None, None]
            d = np.einsum("fc,bfhw->bchw", w, d)
    return d, grads


def check_gradient(x, p, r, dx, grads):
    """Central differences of sum(out * r) against the analytic gradients, on a few elements."""
    rng = np.random.default_rng(1)
    loss = lambda xx, pp: (forward(xx, pp)[0] * r).sum()
    h = 1e-6
    targets = [("input", x, dx)] + [(n, p[n], grads[n]) for n in grads]
    for name, t, g in targets:
        for i in rng.choice(t.size, size=min(8, t.size), replace=False):
            idx = np.unravel_index(i, t.shape)
            keep = t[idx]
            t[idx] = keep + h
            up = loss(x, p)
            t[idx] = keep - h
            down = loss(x, p)
            t[idx] = keep
            numeric = (up - down) / (2 * h)
            assert abs(numeric - g[idx]) <= 1e-5 * max(1.0, abs(numeric)), (name, idx, numeric, g[idx])


def main():
    rng = np.random.default_rng(0)
    x = f32(rng.normal(0.5, 1.5, (BATCH, CHANNELS, HEIGHT, WIDTH)))
    p, state = {}, {}
    for i, (conv, bn, _) in enumerate(LAYERS):
        if conv:
            p[f"layer{i}.weights"] = f32(rng.normal(0, 0.7, (FILTERS, CHANNELS if i == 0 else FILTERS, 1, 1)))
        p[f"layer{i}.biases"] = f32(rng.normal(0, 0.3, FILTERS))
        if bn:
            p[f"layer{i}.scales"] = f32(rng.normal(1, 0.3, FILTERS))
            state[f"layer{i}.rolling_mean"] = f32(rng.normal(0, 0.5, FILTERS))
            state[f"layer{i}.rolling_variance"] = f32(rng.uniform(0.5, 2, FILTERS))
    out, saved = forward(x, p)
    # A channel of nearly equal values (a leaky channel below 0 throughout) multiplies float32's
    # rounding in its gradients by 1/std: the fixture keeps clear of that.
    assert min(s["std"].min() for s in saved if "std" in s) > 0.1
    r = f32(rng.normal(0, 1, out.shape))
    dx, grads = backward(r, p, saved)
    check_gradient(x, p, r, dx, grads)
    tensors = [("input", x), ("r", r)] + list(p.items()) + list(state.items())
    tensors += [("out", out), ("grad.input", dx)]
    tensors += [(f"grad.{n}", grads[n]) for n in p]
    for i, s in enumerate(saved):
        if "mean" in s:
            tensors.append((f"after.layer{i}.rolling_mean",
                            0.99 * state[f"layer{i}.rolling_mean"] + 0.01 * s["mean"]))
            tensors.append((f"after.layer{i}.rolling_variance",
                            0.99 * state[f"layer{i}.rolling_variance"] + 0.01 * s["var"]))
    write_fixture("bn_darknet", CFG, tensors)


if __name__ == "__main__":
    main()
