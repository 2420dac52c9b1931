/* Training progress output. */
#include "cli/progress.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

static void format_duration(char *out, size_t size, double s)
{
    long t = s > 0 ? (long)(s + 0.5) : 0;
    if (t >= 3600)
        snprintf(out, size, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(out, size, "%ld:%02ld", t / 60, t % 60);
}

static void write_json_line(FILE *f, cJSON *o)
{
    char *text = cJSON_PrintUnformatted(o);
    if (text) {
        fprintf(f, "%s\n", text);
        fflush(f);
        free(text);
    }
    cJSON_Delete(o);
}

/* Writes n scalars at step to the TensorBoard file; on failure warns once and stops. */
static void write_scalars(Progress *p, uint64_t step, const char *const *tags, const double *values,
                          int n)
{
    if (!p->tensorboard)
        return;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    const double wall_time = (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
    Error e = {0};
    int st = CDL_OK;
    for (int i = 0; i < n && !st; i++)
        st = tfevents_add_scalar(p->tensorboard, tags[i], (int64_t)step, (float)values[i],
                                 wall_time, &e);
    st = st ? st : tfevents_flush(p->tensorboard, &e);
    if (st) {
        fprintf(stderr, "%scdl: warning: %s; TensorBoard logging stopped\n",
                p->tty ? "\r\033[K" : "", e.msg);
        p->tensorboard = NULL;
    }
}

/* The rate to show for images_per_s and its unit: tokens/s for a sequence net. */
static double shown_rate(const Progress *p, double images_per_s, const char **unit)
{
    *unit = p->tokens_per_sample ? "tok/s" : "img/s";
    return images_per_s * (p->tokens_per_sample ? p->tokens_per_sample : 1);
}

void progress_on_step(void *ctx, const StepReport *r)
{
    Progress *p = ctx;
    const int logged = r->step % (uint64_t)p->log_every == 0 || r->step == r->total_steps;
    if (p->jsonl && logged) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", "step");
        cJSON_AddNumberToObject(o, "step", (double)r->step);
        cJSON_AddNumberToObject(o, "epoch", r->epoch + 1);
        cJSON_AddNumberToObject(o, "loss", r->loss);
        cJSON_AddNumberToObject(o, "lr", r->lr);
        cJSON_AddNumberToObject(o, "images_per_s", r->images_per_s);
        if (p->tokens_per_sample)
            cJSON_AddNumberToObject(o, "tokens_per_s", r->images_per_s * p->tokens_per_sample);
        cJSON_AddNumberToObject(o, "elapsed_s", r->elapsed_s);
        write_json_line(p->jsonl, o);
    }
    if (logged) {
        const char *const tags[] = {"train/loss", "train/lr", "train/images_per_s"};
        const double values[] = {r->loss, r->lr, r->images_per_s};
        write_scalars(p, r->step, tags, values, 3);
    }
    char eta[32];
    const double left_s = p->time_limit_s > 0 && p->time_limit_s - r->elapsed_s < r->eta_s
                              ? p->time_limit_s - r->elapsed_s
                              : r->eta_s;
    format_duration(eta, sizeof eta, left_s > 0 ? left_s : 0);
    const char *unit;
    const double rate = shown_rate(p, r->images_per_s, &unit);
    if (p->tty) {
        if (r->elapsed_s - p->last_draw_s < 0.1 && r->step_in_epoch != r->steps_per_epoch)
            return;
        p->last_draw_s = r->elapsed_s;
        const int width = 24;
        int filled = (int)((double)width * r->step_in_epoch / r->steps_per_epoch);
        char bar[32];
        for (int i = 0; i < width; i++)
            bar[i] = i < filled ? '#' : '.';
        bar[width] = '\0';
        fprintf(stderr, "\r\033[Kepoch %d/%d [%s] %d/%d loss %.4f lr %.4g %.0f %s ETA %s",
                r->epoch + 1, p->epochs, bar, r->step_in_epoch, r->steps_per_epoch, r->loss, r->lr,
                rate, unit, eta);
        fflush(stderr);
    } else if (logged) {
        fprintf(stderr, "epoch %d/%d step %d/%d loss %.4f lr %.4g %.0f %s ETA %s\n", r->epoch + 1,
                p->epochs, r->step_in_epoch, r->steps_per_epoch, r->loss, r->lr, rate, unit, eta);
    }
}

void progress_on_epoch(void *ctx, const EpochReport *r)
{
    Progress *p = ctx;
    if (p->tty)
        fprintf(stderr, "\r\033[K");
    char took[32];
    format_duration(took, sizeof took, r->elapsed_s);
    fprintf(stderr, "epoch %d/%d%s: train loss %.4f", r->epoch, p->epochs,
            r->stopped ? " (stopped at the time limit)" : "", r->train_loss);
    if (r->valid && r->valid->per_token)
        fprintf(stderr, ", valid loss %.4f (%.3f bits/token), next-token accuracy %.2f%%",
                r->valid->loss, r->valid->loss / M_LN2, 100.0 * r->valid->top1);
    else if (r->valid)
        fprintf(stderr, ", valid loss %.4f, accuracy %.2f%%", r->valid->loss,
                100.0 * r->valid->top1);
    if (r->skipped)
        fprintf(stderr, ", skipped %d unreadable samples", r->skipped);
    if (r->valid && r->valid->skipped)
        fprintf(stderr, ", skipped %d unreadable validation samples", r->valid->skipped);
    const char *unit;
    const double rate = shown_rate(p, r->images_per_s, &unit);
    fprintf(stderr, ", %.0f %s, %s, saved %s\n", rate, unit, took, r->checkpoint);
    if (p->jsonl) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", "epoch");
        cJSON_AddNumberToObject(o, "step", (double)r->step);
        cJSON_AddNumberToObject(o, "epoch", r->epoch);
        cJSON_AddNumberToObject(o, "loss", r->train_loss);
        cJSON_AddNumberToObject(o, "skipped", r->skipped);
        cJSON_AddNumberToObject(o, "images_per_s", r->images_per_s);
        if (p->tokens_per_sample)
            cJSON_AddNumberToObject(o, "tokens_per_s", r->images_per_s * p->tokens_per_sample);
        cJSON_AddNumberToObject(o, "elapsed_s", r->elapsed_s);
        if (r->stopped)
            cJSON_AddBoolToObject(o, "time_limit", 1);
        if (r->valid) {
            cJSON_AddNumberToObject(o, "valid_loss", r->valid->loss);
            if (r->valid->per_token)
                cJSON_AddNumberToObject(o, "bits_per_token", r->valid->loss / M_LN2);
            cJSON_AddNumberToObject(o, "accuracy", r->valid->top1);
            cJSON_AddNumberToObject(o, "top5", r->valid->top5);
            cJSON_AddNumberToObject(o, "valid_skipped", r->valid->skipped);
        }
        write_json_line(p->jsonl, o);
    }
    if (r->valid) {
        const char *const tags[] = {"valid/loss", "valid/accuracy", "valid/top5"};
        const double values[] = {r->valid->loss, r->valid->top1, r->valid->top5};
        write_scalars(p, r->step, tags, values, 3);
    }
}
