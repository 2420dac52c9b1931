/* cdl predict: classifies image files (or the tensors of .npy files) with a model and prints
 * the top-k classes, or continues a text prompt with a text model. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/cdl.h"
#include "cli/cli.h"
#include "util/timer.h"
#include "util/utf8.h"

static const OptSpec predict_opts[] = {
    {"--top", 1, 0, "how many classes to print per image (default 5)"},
    {"--json", 0, 0, "print one JSON array instead of text"},
    {"--threads", 1, 0,
     "CPU threads (default: OMP_NUM_THREADS, else the cores no other process is running on)"},
    CLI_PRECISION_OPT,
    CLI_GPU_OPT,
    {"--batch", 1, 0, "images (or --sources lines) per forward pass (default 16)"},
    {"--no-crop", 0, 0, "resize to the net's size without the cfg's center crop or letterbox"},
    {"--seed", 1, 0,
     "with a CFG: initialise the parameters from this seed; with --prompt or --source: seed the "
     "sampling (default 1)"},
    {"--weights", 1, 0,
     "with a CFG: load FILE.safetensors (torchvision names), darknet .weights or a checkpoint's "
     "matching layers (instead of --seed)"},
    {"--set", 1, 1, "with a CFG: override a cfg key: net.KEY=V or LAYER.KEY=V (repeatable)"},
    {"--prompt", 1, 0, "text models: generate text that continues this prompt"},
    {"--tokens", 1, 0, "text models: how many tokens to generate (default 200)"},
    {"--temperature", 1, 0,
     "text and sequence-to-sequence models: sampling temperature; 0 is greedy (default 1, with "
     "--source 0)"},
    {"--top-k", 1, 0,
     "text and sequence-to-sequence models: sample among the K most probable tokens (default: "
     "all)"},
    {"--top-p", 1, 0,
     "text and sequence-to-sequence models: sample among the fewest most probable tokens whose "
     "weights reach P of the total (default 1: all)"},
    {"--no-cache", 0, 0,
     "text and sequence-to-sequence models: recompute the whole context (the decoder's rows) for "
     "every token"},
    {"--source", 1, 0, "sequence-to-sequence models: print the greedy target of this source text"},
    {"--sources", 1, 0,
     "sequence-to-sequence models: a file of sources, one per line: one target line each"},
    {"--beam", 1, 0,
     "sequence-to-sequence models: beam search of K hypotheses (default 1: greedy)"},
    {"--length-penalty", 1, 0,
     "with --beam: a target's log-probability is divided by its length to this power (default 1)"},
    {"--probs", 0, 0,
     "text models, with --json: print the prompt's token ids and the next token's distribution "
     "instead of generating"},
    {"--help", 0, 0, "show this help"},
};
#define N_PREDICT_OPTS (int)(sizeof predict_opts / sizeof predict_opts[0])

/* True when path names a cfg file (a model to build rather than load). */
static int is_cfg(const char *path)
{
    size_t n = strlen(path);
    return n > 4 && !strcmp(path + n - 4, ".cfg");
}

/* Indices of the k largest probabilities, in descending order. */
static void top_k(const float *p, int classes, int k, int *out)
{
    for (int i = 0; i < k; i++) {
        int best = -1;
        for (int c = 0; c < classes; c++) {
            int taken = 0;
            for (int j = 0; j < i; j++)
                taken |= out[j] == c;
            if (!taken && (best < 0 || p[c] > p[best]))
                best = c;
        }
        out[i] = best;
    }
}

/* One input of a forward pass: an image file (row -1) or row `row` of a .npy file. */
typedef struct Sample {
    const char *file;
    int row;
} Sample;

/* What every reported sample shares: the model, how many classes to list, where to. */
typedef struct Report {
    const cdl_model *m;
    int k, *best; /* best: [k] */
    int json, probabilities;
    cJSON *results;
} Report;

/* Prints (or, with json, appends to results) the top k classes of one sample. The values are
 * "probability" for a net that ends in a softmax, else its raw outputs, "logit". */
