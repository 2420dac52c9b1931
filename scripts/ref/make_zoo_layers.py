"""PyTorch reference fixtures for the modern zoo's layers and activations (issue 41):
hardswish, hardsigmoid, a squeeze-excitation block of [avgpool], two 1x1 [convolutional] and
[scale_channels], ShuffleNet's channel shuffle, explicit padding, ConvNeXt's block
([layernorm] channels=1, [layer_scale]; its stochastic depth, [drop_path], draws from cdl's own
keys, which torch's generator cannot reproduce: test_zoo_layers checks its masks instead), and
DenseNet's dense layer ([batchnorm] activation=: batch norm and an activation on a tensor no
convolution wrote) and transition (bias-free convolutions, bias=0; a 2x2 average pool as [upsample]
stride=-2 scale=0.25), Inception v3's poolings ([avgpool] size= stride= padding=, [maxpool] without
padding) and factorised convolutions (kernels of 1x7, 7x1, 1x3, 3x1 with a stride and padding per
axis), and a vision transformer's embedding ([tokens]: patches to tokens, class token,
position embedding) and encoder block ([attention] on those tokens in an image net, [select_token]
for the head).

Usage: /usr/bin/python3 scripts/ref/make_zoo_layers.py
(Debian's python3-torch 1.13; writes tests/ref/NAME.cfg and tests/ref/NAME.ref for each NAME
below, relative to the repository root, which is found from this script's path.)

Each net runs on a batch of 2 images in float64 from float32-representable inputs and
parameters; the loss is sum(out * r) for a stored random r, so dL/d(out) = r. Stored: input, r,
the parameters layerI.NAME (cdl's names), out (the last layer's output), grad.input and
grad.layerI.NAME. Seeds are fixed and torch runs on one thread: running the script twice gives
identical bytes. The .ref format is ref_format.py's.

  se_block (MobileNetV3's block on a 3x5x6 image; weights and biases N(0, 1), N(0, 0.4^2) in
  layer 3, wider than torch's init, so that every piece of the hard activations is reached: of
  layer 0's 480 pre-activations 114 are below -3 and 115 above 3, of layer 3's 16 one is above 3):
    0 [convolutional] 8 filters 3x3 pad 1, hardswish       x0 = F.hardswish(conv(x))
    1 [avgpool]                                           s = x0.mean((2, 3), keepdim=True)
    2 [convolutional] 4 filters 1x1, relu                  F.relu(conv(s))
    3 [convolutional] 8 filters 1x1, hardsigmoid           z = F.hardsigmoid(conv(.))
    4 [scale_channels] from=0                             x0 * z

  shuffle_unit (ShuffleNet's grouped 1x1, shuffle, depthwise 3x3 on a 4x5x6 image; weights and
  biases N(0, 0.5^2)):
    0 [convolutional] 6 filters 1x1 groups 2, relu         F.relu(conv(x, groups=2))
    1 [shuffle] groups=2                                   torch.nn.ChannelShuffle(2)
    2 [convolutional] 6 filters 3x3 pad 1 groups 6        conv(., groups=6, padding=1)
    3 [convolutional] 6 filters 1x1 groups 3, linear       conv(., groups=3)

  pad_conv (a 2x4x5 image, weights and biases N(0, 0.5^2)):
    0 [pad] left=1 right=2 bottom=1 value=0.5              F.pad(x, (1, 2, 0, 1), value=0.5)
    1 [convolutional] 3 filters 3x3 stride 2, linear       conv(., stride=2)
    2 [pad] padding=1                                      F.pad(., (1, 1, 1, 1))

  convnext_block (a 2x4x5x6 image; convolution weights and biases N(0, 0.5^2), layer norm scales
  N(1, 0.5^2) and biases N(0, 0.5^2), layer scales N(0, 0.5^2) (ConvNeXt starts them at 1e-6,
  which would hide the branch)):
    0 [convolutional] 8 filters 3x3 pad 1, linear         x0 = conv(x, padding=1)
    1 [convolutional] 8 filters 7x7 pad 1 groups 8        conv(x0, padding=3, groups=8)
    2 [layernorm] channels=1 eps=1e-6                     LayerNorm2d: F.layer_norm over the
                                                          channels of the map permuted to NHWC
    3 [convolutional] 16 filters 1x1, gelu                F.gelu(conv(.))
    4 [convolutional] 8 filters 1x1, linear               conv(.)
    5 [layer_scale]                                       gamma.view(8, 1, 1) * .
    6 [shortcut] from=0                                   x0 + .

  dense_layer (a 2x3x5x6 image, in training mode: batch statistics, torch's biased variance in the
  normalisation; convolution weights and biases N(0, 0.5^2), batch-norm scales N(1, 0.5^2) and
  shifts N(0, 0.5^2); the convolutions end in tanh, as a linear one's bias right before a batch
  norm has a gradient of exactly 0, which cdl's float rounding turns into noise):
    0 [convolutional] 4 filters 3x3 pad 1, tanh           x0 = torch.tanh(conv(x, padding=1))
    1 [batchnorm] activation=relu                          F.relu(F.batch_norm(x0))
    2 [convolutional] 6 filters 1x1, tanh                  torch.tanh(conv(.))
    3 [batchnorm] activation=swish                         F.silu(F.batch_norm(.))
    4 [convolutional] 2 filters 3x3 pad 1, tanh           torch.tanh(conv(., padding=1))
    5 [route] layers=0,-1                                  torch.cat((x0, .), 1)
    6 [batchnorm] activation=relu                          F.relu(F.batch_norm(.))

  dense_transition (torchvision DenseNet's dense layer and transition on a 2x3x4x6 image, in
  training mode; bias-free convolutions as torch's bias=False, weights N(0, 0.5^2), batch norms as
  dense_layer's):
    0 [convolutional] 4 filters 3x3 pad 1 bias=0, linear  x0 = conv(x, padding=1)
    1 [batchnorm] activation=relu                          norm1, relu1
    2 [convolutional] 6 filters 1x1 bias=0, batch norm,    conv1, norm2, relu2
      relu
    3 [convolutional] 2 filters 3x3 pad 1 bias=0, linear  conv2
    4 [route] layers=0,-1                                  torch.cat((x0, .), 1)
    5 [batchnorm] activation=relu                          the transition's norm, relu
    6 [convolutional] 3 filters 1x1 bias=0, linear        its conv
    7 [upsample] stride=-2 scale=0.25                      F.avg_pool2d(., 2, 2): 2x3x2x3

  inception_pools (Inception v3's poolings on a 2x3x9x8 image; weights and biases N(0, 0.5^2)):
    0 [convolutional] 4 filters 3x3 pad 1, tanh           torch.tanh(conv(x, padding=1))
    1 [avgpool] size=3 stride=1 padding=1                  F.avg_pool2d(., 3, 1, 1): 4x9x8
                                                          (count_include_pad=True)
    2 [avgpool] size=3 stride=2 padding=1                  F.avg_pool2d(., 3, 2, 1): 4x5x4
    3 [maxpool] size=3 stride=2 padding=0                  F.max_pool2d(., 3, 2): 4x2x1

  inception_convs (Inception v3's factorised convolutions, kernels of h x w with a stride and
  padding per axis, on a 2x3x9x8 image; weights and biases N(0, 0.5^2)):
    0 [convolutional] 4 filters size=1,7 padding=0,3,     torch.tanh(conv(x, padding=(0, 3))):
      tanh                                                4x9x8
    1 [convolutional] 5 filters size=7,1 pad=1, tanh      torch.tanh(conv(., padding=(3, 0)))
    2 [convolutional] 4 filters size=1,3 stride=1,2       torch.tanh(conv(., stride=(1, 2),
      padding=0,1, tanh                                   padding=(0, 1))): 4x9x4
    3 [convolutional] 3 filters size=3,1 stride=2,1       conv(., stride=(2, 1), padding=(1, 0)):
      padding=1,0, linear                                 3x5x4

  vit_embed (a 2x3x8x8 image; every tensor N(0, 0.5^2), layer norm scales N(1, 0.5^2), the class
  token too (torchvision starts it at 0, which would hide its place)):
    0 [convolutional] 6 filters 4x4 stride 4, linear      conv(x, stride=4): 6x2x2 patches
    1 [tokens] class_token=1 positional=1                  torch.cat((class_token.expand(2, 1, 6),
                                                          x.flatten(2).transpose(1, 2)), 1)
                                                          + positional: 2x5x6
    2 [layernorm] eps=1e-6                                 F.layer_norm over each token's 6

  vit_block (torchvision's EncoderBlock and head on vit_embed's tokens; weights and biases
  N(0, 0.5^2), layer norm scales N(1, 0.5^2)):
    0-1 as vit_embed                                      x1: 2x5x6
    2 [layernorm] eps=1e-6                                 F.layer_norm
    3 [attention] heads=2 causal=0                         F.multi_head_attention_forward
    4 [shortcut] from=1                                    x4 = x1 + .
    5 [layernorm] eps=1e-6
    6 [linear] output=12 activation=gelu                   F.gelu(F.linear(.))
    7 [linear] output=6                                    F.linear(.)
    8 [shortcut] from=4                                    x4 + .
    9 [select_token] index=0                               [:, 0]: the class token, 2x6
    10 [connected] output=3                                F.linear(.)
"""

