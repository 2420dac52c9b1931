"""PyTorch reference fixtures for cdl's recurrent layers: [rnn], [lstm] and [gru].

Usage: /usr/bin/python3 scripts/ref/make_recurrent.py
(Debian's python3-torch; writes tests/ref/{rnn,lstm,gru}.cfg and .ref relative to the
repository root, which is found from this script's path.)

Each net is one recurrent layer over a sequence net: batch 2, T 5 steps, I 4 inputs per
step, H 6 hidden units, run by torch.nn.RNN (nonlinearity relu), nn.LSTM and nn.GRU with
batch_first=True and a zero initial state. The loss is sum(out * r) for a stored random r,
so dL/d(out) = r. Stored: the input [2][5][4], r and the output [2][5][6], the parameters
layer0.{weights_ih, weights_hh, biases_ih, biases_hh} (torch's weight_ih_l0, ... with the
gates stacked in torch's order), and the gradients grad.input and grad.layer0.NAME.

The nets run in float64 from float32-representable inputs and parameters; every stored
tensor is rounded to float32. Seeds are fixed, so running the script twice gives identical
bytes.
"""

import torch

from ref_format import f32, seed_torch, write_fixture

BATCH, STEPS, INPUTS, HIDDEN = 2, 5, 4, 6
DT = torch.float64

CFG = """# scripts/ref/make_recurrent.py: batch 2, T 5 steps, I 4 inputs, H 6 hidden units
[net]
batch=2
seq=5
inputs=4

[{section}]
output=6
{extra}"""

# section, torch module, the cfg lines after output=
NETS = [
    ("rnn", lambda: torch.nn.RNN(INPUTS, HIDDEN, nonlinearity="relu", batch_first=True),
     "activation=relu\n"),
    ("lstm", lambda: torch.nn.LSTM(INPUTS, HIDDEN, batch_first=True), ""),
    ("gru", lambda: torch.nn.GRU(INPUTS, HIDDEN, batch_first=True), ""),
]

# torch's parameter name -> cdl's
PARAM_NAMES = [("weight_ih_l0", "weights_ih"), ("weight_hh_l0", "weights_hh"),
               ("bias_ih_l0", "biases_ih"), ("bias_hh_l0", "biases_hh")]


def compute(make_module):
    """Returns the (name, tensor) pairs of one fixture, in file order."""
    module = make_module().to(DT)
    with torch.no_grad():
        for torch_name, _ in PARAM_NAMES:
            p = getattr(module, torch_name)
            p.copy_(f32(p))
    x = f32(torch.randn(BATCH, STEPS, INPUTS, dtype=DT)).requires_grad_(True)
    r = f32(torch.randn(BATCH, STEPS, HIDDEN, dtype=DT))
    tensors = [("input", x.detach().clone()), ("r", r)]
    tensors += [(f"layer0.{name}", getattr(module, torch_name).detach().clone())
                for torch_name, name in PARAM_NAMES]
    out, _ = module(x)
    (out * r).sum().backward()
    tensors.append(("out", out.detach().clone()))
    tensors.append(("grad.input", x.grad.detach().clone()))
    tensors += [(f"grad.layer0.{name}", getattr(module, torch_name).grad.detach().clone())
                for torch_name, name in PARAM_NAMES]
    return tensors


def main():
    for seed, (section, make_module, extra) in enumerate(NETS):
        seed_torch(seed)
        write_fixture(section, CFG.format(section=section, extra=extra), compute(make_module))


if __name__ == "__main__":
    main()
