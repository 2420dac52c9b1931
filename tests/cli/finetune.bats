#!/usr/bin/env bats
# Fine-tuning: a conv net trained on Fashion-MNIST classes 0-4 is fine-tuned on classes 5-9
# (relabelled 0-4) with its backbone frozen (freeze=1 on the last convolution) and a new 5-way
# head; and a diverging run stops at the first non-finite loss.

load helpers

# Shared by every test: the subsets, the base model and the fine-tuned one (a few seconds).
setup_file() {
    cd "$BATS_FILE_TMPDIR"
    # IDX subsets: task a = the first 3000 training (1000 test) images of classes 0-4, task b
    # = those of classes 5-9 with labels minus 5.
    /usr/bin/python3 - <<'PY'
import gzip, struct
root = "/usr/share/datasets/fashion-mnist"
for split, prefix, count in (("train", "train", 3000), ("valid", "t10k", 1000)):
    images = gzip.open(f"{root}/{prefix}-images-idx3-ubyte.gz").read()[16:]
    labels = gzip.open(f"{root}/{prefix}-labels-idx1-ubyte.gz").read()[8:]
    for task, first in (("a", 0), ("b", 5)):
        picked = [i for i in range(len(labels)) if first <= labels[i] < first + 5][:count]
        with open(f"{task}-{split}-images", "wb") as f:
            f.write(struct.pack(">IIII", 0x803, len(picked), 28, 28))
            f.write(b"".join(images[i * 784:(i + 1) * 784] for i in picked))
        with open(f"{task}-{split}-labels", "wb") as f:
            f.write(struct.pack(">II", 0x801, len(picked)) + bytes(labels[i] - first for i in picked))
        with open(f"{task}.data", "w") as f:
            f.write(f"classes=5\ntrain={task}-train-images\ntrain_labels={task}-train-labels\n"
                    f"valid={task}-valid-images\nvalid_labels={task}-valid-labels\n")
PY
    # Layers: 0 conv 8x28x28, 1 maxpool, 2 conv 16x14x14, 3 maxpool 16x7x7, 4 connected
    # (784 inputs; 10 outputs like a Fashion-MNIST head), 5 softmax.
    cat > small.cfg <<'CFG'
[net]
batch=32
width=28
height=28
channels=1
learning_rate=0.05
momentum=0.9
decay=0.0005

[convolutional]
filters=8
size=3
pad=1
batch_normalize=1
activation=leaky

[maxpool]
size=2
stride=2

[convolutional]
filters=16
size=3
pad=1
batch_normalize=1
activation=leaky

[maxpool]
size=2
stride=2

[connected]
output=10
activation=linear

[softmax]
CFG
    "$CDL" train small.cfg --data a.data --epochs 2 --out base.cdl --log-every 1000 2>/dev/null
    "$CDL" train small.cfg --data b.data --weights base.cdl --set 4.output=5 --set 2.freeze=1 \
        --epochs 2 --out ft.cdl --log-every 1000 2>ft.err
}

@test "--weights loads the layers that match and names the skipped head with both shapes" {
    [ "$(head -n 1 "$BATS_FILE_TMPDIR/ft.err")" = \
        "cdl: --weights base.cdl: loaded 2 layers, skipped layers 4 [connected] (shape 5x784 vs 10x784)" ]
}

@test "frozen layers keep their parameters and running statistics byte for byte" {
    "$CDL" export npy "$BATS_FILE_TMPDIR/base.cdl" base >/dev/null
    "$CDL" export npy "$BATS_FILE_TMPDIR/ft.cdl" ft >/dev/null
    [ "$(ls base/layer[02].*.npy | wc -l)" -eq 10 ] # weights, biases, scales, rolling mean/variance
    for f in base/layer[02].*.npy; do
        cmp "$f" "ft/${f#base/}"
    done
    ! cmp -s base/layer4.biases.npy ft/layer4.biases.npy # the new head has 5 outputs
}

@test "the new head learns the new classes on the frozen backbone" {
    run "$CDL" eval "$BATS_FILE_TMPDIR/ft.cdl" --data "$BATS_FILE_TMPDIR/b.data" --json
    [ "$status" -eq 0 ]
    # 5 classes: chance is 0.2; a trained head must reach three times that.
    /usr/bin/python3 -c 'import json, sys; a = json.loads(sys.argv[1])["accuracy"]; assert a >= 0.6, a' \
        "$output"
}

@test "a frozen backbone runs no backward, and its step is faster (reported)" {
    for freeze in 0 1; do
        "$CDL" profile "$BATS_FILE_TMPDIR/small.cfg" --set 4.output=5 --set 2.freeze=$freeze \
            --batch 32 --iters 20 --threads 1 --json > "profile$freeze.json"
    done
    /usr/bin/python3 - <<'PY' >&3
import json
trained, frozen = (json.load(open(f"profile{k}.json")) for k in (0, 1))
assert all(frozen["layers"][i]["backward_ms"]["max"] == 0 for i in range(3))
assert all(trained["layers"][i]["backward_ms"]["max"] > 0 for i in (0, 2))
t, f = trained["step_ms"], frozen["step_ms"]
print(f"# small.cfg step, batch 32, 1 thread, mean (min): backbone trained {t['mean']:.2f} "
      f"({t['min']:.2f}) ms, frozen {f['mean']:.2f} ({f['min']:.2f}) ms, "
      f"{t['min'] / f['min']:.1f}x faster")
PY
}

@test "a diverging run stops at the first non-finite loss, names the layer, keeps the checkpoint" {
    train_digits 1
    cp digits.cdl run.cdl
    run "$CDL" train "$REPO/cfg/digits.cfg" --set net.learning_rate=1e6 --epochs 3 --out run.cdl \
        --threads 1 --log-every 1000
    [ "$status" -eq 1 ]
    [[ "${lines[-1]}" =~ ^cdl:\ step\ [0-9]+:\ the\ loss\ is\ not\ finite\;\ layer\ [0-9]+\ \[[a-z]+\]\ produced\ the\ first\ non-finite\ output.*\;\ stopped,\ the\ last\ checkpoint\ \(run\.cdl\)\ is\ kept$ ]]
    cmp digits.cdl run.cdl
    run "$CDL" eval run.cdl --json
    [ "$status" -eq 0 ]
}

@test "a run that diverges before its first checkpoint says it wrote none" {
    run "$CDL" train "$REPO/cfg/digits.cfg" --set net.learning_rate=1e6 --out new.cdl \
        --threads 1 --log-every 1000
    [ "$status" -eq 1 ]
    [[ "${lines[-1]}" == *"the loss is not finite;"*"; stopped before writing a checkpoint (new.cdl)" ]]
    [ ! -e new.cdl ]
}
