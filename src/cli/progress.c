/* Training progress output. */
#include "cli/progress.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "cli/cli.h"

/* s as M:SS or H:MM:SS (0:00 when not positive). */
static void format_duration(char *out, size_t size, double s)
{
    long t = s > 0 ? (long)(s + 0.5) : 0;
    if (t >= 3600)
        snprintf(out, size, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(out, size, "%ld:%02ld", t / 60, t % 60);
}

/* Appends o as one line to the log, flushed; the first failure (a full disk) stops the log and
 * is recorded for the end of the run. */
static void write_json_line(Progress *p, cJSON *o, uint64_t step)
{
    char *text = cli_json_text(o);
    cJSON_Delete(o);
    if (!text)
        return;
    errno = 0;
    const int failed = fprintf(p->jsonl, "%s\n", text) < 0 || fflush(p->jsonl) != 0;
    free(text);
    if (!failed)
        return;
    p->log_errno = errno ? errno : EIO;
    p->log_failed_step = step;
    fclose(p->jsonl);
    p->jsonl = NULL;
    fprintf(stderr,
            "%scdl: %s: cannot write the log at step %llu: %s; it stops there (the run "
            "goes on, and exits 1)\n",
            p->tty ? "\r\033[K" : "", p->log_path, (unsigned long long)step,
            strerror(p->log_errno));
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
    if (r->resized) { /* as darknet's "Resizing" */
        char line[96];
        snprintf(line, sizeof line, "step %llu: resizing the input to %dx%d",
                 (unsigned long long)r->step, r->width, r->height);
        progress_on_message(p, line);
    }
    if (p->jsonl && logged) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "type", "step");
        cJSON_AddNumberToObject(o, "step", (double)r->step);
        cJSON_AddNumberToObject(o, "epoch", r->epoch + 1);
        cJSON_AddNumberToObject(o, "loss", r->loss);
        cJSON_AddNumberToObject(o, "avg_loss", r->avg_loss);
        cJSON_AddNumberToObject(o, "lr", r->lr);
        cJSON_AddNumberToObject(o, "images", (double)r->images);
        cJSON_AddNumberToObject(o, "images_per_s", r->images_per_s);
        if (p->tokens_per_sample)
            cJSON_AddNumberToObject(o, "tokens_per_s", r->images_per_s * p->tokens_per_sample);
        cJSON_AddNumberToObject(o, "elapsed_s", r->elapsed_s);
        if (r->width > 0) {
            cJSON_AddNumberToObject(o, "width", r->width);
            cJSON_AddNumberToObject(o, "height", r->height);
        }
        if (r->loss_scale > 0) {
            cJSON_AddNumberToObject(o, "loss_scale", r->loss_scale);
            cJSON_AddNumberToObject(o, "skipped_steps", (double)r->skipped_steps);
        }
        write_json_line(p, o, r->step);
    }
    if (p->tty) {
        if (r->elapsed_s - p->last_draw_s < 0.1 && r->step_in_epoch != r->steps_per_epoch)
            return;
        p->last_draw_s = r->elapsed_s;
        char line[PROGRESS_LINE_MAX];
        progress_format_bar(line, sizeof line, progress_width(fileno(stderr)), p, r);
        fprintf(stderr, "\r\033[K%s", line);
        fflush(stderr);
    } else if (logged) {
        char eta[32];
        format_duration(eta, sizeof eta, r->eta_s);
        const char *unit;
        const double rate = shown_rate(p, r->images_per_s, &unit);
        char scale[64] = "";
        if (r->loss_scale > 0)
            snprintf(scale, sizeof scale, " loss scale %g (%llu skipped)", r->loss_scale,
                     (unsigned long long)r->skipped_steps);
        fprintf(stderr,
                "epoch %d/%d step %d/%d loss %.4f avg %.4f lr %.4g images %llu %.0f %s ETA %s%s\n",
                r->epoch + 1, p->epochs, r->step_in_epoch, r->steps_per_epoch, r->loss, r->avg_loss,
                r->lr, (unsigned long long)r->images, rate, unit, eta, scale);
    }
}