import torch
import torch.nn.functional as F

from ref_format import f32, seed_torch, write_fixture

DT = torch.float64
BATCH = 2


def net_section(channels, height, width):
    """The [net] section of a fixture's cfg: a batch of BATCH images of that shape."""
    return f"[net]\nbatch={BATCH}\nchannels={channels}\nheight={height}\nwidth={width}\n"

SE_BLOCK_CFG = """# scripts/ref/make_zoo_layers.py: squeeze-excitation with the hard activations
""" + net_section(3, 5, 6) + """
# 0: 8x5x6
[convolutional]
filters=8
size=3
pad=1
activation=hardswish

# 1: 8x1x1
[avgpool]

# 2: 4x1x1
[convolutional]
filters=4
size=1
activation=relu

# 3: 8x1x1
[convolutional]
filters=8
size=1
activation=hardsigmoid

# 4: 8x5x6, layer 0 times layer 3 per channel
[scale_channels]
from=0
"""


SHUFFLE_UNIT_CFG = """# scripts/ref/make_zoo_layers.py: ShuffleNet's unit
""" + net_section(4, 5, 6) + """
# 0: 6x5x6
[convolutional]
filters=6
size=1
groups=2
activation=relu

# 1: 6x5x6, channels 0 3 1 4 2 5
[shuffle]
groups=2

# 2: 6x5x6
[convolutional]
filters=6
size=3
pad=1
groups=6
activation=linear

# 3: 6x5x6
[convolutional]
filters=6
size=1
groups=3
activation=linear
"""


