#!/usr/bin/env bats
# cdl export onnx of text models: the exported graph (int64 token ids [N][T] in, per-token
# probabilities [N][T][vocab] out) run in onnxruntime gives `cdl predict --prompt P --probs`'s
# next-token distribution to 1e-5 absolute, and passes the onnx checkers (Debian's onnx 1.12
# and PyPI's) (scripts/ref/onnx_text_check.py).
load helpers

# train_text CFG OUT [train options]: a text model trained for one epoch of the small corpus
# (one thread: the same weights every run), or as the options say.
train_text() {
    local cfg=$1 out=$2
    shift 2
    [ -e corpus.data ] || write_text_data
    "$CDL" train "$cfg" --data corpus.data --out "$out" --threads 1 --epochs 1 \
        --log-every 100000 "$@" 2>/dev/null >/dev/null
}

# expect_same_next_token MODEL PROMPT [export options]: exports MODEL, then onnxruntime's
# distribution after PROMPT is cdl's (the figure goes to fd 3).
expect_same_next_token() {
    local model=$1 prompt=$2 onnx=${1%.cdl}.onnx
    shift 2
    run "$CDL" export onnx "$model" -o "$onnx" "$@"
    echo "$output"
    [ "$status" -eq 0 ]
    "$CDL" predict "$model" --prompt "$prompt" --probs --json > probs.json
    run /usr/bin/python3 -c 'import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)' "$onnx"
    echo "$output"
    [ "$status" -eq 0 ]
    run python3 "$REPO/scripts/ref/onnx_text_check.py" "$onnx" probs.json
    echo "$output"
    [ "$status" -eq 0 ]
    echo "# $onnx $*: ${lines[-1]}" >&3
}

@test "cfg/gpt_tiny.cfg exports: onnxruntime gives cdl's next-token distribution" {
    # As the zoo has it (T = 128, a second of training: near one-hot, the N(0,1) tied
    # embedding), then with T = 32 and an epoch at a higher rate, for a spread-out distribution.
    train_text "$REPO/cfg/gpt_tiny.cfg" gpt.cdl --time-limit 1 --set net.batch=4
    expect_same_next_token gpt.cdl "the dog ran to"
    train_text "$REPO/cfg/gpt_tiny.cfg" gpt32.cdl --set net.batch=8 --set net.seq=32 \
        --set net.warmup=0 --set net.learning_rate=0.01
    expect_same_next_token gpt32.cdl "the dog ran to"
    expect_same_next_token gpt32.cdl "the red hat sat on a mat and the" --opset 17
    expect_same_next_token gpt32.cdl "t"
}

@test "cfg/char_lstm.cfg exports through ONNX's LSTM operator, gates reordered" {
    train_text "$REPO/cfg/char_lstm.cfg" lstm.cdl --set net.batch=8
    expect_same_next_token lstm.cdl "the cat sat on"
    expect_same_next_token lstm.cdl "a" --batch 1
}

# write_recurrent_cfg FILE SECTION [KEY=VALUE]: embedding 16, one recurrent layer of 24, a
# dropout, the vocabulary projection and a softmax per token, over T = 24.
write_recurrent_cfg() {
    printf '[net]\nseq=24\nbatch=8\noptimizer=adam\nlearning_rate=0.01\n\n[embedding]\noutput=16\n\n[%s]\noutput=24\n%s\n\n[dropout]\nprobability=0.2\n\n[linear]\n\n[softmax]\n' \
        "$2" "${3:-}" > "$1"
}

@test "gru (linear_before_reset=1, torch's) and rnn (tanh, relu) export through ONNX's operators" {
    write_recurrent_cfg gru.cfg gru
    train_text gru.cfg gru.cdl
    expect_same_next_token gru.cdl "the dog ran to the"
    write_recurrent_cfg rnn.cfg rnn
    train_text rnn.cfg rnn.cdl
    expect_same_next_token rnn.cdl "the dog"
    write_recurrent_cfg relu.cfg rnn activation=relu
    train_text relu.cfg relu.cdl
    expect_same_next_token relu.cdl "on a mat"
}