int progress_width(int fd)
{
    struct winsize ws;
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *columns = getenv("COLUMNS");
    char *end;
    const long c = columns ? strtol(columns, &end, 10) : 0;
    return columns && *columns && !*end && c > 0 && c < PROGRESS_LINE_MAX ? (int)c : 80;
}

int progress_format_bar(char *out, size_t size, int width, const Progress *p,
                        const cdl_step_report *r)
{
    char eta[32], head[64], tails[2][160], bar[PROGRESS_BAR_MAX + 1];
    format_duration(eta, sizeof eta, r->eta_s);
    const char *unit;
    const double rate = shown_rate(p, r->images_per_s, &unit);
    snprintf(head, sizeof head, "epoch %d/%d ", r->epoch + 1, p->epochs);
    snprintf(tails[0], sizeof tails[0], " %d/%d loss %.4f avg %.4f lr %.4g %.0f %s ETA %s",
             r->step_in_epoch, r->steps_per_epoch, r->loss, r->avg_loss, r->lr, rate, unit, eta);
    snprintf(tails[1], sizeof tails[1], " %d/%d loss %.4f ETA %s", r->step_in_epoch,
             r->steps_per_epoch, r->loss, eta);
    const int room = width - 1; /* the last column stays empty: a full line wraps on some terms */
    /* The whole line; narrower, without lr and rate; narrower still, without the bar too. */
    int n = -1;
    for (int k = 0; k < 2 && n < 0; k++) {
        int bar_w = room - (int)(strlen(head) + strlen(tails[k])) - 2;
        if (bar_w > PROGRESS_BAR_MAX)
            bar_w = PROGRESS_BAR_MAX;
        if (bar_w < PROGRESS_BAR_MIN)
            continue;
        const int filled = (int)((double)bar_w * r->step_in_epoch / r->steps_per_epoch);
        for (int i = 0; i < bar_w; i++)
            bar[i] = i < filled ? '#' : '.';
        bar[bar_w] = '\0';
        n = snprintf(out, size, "%s[%s]%s", head, bar, tails[k]);
    }
    if (n < 0)
        n = snprintf(out, size, "%s%s", head, tails[1] + 1);
    /* Every character is ASCII: one byte is one column. */
    if (n > room)
        n = room > 0 ? room : 0;
    if ((size_t)n >= size)
        n = (int)size - 1;
    out[n] = '\0';
    return n;
}

/* The epoch's summary line. */
static void print_epoch(const Progress *p, const cdl_epoch_report *r)
{
    char took[32];
    format_duration(took, sizeof took, r->elapsed_s);
    fprintf(stderr, "epoch %d/%d%s: train loss %.4f", r->epoch, p->epochs,
            r->stopped ? " (stopped at the time limit)" : "", r->train_loss);
    if (r->validated && r->per_token && r->valid_bits_per_byte > 0)
        fprintf(stderr,
                ", valid loss %.4f (%.3f bits/token, %.4f bits/byte), next-token accuracy %.2f%%",
                r->valid_loss, r->valid_loss / M_LN2, r->valid_bits_per_byte,
                100.0 * r->valid_top1);
    else if (r->validated && r->per_token) /* paired text: no bytes per prediction */
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
            if (r->per_token) {
                cJSON_AddNumberToObject(o, "bits_per_token", r->valid_loss / M_LN2);
                cJSON_AddNumberToObject(o, "bits_per_byte", r->valid_bits_per_byte);
            }
            cJSON_AddNumberToObject(o, "accuracy", r->valid_top1);
            cJSON_AddNumberToObject(o, "top5", r->valid_top5);
            cJSON_AddNumberToObject(o, "valid_skipped", r->valid_skipped);
        }
        write_json_line(p, o, r->step);
    }
}

void progress_on_message(void *ctx, const char *line)
{
    const Progress *p = ctx;
    if (p->tty)
        fputs("\r\033[K", stderr); /* the progress bar's line */
    cli_print_message(line);
}