PAD_CONV_CFG = """# scripts/ref/make_zoo_layers.py: explicit padding around a strided convolution
""" + net_section(2, 4, 5) + """
# 0: 2x5x8
[pad]
left=1
right=2
bottom=1
value=0.5

# 1: 3x2x3
[convolutional]
filters=3
size=3
stride=2
activation=linear

# 2: 3x4x5
[pad]
padding=1
"""


CONVNEXT_BLOCK_CFG = """# scripts/ref/make_zoo_layers.py: ConvNeXt's block (without its drop path)
""" + net_section(4, 5, 6) + """
# 0: 8x5x6
[convolutional]
filters=8
size=3
pad=1
activation=linear

# 1: 8x5x6, depthwise 7x7
[convolutional]
filters=8
size=7
pad=1
groups=8
activation=linear

# 2: 8x5x6, each position's 8 channels normalised
[layernorm]
channels=1
eps=1e-6

# 3: 16x5x6
[convolutional]
filters=16
size=1
activation=gelu

# 4: 8x5x6
[convolutional]
filters=8
size=1
activation=linear

# 5: 8x5x6, a learnable scale per channel
[layer_scale]

# 6: 8x5x6, the residual sum
[shortcut]
from=0
"""


DENSE_LAYER_CFG = """# scripts/ref/make_zoo_layers.py: DenseNet's dense layer, pre-activation batch norms
""" + net_section(3, 5, 6) + """
# 0: 4x5x6
[convolutional]
filters=4
size=3
pad=1
activation=tanh

# 1: 4x5x6, batch norm then relu
[batchnorm]
activation=relu

# 2: 6x5x6
[convolutional]
filters=6
size=1
activation=tanh

# 3: 6x5x6, batch norm then swish (its derivative reads the pre-activation)
[batchnorm]
activation=swish

# 4: 2x5x6
[convolutional]
filters=2
size=3
pad=1
activation=tanh

# 5: 6x5x6, layer 0's channels then layer 4's
[route]
layers=0,-1

# 6: 6x5x6
[batchnorm]
activation=relu
"""


