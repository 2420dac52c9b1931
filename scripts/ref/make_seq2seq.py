"""PyTorch reference fixtures for sequence-to-sequence cdl nets: nn.Transformer (one encoder and one
decoder layer, dropout 0; post-norm, and norm_first=True) between source and target embeddings
with learned positions, and a head tied to the target embedding, with padding on both sides.

Usage: /usr/bin/python3 scripts/ref/make_seq2seq.py
(Debian's python3-torch; writes tests/ref/seq2seq.cfg and .ref (post-norm) and
tests/ref/seq2seq_norm_first.cfg and .ref relative to the repository root, found from this
script's path. Fixed seeds, one thread: running it twice gives
identical bytes. The .ref format is described in ref_format.py.)

Batch 3, source S 5, target T 6, vocab 9, d_model 16, 2 heads, feed-forward 32, computed in
float64 from float32-representable parameters:

    src = src_emb[ids] + src_pos,  tgt = tgt_emb[ids] + tgt_pos     layers 0-1, 10-11
    (a padded id, -1, embeds as a zero row)
    memory, dec = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1,
                                 num_decoder_layers=1, dim_feedforward=32, dropout=0,
                                 batch_first=True, norm_first=...)(src, tgt, tgt_mask=causal,
                                 src_key_padding_mask, tgt_key_padding_mask,
                                 memory_key_padding_mask=src_key_padding_mask)
                                                                       layers 2-9, 12-22
    post-norm: x = norm(x + sublayer(x)), [attention] [shortcut] [layernorm];
    norm_first: x = x + sublayer(norm(x)), [layernorm] [attention] [shortcut]; the same layer
    count, so only the sub-layers' indices (ROLES) differ
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

# The layer index of each nn.Transformer tensor's cdl layer, post-norm and norm_first.
ROLES = {
    False: dict(enc_attn=2, enc_norm1=4, enc_ff1=5, enc_ff2=6, enc_norm2=8, dec_self=12,
                dec_norm1=14, dec_cross=15, dec_norm2=17, dec_ff1=18, dec_ff2=19, dec_norm3=21),
    True: dict(enc_norm1=2, enc_attn=3, enc_norm2=5, enc_ff1=6, enc_ff2=7, dec_norm1=12,
               dec_self=13, dec_norm2=15, dec_cross=16, dec_norm3=18, dec_ff1=19, dec_ff2=20),
}


def cfg_text(norm_first):
    """The cdl cfg: the encoder (0-9) and the decoder (10-22), then the tied head."""
    def attention(keys):
        return f"[attention]\nheads={HEADS}\n{keys}\n"

    def ff(residual):
        return (f"[linear]\noutput={FF}\nactivation=relu\n\n[linear]\noutput={CHANNELS}\n\n"
                f"[shortcut]\nfrom={residual}\n\n")

    def sublayer(block, post_residual):
        """post-norm: block, shortcut, norm; norm_first: norm, block, shortcut."""
        if norm_first:
            return f"[layernorm]\n\n{block}\n[shortcut]\nfrom=-3\n\n"
        return f"{block}\n[shortcut]\nfrom={post_residual}\n\n[layernorm]\n\n"

    def ff_sublayer():
        if norm_first:
            return "[layernorm]\n\n" + ff(-4)
        return ff(-3) + "[layernorm]\n\n"

    text = (f"[net]\nbatch={BATCH}\nsource={SOURCE}\nseq={TARGET}\ninputs=1\nvocab={VOCAB}\n\n"
            f"# encoder, norm_first={int(norm_first)}\n"
            f"[embedding]\noutput={CHANNELS}\npart=source\n\n[positional]\n\n")
    text += sublayer(attention("causal=0\nkey_padding=source"), -2) + ff_sublayer()
    text += "# the encoder's norm: the memory (layer 9)\n[layernorm]\n\n"
    text += f"# decoder\n[embedding]\noutput={CHANNELS}\npart=target\n\n[positional]\n\n"
    text += sublayer(attention("key_padding=target"), -2)
    text += sublayer(attention("source=9\nkey_padding=source"), -2) + ff_sublayer()
    text += "# the decoder's norm, the tied head\n[layernorm]\n\n[linear]\ntie=1\n\n[softmax]\n"
    return text


DT = torch.float64


def linear_init(outputs, inputs):
    """nn.Linear's default: U(-1/sqrt(inputs), 1/sqrt(inputs)) for weights and biases."""
    bound = 1.0 / math.sqrt(inputs)
    w = (torch.rand(outputs, inputs, dtype=DT) * 2 - 1) * bound
    b = (torch.rand(outputs, dtype=DT) * 2 - 1) * bound
    return f32(w), f32(b)


