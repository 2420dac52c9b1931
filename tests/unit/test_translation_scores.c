/* BLEU's 13a tokenization, corpus BLEU and chrF against sacreBLEU's
 * (tests/ref/translation_scores.txt, from scripts/ref/make_translation_scores.py): the tokens
 * equal, the scores within 1e-9 (the same double operations in the same order, so equal but for the
 * libm's exp and log). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "train/bleu.h"
#include "train/chrf.h"

#define SCORE_TOL 1e-9

typedef struct Corpus {
    double bleu, chrf; /* sacreBLEU's */
    BleuStats b;
    ChrfStats c;
    int pairs;
} Corpus;

static void check_corpus(const Corpus *k)
{
    if (!k->pairs)
        return;
    CHECK_NEAR(bleu_score(&k->b), k->bleu, SCORE_TOL);
    CHECK_NEAR(chrf_score(&k->c), k->chrf, SCORE_TOL);
}

/* Splits line (its newline dropped) at tabs into fields [3]; returns the count. */
static int fields_of(char *line, char **fields)
{
    line[strcspn(line, "\n")] = 0;
    int n = 0;
    for (char *p = line; n < 3; n++) {
        fields[n] = p;
        char *tab = strchr(p, '\t');
        if (!tab)
            return n + 1;
        *tab = 0;
        p = tab + 1;
    }
    return n;
}

static void test_against_sacrebleu(void)
{
    FILE *f = fopen("tests/ref/translation_scores.txt", "r");
    CHECK(f != NULL);
    if (!f)
        return;
    char line[4096], *fld[3];
    Corpus k = {0};
    int tokenized = 0, corpora = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || fields_of(line, fld) != 3)
            continue;
        if (!strcmp(fld[0], "T")) {
            char *tokens = bleu_tokenize_13a(fld[1]);
            CHECK(tokens && !strcmp(tokens, fld[2]));
            if (tokens && strcmp(tokens, fld[2]))
                fprintf(stderr, "  '%s' -> '%s', sacreBLEU '%s'\n", fld[1], tokens, fld[2]);
            free(tokens);
            tokenized++;
        } else if (!strcmp(fld[0], "C")) {
            check_corpus(&k);
            k = (Corpus){.bleu = strtod(fld[1], NULL), .chrf = strtod(fld[2], NULL)};
            corpora++;
        } else if (!strcmp(fld[0], "P")) {
            CHECK(bleu_add(&k.b, fld[1], fld[2]) == 0 && chrf_add(&k.c, fld[1], fld[2]) == 0);
            k.pairs++;
        }
    }
    check_corpus(&k);
    fclose(f);
    CHECK(tokenized >= 10 && corpora >= 8);
}

/* What the fixture's corpora leave out: nothing in, nothing matched. */
static void test_empty_corpus_scores_zero(void)
{
    BleuStats b = {0};
    ChrfStats c = {0};
    CHECK(bleu_score(&b) == 0.0 && chrf_score(&c) == 0.0);
}

int main(void)
{
    test_against_sacrebleu();
    test_empty_corpus_scores_zero();
    return check_report("test_translation_scores");
}