DENSE_TRANSITION_CFG = """# scripts/ref/make_zoo_layers.py: DenseNet's dense layer and transition
""" + net_section(3, 4, 6) + """
# 0: 4x4x6, no bias
[convolutional]
filters=4
size=3
pad=1
bias=0
activation=linear

# 1: 4x4x6
[batchnorm]
activation=relu

# 2: 6x4x6
[convolutional]
filters=6
size=1
bias=0
batch_normalize=1
activation=relu

# 3: 2x4x6, no bias
[convolutional]
filters=2
size=3
pad=1
bias=0
activation=linear

# 4: 6x4x6
[route]
layers=0,-1

# 5: 6x4x6
[batchnorm]
activation=relu

# 6: 3x4x6, no bias
[convolutional]
filters=3
size=1
bias=0
activation=linear

# 7: 3x2x3, a 2x2 average pool with stride 2
[upsample]
stride=-2
scale=0.25
"""


INCEPTION_POOLS_CFG = """# scripts/ref/make_zoo_layers.py: Inception v3's poolings
""" + net_section(3, 9, 8) + """
# 0: 4x9x8
[convolutional]
filters=4
size=3
pad=1
activation=tanh

# 1: 4x9x8, the 3x3 average of each position, padding counted
[avgpool]
size=3
stride=1
padding=1

# 2: 4x5x4
[avgpool]
size=3
stride=2
padding=1

# 3: 4x2x1, no padding
[maxpool]
size=3
stride=2
padding=0
"""


INCEPTION_CONVS_CFG = """# scripts/ref/make_zoo_layers.py: Inception v3's non-square convolutions
""" + net_section(3, 9, 8) + """
# 0: 4x9x8
[convolutional]
filters=4
size=1,7
padding=0,3
activation=tanh

# 1: 5x9x8, pad=1: padding 3,0
[convolutional]
filters=5
size=7,1
pad=1
activation=tanh

# 2: 4x9x4
[convolutional]
filters=4
size=1,3
stride=1,2
padding=0,1
activation=tanh

# 3: 3x5x4
[convolutional]
filters=3
size=3,1
stride=2,1
padding=1,0
activation=linear
"""


VIT_EMBED_CFG = """# scripts/ref/make_zoo_layers.py: a vision transformer's embedding
""" + net_section(3, 8, 8) + """
# 0: 6x2x2, one 4x4 patch per position
[convolutional]
filters=6
size=4
stride=4
activation=linear

# 1: 1x5x6, the class token then the 4 patches' tokens, plus the position embedding
[tokens]
class_token=1
positional=1

# 2: 1x5x6, each token normalised
[layernorm]
eps=0.000001
"""


