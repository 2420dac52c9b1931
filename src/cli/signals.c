/* Signals of the command line. A run being trained is asked to stop by the first SIGINT,
 * SIGTERM or SIGHUP (Ctrl-C, a scheduler, a closed terminal): the handler only records the
 * signal, and the trainer, which polls cli_stop_requested through cdl_run_options after every
 * step, finishes the step and saves a checkpoint. A second signal ends the process at once. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

/* The signal that asked to stop (0: none); the one global the handler touches. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
    if (stop_signal) {
        static const char msg[] = "\ncdl: second signal: exiting without saving\n";
        (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
        _exit(128 + sig);
    }
    stop_signal = sig;
}

void cli_signals_init(void)
{
    /* A write past `ulimit -f` then fails with EFBIG, reported with the file's name, instead of
     * killing the process without a word. */
    signal(SIGXFSZ, SIG_IGN);
}

void cli_catch_stop_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESTART; /* the step goes on: reads and waits are resumed, not failed */
    sigemptyset(&sa.sa_mask);
    const int signals[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        sigaction(signals[i], &sa, NULL);
}

int cli_stop_signal(void)
{
    return stop_signal;
}

int cli_stop_requested(void *ctx)
{
    (void)ctx;
    return stop_signal != 0;
}
