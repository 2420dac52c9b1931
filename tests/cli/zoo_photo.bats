#!/usr/bin/env bats
# The zoo cfgs with torchvision's weights on a photo: for each cfg, torchvision's model with
# weights whose batch-norm statistics come from the photo (scripts/ref/make_torchvision_safetensors.py
# photo; tens of MB, written into a temp dir at test time), saved as safetensors under
# torchvision's names; `cdl predict cfg/NAME.cfg PHOTO --weights` (the cfg's own [net] recipe:
# resize_size, center crop, mean/std) must give torchvision's probabilities through its weights'
# eval transforms to 1e-5 relative, and the tensors must go back out under the same names.
# Skipped where /usr/bin/python3 has no torchvision or darknet's photos are not installed. vgg16's
# test is safetensors.bats' (random pixels): on a photo its float rounding comes near 1e-5.

load helpers

GEN="$REPO/scripts/ref/make_torchvision_safetensors.py"
PHOTO=/usr/share/darknet/data/dog.jpg
NAMES="resnet18 resnet34 resnet50 mobilenetv2 mobilenet_v3_small mobilenet_v3_large efficientnet_b0
    shufflenet_v2_x1_0 vit_b_16 regnet_y_400mf convnext_tiny densenet121 inception_v3"

setup_file() {
    /usr/bin/python3 -c "import torchvision" 2> /dev/null || skip "/usr/bin/python3 has no torchvision"
    python3 -c "import safetensors" 2> /dev/null || skip "python3 has no safetensors package"
    [ -f "$PHOTO" ] || skip "no $PHOTO (Debian's darknet package)"
    python3 "$GEN" photo "$BATS_FILE_TMPDIR" "$PHOTO" $NAMES > /dev/null
}

T() {
    echo "$BATS_FILE_TMPDIR/$1"
}

# photo_matches NAME: cdl's probabilities for the photo are torchvision's.
photo_matches() {
    "$CDL" predict "$REPO/cfg/$1.cfg" "$PHOTO" --weights "$(T $1.photo.safetensors)" \
        --top 100000 --json > cdl.json 2> note
    cat note
    grep -q 'loaded [0-9]* layers$' note
    python3 "$GEN" probs cdl.json "$(T $1.photo.probs.json)"
}

@test "zoo photo: resnet18, resnet34 and resnet50 give torchvision's probabilities" {
    for name in resnet18 resnet34 resnet50; do
        photo_matches $name
    done
}

@test "zoo photo: mobilenetv2 gives torchvision mobilenet_v2's probabilities" {
    photo_matches mobilenetv2
}

@test "zoo photo: mobilenet_v3_small gives torchvision's probabilities" {
    photo_matches mobilenet_v3_small
}

@test "zoo photo: mobilenet_v3_large (resize_size=232) gives torchvision's probabilities" {
    photo_matches mobilenet_v3_large
}

@test "zoo photo: efficientnet_b0 (interpolation=bicubic) gives torchvision's probabilities" {
    photo_matches efficientnet_b0
}

@test "zoo photo: shufflenet_v2_x1_0 gives torchvision's probabilities" {
    photo_matches shufflenet_v2_x1_0
}

@test "zoo photo: vit_b_16 gives torchvision's probabilities" {
    photo_matches vit_b_16
}

@test "zoo photo: regnet_y_400mf (resize_size=232) gives torchvision's probabilities" {
    photo_matches regnet_y_400mf
}

@test "zoo photo: convnext_tiny (resize_size=236) gives torchvision's probabilities" {
    photo_matches convnext_tiny
}

@test "zoo photo: densenet121 (bias-free convolutions, [batchnorm] pre-activations) gives torchvision's probabilities" {
    photo_matches densenet121
}

@test "zoo photo: inception_v3 (299x299 from a 342 resize, 1x7 and 7x1 kernels, the auxiliary classifier's tensors) gives torchvision's probabilities" {
    photo_matches inception_v3
}

@test "zoo photo: a resize one pixel off (257, not 256) fails the comparison for every cfg" {
    for name in $NAMES; do
        local off=257
        [ "$name" = inception_v3 ] && off=343 # its crop is 299, from 342
        "$CDL" predict "$REPO/cfg/$name.cfg" "$PHOTO" --set net.center_crop=1 \
            --set net.resize_size=$off --weights "$(T $name.photo.safetensors)" --top 100000 \
            --json > cdl.json 2>/dev/null
        run python3 "$GEN" probs cdl.json "$(T $name.photo.probs.json)"
        echo "$name: $output"
        [ "$status" -eq 1 ]
    done
}

@test "zoo photo: export writes torchvision's tensors back, byte for byte the second time" {
    for name in $NAMES; do
        "$CDL" export safetensors "$REPO/cfg/$name.cfg" --weights "$(T $name.photo.safetensors)" \
            -o once.safetensors 2>/dev/null
        python3 "$GEN" same once.safetensors "$(T $name.photo.safetensors)"
        "$CDL" export safetensors "$REPO/cfg/$name.cfg" --weights once.safetensors \
            -o twice.safetensors 2>/dev/null
        cmp once.safetensors twice.safetensors
        # torch's own loader takes what cdl wrote, strictly (num_batches_tracked included)
        /usr/bin/python3 - once.safetensors "$name" <<'PY'
import json, struct, sys, numpy as np, torch, torchvision
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
header.pop("__metadata__")
dt = {"F32": np.float32, "I64": np.int64}
sd = {k: torch.from_numpy(np.frombuffer(data[8 + n + t["data_offsets"][0]:8 + n + t["data_offsets"][1]],
                                        dt[t["dtype"]]).reshape(t["shape"]).copy())
      for k, t in header.items()}
ctor = {"mobilenetv2": "mobilenet_v2"}.get(sys.argv[2], sys.argv[2])
getattr(torchvision.models, ctor)().load_state_dict(sd, strict=True)
PY
    done
}
