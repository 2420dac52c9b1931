/* Example: trains cfg/digits.cfg (scikit-learn's 8x8 digits) through the public API alone, as
 * a program linked against libcdl.a would, then reloads the checkpoint and evaluates it.
 * Usage: train_digits [CHECKPOINT] (default /tmp/train_digits.cdl), from the repository root.
 * Exits 0 when the validation accuracy reaches 90%. */
#include <stdio.h>

#include "cdl.h"

#define EPOCHS 8

static void on_message(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "train_digits: %s\n", line);
}

static void on_epoch(void *ctx, const cdl_epoch_report *r)
{
    (void)ctx;
    printf("epoch %d/%d: train loss %.4f, valid loss %.4f, accuracy %.2f%%\n", r->epoch, EPOCHS,
           r->train_loss, r->valid_loss, 100 * r->valid_top1);
}

/* Reopens the checkpoint the session wrote and evaluates it on the validation set. */
static int evaluate_checkpoint(const char *path, double *accuracy, char *err, size_t err_size)
{
    cdl_model *model;
    int st = cdl_model_load(path, &model, err, err_size);
    if (st)
        return st;
    const cdl_data_options data = {CDL_DEFAULT_WORKERS, 0};
    cdl_eval_result r;
    st = cdl_model_evaluate(model, NULL, &data, &r, err, err_size);
    if (!st)
        *accuracy = r.top1;
    cdl_eval_result_free(&r);
    cdl_model_free(model);
    return st;
}

int main(int argc, char **argv)
{
    const char *out = argc > 1 ? argv[1] : "/tmp/train_digits.cdl";
    char err[1024];
    const cdl_session_options o = {
        .cfg_path = "cfg/digits.cfg", .seed = 1, .out_path = out, .on_message = on_message};
    cdl_session *s;
    int st = cdl_session_create(&o, &s, err, sizeof err);
    const cdl_data_options data = {CDL_DEFAULT_WORKERS, 0};
    st = st ? st : cdl_session_attach_data(s, NULL, &data, err, sizeof err);
    const cdl_run_options run = {.epochs = EPOCHS};
    const cdl_callbacks cb = {.on_epoch = on_epoch};
    st = st ? st : cdl_session_run(s, &run, &cb, err, sizeof err);
    cdl_session_free(s);
    double accuracy = 0;
    st = st ? st : evaluate_checkpoint(out, &accuracy, err, sizeof err);
    if (st) {
        fprintf(stderr, "train_digits: %s\n", err);
        return st;
    }
    printf("%s: validation accuracy %.2f%%\n", out, 100 * accuracy);
    return accuracy >= 0.90 ? 0 : 1;
}
