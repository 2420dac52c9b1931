/* Reading, checking and encoding paired text; the samples of a sequence-to-sequence net. */
#include "data/text_pairs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/file.h"
#include "util/rng.h"
#include "util/utf8.h"

/* A line of a buffer: its bytes without the line break (and a \r before it). */
typedef struct Line {
    const char *at;
    size_t len;
} Line;

/* The line starting at *pos in text[0..end), advancing *pos past it; 0 when none is left (a
 * final line break ends the last line, it does not start an empty one). */
static int next_line(const char *text, size_t end, size_t *pos, Line *line)
{
    if (*pos >= end)
        return 0;
    const char *start = text + *pos, *nl = memchr(start, '\n', end - *pos);
    size_t len = nl ? (size_t)(nl - start) : end - *pos;
    *pos += len + (nl != NULL);
    len -= len > 0 && start[len - 1] == '\r';
    *line = (Line){start, len};
    return 1;
}

static size_t count_lines(const char *text, size_t from, size_t end)
{
    size_t n = 0;
    Line line;
    while (next_line(text, end, &from, &line))
        n++;
    return n;
}

/* One side of a pair: not empty, valid UTF-8 without NUL, STX or ETX. */
static int check_side(Line side, const char *which, const char *path, size_t line_no, Error *e)
{
    if (!side.len)
        return error_set(e, CDL_EUSAGE, "%s:%zu: the %s is empty", path, line_no, which);
    const unsigned char *s = (const unsigned char *)side.at;
    for (size_t i = 0; i < side.len;) {
        uint32_t cp;
        const int n = utf8_decode(s + i, side.len - i, &cp);
        if (!n)
            return error_set(e, CDL_EUSAGE, "%s:%zu: invalid UTF-8 in the %s (byte 0x%02x)", path,
                             line_no, which, s[i]);
        if (cp == 0 || cp == 2 || cp == 3)
            return error_set(e, CDL_EUSAGE,
                             "%s:%zu: the %s holds the control character U+%04X (NUL, and STX and "
                             "ETX, which mark a target's start and end, are not text)",
                             path, line_no, which, (unsigned)cp);
        i += (size_t)n;
    }
    return CDL_OK;
}

/* A TSV line's two sides; a line without exactly one tab is refused. */
static int split_tsv(Line line, const char *path, size_t line_no, Line *source, Line *target,
                     Error *e)
{
    const char *tab = memchr(line.at, '\t', line.len);
    size_t tabs = 0;
    for (size_t i = 0; i < line.len; i++)
        tabs += line.at[i] == '\t';
    if (tabs != 1)
        return error_set(e, CDL_EUSAGE, "%s:%zu: expected source<TAB>target, found %zu tabs", path,
                         line_no, tabs);
    *source = (Line){line.at, (size_t)(tab - line.at)};
    *target = (Line){tab + 1, line.len - (size_t)(tab - line.at) - 1};
    return CDL_OK;
}

/* Calls visit for every pair of t in order (sides and line number); stops at a failure. */
typedef int (*PairVisit)(void *ctx, Line source, Line target, size_t line_no, Error *e);

static int for_each_pair(const PairText *t, PairVisit visit, void *ctx, Error *e)
{
    const size_t sources_end = t->target_at ? t->target_at - 1 : t->len;
    size_t pos = 0, target_pos = t->target_at, line_no = 0;
    Line line, target;
    while (next_line(t->text, sources_end, &pos, &line)) {
        line_no++;
        Line source = line;
        int st = t->target_at ? CDL_OK : split_tsv(line, t->path, line_no, &source, &target, e);
        if (t->target_at && !next_line(t->text, t->len, &target_pos, &target))
            st = error_set(e, CDL_EUSAGE, "%s:%zu: no target line for this source", t->target_path,
                           line_no);
        st = st ? st : check_side(source, "source", t->path, line_no, e);
        st = st ? st
                : check_side(target, "target", t->target_at ? t->target_path : t->path, line_no, e);
        st = st ? st : visit(ctx, source, target, line_no, e);
        if (st)
            return st;
    }
    return CDL_OK;
}

/* Visits nothing: for_each_pair's own checks are the point. */
static int check_pair(void *ctx, Line source, Line target, size_t line_no, Error *e)
{
    (void)ctx, (void)source, (void)target, (void)line_no, (void)e;
    return CDL_OK;
}

