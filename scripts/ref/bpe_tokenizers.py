#!/usr/bin/env python3
"""The `tokenizers` package's byte-level BPE on a text file, as cdl's tokens=bpe learns it.

Prints one JSON line: learning seconds, the vocabulary size, the tokens of the whole text and
its tokens per byte. The trainer is ByteLevel BPE with GPT-2's pre-split and no prefix space
(cdl adds none), all 256 bytes in the initial alphabet, no special tokens, min_frequency 0 and
the whole file as one sequence (cdl's pre-split also runs over the whole text).

Usage: python3 scripts/ref/bpe_tokenizers.py TEXT VOCAB_SIZE
"""
import json
import sys
import time

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers


def main():
    path, vocab_size = sys.argv[1], int(sys.argv[2])
    data = open(path, "rb").read()
    text = data.decode("utf-8")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=0,
        show_progress=False,
        special_tokens=[],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    start = time.perf_counter()
    tok.train_from_iterator([text], trainer=trainer)
    learn_s = time.perf_counter() - start
    ids = tok.encode(text).ids
    if tok.decode(ids) != text:
        sys.exit("bpe_tokenizers: the decoded text differs from the input")
    print(json.dumps({"learn_s": learn_s, "vocab": tok.get_vocab_size(), "tokens": len(ids),
                      "bytes": len(data), "tokens_per_byte": len(ids) / len(data)}))


if __name__ == "__main__":
    main()
