#!/usr/bin/env bash
# cdl's byte-level BPE (tokens=bpe) against the `tokenizers` package's ByteLevel BPE trainer
# (scripts/ref/bpe_tokenizers.py) on the same text and vocabulary size: the learning time of
# both, the tokens per byte of the whole text under each, and their ratio (cdl / tokenizers).
# cdl's figures come from the note `cdl train` prints when it learns the merges (one training
# step of a one-layer net follows and is not timed).
# Usage: scripts/bench-bpe.sh [TEXT [VOCAB_SIZE...]]   (default: data/text/kjv.txt 4096)
set -euo pipefail
cd "$(dirname "$0")/.."
args=("$@")
text=${1:-data/text/kjv.txt}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(4096)
[ -f "$text" ] || { echo "bench-bpe: $text is missing (scripts/text-data.sh writes it)" >&2; exit 1; }
[ -x ./cdl ] || { echo "bench-bpe: build cdl first (make)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
text=$(realpath "$text")
printf '[net]\nseq=8\nbatch=1\n[embedding]\noutput=4\n[linear]\ntie=1\n[softmax]\n' >"$tmp/net.cfg"
# shellcheck source=scripts/lib/speed-table.sh
source scripts/lib/speed-table.sh
speed_table_begin bench-bpe "${args[@]}"
printf '%-8s %12s %12s %10s %12s %12s\n' vocab cdl_tok/B ref_tok/B ratio cdl_learn_s ref_learn_s
for v in "${sizes[@]}"; do
    printf 'type=text\ntokens=bpe\nvocab_size=%s\ntrain=%s\n' "$v" "$text" >"$tmp/bpe.data"
    note=$(./cdl train "$tmp/net.cfg" --data "$tmp/bpe.data" --out "$tmp/net.cdl" --threads 1 \
        --time-limit 1 2>&1 | grep 'BPE merges in')
    # "...: learned M BPE merges in S s: V tokens, N tokens for B bytes (R tokens per byte)"
    cdl_learn=$(sed -E 's/.* merges in ([0-9.]+) s.*/\1/' <<<"$note")
    cdl_tpb=$(sed -E 's/.*\(([0-9.]+) tokens per byte\).*/\1/' <<<"$note")
    ref=$(python3 scripts/ref/bpe_tokenizers.py "$text" "$v")
    python3 - "$v" "$cdl_tpb" "$cdl_learn" "$ref" <<'PY'
import json, sys
v, tpb, learn, ref = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), json.loads(sys.argv[4])
print(f"{v:<8} {tpb:12.4f} {ref['tokens_per_byte']:12.4f} {tpb / ref['tokens_per_byte']:10.4f} "
      f"{learn:12.2f} {ref['learn_s']:12.2f}")
PY
done
speed_table_end