VIT_BLOCK_CFG = """# scripts/ref/make_zoo_layers.py: a vision transformer's encoder block and head
""" + net_section(3, 8, 8) + """
# 0: 6x2x2, one 4x4 patch per position
[convolutional]
filters=6
size=4
stride=4
activation=linear

# 1: 1x5x6 tokens
[tokens]
class_token=1
positional=1

# 2-4: x + attention(layernorm(x)), every token seeing every token
[layernorm]
eps=0.000001

[attention]
heads=2
causal=0

[shortcut]
from=1

# 5-8: x + mlp(layernorm(x))
[layernorm]
eps=0.000001

[linear]
output=12
activation=gelu

[linear]
output=6

[shortcut]
from=4

# 9-10: the class token's row, then the head
[select_token]
index=0

[connected]
output=3
activation=linear
"""


def conv_params(name, filters, channels, size, spread):
    """Weights [filters][channels per group][size][size] and biases [filters] ~ N(0, spread^2)."""
    w = f32(spread * torch.randn(filters, channels, size, size, dtype=DT))
    b = f32(spread * torch.randn(filters, dtype=DT))
    return {f"{name}.weights": w, f"{name}.biases": b}


def se_block():
    p = {}
    p.update(conv_params("layer0", 8, 3, 3, 1.0))
    p.update(conv_params("layer2", 4, 8, 1, 1.0))
    p.update(conv_params("layer3", 8, 4, 1, 0.4))
    x = f32(torch.randn(BATCH, 3, 5, 6, dtype=DT))

    def forward(x, p):
        x0 = F.hardswish(F.conv2d(x, p["layer0.weights"], p["layer0.biases"], padding=1))
        s = x0.mean((2, 3), keepdim=True)
        s = F.relu(F.conv2d(s, p["layer2.weights"], p["layer2.biases"]))
        z = F.hardsigmoid(F.conv2d(s, p["layer3.weights"], p["layer3.biases"]))
        return x0 * z

    return SE_BLOCK_CFG, x, p, forward, {}


