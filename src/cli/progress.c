/* Training progress output. */
#include "cli/progress.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>

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

/* The rate to show for images_per_s and its unit: tokens/s for a sequence net. */
static double shown_rate(const Progress *p, double images_per_s, const char **unit)
{
    *unit = p->tokens_per_sample ? "tok/s" : "img/s";
    return images_per_s * (p->tokens_per_sample ? p->tokens_per_sample : 1);
}

void progress_on_step(void *ctx, const cdl_step_report *r)
{
    Progress *p = ctx;
    const int logged = r->logged;
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
    char eta[32];
    format_duration(eta, sizeof eta, r->eta_s > 0 ? r->eta_s : 0);
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

/* The epoch's summary line. */
static void print_epoch(const Progress *p, const cdl_epoch_report *r)
{
    char took[32];
    format_duration(took, sizeof took, r->elapsed_s);
    fprintf(stderr, "epoch %d/%d%s: train loss %.4f", r->epoch, p->epochs,
            r->stopped ? " (stopped at the time limit)" : "", r->train_loss);
    if (r->validated && r->per_token)
        fprintf(stderr, ", valid loss %.4f (%.3f bits/token), next-token accuracy %.2f%%",
                r->valid_loss, r->valid_loss / M_LN2, 100.0 * r->valid_top1);
    else if (r->validated)
        fprintf(stderr, ", valid loss %.4f, accuracy %.2f%%", r->valid_loss, 100.0 * r->valid_top1);
    if (r->skipped)
        fprintf(stderr, ", skipped %d unreadable samples", r->skipped);
    if (r->validated && r->valid_skipped)
        fprintf(stderr, ", skipped %d unreadable validation samples", r->valid_skipped);
    const char *unit;
    const double rate = shown_rate(p, r->images_per_s, &unit);
    fprintf(stderr, ", %.0f %s", rate, unit);
    if (r->ranks > 1)
        fprintf(stderr, " on %d ranks (allreduce: %.2f s waited, %.2f s hidden by backward)",
                r->ranks, r->allreduce_wait_s, r->allreduce_hidden_s);
    fprintf(stderr, ", %s, saved %s\n", took, r->checkpoint);
}

void progress_on_epoch(void *ctx, const cdl_epoch_report *r)
{
    Progress *p = ctx;
    if (p->tty)
        fprintf(stderr, "\r\033[K");
    /* Interrupted inside the epoch: the caller says so in one line of its own. */
    if (!(r->stopped && r->interrupted))
        print_epoch(p, r);
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
        if (r->ranks > 1) {
            cJSON_AddNumberToObject(o, "ranks", r->ranks);
            cJSON_AddNumberToObject(o, "allreduce_wait_s", r->allreduce_wait_s);
            cJSON_AddNumberToObject(o, "allreduce_hidden_s", r->allreduce_hidden_s);
        }
        if (r->interrupted)
            cJSON_AddBoolToObject(o, "interrupted", 1);
        else if (r->stopped)
            cJSON_AddBoolToObject(o, "time_limit", 1);
        if (r->validated) {
            cJSON_AddNumberToObject(o, "valid_loss", r->valid_loss);
            if (r->per_token)
                cJSON_AddNumberToObject(o, "bits_per_token", r->valid_loss / M_LN2);
            cJSON_AddNumberToObject(o, "accuracy", r->valid_top1);
            cJSON_AddNumberToObject(o, "top5", r->valid_top5);
            cJSON_AddNumberToObject(o, "valid_skipped", r->valid_skipped);
        }
        write_json_line(p->jsonl, o);
    }
}

void progress_on_message(void *ctx, const char *line)
{
    const Progress *p = ctx;
    fprintf(stderr, "%scdl: %s\n", p->tty ? "\r\033[K" : "", line);
}
