/* cdl graph: a model's layers as a Graphviz DOT graph (one node per layer with its index,
 * type, cfg settings and output shape; an edge from every input, dashed where it skips
 * ahead, as route and shortcut inputs do), rendered to PNG or SVG by Graphviz's `dot`. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/cdl.h"
#include "cli/cli.h"
#include "util/atomic_file.h"

static const OptSpec graph_opts[] = {
    {"-o", 1, 0,
     "output file: .png or .svg (rendered with Graphviz dot), else DOT text "
     "(default: DOT on stdout)"},
    {"--set", 1, 1, "override a cfg key: net.KEY=V or LAYER.KEY=V (repeatable)"},
    {"--help", 0, 0, "show this help"},
};
#define N_GRAPH_OPTS (int)(sizeof graph_opts / sizeof graph_opts[0])

/* Settings printed per line of a node label. */
#define SETTINGS_PER_LINE 3

static const struct {
    const char *type, *color;
} fill_colors[] = {
    {"convolutional", "#dbe8fb"}, {"connected", "#e6dcf5"}, {"maxpool", "#dff0dc"},
    {"avgpool", "#dff0dc"},       {"shortcut", "#fbe5cf"},  {"route", "#fbe5cf"},
    {"softmax", "#e8e8e8"},
};

static const char *fill_color(const char *type)
{
    for (size_t i = 0; i < sizeof fill_colors / sizeof fill_colors[0]; i++)
        if (!strcmp(type, fill_colors[i].type))
            return fill_colors[i].color;
    return "#ffffff";
}

/* s inside a DOT double-quoted string. */
static void put_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
}

/* "INDEX TYPE", the layer's cfg settings a few per line, and its output shape. */
static void put_label(FILE *f, const cdl_model *m, int i, const cdl_layer_info *l)
{
    fprintf(f, "%d %s", i, l->type);
    for (int k = 0; k < l->n_settings; k++) {
        const char *key, *value;
        cdl_model_layer_setting(m, i, k, &key, &value);
        fputs(k % SETTINGS_PER_LINE ? " " : "\\n", f);
        put_escaped(f, key);
        fputc('=', f);
        put_escaped(f, value);
    }
    fprintf(f, "\\n%dx%dx%d", l->c, l->h, l->w);
}

static void write_dot(FILE *f, const cdl_model *m, const char *path)
{
    cdl_model_summary sum;
    cdl_model_get_summary(m, &sum);
    fputs("digraph cdl {\n  graph [labelloc=t, fontname=\"Helvetica\", label=\"", f);
    put_escaped(f, path);
    fprintf(f, ": input %dx%dx%d (CxHxW)\"];\n", sum.c, sum.h, sum.w);
    fputs("  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n",
          f);
    for (int i = 0; i < sum.n_layers; i++) {
        cdl_layer_info l;
        cdl_model_layer_info(m, i, &l);
        fprintf(f, "  L%d [fillcolor=\"%s\", label=\"", i, fill_color(l.type));
        put_label(f, m, i, &l);
        fputs("\"];\n", f);
    }
    for (int i = 0; i < sum.n_layers; i++) {
        cdl_layer_info l;
        cdl_model_layer_info(m, i, &l);
        for (int k = 0; k < l.n_inputs; k++) {
            const int from = l.inputs[k];
            if (from < 0)
                continue; /* the net input, named in the graph's title */
            fprintf(f, "  L%d -> L%d%s;\n", from, i, from == i - 1 ? "" : " [style=dashed]");
        }
    }
    fputs("}\n", f);
}

/* The Graphviz format for out's extension ("png", "svg"), or NULL for DOT text. */
static const char *render_format(const char *out)
{
    const char *dot = strrchr(out, '.');
    if (dot && (!strcmp(dot, ".png") || !strcmp(dot, ".svg")))
        return dot + 1;
    return NULL;
}

/* The path of an executable `name` on $PATH, into found; 0 when there is none. */
static int find_program(const char *name, char *found, size_t size)
{
    const char *path = getenv("PATH");
    while (path && *path) {
        const char *end = strchr(path, ':');
        const int len = end ? (int)(end - path) : (int)strlen(path);
        snprintf(found, size, "%.*s/%s", len, len ? path : ".", name);
        if (access(found, X_OK) == 0)
            return 1;
        path = end ? end + 1 : NULL;
    }
    return 0;
}

