#!/usr/bin/env bats
# What a new user meets (issue 14, items 5 and 7): class names checked against the checkpoint,
# --data FILE.txt and --data DIR/ without a .data file, files of the wrong kind refused with a
# message that names the right command, a --log that cannot be written, and datasets recorded
# so that --resume and eval work from another folder.
load helpers

# Fails unless the output is one line "cdl: ..." holding only printable ASCII and $2.
one_line() {
    echo "status $status, output: $output"
    [ "$status" -eq "$1" ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "${lines[0]}" == "cdl: "* ]]
    [[ "$output" == *"$2"* ]]
    ! printf '%s' "$output" | LC_ALL=C grep -q '[^ -~]'
}

@test "resuming after a class folder was renamed is refused naming both class lists" {
    make_folder imgs cat dog fox
    write_small_cfg
    printf 'train=imgs\nvalid_split=0.3\n' > d.data
    "$CDL" train small.cfg --data d.data --epochs 1 --out m.cdl --log-every 1000 2>/dev/null
    mv imgs/dog imgs/wolf
    run "$CDL" train --resume m.cdl --epochs 2
    one_line 2 "/d.data: its 3 classes (cat, fox, wolf) are not the 3 classes m.cdl was trained on (cat, dog, fox): the first difference is class 1 ('fox' here, 'dog' there); resume on the dataset it was trained on (--data)"
    rm -r imgs/wolf
    run "$CDL" eval m.cdl
    one_line 2 "its 2 classes (cat, fox) are not the 3 classes m.cdl was trained on (cat, dog, fox)"
}

@test "eval of a 10-class model on a 4-class dataset is refused" {
    train_digits 1
    make_folder four a b c d
    printf 'train=four\nvalid_split=0.3\n' > four.data
    run "$CDL" eval digits.cdl --data four.data
    one_line 2 "four.data: its 4 classes (a, b, c, d) are not the 10 classes digits.cdl was trained on (0, 1, 2, 3, 4, 5, ..., 8, 9): the first difference is class 0 ('a' here, '0' there); evaluate it on the dataset it was trained on"
}

# base.cdl trained on imgs.data (cat, dog, fox); other.data holds 3 other classes (ant, bee, cow).
train_base_for_other_classes() {
    make_folder imgs cat dog fox
    make_folder other ant bee cow
    printf 'train=imgs\nvalid_split=0.3\n' > imgs.data
    printf 'train=other\nvalid_split=0.3\n' > other.data
    write_small_cfg
    "$CDL" train small.cfg --data imgs.data --epochs 1 --out base.cdl --log-every 1000 2>/dev/null
}

@test "fine-tuning refuses a loaded head of other classes, and takes a new head" {
    train_base_for_other_classes
    run "$CDL" train small.cfg --data other.data --weights base.cdl --epochs 1 --out ft.cdl
    [ "$status" -eq 2 ]
    [[ "${lines[-1]}" == "cdl: other.data: its 3 classes (ant, bee, cow) are not the 3 classes base.cdl was trained on (cat, dog, fox)"*"add --new-head to fine-tune a new head on these classes (or give that layer another shape)"* ]]
    [ ! -e ft.cdl ]
    # eval CFG --weights takes the head's classes with it
    run "$CDL" eval small.cfg --weights base.cdl --data other.data
    [ "$status" -eq 2 ]
    [[ "${lines[-1]}" == *"not the 3 classes base.cdl was trained on"* ]]
    # A new head (another shape) is the exception.
    run "$CDL" train small.cfg --data other.data --weights base.cdl --set 1.output=4 --epochs 1 \
        --out ft.cdl --log-every 1000
    [ "$status" -eq 0 ]
    [[ "$output" == *"loaded 1 layer, skipped layers 1 [connected] (shape 4x8 vs 3x8)"* ]]
}

@test "predict refuses a text model on an image and an image model with --prompt" {
    train_digits 1
    write_text_data
    write_text_cfg
    "$CDL" train text.cfg --data corpus.data --epochs 1 --out text.cdl --log-every 1000 2>/dev/null
    gray_png photo.png 8 "x * 30"
    run "$CDL" predict text.cdl photo.png
    one_line 2 "text.cdl is a text model: it continues a prompt (\`cdl predict text.cdl --prompt TEXT\`), it does not classify images"
    run "$CDL" predict digits.cdl --prompt "the cat"
    one_line 2 "digits.cdl is an image classifier, not a text model: --prompt needs a model trained on text; classify images with \`cdl predict digits.cdl IMAGE...\`"
}

