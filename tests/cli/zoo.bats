#!/usr/bin/env bats
# The model zoo in cfg/: every cfg loads and trains, the torchvision-layout cfgs have
# torchvision's parameter counts and compute its functions, the darknet ones have darknet's
# layers, and docs/zoo.md's table is the one scripts/zoo-table.sh prints.
load helpers

# params CFG: trainable parameters, as `cdl info --json` counts them.
params() {
    "$CDL" info "$1" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["params"])'
}

@test "every cfg in cfg/ loads in cdl info and trains one step in cdl bench" {
    local n=0
    for cfg in "$REPO"/cfg/*.cfg; do
        run "$CDL" info "$cfg"
        echo "$output"
        [ "$status" -eq 0 ]
        [[ "${lines[-3]}" == "total: "*" parameters"* ]]
        [[ "${lines[-2]}" == "training activations: "*" MiB for a pass of "*" samples" ]]
        [[ "${lines[-1]}" == "inference activations: "*" MiB for a pass of "*" samples" ]]
        run "$CDL" bench "$cfg" --steps 1 --warmup 0 --batch 2 --threads 2
        echo "$output"
        [ "$status" -eq 0 ]
        [[ "$output" == *"batch 2, threads 2, 1 steps: "*" images/s"* ||
            "$output" == *"batch 2 x "*" tokens, threads 2, 1 steps: "*" tokens/s"* ]]
        n=$((n + 1))
    done
    [ "$n" -ge 16 ]
}

@test "resnet18.cfg has torchvision resnet18's 11,689,512 parameters" {
    [ "$(params "$REPO/cfg/resnet18.cfg")" -eq 11689512 ]
}

@test "resnet34.cfg has torchvision resnet34's 21,797,672 parameters" {
    [ "$(params "$REPO/cfg/resnet34.cfg")" -eq 21797672 ]
}

@test "resnet50.cfg has torchvision resnet50's 25,557,032 parameters" {
    [ "$(params "$REPO/cfg/resnet50.cfg")" -eq 25557032 ]
}

@test "vgg16.cfg has torchvision vgg16's 138,357,544 parameters" {
    [ "$(params "$REPO/cfg/vgg16.cfg")" -eq 138357544 ]
}

@test "mobilenetv2.cfg has torchvision mobilenet_v2's 3,504,872 parameters" {
    [ "$(params "$REPO/cfg/mobilenetv2.cfg")" -eq 3504872 ]
}

@test "the MobileNetV3, EfficientNet-B0, ShuffleNetV2, ViT-B/16, RegNetY-400MF, ConvNeXt-Tiny and DenseNet-121 cfgs have torchvision's parameter counts" {
    [ "$(params "$REPO/cfg/mobilenet_v3_small.cfg")" -eq 2542856 ]
    [ "$(params "$REPO/cfg/mobilenet_v3_large.cfg")" -eq 5483032 ]
    [ "$(params "$REPO/cfg/efficientnet_b0.cfg")" -eq 5288548 ]
    [ "$(params "$REPO/cfg/shufflenet_v2_x1_0.cfg")" -eq 2278604 ]
    [ "$(params "$REPO/cfg/vit_b_16.cfg")" -eq 86567656 ]
    [ "$(params "$REPO/cfg/regnet_y_400mf.cfg")" -eq 4344144 ]
    [ "$(params "$REPO/cfg/convnext_tiny.cfg")" -eq 28589128 ]
    [ "$(params "$REPO/cfg/densenet121.cfg")" -eq 7978856 ]
}

@test "inception_v3.cfg has torchvision inception_v3's 27,161,264 parameters, the auxiliary classifier's among them" {
    [ "$(params "$REPO/cfg/inception_v3.cfg")" -eq 27161264 ]
}

@test "the CIFAR ResNets are torchvision's with a 3x3x3x64 stem and a 10-class head" {
    # torchvision's count, minus the 7x7x3x64 stem and the 512x1000+1000 head, plus the
    # 3x3x3x64 stem and the 512x10+10 head.
    local change=$((-7 * 7 * 3 * 64 - 512 * 1000 - 1000 + 3 * 3 * 3 * 64 + 512 * 10 + 10))
    [ "$(params "$REPO/cfg/resnet18_cifar.cfg")" -eq $((11689512 + change)) ]
    [ "$(params "$REPO/cfg/resnet34_cifar.cfg")" -eq $((21797672 + change)) ]
}

@test "the torchvision-layout cfgs compute torchvision's networks on the same weights" {
    for name in resnet18 resnet34 resnet50 resnet18_cifar resnet34_cifar vgg16 mobilenetv2 \
        mobilenet_v3_small mobilenet_v3_large efficientnet_b0 shufflenet_v2_x1_0 regnet_y_400mf \
        densenet121 inception_v3; do
        run /usr/bin/python3 "$REPO/scripts/zoo_vs_torchvision.py" "$CDL" "$REPO/cfg/$name.cfg"
        echo "$output"
        [ "$status" -eq 0 ]
        [[ "${lines[-1]}" == "$name: "*" max relative difference "* ]]
    done
}

# same_layers CFG DARKNET_CFG [--set k=v]...: both have the same layer table in cdl info.
same_layers() {
    local ours=$1 theirs=$2
    shift 2
    "$CDL" info "$ours" --json > ours.json
    "$CDL" info "$theirs" --json "$@" > theirs.json
    python3 - <<'PY'
import json
ours, theirs = (json.load(open(f))["layers"] for f in ("ours.json", "theirs.json"))
assert ours == theirs, "layer tables differ"
print(len(ours), "layers")
PY
}

@test "darknet19.cfg has the layers of darknet's darknet19.cfg at 224x224" {
    same_layers "$REPO/cfg/darknet19.cfg" /usr/share/darknet/cfg/darknet19.cfg \
        --set net.width=224 --set net.height=224
}

@test "cifar_darknet.cfg has the layers of darknet's cifar.cfg" {
    same_layers "$REPO/cfg/cifar_darknet.cfg" /usr/share/darknet/cfg/cifar.cfg
}

@test "fashion_resnet_torch.py builds resnet_fashion.cfg with cdl's parameter count" {
    run /usr/bin/python3 "$REPO/scripts/fashion_resnet_torch.py" --params
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[-1]}" -eq "$(params "$REPO/cfg/resnet_fashion.cfg")" ]
}

@test "docs/zoo.md's model zoo table is what scripts/zoo-table.sh prints" {
    CDL="$CDL" "$REPO/scripts/zoo-table.sh" > table.md
    awk '/^# Model zoo$/ { zoo = 1 } zoo && /^\|/ { print; table = 1; next } table { exit }' \
        "$REPO/docs/zoo.md" > zoo.md
    diff table.md zoo.md || {
        echo "docs/zoo.md's table is stale: run scripts/zoo-table.sh --write"
        false
    }
}