/* One file into a whole buffer (malloc'd, NUL-terminated), without a byte order mark. */
static int read_file(const char *path, char **text, size_t *len, Error *e)
{
    const int st = file_read_path(path, FILE_MAX_TEXT_BYTES, "paired text", text, len, e);
    const size_t bom = st ? 0 : file_bom_bytes(*text);
    if (bom) {
        memmove(*text, *text + bom, *len + 1 - bom);
        *len -= bom;
    }
    return st;
}

/* Reads one set's file (and its targets' file) into t and checks its pairs. */
static int read_set(const char *path, const char *target_path, PairText *t, Error *e)
{
    *t = (PairText){.path = path, .target_path = target_path};
    int st = read_file(path, &t->text, &t->len, e);
    if (st || !target_path)
        return st ? st : for_each_pair(t, check_pair, NULL, e);
    char *targets;
    size_t target_len;
    if ((st = read_file(target_path, &targets, &target_len, e)))
        return st;
    const size_t n_sources = count_lines(t->text, 0, t->len);
    const size_t n_targets = count_lines(targets, 0, target_len);
    char *both = n_sources == n_targets ? realloc(t->text, t->len + 1 + target_len + 1) : NULL;
    if (n_sources != n_targets)
        st = error_set(e, CDL_EUSAGE,
                       "%s has %zu lines but %s has %zu: a source file and its targets' file "
                       "pair line by line",
                       path, n_sources, target_path, n_targets);
    else if (!both)
        st = error_set(e, CDL_ERUNTIME, "%s: out of memory", path);
    if (both) {
        both[t->len] = '\n';
        memcpy(both + t->len + 1, targets, target_len + 1);
        t->text = both;
        t->target_at = t->len + 1;
        t->len += 1 + target_len;
    }
    free(targets);
    return st ? st : for_each_pair(t, check_pair, NULL, e);
}

int text_pairs_read(const DataConfig *dc, PairText texts[2], int *n_texts, Error *e)
{
    memset(texts, 0, 2 * sizeof *texts);
    *n_texts = dc->valid ? 2 : 1;
    int st = read_set(dc->train, dc->train_target, &texts[0], e);
    if (!st && dc->valid)
        st = read_set(dc->valid, dc->valid_target, &texts[1], e);
    if (st)
        text_pairs_free_texts(texts);
    return st;
}

void text_pairs_free_texts(PairText texts[2])
{
    for (int i = 0; i < 2; i++)
        free(texts[i].text);
    memset(texts, 0, 2 * sizeof *texts);
}

/* Joining the sides: each followed by sep (0 or 1 byte) into a buffer with room for them all. */
typedef struct Joiner {
    char *text;
    size_t len;
    const char *sep;
} Joiner;

static int join_pair(void *ctx, Line source, Line target, size_t line_no, Error *e)
{
    (void)line_no, (void)e;
    Joiner *j = ctx;
    const Line sides[2] = {source, target};
    for (int k = 0; k < 2; k++) {
        memcpy(j->text + j->len, sides[k].at, sides[k].len);
        j->len += sides[k].len;
        memcpy(j->text + j->len, j->sep, strlen(j->sep));
        j->len += strlen(j->sep);
    }
    return CDL_OK;
}

int text_pairs_sides(const PairText *texts, int n_texts, const char *sep, char **joined,
                     size_t *len, Error *e)
{
    size_t room = 1;
    for (int i = 0; i < n_texts; i++)
        room += 2 * texts[i].len + 2; /* a separator may stand where none was */
    Joiner j = {malloc(room), 0, sep};
    if (!j.text)
        return error_set(e, CDL_ERUNTIME, "out of memory");
    for (int i = 0; i < n_texts; i++)
        for_each_pair(&texts[i], join_pair, &j, e); /* checked pairs: no failure */
    j.text[j.len] = 0;
    *joined = j.text;
    *len = j.len;
    return CDL_OK;
}

/* Encoding into TextPairs: the ids and the pairs grow in buffers sized for every byte. */
typedef struct Encoder {
    const TextVocab *vocab;
    const PairText *text;
    TextPairs *tp;
    size_t n_ids;
    PairSet *set;
} Encoder;

