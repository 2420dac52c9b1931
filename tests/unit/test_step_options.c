/* The options that change how a training step is computed but not what it computes, crossed (so
 * that a combination no other test runs cannot hide a bug, as recompute x split passes x the
 * memory plan once did): three SGD steps of an image net (convolution, batch norm, shortcut,
 * route, max pooling, dropout, connected) fed by the loader with flips, and of a two-block
 * transformer (attention with dropout, layernorm, an MLP whose [linear] layers keep packed weights
 * between passes, [dropout], a tied output), under
 *
 *   same   recompute (off, recompute_every=2, checkpoint=1 marks, both with recompute_every=3),
 *          memory_plan 0/1, loader workers 0/2: bit-identical weights, running statistics, EMA
 *          and losses (docs/memory.md and data/loader.h promise it);
 *   near   threads 1/2, the transformer's mini-batches in one pass or in passes of 1 sample (as
 *          the trainer splits a wide sequence net, core/net_split.h, here forced so that the net
 *          stays small), the convolution engine (im2col, Winograd, oneDNN plain and blocked, auto):
 *          the same within the tolerance derived at step_tolerance (sums in another order or
 *          through other transforms);
 *   group  subdivisions 1/2, frozen layers (freeze=1 on an early layer), ema=0.5: they change what
 * a step computes (batch norm's statistics and dropout's draws are per mini-batch, frozen layers do
 * not train, the EMA is one more output), so each combination of them is a group with its own
 * reference.
 *
 * A run is compared with its twin (the same run with the "same" options at their base: no
 * recompute, memory_plan=0, no workers) bit for bit, and every twin with its group's base (1
 * thread, one pass, im2col) within the tolerance; the first run that differs is named with every
 * option, the tensor, the index and both values.
 *
 * Coverage: the full product of the options that lay out the step's memory and passes (recompute,
 * memory_plan, passes, subdivisions, frozen layers: 32 image and 64 transformer runs); then every
 * other value of the other options (threads, workers, the engine, EMA), one at a time, with every
 * recompute x memory_plan (x passes) combination, the subdivisions and frozen layers following
 * recompute's value so that each value meets each of theirs (every pair, not every triple, there):
 * 88 image and 96 transformer runs. Threads are not in the full product because a 2-thread step
 * waits at every OpenMP barrier for a core that other work holds: 150 s for the image net's runs
 * on this loaded 2-core machine, against a few seconds now. Not here: data-parallel ranks
 * (tests/cli/dist.bats trains 2 ranks against 1 process, image and sequence nets). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/cdl.h"
#include "backend/cpu/dnnl_conv.h"
#include "check.h"
#include "core/net.h"
#include "core/net_split.h"
#include "data/loader.h"
#include "train/ema.h"
#include "train/net_keys.h"
#include "train/optimizer.h"
#include "train/trainer.h"
#include "util/timer.h"

enum { STEPS = 3 };

typedef enum {
    RECOMPUTE,
    PLAN,
    WORKERS,
    SPLIT,
    THREADS,
    ENGINE,
    SUBDIVISIONS,
    FROZEN,
    EMA,
    AXES
} AxisId;

/* How an option relates runs (top comment). */
typedef enum { SAME, NEAR, GROUP } Kind;

/* An option and its values, value 0 the base: each as it reads in a message and as [net] keys
 * ("@": checkpoint=1 on the marked layers, "!": freeze=1 on the marked layer; none for threads and
 * workers, which the run sets itself). */
typedef struct Axis {
    Kind kind;
    int layout; /* 1: crossed in full (it lays out the step's memory or passes) */
    int n;
    const char *labels[5];
    const char *keys[5];
} Axis;

