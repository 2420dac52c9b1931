/* Option parsing and small helpers shared by the subcommands. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/utf8.h"

static int find_spec(const Args *a, const char *name, size_t len)
{
    for (int i = 0; i < a->n_specs; i++)
        if (strlen(a->specs[i].name) == len && !strncmp(a->specs[i].name, name, len))
            return i;
    return -1;
}

int args_parse(int argc, char **argv, const OptSpec *specs, int n_specs, Args *a, Error *e)
{
    memset(a, 0, sizeof *a);
    a->specs = specs;
    a->n_specs = n_specs;
    int options_done = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (options_done || arg[0] != '-' || !strcmp(arg, "-")) {
            if (a->n_positional == ARGS_MAX)
                return error_set(e, CDL_EUSAGE, "too many arguments");
            a->positional[a->n_positional++] = arg;
            continue;
        }
        if (!strcmp(arg, "--")) {
            options_done = 1;
            continue;
        }
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        int k = find_spec(a, arg, len);
        if (k < 0)
            return error_set(e, CDL_EUSAGE, "unknown option '%.*s' (see --help)", (int)len, arg);
        const char *value = "1";
        if (specs[k].takes_value) {
            if (eq)
                value = eq + 1;
            else if (i + 1 < argc)
                value = argv[++i];
            else
                return error_set(e, CDL_EUSAGE, "option %s needs a value", specs[k].name);
        } else if (eq) {
            return error_set(e, CDL_EUSAGE, "option %s takes no value", specs[k].name);
        }
        if (specs[k].repeat) {
            if (a->n_repeats == ARGS_MAX)
                return error_set(e, CDL_EUSAGE, "too many %s options", specs[k].name);
            a->repeats[a->n_repeats++] = value;
        }
        a->values[k] = value;
    }
    return CDL_OK;
}

const char *args_get(const Args *a, const char *name)
{
    int k = find_spec(a, name, strlen(name));
    return k < 0 ? NULL : a->values[k];
}

int args_get_int(const Args *a, const char *name, long def, long min, long max, long *out, Error *e)
{
    const char *v = args_get(a, name);
    *out = def;
    if (!v)
        return CDL_OK;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (end == v || *end || errno || n < min || n > max)
        return error_set(e, CDL_EUSAGE, "bad value '%s' for %s: expected an integer in %ld..%ld", v,
                         name, min, max);
    *out = n;
    return CDL_OK;
}

int args_get_float(const Args *a, const char *name, double def, double min, double max, double *out,
                   Error *e)
{
    const char *v = args_get(a, name);
    *out = def;
    if (!v)
        return CDL_OK;
    char *end;
    const double x = strtod(v, &end);
    if (end == v || *end || !(x >= min && x <= max))
        return error_set(e, CDL_EUSAGE, "bad value '%s' for %s: expected a number in [%g, %g]", v,
                         name, min, max);
    *out = x;
    return CDL_OK;
}

void args_print_help(const char *cmd, const char *synopsis, const char *about, const OptSpec *specs,
                     int n_specs)
{
    printf("usage: cdl %s %s\n\n%s\n\noptions:\n", cmd, synopsis, about);
    for (int i = 0; i < n_specs; i++) {
        char left[64];
        snprintf(left, sizeof left, "%s%s", specs[i].name, specs[i].takes_value ? " VALUE" : "");
        printf("  %-22s %s\n", left, specs[i].help);
    }
}

int cli_check_output(const Args *a, const char *path, FileKind kind, Error *e)
{
    static const char *const outputs[] = {"-o", "--out", "--log", "--trace", "--tensorboard"};
    const char *inputs[ARGS_MAX + sizeof a->values / sizeof a->values[0]];
    int n = 0;
    for (int i = 0; i < a->n_positional; i++)
        inputs[n++] = a->positional[i];
    for (int i = 0; i < a->n_specs; i++) {
        int output = 0;
        for (size_t k = 0; k < sizeof outputs / sizeof outputs[0]; k++)
            output |= !strcmp(a->specs[i].name, outputs[k]);
        if (a->specs[i].takes_value && !a->specs[i].repeat && a->values[i] && !output)
            inputs[n++] = a->values[i];
    }
    return file_check_output(path, kind, inputs, n, e);
}

void cli_print_message(const char *msg)
{
    char line[4 * sizeof(Error){0}.msg];
    fprintf(stderr, "cdl: %s\n", utf8_escape_line(msg, line, sizeof line));
}

int cli_fail(const Error *e)
{
    cli_print_message(e->msg);
    return e->code ? e->code : CDL_ERUNTIME;
}

void cli_print_warnings(const char *warnings)
{
    for (const char *at = warnings; at && *at;) {
        const char *end = strchr(at, '\n');
        const int len = end ? (int)(end - at) : (int)strlen(at);
        char raw[sizeof(Error){0}.msg];
        snprintf(raw, sizeof raw, "%.*s", len, at);
        cli_print_message(raw);
        at += len + (end != NULL);
    }
}