static void report_sample(const Report *r, Sample s, const float *out)
{
    top_k(out, cdl_model_classes(r->m), r->k, r->best);
    cJSON *item = cJSON_CreateObject();
    cJSON_AddStringToObject(item, "file", s.file);
    if (s.row >= 0)
        cJSON_AddNumberToObject(item, "row", s.row);
    cJSON *list = cJSON_AddArrayToObject(item, "top");
    char line[4096];
    if (!r->json && s.row >= 0)
        printf("%s[%d]:\n", utf8_escape_line(s.file, line, sizeof line), s.row);
    else if (!r->json)
        printf("%s:\n", utf8_escape_line(s.file, line, sizeof line));
    for (int j = 0; j < r->k; j++) {
        const int c = r->best[j];
        char number[16];
        snprintf(number, sizeof number, "%d", c);
        const char *name = cdl_model_class_name(r->m, c);
        name = name ? name : number;
        if (!r->json && r->probabilities)
            printf("  %6.2f%%  %s\n", 100.0 * out[c], utf8_escape_line(name, line, sizeof line));
        else if (!r->json)
            printf("  %10.4g  %s\n", out[c], utf8_escape_line(name, line, sizeof line));
        cJSON *entry = cJSON_CreateObject();
        cJSON_AddStringToObject(entry, "class", name);
        cJSON_AddNumberToObject(entry, "index", c);
        cJSON_AddNumberToObject(entry, r->probabilities ? "probability" : "logit", out[c]);
        cJSON_AddItemToArray(list, entry);
    }
    cJSON_AddItemToArray(r->results, item);
}

/* One forward pass over n samples' inputs, then their reports; outs: [n][classes]. */
static int run_samples(cdl_model *m, const Report *r, const float *inputs, const Sample *samples,
                       int n, float *outs)
{
    char err[1024];
    const int st = cdl_model_predict_batch(m, inputs, n, outs, err, sizeof err);
    if (st) {
        cli_print_message(err);
        return st;
    }
    for (int j = 0; j < n; j++)
        report_sample(r, samples[j], outs + (size_t)j * (size_t)cdl_model_classes(m));
    return CDL_OK;
}

/* Every row of a .npy file, in forward passes of up to batch rows; 0, or the failure that
 * stops the command (a file refused is reported and *status set, and the others go on). */
static int run_npy(cdl_model *m, const Report *r, const char *path, int batch, Sample *samples,
                   float *outs, int *status)
{
    char err[1024];
    float *rows;
    int n;
    const int refused = cdl_model_load_npy(m, path, &rows, &n, err, sizeof err);
    if (refused) {
        cli_print_message(err);
        *status = refused;
        return CDL_OK;
    }
    int c, h, w, st = CDL_OK;
    cdl_model_input_shape(m, &c, &h, &w);
    const size_t per_row = (size_t)c * (size_t)h * (size_t)w;
    for (int start = 0; start < n && !st; start += batch) {
        const int chunk = n - start < batch ? n - start : batch;
        for (int j = 0; j < chunk; j++)
            samples[j] = (Sample){path, start + j};
        st = run_samples(m, r, rows + (size_t)start * per_row, samples, chunk, outs);
    }
    free(rows);
    return st;
}

/* Streams generated text to stdout (or collects it for --json). */
typedef struct TextOut {
    int json;
    char *text;
    size_t len, cap;
    long tokens;
} TextOut;

static void on_text(void *ctx, const char *text, size_t len)
{
    TextOut *o = ctx;
    o->tokens++;
    if (!o->json) {
        fwrite(text, 1, len, stdout);
        fflush(stdout);
        return;
    }
    if (o->len + len + 1 > o->cap) {
        size_t cap = 2 * (o->len + len + 1);
        char *grown = realloc(o->text, cap);
        if (!grown)
            return;
        o->text = grown;
        o->cap = cap;
    }
    memcpy(o->text + o->len, text, len);
    o->len += len;
    o->text[o->len] = 0;
}

/* --temperature: a number >= 0. */
static int parse_temperature(const Args *a, float *out, Error *e)
{
    const char *v = args_get(a, "--temperature");
    *out = 1.0f;
    if (!v)
        return CDL_OK;
    char *end;
    const double t = strtod(v, &end);
    if (end == v || *end || !(t >= 0 && t <= 1000))
        return error_set(e, CDL_EUSAGE, "--temperature %s: expected a number in [0, 1000]", v);
    *out = (float)t;
    return CDL_OK;
}