static const Axis axes[AXES] = {
    [RECOMPUTE] = {SAME,
                   1,
                   4,
                   {"no recompute", "recompute_every=2", "checkpoint=1 marks",
                    "recompute_every=3 and marks"},
                   {"", "recompute_every=2", "@", "recompute_every=3 @"}},
    [PLAN] = {SAME, 1, 2, {"memory_plan=0", "memory_plan=1"}, {"memory_plan=0", "memory_plan=1"}},
    [WORKERS] = {SAME, 0, 2, {"workers=0", "workers=2"}, {"", ""}},
    [SPLIT] = {NEAR, 1, 2, {"one pass", "passes of 1 sample"}, {"", ""}},
    [THREADS] = {NEAR, 0, 2, {"threads=1", "threads=2"}, {"", ""}},
    [ENGINE] = {NEAR,
                0,
                5,
                {"im2col", "winograd", "dnnl", "dnnl blocked", "engine=auto"},
                {"engine=ref winograd=0", "engine=ref winograd=1 winograd_min_tiles=0",
                 "engine=dnnl dnnl_train_blocked=0", "engine=dnnl dnnl_train_blocked=1",
                 "engine=auto"}},
    [SUBDIVISIONS] =
        {GROUP, 1, 2, {"subdivisions=1", "subdivisions=2"}, {"subdivisions=1", "subdivisions=2"}},
    [FROZEN] = {GROUP, 1, 2, {"nothing frozen", "freeze=1"}, {"", "!"}},
    [EMA] = {GROUP, 0, 2, {"ema=0", "ema=0.5"}, {"ema=0", "ema=0.5"}},
};

/* A net and the options that apply to it (bit k: axis k). */
typedef struct NetCase {
    const char *name;
    const char *net_keys; /* [net] keys past the options' */
    const char *layers;   /* "@" and "!" as in Axis */
    unsigned axes;
} NetCase;

#define AXIS(a) (1u << (a))
#define ALL_AXES ((1u << AXES) - 1)

static const NetCase nets[] = {
    {"image net",
     "batch=8\nwidth=8\nheight=8\nchannels=3\nflip=1\nlearning_rate=0.05\nmomentum=0\ndecay=0\n",
     "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\nactivation=mish\n"
     "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\nactivation=relu\n@\n"
     "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\nactivation=leaky\n!\n"
     "[shortcut]\nfrom=-3\n[maxpool]\nsize=2\nstride=2\n@\n"
     "[convolutional]\nfilters=4\nsize=1\nbatch_normalize=1\nactivation=relu\n"
     "[route]\nlayers=-1,-2\n[dropout]\nprobability=0.3\n@\n"
     "[convolutional]\nfilters=16\nsize=3\npad=1\nbatch_normalize=1\nactivation=logistic\n"
     "[shortcut]\nfrom=-4\n[connected]\noutput=5\nactivation=linear\n[softmax]\n",
     ALL_AXES & ~AXIS(SPLIT)},
    {"transformer", "batch=8\nseq=16\nvocab=12\nlearning_rate=0.05\nmomentum=0\ndecay=0\n",
     "[embedding]\noutput=16\n[positional]\n"
     "[layernorm]\n@\n[attention]\nheads=2\ndropout=0.2\n!\n[shortcut]\nfrom=-3\n"
     "[layernorm]\n[linear]\noutput=32\nactivation=gelu\n[dropout]\nprobability=0.2\n"
     "[linear]\noutput=16\n[shortcut]\nfrom=-5\n"
     "[layernorm]\n@\n[attention]\nheads=2\n[shortcut]\nfrom=-3\n"
     "[layernorm]\n[linear]\noutput=32\nactivation=relu\n@\n[linear]\noutput=16\n"
     "[shortcut]\nfrom=-4\n[layernorm]\n[linear]\ntie=1\n[softmax]\n",
     ALL_AXES & ~AXIS(WORKERS) & ~AXIS(ENGINE)},
};

/* What a run of three steps leaves, and what its tolerance is derived from. */
typedef struct Run {
    int done; /* 1: it ran (ok 1) or failed to (ok 0) */
    int ok;
    Error error;    /* why it could not run (ok 0) */
    float *weights; /* the parameters, the running statistics, then the EMA shadow (ema > 0) */
    size_t n_params, n_state, n_weights;
    float loss[STEPS];
    double update[STEPS]; /* the largest change of a parameter in each step */
    double max_param, max_state;
    double terms; /* the summed length of the layers' longest sums (step_tolerance) */
} Run;

