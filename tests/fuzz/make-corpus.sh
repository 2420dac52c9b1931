#!/usr/bin/env bash
# Writes the fuzz targets' seed corpora, tests/fuzz/corpus/NAME/, from small repo data and
# files that ./cdl itself writes (checkpoints, ONNX, darknet .weights, JSONL logs). Run from the
# repository root after `make`; the result is committed (keep it small: a few files of a few KB
# per target). Usage: tests/fuzz/make-corpus.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
CDL=${CDL:-./cdl}
out=tests/fuzz/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -rf "$out"
mkdir -p "$out"/{cfg,checkpoint,png,jpeg,data_config,idx,cifar,csv,list,darknet_weights,vocab,plot,onnx,safetensors,npy}

# ---- cfg: the repo's small cfgs, and one with the layer families they lack ----
cp cfg/digits.cfg cfg/lenet.cfg cfg/cifar_small.cfg "$out/cfg/"
for f in tests/ref/*.cfg; do cp "$f" "$out/cfg/ref_${f##*/}"; done
cat > "$out/cfg/layers.cfg" <<'CFG'
[net]
batch=2
width=8
height=8
channels=3
mean=0.5
std=0.25
[convolutional]
filters=4
size=3
stride=1
pad=1
activation=relu
[dropout]
probability=0.5
[route]
layers=-1,-2
[shortcut]
from=-3
activation=linear
[upsample]
stride=2
[reorg]
stride=2
[crop]
crop_width=6
crop_height=6
[avgpool]
[connected]
output=5
activation=logistic
[softmax]
CFG

# ---- checkpoint, plot, onnx, darknet_weights: tiny models trained on the bundled digits ----
cat > "$tmp/tiny.cfg" <<'CFG'
[net]
batch=16
width=8
height=8
channels=1
[convolutional]
filters=2
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
sed 's/^channels=1$/channels=1\noptimizer=adam\nema=0.9/' "$tmp/tiny.cfg" > "$tmp/tiny_adam.cfg"
for c in tiny tiny_adam; do
    "$CDL" train "$tmp/$c.cfg" --data cfg/digits.data --epochs 1 --seed 1 --workers 0 \
        --out "$tmp/$c.cdl" --log "$tmp/$c.jsonl" --log-every 20 > /dev/null 2>&1
    cp "$tmp/$c.cdl" "$out/checkpoint/$c.cdl"
    cp "$tmp/$c.jsonl" "$out/plot/$c.jsonl"
done
"$CDL" export onnx "$tmp/tiny.cdl" -o "$out/onnx/tiny.onnx" > /dev/null
"$CDL" export onnx "$tmp/tiny.cdl" --opset 17 --batch 1 -o "$out/onnx/tiny_opset17.onnx" > /dev/null
printf '{"type":"step","step":1,"loss":2.5}\n\n{"type":"epoch","step":2,"valid_loss":null,"accuracy":0.5}\n' \
    > "$out/plot/short.jsonl"

# A text model: its checkpoint holds a character vocabulary.
printf 'the quick brown fox jumps over the lazy dog\n%.0s' {1..20} > "$tmp/text.txt"
printf 'type=text\ntrain=text.txt\nvalid_split=0.1\n' > "$tmp/text.data"
printf '[net]\nbatch=2\nseq=8\n[embedding]\noutput=4\n[linear]\ntie=1\n[softmax]\n' \
    > "$tmp/text.cfg"
"$CDL" train "$tmp/text.cfg" --data "$tmp/text.data" --epochs 1 --seed 1 \
    --out "$tmp/text.cdl" > /dev/null 2>&1
cp "$tmp/text.cdl" "$out/checkpoint/text.cdl"

# The net of fuzz_darknet_weights.c (keep the two in step): its tensors as darknet writes them,
# and the same with darknet's older header (int32 `seen`: version 0.1.0).
cat > "$tmp/darknet.cfg" <<'CFG'
[net]
width=4
height=4
channels=2
[convolutional]
filters=4
size=3
pad=1
batch_normalize=1
activation=leaky
[convolutional]
filters=2
size=1
groups=2
activation=linear
[batchnorm]
[connected]
output=3
batch_normalize=1
activation=linear
[softmax]
CFG
"$CDL" export darknet "$tmp/darknet.cfg" -o "$out/darknet_weights/v020.weights" > /dev/null
python3 - "$out/darknet_weights/v020.weights" "$out/darknet_weights/v010.weights" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
major, minor, revision, seen = struct.unpack_from("<iiiQ", data)
open(sys.argv[2], "wb").write(struct.pack("<iiii", 0, 1, 0, seen) + data[20:])
PY

# ---- png, jpeg: small images of every kind the decoder takes ----
python3 - "$out" <<'PY'
import io, sys
from PIL import Image
out = sys.argv[1]
def ramp(mode, w, h):
    im = Image.new(mode, (w, h))
    n = len(mode) if mode in ("RGB", "RGBA", "LA") else 1
    px = [tuple((x * 37 + y * 11 + k * 60) % 256 for k in range(n)) if n > 1
          else (x * 37 + y * 11) % 256 for y in range(h) for x in range(w)]
    im.putdata(px)
    return im
