#!/usr/bin/env bats
# cdl train --tensorboard: event files that TensorBoard's own reader (the tensorboard package
# in the pyenv python3) loads, holding the same scalars as the JSONL log.
load helpers

@test "--tensorboard scalars read back by TensorBoard equal the JSONL log's values" {
    run "$CDL" train "$REPO/cfg/digits.cfg" --epochs 2 --out d.cdl --threads 1 --log run.jsonl \
        --log-every 11 --tensorboard tb/run1
    [ "$status" -eq 0 ]
    run python3 - <<'PY'
import json, struct
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

def f32(x):  # what a float32 simple_value holds for the double x
    return struct.unpack("<f", struct.pack("<f", x))[0]

acc = EventAccumulator("tb/run1", size_guidance={"scalars": 0})
acc.Reload()
rows = [json.loads(line) for line in open("run.jsonl")]
steps = [r for r in rows if r["type"] == "step"]
epochs = [r for r in rows if r["type"] == "epoch"]
# digits: 1437 training samples, batch 32 -> 44 steps per epoch, logged every 11th
assert [r["step"] for r in steps] == [11, 22, 33, 44, 55, 66, 77, 88], steps
assert [r["step"] for r in epochs] == [44, 88], epochs
want = {"train/loss": (steps, "loss"), "train/lr": (steps, "lr"),
        "train/images_per_s": (steps, "images_per_s"), "valid/loss": (epochs, "valid_loss"),
        "valid/accuracy": (epochs, "accuracy"), "valid/top5": (epochs, "top5")}
assert sorted(acc.Tags()["scalars"]) == sorted(want), acc.Tags()["scalars"]
for tag, (records, key) in want.items():
    got = acc.Scalars(tag)
    assert [s.step for s in got] == [r["step"] for r in records], (tag, got)
    for s, r in zip(got, records):
        assert s.value == f32(r[key]), (tag, s.step, s.value, r[key])
print("ok")
PY
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[-1]}" = ok ]
}

@test "the event file is named events.out.tfevents.TIME.HOST, starts with brain.Event:2" {
    before=$(date +%s)
    "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --out d.cdl --threads 1 --tensorboard tb 2>/dev/null
    after=$(date +%s)
    files=(tb/*)
    [ "${#files[@]}" -eq 1 ]
    name=$(basename "${files[0]}")
    [[ "$name" == "events.out.tfevents."*".$(hostname)" ]]
    stamp=${name#events.out.tfevents.}
    stamp=${stamp%%.*}
    [ "$stamp" -ge "$before" ] && [ "$stamp" -le "$after" ]
    run python3 -c '
import sys
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
first = next(iter(EventFileLoader(sys.argv[1]).Load()))
print(first.file_version)' "${files[0]}"
    [ "${lines[-1]}" = "brain.Event:2" ]
}

@test "a second run into the same directory gets its own event file" {
    "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --out a.cdl --threads 1 --tensorboard tb 2>/dev/null
    "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --out b.cdl --threads 1 --tensorboard tb 2>/dev/null
    files=(tb/events.out.tfevents.*)
    [ "${#files[@]}" -eq 2 ]
}

@test "--tensorboard naming a regular file fails before training, naming it" {
    touch taken
    run "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --out d.cdl --tensorboard taken
    echo "$output"
    [ "$status" -eq 1 ]
    [ "$output" = "cdl: taken: not a directory" ]
    [ ! -e d.cdl ]
}