static int encode_side(Encoder *en, Line side, size_t line_no, int target, size_t *at, int *n,
                       Error *e)
{
    char what[1100];
    snprintf(what, sizeof what, "%s:%zu",
             target && en->text->target_path ? en->text->target_path : en->text->path, line_no);
    size_t count;
    const int st =
        text_vocab_encode(en->vocab, side.at, side.len, en->tp->ids + en->n_ids, &count, what, e);
    *at = en->n_ids;
    *n = (int)count;
    en->n_ids += count;
    return st;
}

static int encode_pair(void *ctx, Line source, Line target, size_t line_no, Error *e)
{
    Encoder *en = ctx;
    TextPair *p = &en->set->pairs[en->set->n];
    int st = encode_side(en, source, line_no, 0, &p->source, &p->n_source, e);
    st = st ? st : encode_side(en, target, line_no, 1, &p->target, &p->n_target, e);
    en->set->n += !st;
    return st;
}

/* Moves valid_split of train's pairs, drawn by seed, to valid (both keep the file's order). */
static int split_valid(TextPairs *tp, float valid_split, uint64_t seed, Error *e)
{
    const size_t n = tp->train.n, held = (size_t)((double)n * valid_split);
    unsigned char *chosen = calloc(n + 1, 1);
    tp->valid.pairs = malloc((held + 1) * sizeof *tp->valid.pairs);
    if (!chosen || !tp->valid.pairs) {
        free(chosen);
        return error_set(e, CDL_ERUNTIME, "out of memory");
    }
    Rng rng;
    rng_seed(&rng, seed, 0x5a1d000000000000ull);
    for (size_t k = 0; k < held;) { /* distinct pairs, uniformly */
        const size_t i = rng_below(&rng, (uint32_t)n);
        k += !chosen[i];
        chosen[i] = 1;
    }
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (chosen[i])
            tp->valid.pairs[tp->valid.n++] = tp->train.pairs[i];
        else
            tp->train.pairs[kept++] = tp->train.pairs[i];
    }
    tp->train.n = kept;
    free(chosen);
    return CDL_OK;
}

int text_pairs_load(const PairText *texts, int n_texts, float valid_split, uint64_t split_seed,
                    const TextVocab *vocab, TextPairs *tp, Error *e)
{
    memset(tp, 0, sizeof *tp);
    size_t bytes = 0;
    for (int i = 0; i < n_texts; i++)
        bytes += texts[i].len;
    tp->ids = malloc((bytes + 1) * sizeof *tp->ids);
    int st = tp->ids ? CDL_OK : error_set(e, CDL_ERUNTIME, "out of memory");
    size_t n_ids = 0, id_count;
    int32_t marks[2] = {0, 0};
    st = st ? st
            : text_vocab_encode(vocab, TEXT_PAIR_BOS TEXT_PAIR_EOS, 2, marks, &id_count,
                                "the start and end marks", e);
    if (!st && id_count != 2)
        st = error_set(e, CDL_EUSAGE, "the vocabulary joins the start and end marks in one token");
    tp->bos = marks[0];
    tp->eos = marks[1];
    for (int i = 0; i < n_texts && !st; i++) {
        PairSet *set = i ? &tp->valid : &tp->train;
        const size_t lines = count_lines(texts[i].text, 0, texts[i].len);
        if (!(set->pairs = malloc((lines + 1) * sizeof *set->pairs))) {
            st = error_set(e, CDL_ERUNTIME, "out of memory");
            break;
        }
        Encoder en = {vocab, &texts[i], tp, n_ids, set};
        st = for_each_pair(&texts[i], encode_pair, &en, e);
        n_ids = en.n_ids;
    }
    if (!st && n_texts == 1 && valid_split > 0)
        st = split_valid(tp, valid_split, split_seed, e);
    if (!st && !tp->train.n)
        st = error_set(e, CDL_EUSAGE, "%s: no pairs to train on", texts[0].path);
    if (st)
        text_pairs_free(tp);
    return st;
}

void text_pairs_free(TextPairs *tp)
{
    if (!tp)
        return;
    free(tp->ids);
    free(tp->train.pairs);
    free(tp->valid.pairs);
    memset(tp, 0, sizeof *tp);
}