def channel_shuffle(x, groups):
    """[N][g][c/g][h][w] transposed to [N][c/g][g][h][w]: torch.nn.ChannelShuffle, written out so
    that autograd differentiates it (checked against the module's forward)."""
    n, c, h, w = x.shape
    y = x.view(n, groups, c // groups, h, w).transpose(1, 2).reshape(n, c, h, w)
    assert torch.equal(y, torch.nn.ChannelShuffle(groups)(x.detach()))
    return y


def shuffle_unit():
    p = {}
    p.update(conv_params("layer0", 6, 2, 1, 0.5))
    p.update(conv_params("layer2", 6, 1, 3, 0.5))
    p.update(conv_params("layer3", 6, 2, 1, 0.5))
    x = f32(torch.randn(BATCH, 4, 5, 6, dtype=DT))

    def forward(x, p):
        y = F.relu(F.conv2d(x, p["layer0.weights"], p["layer0.biases"], groups=2))
        y = channel_shuffle(y, 2)
        y = F.conv2d(y, p["layer2.weights"], p["layer2.biases"], padding=1, groups=6)
        return F.conv2d(y, p["layer3.weights"], p["layer3.biases"], groups=3)

    return SHUFFLE_UNIT_CFG, x, p, forward, {}


def pad_conv():
    p = conv_params("layer1", 3, 2, 3, 0.5)
    x = f32(torch.randn(BATCH, 2, 4, 5, dtype=DT))

    def forward(x, p):
        y = F.pad(x, (1, 2, 0, 1), value=0.5)
        y = F.conv2d(y, p["layer1.weights"], p["layer1.biases"], stride=2)
        return F.pad(y, (1, 1, 1, 1))

    return PAD_CONV_CFG, x, p, forward, {}


def convnext_block():
    p = {}
    p.update(conv_params("layer0", 8, 4, 3, 0.5))
    p.update(conv_params("layer1", 8, 1, 7, 0.5))
    p["layer2.scales"] = f32(1 + 0.5 * torch.randn(8, dtype=DT))
    p["layer2.biases"] = f32(0.5 * torch.randn(8, dtype=DT))
    p.update(conv_params("layer3", 16, 8, 1, 0.5))
    p.update(conv_params("layer4", 8, 16, 1, 0.5))
    p["layer5.scales"] = f32(0.5 * torch.randn(8, dtype=DT))
    x = f32(torch.randn(BATCH, 4, 5, 6, dtype=DT))

    def forward(x, p):
        x0 = F.conv2d(x, p["layer0.weights"], p["layer0.biases"], padding=1)
        y = F.conv2d(x0, p["layer1.weights"], p["layer1.biases"], padding=3, groups=8)
        y = F.layer_norm(y.permute(0, 2, 3, 1), (8,), p["layer2.scales"], p["layer2.biases"], 1e-6)
        y = y.permute(0, 3, 1, 2)
        y = F.gelu(F.conv2d(y, p["layer3.weights"], p["layer3.biases"]))
        y = F.conv2d(y, p["layer4.weights"], p["layer4.biases"])
        return x0 + p["layer5.scales"].view(8, 1, 1) * y

    return CONVNEXT_BLOCK_CFG, x, p, forward, {}


def bn_params(name, channels):
    """A batch norm's scales ~ N(1, 0.5^2) and shifts (cdl's biases) ~ N(0, 0.5^2)."""
    return {f"{name}.scales": f32(1 + 0.5 * torch.randn(channels, dtype=DT)),
            f"{name}.biases": f32(0.5 * torch.randn(channels, dtype=DT))}


def dense_layer():
    p = {}
    p.update(conv_params("layer0", 4, 3, 3, 0.5))
    p.update(bn_params("layer1", 4))
    p.update(conv_params("layer2", 6, 4, 1, 0.5))
    p.update(bn_params("layer3", 6))
    p.update(conv_params("layer4", 2, 6, 3, 0.5))
    p.update(bn_params("layer6", 6))
    x = f32(torch.randn(BATCH, 3, 5, 6, dtype=DT))

    def norm(y, p, i):
        """Batch norm in training mode: batch statistics, eps 1e-5 ([net] bn_eps's default)."""
        return F.batch_norm(y, None, None, p[f"layer{i}.scales"], p[f"layer{i}.biases"],
                            training=True, eps=1e-5)

    def forward(x, p):
        x0 = torch.tanh(F.conv2d(x, p["layer0.weights"], p["layer0.biases"], padding=1))
        y = F.relu(norm(x0, p, 1))
        y = F.silu(norm(torch.tanh(F.conv2d(y, p["layer2.weights"], p["layer2.biases"])), p, 3))
        y = torch.tanh(F.conv2d(y, p["layer4.weights"], p["layer4.biases"], padding=1))
        return F.relu(norm(torch.cat((x0, y), 1), p, 6))

    # the running statistics the training pass moves (unread by its output): torch's start
    state = {}
    for i, c in ((1, 4), (3, 6), (6, 6)):
        state[f"layer{i}.rolling_mean"] = torch.zeros(c, dtype=DT)
        state[f"layer{i}.rolling_variance"] = torch.ones(c, dtype=DT)
    return DENSE_LAYER_CFG, x, p, forward, state


def dense_transition():
    p = {"layer0.weights": f32(0.5 * torch.randn(4, 3, 3, 3, dtype=DT))}
    p.update(bn_params("layer1", 4))
    p["layer2.weights"] = f32(0.5 * torch.randn(6, 4, 1, 1, dtype=DT))
    p.update(bn_params("layer2", 6))
    p["layer3.weights"] = f32(0.5 * torch.randn(2, 6, 3, 3, dtype=DT))
    p.update(bn_params("layer5", 6))
    p["layer6.weights"] = f32(0.5 * torch.randn(3, 6, 1, 1, dtype=DT))
    x = f32(torch.randn(BATCH, 3, 4, 6, dtype=DT))

    def norm(y, p, i):
        return F.batch_norm(y, None, None, p[f"layer{i}.scales"], p[f"layer{i}.biases"],
                            training=True, eps=1e-5)

    def forward(x, p):
        x0 = F.conv2d(x, p["layer0.weights"], padding=1)
        y = F.relu(norm(x0, p, 1))
        y = F.relu(norm(F.conv2d(y, p["layer2.weights"]), p, 2))
        y = F.conv2d(y, p["layer3.weights"], padding=1)
        y = F.relu(norm(torch.cat((x0, y), 1), p, 5))
        return F.avg_pool2d(F.conv2d(y, p["layer6.weights"]), 2, 2)

    state = {}
    for i, c in ((1, 4), (2, 6), (5, 6)):
        state[f"layer{i}.rolling_mean"] = torch.zeros(c, dtype=DT)
        state[f"layer{i}.rolling_variance"] = torch.ones(c, dtype=DT)
    return DENSE_TRANSITION_CFG, x, p, forward, state


def inception_pools():
    p = conv_params("layer0", 4, 3, 3, 0.5)
    x = f32(torch.randn(BATCH, 3, 9, 8, dtype=DT))

    def forward(x, p):
        y = torch.tanh(F.conv2d(x, p["layer0.weights"], p["layer0.biases"], padding=1))
        y = F.avg_pool2d(y, 3, 1, 1, count_include_pad=True)
        y = F.avg_pool2d(y, 3, 2, 1, count_include_pad=True)
        return F.max_pool2d(y, 3, 2)

    return INCEPTION_POOLS_CFG, x, p, forward, {}


def inception_convs():
    p = {}
    for i, (filters, channels, h, w) in enumerate(((4, 3, 1, 7), (5, 4, 7, 1), (4, 5, 1, 3),
                                                     (3, 4, 3, 1))):
        p[f"layer{i}.weights"] = f32(0.5 * torch.randn(filters, channels, h, w, dtype=DT))
        p[f"layer{i}.biases"] = f32(0.5 * torch.randn(filters, dtype=DT))
    x = f32(torch.randn(BATCH, 3, 9, 8, dtype=DT))

    def forward(x, p):
        y = torch.tanh(F.conv2d(x, p["layer0.weights"], p["layer0.biases"], padding=(0, 3)))
        y = torch.tanh(F.conv2d(y, p["layer1.weights"], p["layer1.biases"], padding=(3, 0)))
        y = torch.tanh(F.conv2d(y, p["layer2.weights"], p["layer2.biases"], stride=(1, 2),
                                padding=(0, 1)))
        return F.conv2d(y, p["layer3.weights"], p["layer3.biases"], stride=(2, 1), padding=(1, 0))

    return INCEPTION_CONVS_CFG, x, p, forward, {}


def vit_embed():
    p = conv_params("layer0", 6, 3, 4, 0.5)
    p["layer1.class_token"] = f32(0.5 * torch.randn(6, dtype=DT))
    p["layer1.positional"] = f32(0.5 * torch.randn(5, 6, dtype=DT))
    p["layer2.scales"] = f32(1 + 0.5 * torch.randn(6, dtype=DT))
    p["layer2.biases"] = f32(0.5 * torch.randn(6, dtype=DT))
    x = f32(torch.randn(BATCH, 3, 8, 8, dtype=DT))

    def forward(x, p):
        y = F.conv2d(x, p["layer0.weights"], p["layer0.biases"], stride=4)
        y = y.flatten(2).transpose(1, 2)
        y = torch.cat((p["layer1.class_token"].expand(BATCH, 1, 6), y), 1) + p["layer1.positional"]
        return F.layer_norm(y, (6,), p["layer2.scales"], p["layer2.biases"], 1e-6)

    return VIT_EMBED_CFG, x, p, forward, {}


def vit_block():
    p = conv_params("layer0", 6, 3, 4, 0.5)
    p["layer1.class_token"] = f32(0.5 * torch.randn(6, dtype=DT))
    p["layer1.positional"] = f32(0.5 * torch.randn(5, 6, dtype=DT))
    for i in (2, 5):
        p[f"layer{i}.scales"] = f32(1 + 0.5 * torch.randn(6, dtype=DT))
        p[f"layer{i}.biases"] = f32(0.5 * torch.randn(6, dtype=DT))
    p["layer3.weights"] = f32(0.5 * torch.randn(18, 6, dtype=DT))
    p["layer3.biases"] = f32(0.5 * torch.randn(18, dtype=DT))
    p["layer3.out_weights"] = f32(0.5 * torch.randn(6, 6, dtype=DT))
    p["layer3.out_biases"] = f32(0.5 * torch.randn(6, dtype=DT))
    p["layer6.weights"] = f32(0.5 * torch.randn(12, 6, dtype=DT))
    p["layer6.biases"] = f32(0.5 * torch.randn(12, dtype=DT))
    p["layer7.weights"] = f32(0.5 * torch.randn(6, 12, dtype=DT))
    p["layer7.biases"] = f32(0.5 * torch.randn(6, dtype=DT))
    p["layer10.weights"] = f32(0.5 * torch.randn(3, 6, dtype=DT))
    p["layer10.biases"] = f32(0.5 * torch.randn(3, dtype=DT))
    x = f32(torch.randn(BATCH, 3, 8, 8, dtype=DT))

    def forward(x, p):
        y = F.conv2d(x, p["layer0.weights"], p["layer0.biases"], stride=4)
        y = y.flatten(2).transpose(1, 2)
        x1 = torch.cat((p["layer1.class_token"].expand(BATCH, 1, 6), y), 1) + p["layer1.positional"]
        y = F.layer_norm(x1, (6,), p["layer2.scales"], p["layer2.biases"], 1e-6).transpose(0, 1)
        y, _ = F.multi_head_attention_forward(
            y, y, y, 6, 2, p["layer3.weights"], p["layer3.biases"], None, None, False, 0.0,
            p["layer3.out_weights"], p["layer3.out_biases"], training=False, need_weights=False)
        x4 = x1 + y.transpose(0, 1)
        y = F.layer_norm(x4, (6,), p["layer5.scales"], p["layer5.biases"], 1e-6)
        y = F.gelu(F.linear(y, p["layer6.weights"], p["layer6.biases"]))
        y = x4 + F.linear(y, p["layer7.weights"], p["layer7.biases"])
        return F.linear(y[:, 0], p["layer10.weights"], p["layer10.biases"])

    return VIT_BLOCK_CFG, x, p, forward, {}


def compute(x, params, forward, state):
    """The (name, tensor) pairs of one fixture, in file order; state holds tensors the net loads
    but does not train (batch norm's running statistics)."""
    p = {n: torch.nn.Parameter(t.clone()) for n, t in params.items()}
    x = x.clone().requires_grad_(True)
    out = forward(x, p)
    r = f32(torch.randn(out.shape, dtype=DT))
    (out * r).sum().backward()
    tensors = [("input", x.detach().clone()), ("r", r)]
    tensors += [(n, t.detach().clone()) for n, t in p.items()]
    tensors += list(state.items())
    tensors.append(("out", out.detach().clone()))
    tensors.append(("grad.input", x.grad.detach().clone()))
    tensors += [(f"grad.{n}", t.grad.detach().clone()) for n, t in p.items()]
    return tensors


FIXTURES = [
    ("se_block", se_block),
    ("shuffle_unit", shuffle_unit),
    ("pad_conv", pad_conv),
    ("convnext_block", convnext_block),
    ("dense_layer", dense_layer),
    ("dense_transition", dense_transition),
    ("inception_pools", inception_pools),
    ("inception_convs", inception_convs),
    ("vit_embed", vit_embed),
    ("vit_block", vit_block),
]


def main():
    for name, make in FIXTURES:
        seed_torch(0)
        cfg, x, params, forward, state = make()
        write_fixture(name, cfg, compute(x, params, forward, state))


if __name__ == "__main__":
    main()
