# The small detection dataset and net that the detection tests train on.

# Writes set/images/N.png (16 images, 48x36 and 36x48: a bright square on a dark background),
# set/labels/N.txt (the square's exact box), train.txt and det.data (1 class), and tiny.cfg: two
# convolutions and a [yolo] on a 32x32 letterboxed, flipped input (write_detector_cfg).
detection_set() {
    /usr/bin/python3 - <<'PY'
import os, random
from PIL import Image
random.seed(3)
os.makedirs("set/images"); os.makedirs("set/labels")
for i in range(16):
    w, h = (48, 36) if i % 2 else (36, 48)
    img = Image.new("RGB", (w, h), (20, 20, 30))
    s = random.randint(8, 16)
    x0, y0 = random.randint(0, w - s), random.randint(0, h - s)
    img.paste((240, 230, 200), (x0, y0, x0 + s, y0 + s))
    img.save(f"set/images/{i}.png")
    open(f"set/labels/{i}.txt", "w").write(
        f"0 {(x0 + s / 2) / w:.6f} {(y0 + s / 2) / h:.6f} {s / w:.6f} {s / h:.6f}\n")
open("train.txt", "w").write("".join(f"set/images/{i}.png\n" for i in range(16)))
open("det.names", "w").write("square\n")
open("det.data", "w").write("classes=1\ntrain=train.txt\nnames=det.names\nbackup=backup/\n")
PY
    write_detector_cfg tiny.cfg "$TINY_NET" 0 "8 16" <<'CFG'
[convolutional]
filters=6
size=1
activation=linear

[yolo]
mask=0
anchors=10,10
classes=1
num=1
max=4
CFG
}

# tiny.cfg's [net] lines: 32x32 letterboxed, flipped, adam.
TINY_NET='batch=8
width=32
height=32
channels=3
learning_rate=0.001
optimizer=adam
letterbox=1
flip=1'

# write_detector_cfg FILE NET BN FILTERS: a small detector's cfg: [net] with the lines NET, then
# for each of FILTERS (a space-separated list) a 3x3 leaky [convolutional] (with
# batch_normalize=1 when BN is 1) and a 2x2 [maxpool], then stdin (the rest: its heads);
# sections a blank line apart.
write_detector_cfg() {
    local file=$1 net=$2 bn=$3 filters norm=""
    [ "$bn" = 1 ] && norm='batch_normalize=1\n'
    {
        printf '[net]\n%s\n' "$net"
        for filters in $4; do
            printf '\n[convolutional]\n%bfilters=%d\nsize=3\npad=1\nactivation=leaky\n' "$norm" \
                "$filters"
            printf '\n[maxpool]\nsize=2\nstride=2\n'
        done
        printf '\n'
        cat
    } > "$file"
}
