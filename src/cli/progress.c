/* Training progress output. */
#include "cli/progress.h"

#include <cjson/cJSON.h>
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
        cJSON_AddNumberToObject(o, "elapsed_s", r->elapsed_s);
        write_json_line(p->jsonl, o);
    }
    char eta[32];
    format_duration(eta, sizeof eta, r->eta_s);
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
        fprintf(stderr, "\r\033[Kepoch %d/%d [%s] %d/%d loss %.4f lr %.4g %.0f img/s ETA %s",
                r->epoch + 1, p->epochs, bar, r->step_in_epoch, r->steps_per_epoch, r->loss, r->lr,
                r->images_per_s, eta);
        fflush(stderr);
    } else if (logged) {
        fprintf(stderr, "epoch %d/%d step %d/%d loss %.4f lr %.4g %.0f img/s ETA %s\n",
                r->epoch + 1, p->epochs, r->step_in_epoch, r->steps_per_epoch, r->loss, r->lr,
                r->images_per_s, eta);
    }
}

void progress_on_epoch(void *ctx, const EpochReport *r)
{
    Progress *p = ctx;
    if (p->tty)
        fprintf(stderr, "\r\033[K");
    char took[32];
    format_duration(took, sizeof took, r->elapsed_s);
    fprintf(stderr, "epoch %d/%d: train loss %.4f", r->epoch, p->epochs, r->train_loss);
    if (r->valid)
        fprintf(stderr, ", valid loss %.4f, accuracy %.2f%%", r->valid->loss,
                100.0 * r->valid->top1);
    fprintf(stderr, ", %.0f img/s, %s, saved %s\n", r->images_per_s, took, r->checkpoint);
    if (p->jsonl) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", "epoch");
        cJSON_AddNumberToObject(o, "step", (double)r->step);
        cJSON_AddNumberToObject(o, "epoch", r->epoch);
        cJSON_AddNumberToObject(o, "loss", r->train_loss);
        cJSON_AddNumberToObject(o, "images_per_s", r->images_per_s);
        cJSON_AddNumberToObject(o, "elapsed_s", r->elapsed_s);
        if (r->valid) {
            cJSON_AddNumberToObject(o, "valid_loss", r->valid->loss);
            cJSON_AddNumberToObject(o, "accuracy", r->valid->top1);
            cJSON_AddNumberToObject(o, "top5", r->valid->top5);
        }
        write_json_line(p->jsonl, o);
    }
}
