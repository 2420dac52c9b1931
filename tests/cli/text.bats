#!/usr/bin/env bats
# Text models: training a tiny transformer and LSTM on text, validation bits per token, greedy
# and sampled generation (with and without the cache), eval, resume, and the errors.
load helpers

@test "a tiny transformer trains on text: the loss falls and the epoch line gives bits per token" {
    write_text_data
    write_tiny_gpt
    run "$CDL" train tiny.cfg --data corpus.data --out tiny.cdl --log run.jsonl --threads 1
    [ "$status" -eq 0 ]
    [[ "$output" == *"epoch 2/2: train loss "*", valid loss "*" bits/token, "*" bits/byte), next-token accuracy "*" tok/s"* ]]
    run /usr/bin/python3 - <<'PY'
import json, math
rows = [json.loads(l) for l in open("run.jsonl")]
steps = [r for r in rows if r["type"] == "step"]
epochs = [r for r in rows if r["type"] == "epoch"]
assert len(epochs) == 2, epochs
assert steps[0]["loss"] > 2.5 and epochs[-1]["valid_loss"] < 1.6, (steps[0], epochs[-1])
assert abs(epochs[-1]["bits_per_token"] - epochs[-1]["valid_loss"] / math.log(2)) < 1e-9
assert abs(epochs[-1]["tokens_per_s"] / (epochs[-1]["images_per_s"] * 16) - 1) < 1e-9
PY
    echo "$output"
    [ "$status" -eq 0 ]
}

@test "greedy generation is identical across runs and with or without the key/value cache" {
    write_text_data
    write_tiny_gpt
    "$CDL" train tiny.cfg --data corpus.data --out tiny.cdl --threads 1 2>/dev/null
    run "$CDL" predict tiny.cdl --prompt "the cat" --tokens 60 --temperature 0
    [ "$status" -eq 0 ]
    first="$output"
    [[ "$first" == "the cat"* ]]
    [ "${#first}" -eq 67 ]
    run "$CDL" predict tiny.cdl --prompt "the cat" --tokens 60 --temperature 0
    [ "$output" = "$first" ]
    run "$CDL" predict tiny.cdl --prompt "the cat" --tokens 60 --temperature 0 --no-cache
    [ "$output" = "$first" ]
    # Sampling: the same seed gives the same text, cached or not (60 tokens cross the
    # context of 16 several times); another seed gives another text.
    a=$("$CDL" predict tiny.cdl --prompt "the" --tokens 60 --temperature 0.9 --top-k 5 --seed 4)
    b=$("$CDL" predict tiny.cdl --prompt "the" --tokens 60 --temperature 0.9 --top-k 5 --seed 4 --no-cache)
    c=$("$CDL" predict tiny.cdl --prompt "the" --tokens 60 --temperature 0.9 --top-k 5 --seed 5)
    [ "$a" = "$b" ]
    [ "$a" != "$c" ]
    # top-p: nucleus sampling, seeded alike; a nucleus of one token is greedy
    d=$("$CDL" predict tiny.cdl --prompt "the" --tokens 60 --temperature 0.9 --top-p 0.8 --seed 4)
    e=$("$CDL" predict tiny.cdl --prompt "the" --tokens 60 --temperature 0.9 --top-p 0.8 --seed 4 --no-cache)
    [ "$d" = "$e" ]
    run "$CDL" predict tiny.cdl --prompt "the cat" --tokens 60 --temperature 1 --top-p 0.000001
    [ "$output" = "$first" ]
}

@test "predict --prompt --json reports the text, token count, rate and whether the cache ran" {
    write_text_data
    write_tiny_gpt
    "$CDL" train tiny.cfg --data corpus.data --out tiny.cdl --threads 1 --epochs 1 2>/dev/null
    run "$CDL" predict tiny.cdl --prompt "a" --tokens 20 --temperature 0 --json
    [ "$status" -eq 0 ]
    printf '%s' "$output" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["prompt"] == "a" and r["tokens"] == 20 and len(r["text"]) == 20, r
assert r["cache"] is True and r["tokens_per_s"] > 0, r'
    run "$CDL" predict tiny.cdl --prompt "a" --tokens 5 --no-cache --json
    [[ "$output" == *'"cache":false'* ]]
}

