#!/usr/bin/env bats
# cdl export onnx of sequence-to-sequence models: the encoder and the decoder step (past keys and
# values in, present ones out) pass the onnx checker, and greedy decoding with them in
# onnxruntime, all the sources one batch, gives `cdl predict --sources --json`'s targets, ids
# exactly and log-probabilities to 1e-4 (scripts/ref/onnx_seq2seq_check.py). Skipped without
# onnxruntime.
load helpers

setup_file() {
    python3 -c 'import onnxruntime' 2>/dev/null || export NO_ORT=1
}

# 2,000 reverse pairs, a .data file of them, and 60 new sources in new.src.
write_reverse_data() {
    "$REPO/scripts/toy-pairs.sh" reverse 2000 1 reverse.tsv >/dev/null
    printf 'type=pairs\ntrain=reverse.tsv\nvalid_split=0.1\n' > reverse.data
    "$REPO/scripts/toy-pairs.sh" reverse 60 7 new.tsv >/dev/null
    cut -f1 new.tsv > new.src
}

# expect_same_targets MODEL [export options]: exports MODEL to MODEL's name .encoder.onnx and
# .decoder.onnx, then onnxruntime decodes new.src as cdl does (the figure goes to fd 3).
expect_same_targets() {
    local model=$1 prefix=${1%.cdl}
    shift
    run "$CDL" export onnx "$model" "$@"
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$output" = "$prefix.encoder.onnx and $prefix.decoder.onnx: opset 13, IR version 7, dynamic batch" ]
    [ ! -e "$prefix.onnx" ]
    "$CDL" predict "$model" --sources new.src --json > targets.json
    run python3 "$REPO/scripts/ref/onnx_seq2seq_check.py" "$prefix" targets.json
    echo "$output"
    [ "$status" -eq 0 ]
    echo "# $prefix: ${lines[-1]}" >&3
}

@test "cfg/reverse.cfg (post-norm, a shared table, tied head) decodes in onnxruntime as in cdl" {
    [ -z "$NO_ORT" ] || skip "python3 has no onnxruntime"
    write_reverse_data
    # 4 epochs: a model that still errs, so that the targets depend on every probability
    "$CDL" train "$REPO/cfg/reverse.cfg" --data reverse.data --out early.cdl --threads 1 \
        --epochs 4 2>/dev/null >/dev/null
    expect_same_targets early.cdl
}

# Pre-norm (norm_first=True), source and target of different lengths, each side its own table,
# the head tied to the target's, padding masks everywhere, one epoch: nearly random weights.
@test "a pre-norm net with its own target table decodes in onnxruntime as in cdl" {
    [ -z "$NO_ORT" ] || skip "python3 has no onnxruntime"
    write_reverse_data
    write_cfg prenorm.cfg <<'EOF2'
[net]
batch=16
source=6
seq=8
inputs=1
optimizer=adam
learning_rate=0.003
[embedding]
output=16
part=source
[positional]
[layernorm]
[attention]
heads=2
causal=0
key_padding=source
[shortcut]
from=-3
[layernorm]
[linear]
output=32
activation=relu
[linear]
output=16
[shortcut]
from=-4
[layernorm]
[embedding]
output=16
part=target
[positional]
[layernorm]
[attention]
heads=4
key_padding=target
[shortcut]
from=-3
[layernorm]
[attention]
heads=2
source=9
key_padding=source
[shortcut]
from=-3
[layernorm]
[linear]
output=32
activation=gelu
[linear]
output=16
[shortcut]
from=-4
[layernorm]
[linear]
tie=1
[softmax]
EOF2
    "$CDL" train prenorm.cfg --data reverse.data --out prenorm.cdl --threads 1 --epochs 1 \
        2>/dev/null >/dev/null
    awk 'length <= 6' new.src > short.src # the sources that fit S = 6 rows
    mv short.src new.src
    expect_same_targets prenorm.cdl
}

@test "-o names the two files' prefix; a file of another kind there is not overwritten; import refuses them" {
    write_reverse_data
    "$CDL" train "$REPO/cfg/reverse.cfg" --data reverse.data --out early.cdl --threads 1 \
        --epochs 1 2>/dev/null >/dev/null
    run "$CDL" export onnx early.cdl -o parts.onnx --batch 4
    [ "$status" -eq 0 ]
    [ "$output" = "parts.encoder.onnx and parts.decoder.onnx: opset 13, IR version 7, fixed batch" ]
    [ -s parts.encoder.onnx ] && [ -s parts.decoder.onnx ] && [ ! -e parts.onnx ]
    # the start and end marks' ids, STX and ETX: the first two of a character vocabulary
    run /usr/bin/python3 -c 'import onnx, sys
print(*((p.key, p.value) for p in onnx.load(sys.argv[1]).metadata_props))' parts.decoder.onnx
    [ "$output" = "('bos_id', '0') ('eos_id', '1')" ]
    echo notes > kept.decoder.onnx
    run "$CDL" export onnx early.cdl -o kept
    [ "$status" -eq 2 ]
    [[ "$output" == *"kept.decoder.onnx: exists and is a text file, not an ONNX model; not overwriting it"* ]]
    [ "$(cat kept.decoder.onnx)" = notes ] && [ ! -e kept.encoder.onnx ]
    for part in encoder decoder; do
        run "$CDL" import parts.$part.onnx -o back.cdl
        [ "$status" -eq 2 ]
        [[ "$output" == *"graph input 'source' (token ids): the encoder or the decoder step of a sequence-to-sequence model"* ]]
        [ ! -e back.cdl ]
    done
}
