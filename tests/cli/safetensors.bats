#!/usr/bin/env bats
# safetensors in and out: torchvision resnet18/34/50, vgg16 and mobilenet_v2 with random weights,
# saved by the `safetensors` package (scripts/ref/make_torchvision_safetensors.py, at 64x64; vgg16
# at 224x224), give cdl predict torchvision's probabilities; F16 and BF16 files load; export
# safetensors writes the same tensors back (and the same bytes for a file cdl wrote); files that do
# not fit are refused.

load helpers

GEN="$REPO/scripts/ref/make_torchvision_safetensors.py"

setup_file() {
    python3 "$GEN" make "$BATS_FILE_TMPDIR" --size 64 >/dev/null
}

T() {
    echo "$BATS_FILE_TMPDIR/$1"
}

@test "safetensors: resnet18 from torchvision gives torchvision's probabilities (1e-5 relative)" {
    run "$CDL" predict "$(T resnet18.cfg)" "$(T resnet18.png)" --weights "$(T resnet18.safetensors)" \
        --top 100000 --json
    [ "$status" -eq 0 ]
    echo "$output" | grep -v '^cdl: --weights' > cdl.json
    python3 "$GEN" probs cdl.json "$(T resnet18.probs.json)"
}

@test "safetensors: mobilenet_v2 from torchvision gives torchvision's probabilities (1e-5 relative)" {
    "$CDL" predict "$(T mobilenetv2.cfg)" "$(T mobilenetv2.png)" --threads 1 \
        --weights "$(T mobilenetv2.safetensors)" --top 100000 --json > cdl.json 2> note
    grep -q 'loaded 53 layers$' note
    python3 "$GEN" probs cdl.json "$(T mobilenetv2.probs.json)"
}

@test "safetensors: resnet34, resnet50 and vgg16 (at 224) give torchvision's probabilities" {
    for name in resnet34 resnet50 vgg16; do
        "$CDL" predict "$(T $name.cfg)" "$(T $name.png)" --weights "$(T $name.safetensors)" \
            --top 100000 --json > cdl.json 2> note
        grep -q 'loaded [0-9]* layers$' note
        python3 "$GEN" probs cdl.json "$(T $name.probs.json)"
    done
}

@test "safetensors: F16 and BF16 files load as their float32 values" {
    for dtype in f16 bf16; do
        "$CDL" export safetensors "$(T resnet18.cfg)" --weights "$(T resnet18_$dtype.safetensors)" \
            -o back.safetensors 2>/dev/null
        python3 "$GEN" same back.safetensors "$(T resnet18_$dtype.safetensors)"
    done
}

@test "safetensors: export writes a torch file's tensors back, and a cdl file byte for byte" {
    "$CDL" export safetensors "$(T mobilenetv2.cfg)" --weights "$(T mobilenetv2.safetensors)" \
        -o once.safetensors 2>/dev/null
    python3 "$GEN" same once.safetensors "$(T mobilenetv2.safetensors)"
    "$CDL" export safetensors "$(T mobilenetv2.cfg)" --weights once.safetensors \
        -o twice.safetensors 2>/dev/null
    cmp once.safetensors twice.safetensors
    # torch's own loader takes what cdl wrote (num_batches_tracked included)
    /usr/bin/python3 - once.safetensors <<'PY'
import json, struct, sys, numpy as np, torch, torchvision
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
header.pop("__metadata__")
dt = {"F32": np.float32, "I64": np.int64}
sd = {k: torch.from_numpy(np.frombuffer(data[8 + n + t["data_offsets"][0]:8 + n + t["data_offsets"][1]],
                                        dt[t["dtype"]]).reshape(t["shape"]).copy())
      for k, t in header.items()}
torchvision.models.mobilenet_v2().load_state_dict(sd, strict=True)
PY
}

@test "safetensors: a 10-class head keeps its initial values and the load says so" {
    sed 's/^output=1000$/output=10/' "$(T resnet18.cfg)" > r10.cfg
    run "$CDL" predict r10.cfg "$(T resnet18.png)" --weights "$(T resnet18.safetensors)"
    [ "$status" -eq 0 ]
    [[ "$output" == *"loaded 20 layers, skipped layers 33 [connected] (fc.weight 10x512 vs 1000x512, fc.bias 10 vs 1000)"* ]]
}

