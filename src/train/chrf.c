/* Corpus chrF (chrf.h), following sacreBLEU 2.x's metrics/chrf.py rule by rule. */
#include "train/chrf.h"

int chrf_add(ChrfStats *s, const char *hypothesis, const char *reference)
{
    Units h = {0}, r = {0};
    NgramStats stats[CHRF_ORDER];
    int st = !units_split(hypothesis, 0, &h) && !units_split(reference, 0, &r) ? 0 : -1;
    st = st ? st : ngram_match(&h, &r, CHRF_ORDER, stats);
    for (int n = 0; n < CHRF_ORDER && !st; n++) {
        /* a reference without n-grams of this order counts no hypothesis n-grams */
        s->order[n].hyp += stats[n].ref ? stats[n].hyp : 0;
        s->order[n].ref += stats[n].ref;
        s->order[n].match += stats[n].match;
    }
    units_free(&h);
    units_free(&r);
    return st;
}

double chrf_score(const ChrfStats *s)
{
    const double factor = CHRF_BETA * CHRF_BETA;
    double precision = 0.0, recall = 0.0;
    int effective = 0;
    for (int n = 0; n < CHRF_ORDER; n++) {
        const NgramStats *o = &s->order[n];
        if (o->hyp > 0 && o->ref > 0) {
            precision += (double)o->match / (double)o->hyp;
            recall += (double)o->match / (double)o->ref;
            effective++;
        }
    }
    if (!effective)
        return 0.0;
    precision /= effective;
    recall /= effective;
    if (precision + recall == 0.0)
        return 0.0;
    double score = (1 + factor) * precision * recall;
    score /= factor * precision + recall;
    return 100 * score;
}
