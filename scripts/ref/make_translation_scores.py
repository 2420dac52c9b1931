"""Fixture of tests/unit/test_translation_scores.c: sacreBLEU's 13a tokenization of lines, and
its corpus BLEU and chrF (defaults: BLEU(), CHRF()) of small corpora of (hypothesis, reference)
pairs, written to tests/ref/translation_scores.txt. Needs sacrebleu (PyPI); run with the Python
that has it:  python3 scripts/ref/make_translation_scores.py

The file: a line per item, fields separated by tabs:
  T  line  tokens          sacreBLEU's Tokenizer13a of line (after its rstrip)
  C  bleu  chrf            a corpus begins, with its scores (Python's repr of the floats)
  P  hypothesis  reference a pair of the last corpus begun
"""
import os
import random

import sacrebleu
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
from sacrebleu.metrics import BLEU, CHRF

# Lines that reach every rule of the tokenizer: punctuation around and inside words, periods
# and commas beside digits or not, dashes after digits, entities, <skipped>, non-ASCII letters,
# Unicode white space (no-break and ideographic spaces), trailing blanks.
LINES = [
    "In the beginning God created the heaven and the earth.",
    "EN el principio crió Dios los cielos y la tierra.",
    "And God said, Let there be light: and there was light.",
    "It costs $3.50, or 4,000 yen (approx.) -- 1990-2000.",
    "Don't stop; \"quoted\" [bracketed] {braced} <angled> a/b c|d e~f g^h i_j k`l m@n",
    "x.y,z 1.2,3 a.1 1.a ,start end, .lead trail.",
    "&quot;fish&quot; &amp; chips &lt;3 &gt; &amp;lt;",
    "before<skipped>after and-\nhyphen",
    "non\u00a0breaking and\u3000ideographic\u2009thin   spaces   ",
    "¿Qué? ¡Sí! Jehová dijo: «Sea la luz» — y fué.",
    "3-4 5- -6 a-b 7--8",
    "",
    "   ",
]

WORDS = ("the of and to in that he shall unto for i his a lord they be is him not them it with "
         "all thou was which my me said but ye their have will thee from as are when this out "
         "el de y la que á en los se por su con no las dijo Dios Jehová tierra luz").split()


def sentence(rng, n):
    words = [rng.choice(WORDS) for _ in range(n)]
    text = " ".join(words)
    if rng.random() < 0.5:
        text += rng.choice([".", ",", ":", ";", "?", "!"])
    if rng.random() < 0.3:
        text = text[0].upper() + text[1:]
    return text


def perturb(rng, text):
    """A hypothesis near the reference: words dropped, swapped or replaced."""
    words = text.split()
    out = []
    for w in words:
        r = rng.random()
        if r < 0.1:
            continue
        if r < 0.2:
            out.append(rng.choice(WORDS))
        else:
            out.append(w)
    if len(out) > 2 and rng.random() < 0.3:
        i = rng.randrange(len(out) - 1)
        out[i], out[i + 1] = out[i + 1], out[i]
    return " ".join(out)


def corpora(rng):
    lines = [l for l in LINES if "\n" not in l]  # one line per item
    yield [(l, l) for l in lines[:4]]  # identical: 100
    yield [(lines[i], lines[(i + 1) % len(lines)]) for i in range(len(lines))]  # unrelated
    yield [("", "a reference"), ("a", "a reference of many words")]  # empty, short: brevity
    yield [("one two three", "one two three four five six")]  # no 4-grams matched: smoothing
    yield [("x", "x")]  # a reference shorter than 2 characters' orders
    for size in (1, 5, 40):
        pairs = []
        for _ in range(size):
            ref = sentence(rng, rng.randint(1, 25))
            pairs.append((perturb(rng, ref), ref))
        yield pairs


def main():
    rng = random.Random(7)
    tok = Tokenizer13a()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(root, "tests", "ref", "translation_scores.txt")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(f"# scripts/ref/make_translation_scores.py, sacrebleu {sacrebleu.__version__}\n")
        for line in LINES:
            if "\n" in line or "\t" in line:
                continue  # one line per item
            f.write(f"T\t{line}\t{tok(line.rstrip())}\n")
        for pairs in corpora(rng):
            hyps, refs = [h for h, _ in pairs], [[r for _, r in pairs]]
            bleu = BLEU().corpus_score(hyps, refs).score
            chrf = CHRF().corpus_score(hyps, refs).score
            f.write(f"C\t{bleu!r}\t{chrf!r}\n")
            for h, r in pairs:
                f.write(f"P\t{h}\t{r}\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