/* Threads and workers of options v. */
static int count_of(const int *v, int a)
{
    return atoi(axes[a].labels[v[a]] + strlen(a == THREADS ? "threads=" : "workers="));
}

/* The cfg of net nc under options v. */
static void cfg_text(const NetCase *nc, const int *v, char *text, size_t size)
{
    size_t at = (size_t)snprintf(text, size, "[net]\n%s", nc->net_keys);
    for (int a = 0; a < AXES; a++) {
        for (const char *c = axes[a].keys[v[a]]; *c && at + 2 < size; c++)
            if (*c != '@' && *c != '!')
                text[at++] = *c == ' ' ? '\n' : *c;
        text[at++] = '\n';
    }
    const int marks = strchr(axes[RECOMPUTE].keys[v[RECOMPUTE]], '@') != NULL;
    for (const char *c = nc->layers; *c && at + 16 < size; c++)
        if (*c == '@' || *c == '!')
            at += (size_t)snprintf(text + at, size - at, "%s",
                                   *c == '@' ? (marks ? "checkpoint=1" : "")
                                             : (v[FROZEN] ? "freeze=1" : ""));
        else
            text[at++] = *c;
    text[at] = 0;
}

/* "net: label, label, ..." of the options that apply to it. */
static const char *describe(const NetCase *nc, const int *v)
{
    static char text[2][512];
    static int which;
    char *out = text[which ^= 1];
    size_t at = (size_t)snprintf(out, sizeof text[0], "%s:", nc->name);
    for (int a = 0; a < AXES; a++)
        if (nc->axes & AXIS(a))
            at += (size_t)snprintf(out + at, sizeof text[0] - at, " %s", axes[a].labels[v[a]]);
    return out;
}

/* BatchFill of the transformer: the token ids of each sample keyed by its place in the step (the
 * pass's draw id and sample offset), as the text source draws its windows, so that a split pass
 * gets the samples it has in one pass. */
static int fill_tokens(Net *net, int pass, void *ctx, Error *e)
{
    (void)pass, (void)ctx, (void)e;
    for (int b = 0; b < net->batch; b++) {
        const uint64_t g = net->draw_id * 64 + (uint64_t)(net->sample_offset + b);
        for (int t = 0; t < net->seq; t++) {
            net->input[(size_t)b * net->seq + t] = (float)((g * 7 + (uint64_t)t * 3) % 12);
            net->labels[(size_t)b * net->seq + t] = (int)((g * 5 + (uint64_t)t * 11) % 12);
        }
    }
    return CDL_OK;
}

/* 64 in-memory images of the image net's shape with 5 classes. */
static int image_source(SampleSource *src, Error *e)
{
    Dataset d = {.n = 64, .c = 3, .h = 8, .w = 8, .max_value = 255, .classes = 5};
    d.pixels = malloc(64 * 3 * 8 * 8);
    d.labels = malloc(64 * sizeof *d.labels);
    if (!d.pixels || !d.labels) {
        dataset_free(&d);
        return error_set(e, CDL_ERUNTIME, "out of memory");
    }
    for (int i = 0; i < 64 * 3 * 8 * 8; i++)
        d.pixels[i] = (uint8_t)((i * 37 + i / 7) % 256);
    for (int i = 0; i < 64; i++)
        d.labels[i] = i * 3 % 5;
    return source_from_dataset(src, &d, e);
}

/* 1 when some layer of net runs on the engine value v names (im2col and auto: any). */
static int engine_runs(const Net *net, int v)
{
    const char *want = v == 1 ? "wino" : v == 2 || v == 3 ? "dnnl" : NULL;
    for (int i = 0; want && i < net->n_layers; i++)
        if (net->layers[i].engine && !strcmp(net->layers[i].engine, want))
            return 1;
    return !want;
}