def make_params(r):
    p = {}
    for emb, pos, rows in ((0, 1, SOURCE), (10, 11, TARGET)):
        p[f"layer{emb}.weights"] = f32(torch.randn(VOCAB, CHANNELS, dtype=DT))
        p[f"layer{pos}.weights"] = f32(torch.randn(rows, CHANNELS, dtype=DT))
    for role in ("enc_norm1", "enc_norm2", "dec_norm1", "dec_norm2", "dec_norm3"):
        p[f"layer{r[role]}.scales"] = f32(1 + 0.1 * torch.randn(CHANNELS, dtype=DT))
        p[f"layer{r[role]}.biases"] = f32(0.1 * torch.randn(CHANNELS, dtype=DT))
    for i in (9, 22):
        p[f"layer{i}.scales"] = f32(1 + 0.1 * torch.randn(CHANNELS, dtype=DT))
        p[f"layer{i}.biases"] = f32(0.1 * torch.randn(CHANNELS, dtype=DT))
    for role in ("enc_attn", "dec_self", "dec_cross"):
        i = r[role]
        p[f"layer{i}.weights"], p[f"layer{i}.biases"] = linear_init(3 * CHANNELS, CHANNELS)
        p[f"layer{i}.out_weights"], p[f"layer{i}.out_biases"] = linear_init(CHANNELS, CHANNELS)
    for first, second in (("enc_ff1", "enc_ff2"), ("dec_ff1", "dec_ff2")):
        i, j = r[first], r[second]
        p[f"layer{i}.weights"], p[f"layer{i}.biases"] = linear_init(FF, CHANNELS)
        p[f"layer{j}.weights"], p[f"layer{j}.biases"] = linear_init(CHANNELS, FF)
    p["layer23.biases"] = linear_init(VOCAB, CHANNELS)[1]
    return p


def bind(transformer, p, r):
    """nn.Transformer's tensors as the cdl layers' Parameters, so their gradients are the
    layers'."""
    enc, dec = transformer.encoder.layers[0], transformer.decoder.layers[0]
    for mha, role in ((enc.self_attn, "enc_attn"), (dec.self_attn, "dec_self"),
                      (dec.multihead_attn, "dec_cross")):
        i = r[role]
        mha.in_proj_weight = p[f"layer{i}.weights"]
        mha.in_proj_bias = p[f"layer{i}.biases"]
        mha.out_proj.weight = p[f"layer{i}.out_weights"]
        mha.out_proj.bias = p[f"layer{i}.out_biases"]
    linears = ((enc.linear1, r["enc_ff1"]), (enc.linear2, r["enc_ff2"]),
               (dec.linear1, r["dec_ff1"]), (dec.linear2, r["dec_ff2"]))
    norms = ((enc.norm1, r["enc_norm1"]), (enc.norm2, r["enc_norm2"]),
             (transformer.encoder.norm, 9), (dec.norm1, r["dec_norm1"]),
             (dec.norm2, r["dec_norm2"]), (dec.norm3, r["dec_norm3"]),
             (transformer.decoder.norm, 22))
    for module, i in linears:
        module.weight, module.bias = p[f"layer{i}.weights"], p[f"layer{i}.biases"]
    for module, i in norms:
        module.weight, module.bias = p[f"layer{i}.scales"], p[f"layer{i}.biases"]


def embed(ids, weights, positions):
    """weights[ids] + positions, a padded id (-1) a zero row."""
    real = (ids >= 0).unsqueeze(-1).to(DT)
    return F.embedding(ids.clamp(min=0), weights) * real + positions


def make(name, norm_first):
    seed_torch(0)
    r = ROLES[norm_first]
    params = make_params(r)
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
                                       batch_first=True, norm_first=norm_first, dtype=DT)
    bind(transformer, p, r)
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
    write_fixture(name, cfg_text(norm_first), tensors)


def main():
    make("seq2seq", norm_first=False)
    make("seq2seq_norm_first", norm_first=True)


if __name__ == "__main__":
    main()
