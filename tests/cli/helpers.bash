# Shared setup for the CLI tests: $CDL is the binary under test, $REPO the checkout;
# each test runs in its own empty directory so weights/ never leaks between tests.
REPO="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
CDL="${CDL_BIN:-$REPO/cdl}"
# Without --threads cdl takes the cores free of other load, which varies between two runs;
# the same seed gives the same checkpoint only at the same thread count: all cores, as before.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(nproc)}"

setup() {
    WORK="$(mktemp -d)"
    cd "$WORK"
}

teardown() {
    cd /
    rm -rf "$WORK"
}

# Writes a cfg file named $1 from stdin.
write_cfg() {
    cat > "$1"
}

# A trained digits model at $WORK/digits.cdl (2 epochs, a few seconds).
train_digits() {
    "$CDL" train "$REPO/cfg/digits.cfg" --epochs "${1:-2}" --out digits.cdl --threads 1 \
        --log-every 1000 2>/dev/null
}

# Writes an 8-bit grayscale PNG: gray_png FILE SIDE PYTHON_EXPR_OF_x_y (0..255), or
# gray_png FILE digit ROW to draw row ROW of the bundled digits (prints its label).
gray_png() {
    /usr/bin/python3 - "$@" "$REPO" <<'PY'
import gzip, struct, sys, zlib
out, kind, arg, repo = sys.argv[1:5]
if kind == "digit":
    rows = gzip.open(repo + "/data/digits.csv.gz", "rt").read().split()
    v = [int(float(t)) for t in rows[int(arg)].split(",")]
    side, pix = 8, [[v[y * 8 + x] * 255 // 16 for x in range(8)] for y in range(8)]
    print(v[64])
else:
    side = int(kind)
    pix = [[int(eval(arg, {"x": x, "y": y})) & 255 for x in range(side)] for y in range(side)]
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
raw = b"".join(b"\0" + bytes(r) for r in pix)
head = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
open(out, "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
PY
}

# A small corpus with structure a tiny model learns in seconds, and its .data file.
write_text_data() {
    /usr/bin/python3 - <<'PY'
import random
random.seed(3)
words = "the cat sat on a mat and the dog ran to the red hat".split()
lines = [" ".join(random.choice(words) for _ in range(random.randint(4, 9))) for _ in range(600)]
open("corpus.txt", "w").write("\n".join(lines) + "\n")
PY
    printf 'type=text\ntrain=corpus.txt\nvalid_split=0.1\n' > corpus.data
}

# A one-block pre-LN transformer: embedding, positions, attention, GELU MLP, tied output, as
# tiny.cfg; write_tiny_gpt [SEQ BATCH MLP EPOCHS] (default 16 16 64 2).
write_tiny_gpt() {
    write_cfg tiny.cfg <<EOF2
[net]
seq=${1:-16}
batch=${2:-16}
optimizer=adamw
learning_rate=0.01
decay=0.01
clip_grad_norm=1
epochs=${4:-2}

[embedding]
output=32

[positional]

[layernorm]

[attention]
heads=2

[shortcut]
from=-3

[layernorm]

[linear]
output=${3:-64}
activation=gelu

[linear]
output=32

[shortcut]
from=-4

[layernorm]

[linear]
tie=1

[softmax]
EOF2
}

# Largest difference between two checkpoints' tensors, relative to each tensor's magnitude;
# $3 (optional) FILE:FROM:TO leaves rows FROM..TO-1 of FILE.npy out of the comparison.
max_rel_diff() {
    "$CDL" export npy "$1" a >/dev/null && "$CDL" export npy "$2" b >/dev/null
    python3 - "${3:-}" <<'PY'
import os, sys, numpy as np
skip = sys.argv[1].split(":") if sys.argv[1] else None
worst = 0.0
for f in sorted(os.listdir("a")):
    if f.endswith(".npy"):
        x = np.load("a/" + f).astype(np.float64)
        y = np.load("b/" + f).astype(np.float64)
        if skip and f == skip[0] + ".npy":
            keep = np.r_[0:int(skip[1]), int(skip[2]):len(x)]
            x, y = x[keep], y[keep]
        if x.size:
            worst = max(worst, np.max(np.abs(x - y)) / max(np.max(np.abs(x)), 1e-12))
print("%.3g" % worst)
PY
}

# A digits MLP of families every backend runs (connected, softmax) as mlp.cfg, and digits.data
# pointing at the bundled data: the GPU tests' net.
write_digits_mlp() {
    cp "$REPO/cfg/digits.data" . && sed -i "s#\.\./data#$REPO/data#" digits.data
    write_cfg mlp.cfg <<'CFG'
[net]
batch=32
width=8
height=8
channels=1
learning_rate=0.05
momentum=0.9
decay=0.0005
[connected]
output=32
activation=leaky
[connected]
output=10
[softmax]
CFG
}

# make_folder DIR CLASS... : DIR/CLASS/0..5.png (0..PER_CLASS-1), 8x8 grayscale, a pattern per
# class.
make_folder() {
    PER_CLASS=${PER_CLASS:-6} /usr/bin/python3 - "$@" <<'PY'
import os, struct, sys, zlib
root, classes = sys.argv[1], sys.argv[2:]
per_class = int(os.environ["PER_CLASS"])
def png(path, pix):
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
    raw = b"".join(b"\0" + bytes(r) for r in pix)
    head = struct.pack(">IIBBBBB", 8, 8, 8, 0, 0, 0, 0)
    open(path, "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head)
                           + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
for k, c in enumerate(classes):
    os.makedirs(f"{root}/{c}", exist_ok=True)
    for i in range(per_class):
        png(f"{root}/{c}/{i}.png", [[(x * (k + 1) * 29 + y * 7 + i * 13) % 256 for x in range(8)]
                                    for y in range(8)])
PY
}

# A classifier of 8x8 gray images into $1 [3] classes: a hidden layer, then the head (layer 1).
write_small_cfg() {
    printf '[net]\nbatch=4\nwidth=8\nheight=8\nchannels=1\n\n[connected]\noutput=8\nactivation=relu\n\n[connected]\noutput=%s\nactivation=linear\n\n[softmax]\n' \
        "${1:-3}" > small.cfg
}

# A character model small enough to train in a second.
write_text_cfg() {
    printf '[net]\nbatch=8\nseq=16\ninputs=1\nlearning_rate=0.01\noptimizer=adam\n\n[embedding]\noutput=16\n\n[linear]\n\n[softmax]\n' > text.cfg
}

# A vision transformer shaped as cfg/vit_b_16.cfg, small enough to train on the digits' 8x8 gray
# images in seconds: 2x2 patches of 16 features (16 patch tokens after a class token, a position
# embedding), two pre-norm encoder blocks of 2 heads and an MLP of 32 with GELU, the class token's
# row, a linear head and softmax: vit_cfg FILE.
vit_cfg() {
    local block='[layernorm]\neps=0.000001\n\n[attention]\nheads=2\ncausal=0\n\n[shortcut]\nfrom=-3\n\n[layernorm]\neps=0.000001\n\n[linear]\noutput=32\nactivation=gelu\n\n[linear]\noutput=16\n\n[shortcut]\nfrom=-4\n\n'
    {
        printf '[net]\nbatch=32\nwidth=8\nheight=8\nchannels=1\noptimizer=adamw\nlearning_rate=0.003\n\n'
        printf '[convolutional]\nfilters=16\nsize=2\nstride=2\nactivation=linear\n\n'
        printf '[tokens]\nclass_token=1\npositional=1\n\n'
        printf "$block$block"
        printf '[layernorm]\neps=0.000001\n\n[select_token]\nindex=0\n\n'
        printf '[connected]\noutput=10\nactivation=linear\n\n[softmax]\n'
    } > "$1"
}

# 12 toy pairs (pairs.tsv, pairs.data) and 3 float32 training steps of cfg/translate.cfg on them at
# batch 4 (fp32.jsonl), the reference of the 16-bit precisions' steps; TRANSLATE_STEPS holds the
# options those runs share.
translate_fp32_steps() {
    "$REPO/scripts/toy-pairs.sh" reverse 12 1 pairs.tsv >/dev/null
    printf 'type=pairs\ntrain=pairs.tsv\n' > pairs.data
    TRANSLATE_STEPS=(--data pairs.data --set net.batch=4 --epochs 1 --log-every 1 --threads 1)
    "$CDL" train "$REPO/cfg/translate.cfg" "${TRANSLATE_STEPS[@]}" --log fp32.jsonl --out fp32.cdl
}

# A small residual net on digits' 8x8 images (res.cfg of gpu_storage.bats and
# gpu_channels_last.bats): resnet18_cifar's blocks, two of them (the second with a strided 1x1
# projection through a [route]), a global [avgpool] and a classifier.
write_residual_cfg() {
    cat >"$1" <<'CFG'
[net]
batch=16
width=8
height=8
channels=1
learning_rate=0.05
momentum=0.9
[convolutional]
filters=8
size=3
pad=1
batch_normalize=1
activation=relu
[convolutional]
filters=8
size=3
pad=1
batch_normalize=1
activation=relu
[convolutional]
filters=8
size=3
pad=1
batch_normalize=1
activation=linear
[shortcut]
from=-3
activation=relu
[convolutional]
filters=16
size=3
stride=2
pad=1
batch_normalize=1
activation=relu
[convolutional]
filters=16
size=3
pad=1
batch_normalize=1
activation=linear
[route]
layers=-3
[convolutional]
filters=16
size=1
stride=2
batch_normalize=1
activation=linear
[shortcut]
from=-3
activation=relu
[avgpool]
[connected]
output=10
activation=linear
[softmax]
CFG
}

# early.cdl: cfg/reverse.cfg trained on the CPU long enough (12 epochs of 1000 toy pairs) that
# its decoded targets differ word to word; new.src: 12 unseen sources to decode.
train_reverse_early() {
    "$REPO/scripts/toy-pairs.sh" reverse 1000 1 pairs.tsv >/dev/null
    printf 'type=pairs\ntrain=pairs.tsv\n' > pairs.data
    "$CDL" train "$REPO/cfg/reverse.cfg" --data pairs.data --epochs 12 --out early.cdl \
        --threads 1 2>/dev/null
    "$REPO/scripts/toy-pairs.sh" reverse 12 7 new.tsv >/dev/null
    cut -f1 new.tsv > new.src
}