/* The summed length of the longest sums of net's layers: a layer's output sums at most its input
 * (per sample), its weight gradient and batch norm's statistics at most the batch's positions. */
static double sum_terms(const Net *net)
{
    double terms = 0;
    for (int i = 0; i < net->n_layers; i++) {
        const Layer *l = &net->layers[i];
        terms += (double)shape_size(l->in_shape) +
                 (double)net->hyper.batch * l->out_shape.h * l->out_shape.w;
    }
    return terms;
}

static double largest_abs(const float *x, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fabs(x[i]) > m ? fabs(x[i]) : m;
    return m;
}

/* Runs STEPS steps of nc under options v into r (r->ok 0 and r->error when it cannot). */
static void run(const NetCase *nc, const int *v, Run *r)
{
    char text[4096];
    cfg_text(nc, v, text, sizeof text);
    memset(r, 0, sizeof *r);
    r->done = 1;
    const int threads = count_of(v, THREADS);
    cdl_set_threads(threads);
    Net net;
    Optimizer opt = {0};
    SampleSource src = {0};
    Loader *loader = NULL;
    AugmentConfig aug;
    Error e = {0};
    int st = net_build_from_text(&net, text, "t.cfg", 1, 7, &e);
    if (st) {
        r->error = e;
        return;
    }
    st = net_resize_split(&net, v[SPLIT] ? net.hyper.batch / net.hyper.subdivisions : 1, &e);
    st = st ? st : optimizer_init(&opt, &net, &e);
    TrainSource source = {.fill = fill_tokens};
    if (!st && !net.seq) {
        const LoaderOptions lo = {.batch = net.batch,
                                  .workers = count_of(v, WORKERS),
                                  .prefetch = 2,
                                  .seed = 7,
                                  .train = 1,
                                  .drop_last = 1};
        st = image_source(&src, &e);
        st = st ? st : net_augment(&net, &aug, &e);
        st = st ? st : loader_open(&loader, &src, &aug, &lo, &e);
        if (!st)
            source = train_source_loader(loader);
        st = st ? st : source.start_epoch(source.ctx, 0, 0, &e);
    }
    float *before = st ? NULL : malloc(net.n_params * sizeof *before);
    st = st || before ? st : error_set(&e, CDL_ERUNTIME, "out of memory");
    net.train = 1;
    for (int k = 0; !st && k < STEPS; k++) {
        memcpy(before, net.params, net.n_params * sizeof *before);
        st = trainer_step_with(&net, &opt, source.fill, source.ctx, 0.05f, &r->loss[k], &e);
        for (size_t i = 0; i < net.n_params; i++)
            r->update[k] = fmax(r->update[k], fabs((double)net.params[i] - before[i]));
    }
    if (!st && !engine_runs(&net, v[ENGINE]))
        st = error_set(&e, CDL_ERUNTIME, "no layer runs on engine %s",
                       axes[ENGINE].labels[v[ENGINE]]);
    if (!st) {
        r->n_params = net.n_params, r->n_state = net.n_state;
        r->n_weights = net.n_params + net.n_state + (opt.ema ? ema_floats(&net) : 0);
        r->weights = malloc(r->n_weights * sizeof *r->weights);
        st = r->weights ? CDL_OK : error_set(&e, CDL_ERUNTIME, "out of memory");
    }
    if (!st) {
        memcpy(r->weights, net.params, net.n_params * sizeof *r->weights);
        memcpy(r->weights + net.n_params, net.state, net.n_state * sizeof *r->weights);
        if (opt.ema)
            memcpy(r->weights + net.n_params + net.n_state, opt.ema,
                   ema_floats(&net) * sizeof *r->weights);
        r->max_param = largest_abs(net.params, net.n_params);
        r->max_state = largest_abs(net.state, net.n_state);
        r->terms = sum_terms(&net);
        r->ok = 1;
    } else
        r->error = e;
    free(before);
    loader_close(loader);
    source_free(&src);
    optimizer_free(&opt);
    net_free(&net);
}