/* cdl predict MODEL --prompt TEXT --probs --json: {"prompt", "ids": [n], "probs": [classes]}. */
static int print_next_token_probs(cdl_model *m, const char *prompt)
{
    const size_t len = strlen(prompt);
    const int classes = cdl_model_classes(m);
    int32_t *ids = malloc((len + 1) * sizeof *ids);
    float *probs = malloc((size_t)classes * sizeof *probs);
    size_t n_ids = 0;
    char err[1024] = "out of memory";
    int st = ids && probs
                 ? cdl_model_next_token_probs(m, prompt, probs, ids, &n_ids, err, sizeof err)
                 : CDL_ERUNTIME;
    if (st) {
        cli_print_message(err);
    } else {
        cJSON *r = cJSON_CreateObject(), *id_list = cJSON_AddArrayToObject(r, "ids");
        cJSON_AddStringToObject(r, "prompt", prompt);
        for (size_t i = 0; i < n_ids; i++)
            cJSON_AddItemToArray(id_list, cJSON_CreateNumber(ids[i]));
        cJSON *prob_list = cJSON_AddArrayToObject(r, "probs");
        for (int i = 0; i < classes; i++)
            cJSON_AddItemToArray(prob_list, cJSON_CreateNumber(probs[i]));
        char *text = cli_json_text(r);
        if (text)
            printf("%s\n", text);
        st = text ? CDL_OK : CDL_ERUNTIME;
        free(text);
        cJSON_Delete(r);
    }
    free(ids);
    free(probs);
    return st;
}

/* cdl predict MODEL --prompt TEXT: generation with a text model. */
static int generate_text(const Args *a, Error *e)
{
    long tokens, top_k, seed, threads;
    float temperature;
    double top_p;
    int st = args_get_int(a, "--tokens", 200, 1, 100000000, &tokens, e);
    st = st ? st : args_get_int(a, "--top-k", 0, 0, INT_MAX, &top_k, e);
    st = st ? st : args_get_float(a, "--top-p", 1.0, 1e-6, 1.0, &top_p, e);
    st = st ? st : args_get_int(a, "--seed", 1, 0, LONG_MAX, &seed, e);
    st = st ? st : args_get_int(a, "--threads", 0, 0, 1024, &threads, e);
    st = st ? st : parse_temperature(a, &temperature, e);
    const char *precision;
    int gpu;
    st = st ? st : cli_get_precision(a, &precision, e);
    st = st ? st : cli_get_gpu(a, &gpu, e);
    if (!st && a->n_positional > 1)
        st = error_set(e, CDL_EUSAGE, "predict --prompt takes one MODEL and no image files");
    if (!st && args_get(a, "--probs") && !args_get(a, "--json"))
        st = error_set(e, CDL_EUSAGE, "predict --probs prints JSON: add --json");
    if (st)
        return cli_fail(e);
    cdl_set_threads((int)threads);
    const char *model = a->n_positional ? a->positional[0] : CDL_DEFAULT_MODEL;
    cdl_model *m;
    char err[1024];
    const cdl_open_options how = {.overrides = a->repeats,
                                  .n_overrides = a->n_repeats,
                                  .kind = CDL_OPEN_CHECKPOINT,
                                  .batch = 1};
    int status = cdl_model_open(model, &how, &m, err, sizeof err);
    if (status) {
        cli_print_message(err);
        return status;
    }
    if (cli_apply_precision(a, m, e) || cli_apply_gpu(a, m, e)) {
        cdl_model_free(m);
        return cli_fail(e);
    }
    const char *prompt = args_get(a, "--prompt");
    /* Checked before the prompt is echoed, so a refused prompt prints nothing else. */
    if ((status = cdl_model_check_prompt(m, prompt, err, sizeof err))) {
        cli_print_message(err);
        cdl_model_free(m);
        return status;
    }
    if (args_get(a, "--probs")) {
        status = print_next_token_probs(m, prompt);
        cdl_model_free(m);
        return status;
    }
    const cdl_generate_options o = {(int)tokens,    temperature,
                                    (int)top_k,     (float)top_p,
                                    (uint64_t)seed, args_get(a, "--no-cache") != NULL};
    TextOut out = {.json = args_get(a, "--json") != NULL};
    if (!out.json) {
        fputs(prompt, stdout);
        fflush(stdout);
    }
    const double start = time_now_s();
    status = cdl_model_generate(m, prompt, &o, on_text, &out, err, sizeof err);
    const double seconds = time_now_s() - start;
    if (status) {
        if (!out.json)
            fputc('\n', stderr); /* after the text streamed so far */
        cli_print_message(err);
    } else if (out.json) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "prompt", prompt);
        cJSON_AddStringToObject(r, "text", out.text ? out.text : "");
        cJSON_AddNumberToObject(r, "tokens", (double)out.tokens);
        cJSON_AddNumberToObject(r, "seconds", seconds);
        cJSON_AddNumberToObject(r, "tokens_per_s", (double)out.tokens / seconds);
        cJSON_AddBoolToObject(r, "cache", !o.no_cache && cdl_model_has_cache(m));
        char *text = cli_json_text(r);
        if (text)
            printf("%s\n", text);
        free(text);
        cJSON_Delete(r);
    } else {
        printf("\n");
    }
    free(out.text);
    cdl_model_free(m);
    return status;
}