static int write_dot_file(const cdl_model *m, const char *model, const char *out, Error *e)
{
    AtomicFile f;
    int st = atomic_file_open(&f, out, FILE_KIND_DOT, e);
    if (st)
        return st;
    write_dot(f.file, m, model);
    return atomic_file_commit(&f, e);
}

/* Runs `dot -TFORMAT -o image_tmp dot_path` and waits for it. */
static int run_dot(const char *program, const char *format, const char *dot_path,
                   const char *image_tmp, const char *out, Error *e)
{
    char flag[16];
    snprintf(flag, sizeof flag, "-T%s", format);
    char *const argv[] = {(char *)"dot",    flag, (char *)"-o", (char *)image_tmp,
                          (char *)dot_path, NULL};
    fflush(NULL);
    const pid_t pid = fork();
    if (pid < 0)
        return error_set(e, CDL_ERUNTIME, "%s: cannot start %s: %s", out, program, strerror(errno));
    if (pid == 0) {
        execv(program, argv);
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return error_set(e, CDL_ERUNTIME, "%s: waiting for %s: %s", out, program,
                             strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return error_set(e, CDL_ERUNTIME, "%s: %s -T%s failed (exit status %d)", out, program,
                         format, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return CDL_OK;
}

/* DOT into a temporary file, dot renders it into another, renamed over out when done. */
static int render(const cdl_model *m, const char *model, const char *out, const char *format,
                  Error *e)
{
    char program[PATH_MAX];
    if (!find_program("dot", program, sizeof program))
        return error_set(e, CDL_ERUNTIME,
                         "%s: rendering needs Graphviz's 'dot', which is not on PATH (install "
                         "graphviz, or write DOT text with -o FILE.dot)",
                         out);
    char dot_path[PATH_MAX], image_tmp[PATH_MAX];
    snprintf(dot_path, sizeof dot_path, "%s.tmp.%ld.dot", out, (long)getpid());
    snprintf(image_tmp, sizeof image_tmp, "%s.tmp.%ld", out, (long)getpid());
    int st = write_dot_file(m, model, dot_path, e);
    st = st ? st : run_dot(program, format, dot_path, image_tmp, out, e);
    if (!st && rename(image_tmp, out) != 0)
        st = error_set(e, CDL_ERUNTIME, "%s: cannot replace with %s: %s", out, image_tmp,
                       strerror(errno));
    unlink(dot_path);
    if (st)
        unlink(image_tmp);
    return st;
}

static int run_graph(const Args *a, Error *e)
{
    if (a->n_positional > 1)
        return error_set(e, CDL_EUSAGE, "graph takes one CFG or MODEL; see --help");
    const char *model = a->n_positional ? a->positional[0] : CDL_DEFAULT_MODEL;
    const char *out = args_get(a, "-o"), *format = out ? render_format(out) : NULL;
    const FileKind kind = !format                  ? FILE_KIND_DOT
                          : !strcmp(format, "png") ? FILE_KIND_PNG
                                                   : FILE_KIND_SVG;
    if (out && cli_check_output(a, out, kind, e))
        return e->code;
    cdl_model *m;
    int st = cli_open_model(a, model, 0, &m, e);
    if (st)
        return st;
    if (!out)
        write_dot(stdout, m, model);
    else if (format)
        st = render(m, model, out, format, e);
    else
        st = write_dot_file(m, model, out, e);
    cdl_model_free(m);
    return st;
}

int cmd_graph(int argc, char **argv)
{
    Args a;
    Error e = {0};
    if (args_parse(argc, argv, graph_opts, N_GRAPH_OPTS, &a, &e))
        return cli_fail(&e);
    if (args_get(&a, "--help")) {
        args_print_help(
            "graph", "[CFG|MODEL] [-o OUT]",
            "Draws the model's layers as a Graphviz graph: a node per layer (index, "
            "type, cfg settings, output shape) and an edge from each of its inputs, "
            "dashed where it skips ahead (route, shortcut). MODEL defaults to " CDL_DEFAULT_MODEL
            ".",
            graph_opts, N_GRAPH_OPTS);
        return 0;
    }
    return run_graph(&a, &e) ? cli_fail(&e) : 0;
}