@test "a prompt outside the vocabulary is refused before it is echoed" {
    write_text_data
    write_text_cfg
    "$CDL" train text.cfg --data corpus.data --epochs 1 --out text.cdl --log-every 1000 2>/dev/null
    "$CDL" predict text.cdl --prompt "the cat QQ" > out.txt 2> err.txt && false
    [ ! -s out.txt ]
    [[ "$(cat err.txt)" == "cdl: --prompt: the character 'Q' (U+0051) at byte 8 is not in the vocabulary" ]]
}

@test "a --log that cannot be written ends the run with exit 1 naming the log" {
    run "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --out d.cdl --threads 1 --log /dev/full \
        --log-every 1000
    echo "$output"
    [ "$status" -eq 1 ]
    [[ "${lines[0]}" == "cdl: /dev/full: cannot write the log at step "*": No space left on device; it stops there"* ]]
    [[ "${lines[-1]}" == "cdl: /dev/full: the log could not be written (No space left on device) and is incomplete from step "*" on; training itself completed and saved its checkpoint" ]]
}

@test "a --log on a full tmpfs ends the run with exit 1 and plot reads what it holds" {
    mkdir tiny
    mount -t tmpfs -o size=8k tmpfs tiny 2>/dev/null || skip "cannot mount a tmpfs here"
    head -c 4096 /dev/zero > tiny/filler # one of its two pages: the log fills the other
    run "$CDL" train "$REPO/cfg/digits.cfg" --epochs 1 --out d.cdl --threads 1 \
        --log tiny/run.jsonl --log-every 1
    cp tiny/run.jsonl run.jsonl
    umount tiny
    [ "$status" -eq 1 ]
    [[ "${lines[-1]}" == "cdl: tiny/run.jsonl: the log could not be written (No space left on device)"* ]]
    [ "$(wc -c < run.jsonl)" -eq 4096 ]
    run "$CDL" plot run.jsonl -o curve.png
    [ "$status" -eq 0 ]
    [[ "$output" == "cdl: run.jsonl:"*": warning: the last record is cut ("*" bytes, no end of line); plotting the "*" records before it" ]]
    [ -s curve.png ]
}

@test "plot warns about a cut last record and plots the others" {
    "$CDL" train "$REPO/cfg/digits.cfg" --epochs 2 --out d.cdl --threads 1 --log run.jsonl \
        --log-every 5 2>/dev/null
    n=$(wc -l < run.jsonl)
    head -c -40 run.jsonl > cut.jsonl
    run "$CDL" plot cut.jsonl -o curve.png
    [ "$status" -eq 0 ]
    [ "$output" = "cdl: cut.jsonl:$n: warning: the last record is cut ($(($(tail -n 1 run.jsonl | wc -c) - 40)) bytes, no end of line); plotting the $((n - 1)) records before it" ]
    [ -s curve.png ]
}

@test "--resume and eval find the dataset from another folder" {
    make_folder imgs cat dog fox
    write_small_cfg
    printf 'train=imgs\nvalid_split=0.3\n' > d.data
    "$CDL" train small.cfg --data d.data --epochs 1 --out m.cdl --log-every 1000 2>/dev/null
    mkdir elsewhere
    cd elsewhere
    run "$CDL" train --resume ../m.cdl --epochs 2 --log-every 1000
    [ "$status" -eq 0 ]
    run "$CDL" eval ../m.cdl --json
    [ "$status" -eq 0 ]
}

@test "a recorded dataset that cannot be opened says it came from the checkpoint" {
    make_folder imgs cat dog fox
    write_small_cfg
    printf 'train=imgs\nvalid_split=0.3\n' > d.data
    "$CDL" train small.cfg --data d.data --epochs 1 --out m.cdl --log-every 1000 2>/dev/null
    mv d.data moved.data
    run "$CDL" train --resume m.cdl --epochs 2
    one_line 1 "$PWD/d.data: cannot open data file: No such file or directory (the dataset m.cdl records; --data names another)"
    run "$CDL" eval m.cdl
    one_line 1 "(the dataset m.cdl records; --data names another)"
    run "$CDL" train --resume m.cdl --data moved.data --epochs 2 --log-every 1000
    [ "$status" -eq 0 ]
}

