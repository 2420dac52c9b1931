/* Evaluation in the public API (cdl.h): a checkpoint's model on the validation set of a .data
 * file, images or text. */
#include "cdl_eval.h"

#include <stdlib.h>
#include <string.h>

#include "cdl_model.h"
#include "data/data_config.h"
#include "data/text_data.h"

void api_eval_result_take(EvalResult *r, cdl_eval_result *out)
{
    *out = (cdl_eval_result){.samples = r->samples,
                             .classes = r->classes,
                             .per_token = r->per_token,
                             .loss = r->loss,
                             .bits_per_byte = r->bits_per_byte,
                             .top1 = r->top1,
                             .top5 = r->top5,
                             .confusion = r->confusion,
                             .skipped = r->skipped,
                             .decoded = r->decoded,
                             .exact_match = r->exact_match,
                             .bleu = r->bleu,
                             .chrf = r->chrf};
    memset(r, 0, sizeof *r);
}

double cdl_eval_class_accuracy(const cdl_eval_result *result, int c)
{
    const EvalResult r = {.classes = result->classes, .confusion = result->confusion};
    return eval_class_accuracy(&r, c);
}

void cdl_eval_result_free(cdl_eval_result *result)
{
    free(result->confusion);
    memset(result, 0, sizeof *result);
}

const char *cdl_model_data_path(const cdl_model *model)
{
    return model->meta.data_path;
}

/* Sizes the model's activations for its cfg's mini-batches, as training fed them. */
static int reserve_mini_batch(cdl_model *m, Error *e)
{
    const int n = m->net.hyper.batch / m->net.hyper.subdivisions;
    const int st = api_model_reserve(m, n, e);
    if (!st)
        m->net.batch = n;
    return st;
}

/* A text model on the validation text of a type=text .data file, a sequence-to-sequence model on
 * the validation pairs (those that fit it) of a type=pairs one. */
static int evaluate_text_model(cdl_model *m, const DataConfig *dc, const char *data, EvalResult *r,
                               Error *e)
{
    TextData td = {0};
    const int pairs = m->net.source > 0;
    int st = CDL_OK;
    if (dc->train_kind != DATA_TEXT || dc->pairs != pairs)
        st = error_set(e, CDL_EUSAGE, "%s: a %s model evaluates on a type=%s dataset", data,
                       pairs ? "sequence-to-sequence" : "text", pairs ? "pairs" : "text");
    st = st ? st : text_data_load(dc, &m->meta.vocab, &td, e);
    if (!st && pairs)
        text_pairs_fit(&td.pairs, m->net.source, m->net.seq);
    if (!st && !(pairs ? td.pairs.valid.n : td.valid.n))
        st = error_set(e, CDL_EUSAGE, "%s: no validation %s (set valid= or valid_split=)", data,
                       pairs ? "pairs that fit the net" : "text");
    st = st ? st : reserve_mini_batch(m, e);
    if (!st)
        st = pairs ? evaluate_pairs(&m->net, &td.pairs, &m->meta.vocab, r, e)
                   : evaluate_text(&m->net, &td.valid, r, e);
    text_data_free(&td);
    return st;
}

/* An image model on the validation set of a .data file. */
static int evaluate_image_model(cdl_model *m, const DataConfig *dc, const char *data,
                                const cdl_data_options *o, EvalResult *r, Error *e)
{
    SampleSource train = {0}, valid = {0};
    const EvalOptions opt = {o->workers, o->skip_bad};
    int st = model_meta_check_names(&m->meta, dc->names, dc->n_names, m->origin, data, e);
    if (st)
        return error_append(e, st, "; evaluate it on the dataset it was trained on");
    st = data_config_open_sources(dc, &train, &valid, e);
    if (!st && valid.n == 0)
        st = error_set(e, CDL_EUSAGE, "%s: no validation set (set valid= or valid_split=)", data);
    st = st ? st : reserve_mini_batch(m, e);
    st = st ? st : evaluate(&m->net, &valid, &opt, r, e);
    source_free(&train);
    source_free(&valid);
    return st;
}

/* recorded: data is the dataset the checkpoint records (for the message when it fails). */
static int evaluate_model(cdl_model *m, const char *data, int recorded, const cdl_data_options *o,
                          EvalResult *r, Error *e)
{
    if (!data[0])
        return error_set(e, CDL_EUSAGE, "the model names no dataset; pass --data");
    DataConfig dc = {0};
    int st = data_config_load(data, &dc, e);
    if (m->meta.seed) /* a checkpoint's: the images its training held out */
        dc.split_seed = m->meta.seed;
    if (st && recorded)
        error_append(e, st, " (the dataset %s records; --data names another)", m->origin);
    if (!st)
        st = m->net.seq > 0 ? evaluate_text_model(m, &dc, data, r, e)
                            : evaluate_image_model(m, &dc, data, o, r, e);
    data_config_free(&dc);
    return st;
}

int cdl_model_evaluate(cdl_model *model, const char *data_path, const cdl_data_options *options,
                       cdl_eval_result *result, char *err, size_t err_size)
{
    Error e = {0};
    EvalResult r = {0};
    memset(result, 0, sizeof *result);
    char recorded[4096];
    model_meta_find_data(&model->meta, model->origin, recorded, sizeof recorded);
    int st = evaluate_model(model, data_path ? data_path : recorded, !data_path, options, &r, &e);
    if (st) {
        eval_result_free(&r);
        return api_report(&e, err, err_size);
    }
    api_eval_result_take(&r, result);
    return CDL_OK;
}
