"""PyTorch reference fixture for a sequence-to-sequence cdl net: nn.Transformer (one encoder and one
decoder layer, post-norm, dropout 0) between source and target embeddings with learned positions,
and a head tied to the target embedding, with padding on both sides.

Usage: /usr/bin/python3 scripts/ref/make_seq2seq.py
(Debian's python3-torch; writes tests/ref/seq2seq.cfg and tests/ref/seq2seq.ref relative to the
repository root, found from this script's path. Fixed seeds, one thread: running it twice gives
identical bytes. The .ref format is described in ref_format.py.)

Batch 3, source S 5, target T 6, vocab 9, d_model 16, 2 heads, feed-forward 32, computed in
float64 from float32-representable parameters:

    src = src_emb[ids] + src_pos,  tgt = tgt_emb[ids] + tgt_pos     layers 0-1, 10-11
    (a padded id, -1, embeds as a zero row)
    memory, dec = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1,
                                 num_decoder_layers=1, dim_feedforward=32, dropout=0,
                                 batch_first=True)(src, tgt, tgt_mask=causal,
                                 src_key_padding_mask, tgt_key_padding_mask,
                                 memory_key_padding_mask=src_key_padding_mask)
                                                                       layers 2-9, 12-22
    logits = dec tgt_emb^T + b                                         layer 23 (tie=1)
    loss = sum over the labelled target rows of -log softmax(logits)[label] / (B * T)

Sample b's source has 5 - b real tokens and its target 6 - 2b real rows (BOS first), the rest
-1, with labels -1 there. The LayerNorm scales and biases are drawn around 1 and 0 so that their
gradients and a swapped use would show. Stored: input (ids as floats, source then target rows),
labels, every parameter as layerI.NAME, out9 (the memory), out23 (the logits), out24 (the
probabilities), loss, and grad.layerI.NAME for every parameter.
"""

import math

import torch
import torch.nn.functional as F

from ref_format import f32, seed_torch, write_fixture

BATCH, SOURCE, TARGET, VOCAB, CHANNELS, HEADS, FF = 3, 5, 6, 9, 16, 2, 32

CFG = f"""[net]
batch={BATCH}
source={SOURCE}
seq={TARGET}
inputs=1
vocab={VOCAB}

# encoder: 0-1 the source's embedding and positions
[embedding]
output={CHANNELS}
part=source

[positional]

# 2-4: x = norm1(x + self_attn(x))
[attention]
heads={HEADS}
causal=0
key_padding=source

[shortcut]
from=-2

[layernorm]

# 5-8: x = norm2(x + linear2(relu(linear1(x))))
[linear]
output={FF}
activation=relu

[linear]
output={CHANNELS}

[shortcut]
from=-3

[layernorm]

# 9: the encoder's norm: the memory
[layernorm]

# decoder: 10-11 the target's embedding and positions
[embedding]
output={CHANNELS}
part=target

[positional]

# 12-14: x = norm1(x + self_attn(x)), causal
[attention]
heads={HEADS}
key_padding=target

[shortcut]
from=-2

[layernorm]

# 15-17: x = norm2(x + multihead_attn(x, memory))
[attention]
heads={HEADS}
source=9
key_padding=source

[shortcut]
from=-2

[layernorm]

# 18-21: x = norm3(x + linear2(relu(linear1(x))))
[linear]
output={FF}
activation=relu

[linear]
output={CHANNELS}

[shortcut]
from=-3

[layernorm]

# 22: the decoder's norm
[layernorm]

# 23: the head, tied to the target's embedding
[linear]
tie=1

# 24
[softmax]
"""

DT = torch.float64


def linear_init(outputs, inputs):
    """nn.Linear's default: U(-1/sqrt(inputs), 1/sqrt(inputs)) for weights and biases."""
    bound = 1.0 / math.sqrt(inputs)
    w = (torch.rand(outputs, inputs, dtype=DT) * 2 - 1) * bound
    b = (torch.rand(outputs, dtype=DT) * 2 - 1) * bound
    return f32(w), f32(b)


