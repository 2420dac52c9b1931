#!/usr/bin/env bats
# Byte-level BPE tokens (tokens=bpe, vocab_size=N): merges learned at the first train, stored in
# the checkpoint and read back by eval, predict and resume; bits per byte; the refused inputs.
load helpers

write_bpe_data() { # write_bpe_data VOCAB_SIZE
    write_text_data
    printf 'type=text\ntokens=bpe\nvocab_size=%s\ntrain=corpus.txt\nvalid_split=0.1\n' "$1" \
        >bpe.data
}

write_tiny_gpt() {
    write_cfg tiny.cfg <<'EOF2'
[net]
seq=16
batch=16
optimizer=adamw
learning_rate=0.01
clip_grad_norm=1
epochs=2

[embedding]
output=32

[positional]

[layernorm]

[attention]
heads=2

[shortcut]
from=-3

[layernorm]

[linear]
tie=1

[softmax]
EOF2
}

@test "tokens=bpe learns its merges at the first train; eval, predict and resume read them" {
    write_bpe_data 280
    write_tiny_gpt
    run "$CDL" train tiny.cfg --data bpe.data --out straight.cdl --threads 1
    [ "$status" -eq 0 ]
    [[ "$output" == *"corpus.txt: learned 24 BPE merges in "*" s: 280 tokens, "*" tokens per byte)"* ]]
    [[ "$output" == *"bits/byte), next-token accuracy"* ]]
    run "$CDL" info straight.cdl
    [[ "$output" == *"a vocabulary of 280"* ]]
    # eval: bits per byte from the same loss, fewer than bits per token (tokens hold > 1 byte)
    run "$CDL" eval straight.cdl --json
    [ "$status" -eq 0 ]
    printf '%s' "$output" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
assert 0 < r["bits_per_byte"] < r["bits_per_token"] / 1.5, r'
    # generation decodes the merged tokens back to text, the same with and without the cache
    a=$("$CDL" predict straight.cdl --prompt "the cat" --tokens 30 --temperature 0)
    b=$("$CDL" predict straight.cdl --prompt "the cat" --tokens 30 --temperature 0 --no-cache)
    [[ "$a" == "the cat"* ]]
    [ "${#a}" -gt 37 ]
    [ "$a" = "$b" ]
    # a resumed run encodes with the checkpoint's merges and ends as the straight run
    "$CDL" train tiny.cfg --data bpe.data --out resumed.cdl --threads 1 --epochs 1 2>/dev/null
    run "$CDL" train --resume resumed.cdl --epochs 2 --threads 1
    [ "$status" -eq 0 ]
    [[ "$output" != *"learned"* ]]
    cmp straight.cdl resumed.cdl
}

@test "a byte-level BPE takes any prompt bytes, invalid UTF-8 included" {
    write_bpe_data 280
    write_tiny_gpt
    "$CDL" train tiny.cfg --data bpe.data --out t.cdl --threads 1 --epochs 1 2>/dev/null
    run "$CDL" predict t.cdl --prompt $'\xff\xfeZ\xc3' --tokens 4 --temperature 0 --json
    [ "$status" -eq 0 ]
    [[ "$output" == *'"tokens":4'* ]]
}

@test "bits per byte equal bits per token for byte tokens" {
    write_text_data
    printf 'type=text\ntokens=byte\ntrain=corpus.txt\nvalid_split=0.1\n' >byte.data
    write_tiny_gpt
    "$CDL" train tiny.cfg --data byte.data --out t.cdl --threads 1 --epochs 1 2>/dev/null
    run "$CDL" eval t.cdl --json
    [ "$status" -eq 0 ]
    printf '%s' "$output" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
assert abs(r["bits_per_byte"] - r["bits_per_token"]) < 1e-9, r'
}

@test "tokens=bpe refuses a missing or too small vocab_size and warns when merges run out" {
    write_text_data
    write_tiny_gpt
    printf 'type=text\ntokens=bpe\ntrain=corpus.txt\n' >a.data
    run "$CDL" train tiny.cfg --data a.data --out t.cdl
    [ "$status" -eq 2 ]
    [[ "$output" == *"a.data:2: tokens=bpe needs vocab_size=N"* ]]
    printf 'type=text\ntokens=bpe\nvocab_size=255\ntrain=corpus.txt\n' >b.data
    run "$CDL" train tiny.cfg --data b.data --out t.cdl
    [ "$status" -eq 2 ]
    [[ "$output" == *"b.data:3: vocab_size=255: expected an integer in 256..1048576"* ]]
    printf 'type=text\ntokens=char\nvocab_size=300\ntrain=corpus.txt\n' >c.data
    run "$CDL" train tiny.cfg --data c.data --out t.cdl
    [ "$status" -eq 2 ]
    [[ "$output" == *"c.data:3: vocab_size= applies to tokens=bpe only"* ]]
    # 12 distinct words, a space and a newline: 30 merges make every piece one token
    printf 'type=text\ntokens=bpe\nvocab_size=5000\ntrain=corpus.txt\nvalid_split=0.1\n' >d.data
    run "$CDL" train tiny.cfg --data d.data --out t.cdl --threads 1 --epochs 1
    [ "$status" -eq 0 ]
    [[ "$output" == *"warning: "*"corpus.txt: the text has no more pairs to merge"*"not vocab_size=5000"* ]]
}