@test "--data FILE.txt trains a text model on its characters, the last 5% validating" {
    write_text_data
    write_text_cfg
    run "$CDL" train text.cfg --data corpus.txt --epochs 1 --out t.cdl --log-every 1000
    [ "$status" -eq 0 ]
    [[ "$output" == *"bits/token"* ]]
    run "$CDL" eval t.cdl --json
    [ "$status" -eq 0 ]
    # the tail is 5% of the characters; validation predicts all but the first of each window
    /usr/bin/python3 - "$output" <<'PY'
import json, sys
n = len(open("corpus.txt", encoding="utf-8").read())
tail = n - (n - round(n * 0.05))
r = json.loads(sys.argv[1])
assert abs(r["tokens"] - tail) <= 16, (r["tokens"], tail)
PY
    # a file that is not named .txt is read by its content too
    cp corpus.txt book
    run "$CDL" train text.cfg --data book --epochs 1 --out b.cdl --log-every 1000
    [ "$status" -eq 0 ]
}

@test "--data DIR/ trains an image folder: train/ and val/ when present, else a tenth held out" {
    make_folder split/train cat dog fox
    make_folder split/val cat dog fox
    make_folder flat cat dog fox ant bee
    write_small_cfg
    run "$CDL" train small.cfg --data split/ --epochs 1 --out s.cdl --log-every 1000
    [ "$status" -eq 0 ]
    run "$CDL" eval s.cdl --json
    [ "$status" -eq 0 ]
    [[ "$output" == *'"samples":18,'* ]]
    write_small_cfg 5
    run "$CDL" train small.cfg --data flat/ --epochs 1 --out f.cdl --log-every 1000
    [ "$status" -eq 0 ]
    run "$CDL" eval f.cdl --json
    [ "$status" -eq 0 ]
    [[ "$output" == *'"samples":3,'* ]] # 30 images, every tenth held out
}

@test "--data of an image, a binary file, a cfg or a list of images names what it is" {
    write_small_cfg
    gray_png photo.png 8 "x * 30"
    run "$CDL" train small.cfg --data photo.png
    one_line 2 "photo.png: a PNG image, not a dataset: a dataset is a .data file, a text file (for a text model) or an image folder (DIR/ with a folder per class); to classify an image, use \`cdl predict MODEL IMAGE\`"
    head -c 500 /dev/urandom > noise.bin
    run "$CDL" train small.cfg --data noise.bin
    one_line 2 "noise.bin: a binary file, not a dataset"
    run "$CDL" train small.cfg --data "$REPO/data/digits.csv.gz"
    one_line 2 "digits.csv.gz: a gzip file, not a dataset"
    run "$CDL" train small.cfg --data small.cfg
    one_line 2 "small.cfg: a cfg file, not a dataset"
    printf 'imgs/cat/1.png\nimgs/dog/2.png\n' > list.txt
    run "$CDL" train small.cfg --data list.txt
    one_line 2 "list.txt: a list of image paths (a darknet list): name it in a .data file (train=list.txt and names=, a file of class names)"
}

@test "a cfg where a checkpoint is expected names the command that makes one" {
    write_small_cfg
    for cmd in "eval small.cfg" "train --resume small.cfg" "predict small.cfg --prompt hi"; do
        run "$CDL" $cmd
        one_line 2 "small.cfg: a cfg file, not a cdl checkpoint: train it first (\`cdl train small.cfg\`)"
    done
}

@test "info of a missing file says model or config" {
    run "$CDL" info missing.cdl
    one_line 1 "missing.cdl: cannot open model or config: No such file or directory"
}

@test "an ONNX model given to predict says to import it, and nothing is classified" {
    train_digits 1 # weights/latest.cdl, which predict must not fall back to
    "$CDL" export onnx digits.cdl -o digits.onnx
    gray_png photo.png 8 "x * 30"
    run "$CDL" predict digits.onnx photo.png
    one_line 2 "digits.onnx: an ONNX model, not a cdl checkpoint: import it first (\`cdl import digits.onnx\`)"
}