@test "a net that reads one-hot tokens ([net] inputs=vocab) exports with a float [N][T][vocab] input" {
    printf '[net]\nseq=24\ninputs=14\nbatch=8\noptimizer=adam\nlearning_rate=0.01\n\n[lstm]\noutput=24\n\n[linear]\n\n[softmax]\n' > onehot.cfg
    train_text onehot.cfg onehot.cdl
    expect_same_next_token onehot.cdl "the cat"
}

@test "a bidirectional transformer (causal=0) exports; a full window of T tokens compares" {
    # Every position attends to all T: cdl's distribution for a prompt of exactly T tokens
    # depends on no padding.
    write_cfg bidir.cfg <<'EOF'
[net]
seq=12
batch=8
optimizer=adam
learning_rate=0.01

[embedding]
output=24

[positional]

[layernorm]
eps=1e-3

[attention]
heads=3
causal=0
dropout=0.1

[shortcut]
from=-3

[linear]
tie=1
bias=0

[softmax]
EOF
    train_text bidir.cfg bidir.cdl
    expect_same_next_token bidir.cdl "the cat sat "
}

@test "the graph takes int64 ids [N][T] and gives [N][T][vocab]; --batch fixes N" {
    train_text "$REPO/cfg/char_lstm.cfg" lstm.cdl --time-limit 1 --set net.batch=2
    "$CDL" export onnx lstm.cdl
    "$CDL" export onnx lstm.cdl --batch 3 -o fixed.onnx
    python3 - <<'PY'
import onnx
for path, n in (("lstm.onnx", "N"), ("fixed.onnx", 3)):
    g = onnx.load(path).graph
    dims = lambda v: [d.dim_value or d.dim_param for d in v.type.tensor_type.shape.dim]
    assert g.input[0].type.tensor_type.elem_type == onnx.TensorProto.INT64
    assert dims(g.input[0]) == [n, 128], dims(g.input[0])
    assert dims(g.output[0]) == [n, 128, 14], dims(g.output[0])  # 14 characters in the corpus
PY
}

@test "predict --probs gives the prompt's ids and the distribution greedy generation picks from" {
    train_text "$REPO/cfg/char_lstm.cfg" lstm.cdl --time-limit 1 --set net.batch=2
    "$CDL" predict lstm.cdl --prompt "cat" --probs --json > probs.json
    "$CDL" predict lstm.cdl --prompt "cat" --tokens 1 --temperature 0 --json > greedy.json
    python3 - <<'PY'
import json
r, greedy = json.load(open("probs.json")), json.load(open("greedy.json"))
vocab = sorted(set(open("corpus.txt").read()))  # tokens=char: the sorted distinct characters
assert r["prompt"] == "cat" and r["ids"] == [vocab.index(c) for c in "cat"], r
assert len(r["probs"]) == len(vocab) == 14 and abs(sum(r["probs"]) - 1) < 1e-5, r
best = max(range(len(vocab)), key=lambda i: (r["probs"][i], -i))
assert greedy["text"] == vocab[best], (greedy, vocab[best])
PY
    run "$CDL" predict lstm.cdl --prompt "cat" --probs
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: predict --probs prints JSON: add --json" ]
    run "$CDL" predict lstm.cdl --prompt "cat!" --probs --json
    [ "$status" -eq 2 ]
}

@test "what a sequence net cannot export is refused naming the layer, leaving no file" {
    write_recurrent_cfg leaky.cfg rnn activation=leaky
    run "$CDL" export onnx leaky.cfg -o leaky.onnx
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: layer 1 [rnn]: activation=leaky is not exported (ONNX's RNN takes tanh, relu or logistic here)" ]
    [ ! -e leaky.onnx ]
    # seq=1: a [connected] makes one row of its tokens, which a softmax takes only for one token
    printf '[net]\nseq=1\n\n[embedding]\noutput=4\n\n[connected]\noutput=256\n\n[softmax]\n' > flat.cfg
    run "$CDL" export onnx flat.cfg -o flat.onnx
    [ "$status" -eq 2 ]
    [ "$output" = "cdl: layer 1 [connected]: not exportable to ONNX in a sequence net (only the layers with a per-token step are)" ]
    [ ! -e flat.onnx ]
}