int cmd_predict(int argc, char **argv)
{
    Args a;
    Error e = {0};
    if (args_parse(argc, argv, predict_opts, N_PREDICT_OPTS, &a, &e))
        return cli_fail(&e);
    if (args_get(&a, "--help")) {
        args_print_help(
            "predict",
            "[MODEL|CFG] IMAGE|NPY... [options]  |  [MODEL] --prompt TEXT  |  [MODEL] --source "
            "TEXT",
            "Classifies PNG or JPEG files, or .npy tensors of the net's input shape "
            "(C, H, W) or\n(N, C, H, W) (one result per row); MODEL defaults to " CDL_DEFAULT_MODEL
            ".\nA CFG builds the network with freshly initialised parameters (--seed), "
            "for testing an architecture,\nor with weights from --weights "
            "(safetensors, darknet .weights, a checkpoint).\n"
            "With --prompt, a text model continues the prompt, printing tokens as "
            "they come\n(--seed then seeds the sampling). With --source (or --sources FILE), a "
            "sequence-to-sequence\nmodel prints the greedy target of each source (--beam K: beam "
            "search's; --temperature: a sampled one).",
            predict_opts, N_PREDICT_OPTS);
        return 0;
    }
    if (args_get(&a, "--prompt"))
        return generate_text(&a, &e);
    if (args_get(&a, "--source") || args_get(&a, "--sources"))
        return predict_decode(&a, &e);
    long top, threads, seed;
    const char *precision;
    int gpu;
    if (args_get_int(&a, "--top", 5, 1, 100000, &top, &e) ||
        args_get_int(&a, "--threads", 0, 0, 1024, &threads, &e) ||
        args_get_int(&a, "--seed", 1, 0, LONG_MAX, &seed, &e) ||
        cli_get_precision(&a, &precision, &e) || cli_get_gpu(&a, &gpu, &e))
        return cli_fail(&e);
    cdl_set_threads((int)threads);
    /* The first file is the model when it is one (of any format: another format is refused
     * saying how to use it, never classified as an image with the default model). */
    struct stat first_st;
    if (a.n_positional > 0 && stat(a.positional[0], &first_st) == 0 && S_ISDIR(first_st.st_mode))
        return error_set(&e, CDL_EUSAGE,
                         "%s: a directory, not a model or an image: name the checkpoint in it "
                         "(%s/latest.cdl is the last one train wrote there)",
                         a.positional[0], a.positional[0]),
               cli_fail(&e);
    const int cfg = a.n_positional > 0 && is_cfg(a.positional[0]);
    int first = a.n_positional > 0 && (cfg || cdl_is_model_file(a.positional[0])) ? 1 : 0;
    const char *model = first ? a.positional[0] : CDL_DEFAULT_MODEL;
    if (a.n_positional - first < 1)
        return error_set(&e, CDL_EUSAGE,
                         "predict needs at least one image or .npy file; see --help"),
               cli_fail(&e);
    const char *weights = args_get(&a, "--weights");
    if (weights && (!cfg || args_get(&a, "--seed")))
        return error_set(&e, CDL_EUSAGE, "--weights goes with a CFG, and replaces --seed"),
               cli_fail(&e);
    cdl_model *m;
    char err[1024];
    const cdl_open_options o = {.overrides = a.repeats,
                                .n_overrides = a.n_repeats,
                                .seed = (uint64_t)seed,
                                .kind = cfg     ? CDL_OPEN_CFG
                                        : first ? CDL_OPEN_ANY
                                                : CDL_OPEN_CHECKPOINT,
                                .batch = 1};
    int status = cdl_model_open(model, &o, &m, err, sizeof err);
    if (!status && cdl_model_is_text(m)) {
        const int seq2seq = cdl_model_is_seq2seq(m);
        snprintf(err, sizeof err,
                 "%s is a %s model: it %s (`cdl predict %s %s TEXT`), it does not classify images",
                 model, seq2seq ? "sequence-to-sequence" : "text",
                 seq2seq ? "decodes a source" : "continues a prompt", model,
                 seq2seq ? "--source" : "--prompt");
        cdl_model_free(m);
        status = CDL_EUSAGE;
    }
    if (!status && cfg)
        cli_print_warnings(cdl_model_warnings(m));
    char note[1200];
    if (!status && weights &&
        (status = cdl_model_load_weights(m, weights, note, sizeof note, err, sizeof err)))
        cdl_model_free(m);
    else if (!status && weights)
        fprintf(stderr, "cdl: --weights %s\n", note);
    if (status) {
        cli_print_message(err);
        return status;
    }
    if (args_get(&a, "--no-crop"))
        cdl_model_skip_crop(m);
    long batch;
    if (cli_apply_precision(&a, m, &e) || cli_apply_gpu(&a, m, &e) ||
        args_get_int(&a, "--batch", 16, 1, 4096, &batch, &e)) {
        cdl_model_free(m);
        return cli_fail(&e);
    }
    const int classes = cdl_model_classes(m);
    const int k = top < classes ? (int)top : classes;
    const int json = args_get(&a, "--json") != NULL;
    int c, h, w;
    cdl_model_input_shape(m, &c, &h, &w);
    const size_t per_image = (size_t)c * (size_t)h * (size_t)w;
    int *best = malloc((size_t)k * sizeof *best);
    float *outs = malloc((size_t)batch * (size_t)classes * sizeof *outs);
    float *inputs = malloc((size_t)batch * per_image * sizeof *inputs);
    Sample *samples = malloc((size_t)batch * sizeof *samples);
    cJSON *results = cJSON_CreateArray();
    const Report r = {m, k, best, json, cdl_model_outputs_probabilities(m), results};
    int stop = !best || !outs || !inputs || !samples;
    if (stop) {
        fprintf(stderr, "cdl: out of memory\n");
        status = CDL_ERUNTIME;
    }
    /* Images are decoded into passes of --batch (a bad file reports its error and is left
     * out); a .npy file runs the images before it, then its own rows: results come in
     * argument order. */
    int n = 0;
    for (int i = first; i < a.n_positional && !stop; i++) {
        const char *path = a.positional[i];
        int st = CDL_OK;
        if (cdl_is_npy_file(path)) {
            st = n ? run_samples(m, &r, inputs, samples, n, outs) : CDL_OK;
            n = 0;
            st = st ? st : run_npy(m, &r, path, (int)batch, samples, outs, &status);
        } else if (cdl_model_load_image(m, path, inputs + (size_t)n * per_image, err, sizeof err)) {
            cli_print_message(err);
            status = CDL_ERUNTIME;
        } else {
            samples[n++] = (Sample){path, -1};
            st = n == batch ? run_samples(m, &r, inputs, samples, n, outs) : CDL_OK;
            n = n == batch ? 0 : n;
        }
        if (st)
            status = st, stop = 1;
    }
    const int last = n && !stop ? run_samples(m, &r, inputs, samples, n, outs) : CDL_OK;
    status = last ? last : status;
    if (json) {
        char *text = cli_json_text(results);
        if (text)
            printf("%s\n", text);
        free(text);
    }
    cJSON_Delete(results);
    free(best);
    free(outs);
    free(inputs);
    free(samples);
    cdl_model_free(m);
    return status;
}