ramp("L", 8, 8).save(f"{out}/png/gray.png")
ramp("RGB", 5, 3).save(f"{out}/png/rgb.png")
ramp("RGBA", 4, 4).save(f"{out}/png/rgba.png")
ramp("LA", 3, 3).save(f"{out}/png/gray_alpha.png")
ramp("RGB", 6, 4).convert("P", palette=Image.ADAPTIVE, colors=8).save(f"{out}/png/palette.png")
Image.new("I;16", (3, 2), 40000).save(f"{out}/png/gray16.png")
ramp("RGB", 4, 4).save(f"{out}/png/interlaced.png", interlace=1)
ramp("L", 8, 8).save(f"{out}/jpeg/gray.jpg", quality=90)
ramp("RGB", 9, 7).save(f"{out}/jpeg/rgb.jpg", quality=75)
ramp("RGB", 16, 8).save(f"{out}/jpeg/progressive.jpg", progressive=True, quality=80)
ramp("RGB", 8, 8).convert("CMYK").save(f"{out}/jpeg/cmyk.jpg")
exif = Image.Exif()
exif[0x0112] = 6  # Orientation: rotate 90
ramp("RGB", 6, 4).save(f"{out}/jpeg/exif_orientation6.jpg", exif=exif.tobytes())
PY

# ---- data_config: .data files naming the files fuzz_data_config.c writes beside its input ----
printf 'classes=3\ntrain=list.txt\nnames=names.txt\nvalid_split=0.25\n' > "$out/data_config/list.data"
printf 'train=files.csv\nnames=names.txt\nvalid=files.csv\n' > "$out/data_config/csv.data"
printf '# digits\nclasses=3\ntrain=digits.csv\nvalid_split=0.5\n' > "$out/data_config/digits.data"
printf 'classes=3\ntrain=images.idx\ntrain_labels=labels.idx\nvalid=images.idx\nvalid_labels=labels.idx\n' \
    > "$out/data_config/idx.data"
printf 'type=cifar10\ntrain=batch.bin,batch.bin\nvalid_split=0.5\n' > "$out/data_config/cifar.data"
printf 'type=text\ntokens=byte\ntrain=text.txt\nvalid_split=0.2\n' > "$out/data_config/text.data"
printf 'classes=3\ntrain=list.txt\nnames=names.txt\nlabels=names.txt\nbackup=backup/\ntop=2\n' \
    > "$out/data_config/labels.data"

# ---- idx: fuzz_split framing (2-byte little-endian length of the images file, images, labels) ----
python3 - "$out/idx" <<'PY'
import gzip, struct, sys
out = sys.argv[1]
def frame(images, labels):
    return struct.pack("<H", len(images)) + images + labels
images = struct.pack(">IIII", 0x803, 3, 2, 2) + bytes(range(12))
labels = struct.pack(">II", 0x801, 3) + bytes([0, 1, 2])
open(f"{out}/raw.bin", "wb").write(frame(images, labels))
open(f"{out}/gzip.bin", "wb").write(frame(gzip.compress(images, mtime=0), gzip.compress(labels, mtime=0)))
PY

# ---- cifar: one CIFAR-10 record and one CIFAR-100 record ----
python3 - "$out/cifar" <<'PY'
import sys
out = sys.argv[1]
pixels = bytes(i % 256 for i in range(3072))
open(f"{out}/cifar10.bin", "wb").write(bytes([7]) + pixels)
open(f"{out}/cifar100.bin", "wb").write(bytes([3, 42]) + pixels)
PY

# ---- csv: digits pixel rows (the first lines of data/digits.csv.gz) and path,label lines ----
{ zcat data/digits.csv.gz || true; } | head -n 3 > "$out/csv/digits.csv"
printf 'path,label\nimages/a.png,cat\n"images/b,c.png", 1\nimages/d.jpg,bird\n' > "$out/csv/files.csv"

# ---- list: darknet list lines, labels found as substrings ----
printf 'data/train/cat/1.jpg\n  data/dog/2.png  \n\nrain/cat.jpg\n/abs/dog/3.jpg\n' > "$out/list/train.list"

# ---- vocab: checkpoint vocabulary strings and corpora ----
printf 'byte' > "$out/vocab/byte.txt"
printf ' !abcdefghijklmnopqrstuvwxyz' > "$out/vocab/chars.txt"
printf 'caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\n' > "$out/vocab/utf8.txt"

# ---- safetensors: F32, F16, BF16 and I64 tensors with metadata ----
python3 - "$out/safetensors/small.safetensors" <<'PY'
import json, struct, sys
tensors = [("w", "F32", [2, 3], struct.pack("<6f", *range(6))),
           ("h", "F16", [2], struct.pack("<2e", 1.5, -2.0)),
           ("b", "BF16", [], struct.pack("<H", 0x3F80)),
           ("n", "I64", [1], struct.pack("<q", 0))]
header, data = {"__metadata__": {"format": "pt"}}, b""
for name, dtype, shape, raw in tensors:
    header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
    data += raw
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(text)) + text + data)
PY

# ---- npy: float32, float64 and float16 arrays, C order, formats 1.0 and 2.0 ----
python3 - "$out/npy" <<'PY'
import struct, sys
def npy(path, descr, shape, raw, version=1):
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    text = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    pad = -(len(text) + 1 + (10 if version == 1 else 12)) % 64
    text = (text + " " * pad + "\n").encode()
    size = struct.pack("<H" if version == 1 else "<I", len(text))
    open(path, "wb").write(b"\x93NUMPY" + bytes([version, 0]) + size + text + raw)
npy(sys.argv[1] + "/f4.npy", "<f4", [2, 3], struct.pack("<6f", *range(6)))
npy(sys.argv[1] + "/f8.npy", "<f8", [1, 1, 2, 2], struct.pack("<4d", 0.5, -1, 1e300, 3))
npy(sys.argv[1] + "/f2.npy", "<f2", [3], struct.pack("<3e", 1.5, -2.0, 65504), version=2)
npy(sys.argv[1] + "/scalar.npy", "<f4", [], struct.pack("<f", 7))
PY

du -sh "$out"