@test "safetensors: wrong shapes are listed and refused" {
    sed 's/^output=1000$/output=10/' "$REPO/cfg/resnet18_cifar.cfg" > c.cfg
    run "$CDL" export safetensors c.cfg --weights "$(T resnet18.safetensors)" -o x.safetensors
    [ "$status" -eq 2 ]
    [[ "$output" == *"resnet18.safetensors: does not fit c.cfg (torchvision resnet names); shapes differ (cfg vs file): conv1.weight 64x3x3x3 vs 64x3x7x7"* ]]
    [ ! -e x.safetensors ]
}

@test "safetensors: missing tensors and tensors the cfg lacks are listed" {
    run "$CDL" predict "$REPO/cfg/resnet34.cfg" "$(T resnet18.png)" --weights "$(T resnet18.safetensors)"
    [ "$status" -eq 2 ]
    [[ "$output" == *"missing from the file: layer1.2.conv1.weight, layer1.2.bn1.weight"*"and "*" more"* ]]
    run "$CDL" predict "$(T resnet18.cfg)" "$(T resnet18.png)" --weights "$(T mobilenetv2.safetensors)"
    [ "$status" -eq 2 ]
    [[ "$output" == *"missing from the file: conv1.weight, bn1.weight"* ]]
    [[ "$output" == *"not in the cfg: classifier.1.bias, classifier.1.weight, features.0.0.weight"* ]]
}

@test "safetensors: a truncated file and a bad header are refused naming the file" {
    head -c 100000 "$(T resnet18.safetensors)" > cut.safetensors
    run "$CDL" predict "$(T resnet18.cfg)" "$(T resnet18.png)" --weights cut.safetensors
    [ "$status" -eq 2 ]
    [[ "$output" == "cdl: cut.safetensors: tensor 'fc.weight': its shape needs more than the file's "*" data bytes (a truncated file?)" ]]
    printf '\x10\x00\x00\x00\x00\x00\x00\x00{"a": [1, 2, 3]}' > bad.safetensors
    run "$CDL" predict "$(T resnet18.cfg)" "$(T resnet18.png)" --weights bad.safetensors
    [ "$status" -eq 2 ]
    [[ "$output" == "cdl: bad.safetensors: tensor 'a': not an object with dtype, shape and data_offsets" ]]
    head -c 4 "$(T resnet18.safetensors)" > short.safetensors
    run "$CDL" predict "$(T resnet18.cfg)" "$(T resnet18.png)" --weights short.safetensors
    [ "$status" -eq 2 ]
    [[ "$output" == "cdl: short.safetensors: 4 bytes: too short for a safetensors file" ]]
}

@test "safetensors: eval and train take a CFG with --weights (a new 10-class head)" {
    /usr/bin/python3 "$REPO/scripts/fashion_to_png.py" f --limit 20 >/dev/null
    run "$CDL" eval "$(T mobilenetv2.cfg)" --weights "$(T mobilenetv2.safetensors)" \
        --data f/fashion-png.data --set 64.output=10 --json
    [ "$status" -eq 0 ]
    [[ "$output" == *"loaded 52 layers, skipped layers 64 [connected] (classifier.1.weight 10x1280 vs 1000x1280"* ]]
    [[ "$output" == *'"samples":20,'* ]]
    run "$CDL" train "$(T mobilenetv2.cfg)" --weights "$(T mobilenetv2.safetensors)" \
        --data f/fashion-png.data --set 64.output=10 --set 63.freeze=1 --set net.batch=10 \
        --epochs 1 --out m.cdl
    [ "$status" -eq 0 ]
    [[ "$output" == *"--weights $(T mobilenetv2.safetensors): loaded 52 layers, skipped layers 64"* ]]
    # the frozen backbone is the file's, byte for byte
    "$CDL" export safetensors m.cdl -o m.safetensors >/dev/null
    python3 - m.safetensors "$(T mobilenetv2.safetensors)" "$GEN" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("gen", sys.argv[3])
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)
a, b = gen.read(sys.argv[1]), gen.read(sys.argv[2])
same = [k for k in b if not k.startswith("classifier") and (a[k] == b[k]).all()]
assert len(same) == len(b) - 2, (len(same), len(b))
PY
}