@test "missing text data and missing image data exit alike: 1" {
    printf 'type=text\ntrain=gone.txt\n' > t.data
    printf 'train=gone/\nclasses=2\n' > i.data
    write_text_cfg
    write_small_cfg
    run "$CDL" train text.cfg --data t.data
    one_line 1 "gone.txt: cannot open text: No such file or directory"
    run "$CDL" train small.cfg --data i.data
    [ "$status" -eq 1 ]
    run "$CDL" train text.cfg --data gone.txt
    one_line 1 "gone.txt: cannot open data file: No such file or directory"
    run "$CDL" train small.cfg --data gone/
    one_line 1 "gone/: cannot open data file: No such file or directory"
}

# The image an eval of model $1 reads first (its validation set's first image): every image of
# the folder is unreadable by then, and eval names the first it fails on.
first_valid_image() {
    run "$CDL" eval "$1" --workers 0
    [ "$status" -eq 1 ]
    [[ "$output" == "cdl: "*": not a PNG or JPEG image" ]]
    first=${output#cdl: }
    echo "${first%%: *}"
}

@test "--data DIR/ without train/ and val/ holds out a tenth of each class, picked by --seed" {
    PER_CLASS=10 make_folder flat cat dog fox
    write_small_cfg
    for run in a:1 b:1 c:3; do
        "$CDL" train small.cfg --data flat/ --seed "${run#*:}" --epochs 1 --out "${run%:*}.cdl" \
            --log-every 1000 2>/dev/null
    done
    run "$CDL" eval a.cdl --json
    [ "$status" -eq 0 ]
    # one held-out image of each class's ten: the confusion matrix's rows hold one each
    /usr/bin/python3 -c 'import json, sys; c = json.loads(sys.argv[1])["confusion"]; assert [sum(r) for r in c] == [1, 1, 1], c' "$output"
    for f in flat/*/*.png; do printf 'x' > "$f"; done
    a=$(first_valid_image a.cdl)
    b=$(first_valid_image b.cdl)
    c=$(first_valid_image c.cdl)
    echo "held-out cats: seed 1 $a, seed 1 again $b, seed 3 $c"
    [[ "$a" == */flat/cat/*.png ]]
    [ "$a" = "$b" ]  # the same seed, the same split
    [ "$a" != "$c" ] # another seed, another cat
}

@test "--new-head fine-tunes to other classes of the same count: a new head, the backbone loaded" {
    train_base_for_other_classes
    run "$CDL" train small.cfg --data other.data --weights base.cdl --epochs 1 --out ft.cdl
    [ "$status" -eq 2 ]
    [[ "${lines[-1]}" == "cdl: other.data: its 3 classes (ant, bee, cow) are not the 3 classes base.cdl was trained on (cat, dog, fox)"*"add --new-head to fine-tune a new head on these classes"* ]]
    # learning rate 0: what the run starts from is what it saves
    run "$CDL" train small.cfg --data other.data --weights base.cdl --new-head --epochs 1 \
        --set net.learning_rate=0 --out ft.cdl --log-every 1000
    [ "$status" -eq 0 ]
    [[ "$output" == *"cdl: --weights base.cdl: loaded 2 layers; new head (--new-head): layer 1 [connected] keeps its initial values"* ]]
    "$CDL" export npy base.cdl base >/dev/null
    "$CDL" export npy ft.cdl ft >/dev/null
    "$CDL" export npy small.cfg fresh >/dev/null # the cfg's initial values (seed 1, as train's)
    cmp base/layer0.weights.npy ft/layer0.weights.npy
    cmp base/layer0.biases.npy ft/layer0.biases.npy
    cmp fresh/layer1.weights.npy ft/layer1.weights.npy
    cmp fresh/layer1.biases.npy ft/layer1.biases.npy
    ! cmp -s base/layer1.weights.npy ft/layer1.weights.npy
    # the model takes the new classes: eval on them is no mismatch
    run "$CDL" eval ft.cdl --data other.data --json
    [ "$status" -eq 0 ]
    [[ "$output" == *'"per_class_accuracy":{"ant":'* ]]
    run "$CDL" train small.cfg --data other.data --new-head --epochs 1
    one_line 2 "--new-head goes with --weights: it starts a new run from a checkpoint with a new head"
    run "$CDL" train --resume ft.cdl --new-head
    one_line 2 "--resume continues a run as it was: it takes no CFG, --set, --weights, --new-head or --seed"
}
