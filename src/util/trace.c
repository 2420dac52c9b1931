/* Chrome trace-event JSON writer. Written with fprintf rather than a cJSON tree: a trace
 * of many steps holds tens of thousands of events, and streaming them needs no memory. */
#include "util/trace.h"

#include <stdio.h>

#include "util/atomic_file.h"

/* Every process in the file is this one; Perfetto needs some pid to group the lanes. */
#define TRACE_PID 1

/* s as the body of a JSON string (quotes, backslashes and control characters escaped). */
static void put_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void put_event(FILE *f, const TraceEvent *ev)
{
    fputs("{\"name\":", f);
    put_json_string(f, ev->name);
    fputs(",\"cat\":", f);
    put_json_string(f, ev->cat);
    fprintf(f,
            ",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d,\"args\":{\"step\":%llu",
            ev->start_us, ev->dur_us, TRACE_PID, ev->tid, (unsigned long long)ev->step);
    if (ev->layer >= 0)
        fprintf(f, ",\"layer\":%d", ev->layer);
    fputs("}}", f);
}

int trace_write(const char *path, const TraceEvent *events, size_t n, Error *e)
{
    AtomicFile out;
    int st = atomic_file_open(&out, path, FILE_KIND_JSON, e);
    if (st)
        return st;
    fputs("{\"traceEvents\":[", out.file);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ",\n" : "\n", out.file);
        put_event(out.file, &events[i]);
    }
    fputs("\n],\"displayTimeUnit\":\"ms\"}\n", out.file);
    return atomic_file_commit(&out, e);
}