/* How far a run may end from its group's base where only "near" options differ (float32 sums in
 * another order: threads, passes; other transforms: Winograd, oneDNN). As test_backend_ops derives
 * it: a sum of k terms in another order errs by about u sqrt(k) of the largest value (u = 2^-24,
 * the roundings a random walk), a net's layers add theirs in quadrature, and lambda = 8 covers the
 * largest of many elements, two runs' errors and Winograd's transforms: one step's gradient errs
 * by eps = 8 u sqrt(sum_l k_l) of its largest element (k_l: sum_terms). SGD without momentum or
 * decay moves a weight by lr g, so step k's parameters err by eps U_k, U_k the base's largest
 * change of a parameter in that step, plus the rounding of w - lr g in each run (2 u max |w|). An
 * error made at step k is carried through the later steps: a gradient that differs by H dw gives
 * (1 - lr H) dw, at most 2 dw while the steps are stable (lr |H| <= 1), so step k's errors count
 * 2^(STEPS-1-k) times. Batch norm's running statistics move towards batch statistics, sums over
 * the batch's positions that err by eps of the largest statistic, carried the same way. The EMA is
 * a convex combination of the steps' weights, within their bound. */
typedef struct Tolerance {
    double params, state;
} Tolerance;

static Tolerance step_tolerance(const Run *base)
{
    const double u = 0x1p-24, eps = 8 * u * sqrt(base->terms);
    Tolerance t = {0, 0};
    for (int k = 0; k < STEPS; k++) {
        const double carried = ldexp(1, STEPS - 1 - k);
        t.params += carried * (eps * base->update[k] + 2 * u * base->max_param);
        t.state += carried * (eps + 2 * u) * base->max_state;
    }
    return t;
}

/* 1 when run a (options va) ends as run b (vb) does: bit for bit when exact, else within b's
 * step_tolerance (raising *worst to the largest difference / tolerance); else, when report, names
 * both runs and the first difference. */
static int matches(const NetCase *nc, const int *va, const Run *a, const int *vb, const Run *b,
                   int exact, int report, double *worst)
{
    const Tolerance t = exact ? (Tolerance){0, 0} : step_tolerance(b);
    int same = a->n_weights == b->n_weights && a->n_params == b->n_params;
    for (int k = 0; same && exact && k < STEPS; k++)
        if (memcmp(&a->loss[k], &b->loss[k], sizeof a->loss[k])) {
            if (report)
                fprintf(stderr, "FAIL %s\n  differs from %s\n  in step %d's loss: %.9g, not %.9g\n",
                        describe(nc, va), describe(nc, vb), k + 1, a->loss[k], b->loss[k]);
            return 0;
        }
    for (size_t i = 0; same && i < a->n_weights; i++) {
        const int state = i >= a->n_params && i < a->n_params + a->n_state;
        const double tol = state ? t.state : t.params;
        if (!exact && tol > 0)
            *worst = fmax(*worst, fabs((double)a->weights[i] - b->weights[i]) / tol);
        if (exact ? !memcmp(&a->weights[i], &b->weights[i], sizeof *a->weights)
                  : fabs((double)a->weights[i] - b->weights[i]) <= tol)
            continue;
        if (report) {
            const char *what = state ? "running statistic" : i < a->n_params ? "parameter" : "EMA";
            const size_t at = state             ? i - a->n_params
                              : i < a->n_params ? i
                                                : i - a->n_params - a->n_state;
            fprintf(stderr, "FAIL %s\n  differs from %s\n  at %s %zu: %.9g, not %.9g (%s %.3g)\n",
                    describe(nc, va), describe(nc, vb), what, at, a->weights[i], b->weights[i],
                    exact ? "bit for bit:" : "tolerance", tol);
        }
        return 0;
    }
    if (!same && report)
        fprintf(stderr, "FAIL %s: another net than %s\n", describe(nc, va), describe(nc, vb));
    return same;
}