@test "an LSTM language model trains and generates with its carried state" {
    write_text_data
    write_cfg lstm.cfg <<'EOF2'
[net]
seq=16
batch=16
optimizer=adam
learning_rate=0.01
epochs=1

[embedding]
output=16

[lstm]
output=32

[linear]

[softmax]
EOF2
    run "$CDL" train lstm.cfg --data corpus.data --out lstm.cdl --threads 1
    [ "$status" -eq 0 ]
    a=$("$CDL" predict lstm.cdl --prompt "the" --tokens 40 --temperature 0)
    b=$("$CDL" predict lstm.cdl --prompt "the" --tokens 40 --temperature 0 --no-cache)
    [ "$a" = "$b" ]
}

@test "eval of a text model gives the validation loss and bits per token" {
    write_text_data
    write_tiny_gpt
    "$CDL" train tiny.cfg --data corpus.data --out tiny.cdl --threads 1 --epochs 1 --log run.jsonl 2>/dev/null
    run "$CDL" eval tiny.cdl --json
    [ "$status" -eq 0 ]
    printf '%s' "$output" | /usr/bin/python3 -c '
import json, math, sys
r = json.load(sys.stdin)
logged = [json.loads(l) for l in open("run.jsonl")][-1]
assert abs(r["loss"] - logged["valid_loss"]) < 1e-6, (r, logged)
assert abs(r["bits_per_token"] - r["loss"] / math.log(2)) < 1e-9'
}

@test "a text run resumed after one epoch ends byte-identical to the straight run" {
    write_text_data
    write_tiny_gpt
    "$CDL" train tiny.cfg --data corpus.data --out straight.cdl --threads 1 2>/dev/null
    "$CDL" train tiny.cfg --data corpus.data --out resumed.cdl --threads 1 --epochs 1 2>/dev/null
    "$CDL" train --resume resumed.cdl --epochs 2 --threads 1 2>/dev/null
    cmp straight.cdl resumed.cdl
}

@test "a transformer trained in passes smaller than its batch resumes byte-identical and learns as in one pass" {
    write_text_data
    # The MLP's 2048 features over 64 tokens: 1 MiB a sample with its gradient, so one thread
    # trains each batch of 4 as 4 passes of 1 (docs/memory.md, Passes sized to the cache).
    write_tiny_gpt 64 4 2048
    run env OMP_NUM_THREADS=1 "$CDL" info tiny.cfg
    [[ "$output" == *"training activations: "*" MiB for a pass of 1 samples"* ]]
    # check counts the activations of the pass train holds, a quarter of the mini-batch's
    run env OMP_NUM_THREADS=1 "$CDL" check tiny.cfg --data corpus.data --json
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" >split.json
    run env OMP_NUM_THREADS=1 "$CDL" check tiny.cfg --data corpus.data --json --set net.split_passes=0
    printf '%s\n' "$output" >one.json
    /usr/bin/python3 -c 'import json
split, one = (json.load(open(f)) for f in ("split.json", "one.json"))
assert split["train_pass"] == 1 and one["train_pass"] == 4, (split, one)
a, b = split["memory_bytes"]["activations"], one["memory_bytes"]["activations"]
assert a < b / 2, (a, b)'
    run env OMP_NUM_THREADS=1 "$CDL" check tiny.cfg --data corpus.data
    [[ "$output" == *"a training step (batch 4 in 1 mini-batch of 4, run as passes of 1) holds "* ]]
    "$CDL" train tiny.cfg --data corpus.data --out straight.cdl --threads 1 --log split.jsonl 2>/dev/null
    "$CDL" train tiny.cfg --data corpus.data --out resumed.cdl --threads 1 --epochs 1 2>/dev/null
    "$CDL" train --resume resumed.cdl --epochs 2 --threads 1 2>/dev/null
    cmp straight.cdl resumed.cdl
    # training runs the passes: a traced step holds layer 0's forward 4 times
    "$CDL" train tiny.cfg --data corpus.data --out traced.cdl --threads 1 --epochs 1 \
        --profile-steps 2 --trace t.json 2>/dev/null
    /usr/bin/python3 -c 'import json, sys
events = json.load(open("t.json"))
events = events["traceEvents"] if isinstance(events, dict) else events
sys.exit(sum(e["name"] == "0 embedding" and e["cat"] == "forward" for e in events) != 4)'
    "$CDL" train tiny.cfg --data corpus.data --out one.cdl --threads 1 --set net.split_passes=0 \
        --log one.jsonl 2>/dev/null
    /usr/bin/python3 - <<'PY'
import json
split, one = ([r for r in map(json.loads, open(f)) if r["type"] == "epoch"]
              for f in ("split.jsonl", "one.jsonl"))
assert len(split) == len(one) == 2, (split, one)
for a, b in zip(split, one):
    assert abs(a["valid_loss"] - b["valid_loss"]) <= 1e-4 * b["valid_loss"], (a, b)
PY
}