size_t text_pairs_tokens(const PairSet *set)
{
    size_t n = 0;
    for (size_t i = 0; i < set->n; i++)
        n += (size_t)set->pairs[i].n_source + (size_t)set->pairs[i].n_target;
    return n;
}

static size_t keep_fitting(PairSet *set, int source, int seq)
{
    size_t kept = 0;
    for (size_t i = 0; i < set->n; i++)
        if (set->pairs[i].n_source <= source && set->pairs[i].n_target + 1 <= seq)
            set->pairs[kept++] = set->pairs[i];
    const size_t dropped = set->n - kept;
    set->n = kept;
    return dropped;
}

size_t text_pairs_fit(TextPairs *tp, int source, int seq)
{
    return keep_fitting(&tp->train, source, seq) + keep_fitting(&tp->valid, source, seq);
}

/* The rows a pair takes in the longer of its parts: its source's, or its target's with BOS. */
static int longer_part(const TextPair *p)
{
    return p->n_source > p->n_target + 1 ? p->n_source : p->n_target + 1;
}

/* Pairs of a shorter longer part first, then of shorter targets, shorter sources, then the file's
 * order. */
static int by_length(const void *a, const void *b)
{
    const TextPair *p = a, *q = b;
    if (longer_part(p) != longer_part(q))
        return longer_part(p) < longer_part(q) ? -1 : 1;
    if (p->n_target != q->n_target)
        return p->n_target < q->n_target ? -1 : 1;
    if (p->n_source != q->n_source)
        return p->n_source < q->n_source ? -1 : 1;
    return p->source < q->source ? -1 : p->source > q->source;
}

void text_pairs_sort_by_length(TextPair *pairs, size_t n)
{
    qsort(pairs, n, sizeof *pairs, by_length);
}

void text_pairs_bucket(TextPairs *tp, int bucket)
{
    tp->bucket = bucket;
    if (bucket > 0)
        text_pairs_sort_by_length(tp->train.pairs, tp->train.n);
}

void text_pairs_input_row(const int32_t *source_ids, int n_source, int bos,
                          const int32_t *target_ids, int n_target, int source, int seq, float *x)
{
    float *target = x + source;
    for (int r = 0; r < source; r++)
        x[r] = r < n_source ? (float)source_ids[r] : -1.0f;
    /* row r reads the token before target token r: BOS first */
    for (int r = 0; r < seq; r++)
        target[r] = r == 0 && n_target >= 0 ? (float)bos
                    : r <= n_target         ? (float)target_ids[r - 1]
                                            : -1.0f;
}

void text_pairs_fill(const TextPairs *tp, const TextPair *p, int b, int source, int seq, float *x,
                     int *y)
{
    const int n_target = p ? p->n_target : -1;
    text_pairs_input_row(p ? tp->ids + p->source : NULL, p ? p->n_source : 0, tp->bos,
                         p ? tp->ids + p->target : NULL, n_target, source, seq,
                         x + (size_t)b * (size_t)(source + seq));
    int *yb = y + (size_t)b * (size_t)seq;
    for (int r = 0; r < seq; r++) /* row r predicts target token r, EOS after the last */
        yb[r] = r < n_target ? tp->ids[p->target + (size_t)r] : r == n_target ? tp->eos : -1;
}

void text_pairs_fill_random(const TextPairs *tp, uint64_t seed, uint64_t draw, int first, int batch,
                            int source, int seq, float *x, int *y)
{
    Rng r;
    rng_seed(&r, seed, 0x9a12500000000000ull ^ draw);
    const TextPair *pairs = tp->train.pairs;
    uint32_t n = (uint32_t)tp->train.n;
    if (tp->bucket > 0) { /* the bucket of a pair drawn from all; the last takes the rest */
        const uint32_t size = (uint32_t)tp->bucket, buckets = n / size > 1 ? n / size : 1;
        const uint32_t k = rng_below(&r, n) / size, bucket = k < buckets ? k : buckets - 1;
        pairs += (size_t)bucket * size;
        n = bucket == buckets - 1 ? n - bucket * size : size;
    }
    for (int b = 0; b < first; b++) /* the pairs of the ranks before this one */
        (void)rng_below(&r, n);
    for (int b = 0; b < batch; b++)
        text_pairs_fill(tp, &pairs[rng_below(&r, n)], b, source, seq, x, y);
}