/* 1 when options v are a run of the crossing (top comment): the options nc takes, an engine this
 * build has, and at most one of the options that are not crossed in full away from its base;
 * where one is, with every recompute, memory_plan (and split) and the subdivisions and frozen
 * layers that recompute's value picks, so that it meets each of theirs. */
static int crossed(const NetCase *nc, const int *v)
{
    int apart = 0;
    for (int a = 0; a < AXES; a++) {
        if (v[a] && !(nc->axes & AXIS(a)))
            return 0;
        apart += v[a] && !axes[a].layout;
    }
    if ((v[ENGINE] == 2 || v[ENGINE] == 3) && !dnnl_conv_built())
        return 0;
    if (v[ENGINE] == 3 && !dnnl_conv_lanes_native())
        return 0;
    return apart == 0 ||
           (apart == 1 && v[SUBDIVISIONS] == (v[RECOMPUTE] & 1) && v[FROZEN] == v[RECOMPUTE] >> 1);
}

/* Every run of nc's crossing against its twin and every twin against its base. */
static void cross(const NetCase *nc)
{
    size_t stride[AXES], total = 1;
    for (int a = 0; a < AXES; a++) {
        stride[a] = total;
        total *= (size_t)axes[a].n;
    }
    Run *runs = calloc(total, sizeof *runs);
    if (!runs) {
        fprintf(stderr, "FAIL out of memory\n");
        check_failures++;
        return;
    }
    int n_runs = 0, differing = 0, failed = 0;
    double worst = 0; /* the largest difference / tolerance of the "near" comparisons */
    const double start_s = time_now_s();
    for (size_t index = 0; index < total; index++) {
        int v[AXES], twin[AXES], base[AXES];
        size_t at[3] = {0, 0, 0}; /* the run's, its twin's and its base's index */
        for (int a = 0; a < AXES; a++) {
            v[a] = (int)(index / stride[a] % (size_t)axes[a].n);
            twin[a] = axes[a].kind == SAME ? 0 : v[a];
            base[a] = axes[a].kind == GROUP ? v[a] : 0;
            at[0] += (size_t)v[a] * stride[a];
            at[1] += (size_t)twin[a] * stride[a];
            at[2] += (size_t)base[a] * stride[a];
        }
        if (!crossed(nc, v))
            continue;
        const int *opts[3] = {v, twin, base};
        for (int k = 0; k < 3; k++)
            if (!runs[at[k]].done)
                run(nc, opts[k], &runs[at[k]]);
        n_runs++;
        const Run *r = &runs[at[0]], *t = &runs[at[1]], *b = &runs[at[2]];
        if (!r->ok || !t->ok || !b->ok) {
            const Run *bad = !r->ok ? r : !t->ok ? t : b;
            if (!failed++)
                fprintf(stderr, "FAIL %s: %s\n",
                        describe(nc, opts[bad == r   ? 0
                                          : bad == t ? 1
                                                     : 2]),
                        bad->error.msg);
        } else if (!(r == t || matches(nc, v, r, twin, t, 1, !differing, &worst)) ||
                   !(t == b || matches(nc, twin, t, base, b, 0, !differing, &worst)))
            differing++;
        if (r != t) { /* no other run's twin or base */
            free(runs[at[0]].weights);
            runs[at[0]].weights = NULL;
        }
    }
    for (size_t i = 0; i < total; i++)
        free(runs[i].weights);
    free(runs);
    printf("%s: %d runs, %d differ, %d failed, near runs within %.2g of their tolerance (%.1f s)\n",
           nc->name, n_runs, differing, failed, worst, time_now_s() - start_s);
    CHECK(differing == 0 && failed == 0);
}

int main(void)
{
    for (size_t i = 0; i < sizeof nets / sizeof nets[0]; i++)
        cross(&nets[i]);
    return check_report("test_step_options");
}