@test "--time-limit stops inside an epoch, then evaluates and saves" {
    write_text_data
    write_tiny_gpt
    run "$CDL" train tiny.cfg --data corpus.data --out t.cdl --threads 1 --epochs 1000 --time-limit 1
    [ "$status" -eq 0 ]
    # The limit falls inside an epoch, or (one run in the 50 steps of an epoch) on its last step,
    # which ends that epoch as a whole one: either way the run ends long before epoch 1000.
    local re='^epoch ([0-9]+)/1000( \(stopped at the time limit\))?: train loss .*bits/token.*saved t\.cdl$'
    [[ "${lines[-1]}" =~ $re ]]
    ((BASH_REMATCH[1] < 1000))
    [ -f t.cdl ]
}

@test "text errors: wrong data kind, characters outside the vocabulary, prompts to image models" {
    write_text_data
    write_tiny_gpt
    run "$CDL" train "$REPO/cfg/digits.cfg" --data corpus.data --out d.cdl
    [ "$status" -eq 2 ]
    [[ "$output" == *"corpus.data: a text dataset (type=text) is for sequence nets"* ]]
    run "$CDL" train tiny.cfg --data "$REPO/cfg/digits.data" --out d.cdl
    [ "$status" -eq 2 ]
    [[ "$output" == *"digits.data: a sequence net ([net] seq=16) trains on text: the .data file needs type=text"* ]]
    "$CDL" train tiny.cfg --data corpus.data --out tiny.cdl --threads 1 --epochs 1 2>/dev/null
    run "$CDL" predict tiny.cdl --prompt "the zebra" --tokens 5
    [ "$status" -eq 2 ]
    [[ "$output" == *"--prompt: the character 'z' (U+007A) at byte 4 is not in the vocabulary"* ]]
    run "$CDL" predict tiny.cdl --prompt "" --tokens 5
    [ "$status" -eq 2 ]
    [[ "$output" == *"the prompt is empty"* ]]
    train_digits
    run "$CDL" predict digits.cdl --prompt "the" --tokens 5
    [ "$status" -eq 2 ]
    [[ "$output" == *"digits.cdl is an image classifier, not a text model"* ]]
    printf 'type=text\ntrain=corpus.txt\ntokens=words\n' > bad.data
    run "$CDL" train tiny.cfg --data bad.data --out d.cdl
    [ "$status" -eq 2 ]
    [[ "$output" == *"bad.data:3: tokens=words: expected char, byte or bpe"* ]]
}
