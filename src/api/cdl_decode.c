/* Greedy decoding through the public API: a source sentence to its target text with a
 * sequence-to-sequence model (train/decode.h). */
#include <stdlib.h>
#include <string.h>

#include "cdl.h"
#include "cdl_model.h"
#include "data/text_pairs.h"
#include "train/decode.h"

int cdl_model_is_seq2seq(const cdl_model *model)
{
    return model->net.source > 0 && model->meta.vocab.n > 0;
}

/* The token id of the mark (TEXT_PAIR_BOS or _EOS) in the model's vocabulary. */
static int mark_id(const cdl_model *model, const char *mark, int *id, Error *e)
{
    int32_t ids[2];
    size_t n;
    const int st = text_vocab_encode(&model->meta.vocab, mark, 1, ids, &n, "the model", e);
    *id = ids[0];
    return st;
}

/* Appends token id's text to *text (*len bytes, room for *cap). */
static int append_token(const TextVocab *v, int id, char **text, size_t *len, size_t *cap, Error *e)
{
    char bytes[TEXT_TOKEN_MAX_BYTES];
    const size_t n = (size_t)text_vocab_decode(v, id, bytes);
    if (*len + n + 1 > *cap) {
        const size_t grown_cap = 2 * (*len + n + 1);
        char *grown = realloc(*text, grown_cap);
        if (!grown)
            return error_set(e, CDL_ERUNTIME, "out of memory");
        *text = grown;
        *cap = grown_cap;
    }
    memcpy(*text + *len, bytes, n);
    *len += n;
    (*text)[*len] = 0;
    return CDL_OK;
}

int cdl_model_decode(cdl_model *model, const char *source, char **target, int *tokens, char *err,
                     size_t err_size)
{
    Error e = {0};
    *target = NULL;
    *tokens = 0;
    Net *net = &model->net;
    int first = 0, bos = 0, eos = 0;
    int st = cdl_model_is_seq2seq(model)
                 ? CDL_OK
                 : error_set(&e, CDL_EUSAGE,
                             "%s is not a sequence-to-sequence model: --source needs one trained "
                             "on paired text ([net] source=S, a type=pairs dataset)",
                             model->origin);
    st = st ? st : decode_first_layer(net, &first, &e);
    st = st ? st : mark_id(model, TEXT_PAIR_BOS, &bos, &e);
    st = st ? st : mark_id(model, TEXT_PAIR_EOS, &eos, &e);
    const size_t len = strlen(source);
    int32_t *ids = malloc((len + 1) * sizeof *ids), *out = malloc((size_t)net->seq * sizeof *out);
    if (!st && (!ids || !out))
        st = error_set(&e, CDL_ERUNTIME, "out of memory");
    size_t n_source = 0;
    st = st ? st
            : text_vocab_encode(&model->meta.vocab, source, len, ids, &n_source, "the source", &e);
    if (!st && net->batch != 1) {
        model->capacity = 0; /* decoding sizes the activations for one sample */
        st = api_model_reserve(model, 1, &e);
    }
    int n_out = 0;
    const int saved_train = net->train;
    net->train = 0;
    st = st ? st : decode_greedy(net, first, ids, (int)n_source, bos, eos, out, &n_out, &e);
    net->train = saved_train;
    size_t text_len = 0, cap = 0;
    for (int i = 0; i < n_out && !st; i++)
        st = append_token(&model->meta.vocab, out[i], target, &text_len, &cap, &e);
    if (!st && !*target && !(*target = calloc(1, 1)))
        st = error_set(&e, CDL_ERUNTIME, "out of memory");
    *tokens = n_out;
    free(ids);
    free(out);
    if (st) {
        free(*target);
        *target = NULL;
        return api_report(&e, err, err_size);
    }
    return CDL_OK;
}
