#!/usr/bin/env bats
# scripts/sweep-lr.sh: one cfg at several learning rates, a table of eval results, one plot.
load helpers

@test "sweep-lr trains each rate and tabulates cdl eval's accuracy and loss" {
    CDL_BIN="$CDL" "$REPO/scripts/sweep-lr.sh" --epochs 1 --threads 1 --out sweep > table.txt 2> log.txt
    cat table.txt
    [ "$(head -n 1 table.txt | tr -s ' ')" = "lr accuracy loss" ]
    [ "$(wc -l < table.txt)" -eq 4 ]
    [ "$(tail -n +2 table.txt | awk '{print $1}' | tr '\n' ' ')" = "0.01 0.05 0.2 " ]
    for lr in 0.01 0.05 0.2; do
        want=$("$CDL" eval "sweep/lr$lr.cdl" --json | /usr/bin/python3 -c \
            'import json, sys; r = json.load(sys.stdin); print("%.4f %.4f" % (r["accuracy"], r["loss"]))')
        got=$(awk -v lr="$lr" '$1 == lr {print $2, $3}' table.txt)
        echo "lr $lr: table '$got', eval '$want'"
        [ "$got" = "$want" ]
        [ -s "sweep/lr$lr.jsonl" ]
    done
    [ "$(head -c 4 sweep/curves.png | tail -c 3)" = PNG ]
}

@test "sweep-lr takes the cfg and the rates as arguments" {
    CDL_BIN="$CDL" "$REPO/scripts/sweep-lr.sh" --epochs 1 --threads 1 --out s "$REPO/cfg/digits.cfg" 0.1 0.02 > table.txt 2>/dev/null
    [ "$(tail -n +2 table.txt | awk '{print $1}' | tr '\n' ' ')" = "0.1 0.02 " ]
    [ -f s/lr0.1.cdl ] && [ -f s/lr0.02.cdl ]
}
