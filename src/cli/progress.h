/* Training output: a progress bar on a terminal, plain lines otherwise, and an optional JSON
 * Lines log; plugs into a training session's callbacks (cdl.h). */
#ifndef CDL_PROGRESS_H
#define CDL_PROGRESS_H

#include <stdio.h>

#include "api/cdl.h"

typedef struct Progress {
    int tty;     /* draw a bar (stderr is a terminal) */
    int epochs;  /* total, for display */
    FILE *jsonl; /* NULL: no log */
    /* The log's path, and the errno of its first write that failed (0: none): the log then
     * stops there (its last record may be cut), a warning says so, and the run exits 1. */
    const char *log_path;
    int log_errno;
    uint64_t log_failed_step;
    double last_draw_s;
    int tokens_per_sample; /* sequence nets: seq, and rates are shown in tokens/s; 0: images */
} Progress;

/* Bars are between PROGRESS_BAR_MIN and PROGRESS_BAR_MAX characters wide; where the minimum
 * does not fit, the line leaves out lr and the rate, then the bar too. */
enum { PROGRESS_LINE_MAX = 512, PROGRESS_BAR_MIN = 10, PROGRESS_BAR_MAX = 50 };

void progress_on_step(void *ctx, const cdl_step_report *r);
/* The width of the terminal on fd: TIOCGWINSZ, else $COLUMNS, else 80. */
int progress_width(int fd);
/* The bar line of step r for a terminal width columns wide, into out: at most width - 1
 * characters (all ASCII), so that it never wraps. Returns its length. */
int progress_format_bar(char *out, size_t size, int width, const Progress *p,
                        const cdl_step_report *r);
void progress_on_epoch(void *ctx, const cdl_epoch_report *r);
/* A session's note or warning (ctx: a Progress) as "cdl: LINE" on stderr, clearing the bar. */
void progress_on_message(void *ctx, const char *line);

#endif