def make_params():
    p = {}
    for emb, pos, rows in ((0, 1, SOURCE), (10, 11, TARGET)):
        p[f"layer{emb}.weights"] = f32(torch.randn(VOCAB, CHANNELS, dtype=DT))
        p[f"layer{pos}.weights"] = f32(torch.randn(rows, CHANNELS, dtype=DT))
    for i in (4, 8, 9, 14, 17, 21, 22):
        p[f"layer{i}.scales"] = f32(1 + 0.1 * torch.randn(CHANNELS, dtype=DT))
        p[f"layer{i}.biases"] = f32(0.1 * torch.randn(CHANNELS, dtype=DT))
    for i in (2, 12, 15):
        p[f"layer{i}.weights"], p[f"layer{i}.biases"] = linear_init(3 * CHANNELS, CHANNELS)
        p[f"layer{i}.out_weights"], p[f"layer{i}.out_biases"] = linear_init(CHANNELS, CHANNELS)
    for first, second in ((5, 6), (18, 19)):
        p[f"layer{first}.weights"], p[f"layer{first}.biases"] = linear_init(FF, CHANNELS)
        p[f"layer{second}.weights"], p[f"layer{second}.biases"] = linear_init(CHANNELS, FF)
    p["layer23.biases"] = linear_init(VOCAB, CHANNELS)[1]
    return p


def bind(transformer, p):
    """nn.Transformer's tensors as the cdl layers' Parameters, so their gradients are the
    layers'."""
    enc, dec = transformer.encoder.layers[0], transformer.decoder.layers[0]
    attentions = ((enc.self_attn, 2), (dec.self_attn, 12), (dec.multihead_attn, 15))
    for mha, i in attentions:
        mha.in_proj_weight = p[f"layer{i}.weights"]
        mha.in_proj_bias = p[f"layer{i}.biases"]
        mha.out_proj.weight = p[f"layer{i}.out_weights"]
        mha.out_proj.bias = p[f"layer{i}.out_biases"]
    linears = ((enc.linear1, 5), (enc.linear2, 6), (dec.linear1, 18), (dec.linear2, 19))
    norms = ((enc.norm1, 4), (enc.norm2, 8), (transformer.encoder.norm, 9), (dec.norm1, 14),
             (dec.norm2, 17), (dec.norm3, 21), (transformer.decoder.norm, 22))
    for module, i in linears:
        module.weight, module.bias = p[f"layer{i}.weights"], p[f"layer{i}.biases"]
    for module, i in norms:
        module.weight, module.bias = p[f"layer{i}.scales"], p[f"layer{i}.biases"]


def embed(ids, weights, positions):
    """weights[ids] + positions, a padded id (-1) a zero row."""
    real = (ids >= 0).unsqueeze(-1).to(DT)
    return F.embedding(ids.clamp(min=0), weights) * real + positions


def main():
    seed_torch(0)

    params = make_params()
    src = torch.randint(0, VOCAB, (BATCH, SOURCE))
    tgt = torch.randint(0, VOCAB, (BATCH, TARGET))
    labels = torch.randint(0, VOCAB, (BATCH, TARGET))
    for b in range(BATCH):
        src[b, SOURCE - b:] = -1
        tgt[b, TARGET - 2 * b:] = -1
        labels[b, TARGET - 2 * b:] = -1

    p = {n: torch.nn.Parameter(t.detach().clone()) for n, t in params.items()}
    transformer = torch.nn.Transformer(d_model=CHANNELS, nhead=HEADS, num_encoder_layers=1,
                                       num_decoder_layers=1, dim_feedforward=FF, dropout=0.0,
                                       batch_first=True, dtype=DT)
    bind(transformer, p)
    src_pad, tgt_pad = src < 0, tgt < 0
    causal = transformer.generate_square_subsequent_mask(TARGET).to(DT)
    src_x = embed(src, p["layer0.weights"], p["layer1.weights"])
    tgt_x = embed(tgt, p["layer10.weights"], p["layer11.weights"])
    memory = transformer.encoder(src_x, src_key_padding_mask=src_pad)
    dec = transformer.decoder(tgt_x, memory, tgt_mask=causal, tgt_key_padding_mask=tgt_pad,
                              memory_key_padding_mask=src_pad)
    logits = F.linear(dec, p["layer10.weights"], p["layer23.biases"])
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1), ignore_index=-1,
                           reduction="sum") / (BATCH * TARGET)
    loss.backward()

    ids = torch.cat([src, tgt], dim=1).to(DT)
    tensors = [("input", ids), ("labels", labels.to(DT))]
    tensors += list(params.items())
    tensors += [("out9", memory), ("out23", logits), ("out24", F.softmax(logits, dim=-1))]
    tensors.append(("loss", loss.reshape(1)))
    tensors += [("grad." + n, p[n].grad) for n in params]
    write_fixture("seq2seq", CFG, tensors)


if __name__ == "__main__":
    main()
