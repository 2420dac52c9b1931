/* cdl doctor, cdl version (cdl --version): the build and the machine it runs on, as text or
 * JSON, with what is missing or mismatched. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "api/cdl.h"
#include "cli/cli.h"

static const OptSpec doctor_opts[] = {
    {"--json", 0, 0, "print one JSON object instead of text"},
    {"--help", 0, 0, "show this help"},
};
#define N_DOCTOR_OPTS (int)(sizeof doctor_opts / sizeof doctor_opts[0])

static const OptSpec version_opts[] = {
    {"--help", 0, 0, "show this help"},
};

/* "(name unset)" for an unset variable. */
static const char *shown(const char *v)
{
    return v[0] ? v : "unset";
}

/* CUDA's 1000 * major + 10 * minor as "13.0"; cuDNN's 10000 * major + 100 * minor + patch. */
static void cuda_version(char *out, size_t size, int v)
{
    snprintf(out, size, "%d.%d", v / 1000, v % 1000 / 10);
}
static void cudnn_version(char *out, size_t size, int v)
{
    snprintf(out, size, "%d.%d.%d", v / 10000, v % 10000 / 100, v % 100);
}

static void print_version(const cdl_build_info *b)
{
    printf("cdl %s GPU=%d MPI=%d SAN=%d DNNL=%d %s\n", b->version, b->gpu, b->mpi, b->san, b->dnnl,
           b->compiler);
}

static void print_text(const cdl_doctor_report *r)
{
    const cdl_build_info *b = &r->build;
    char v1[32], v2[32], v3[32], v4[32];
    printf("cdl:      %s\n", b->version);
    printf("build:    GPU=%d MPI=%d SAN=%d DNNL=%d, %s\n", b->gpu, b->mpi, b->san, b->dnnl,
           b->compiler);
    printf("flags:    %s\n", b->cflags);
    printf("BLAS:     OpenBLAS %s (%s build), core %s, %d threads\n",
           r->blas_library[0] ? r->blas_library : "(library path unknown)",
           r->blas_openmp ? "OpenMP" : "not the OpenMP", r->blas_core, r->blas_threads);
    printf("          config: %s\n", r->blas_config);
    printf("cores:    %d online, %d usable by this process\n", r->cores_online, r->cores_usable);
    printf(
        "threads:  cdl's commands use --threads, default %d (OMP_NUM_THREADS, else the cores free "
        "now); OpenMP's default %d\n",
        r->omp_procs, r->omp_max_threads);
    printf("OpenMP:   OMP_NUM_THREADS=%s OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s OMP_PROC_BIND=%s "
           "OMP_PLACES=%s\n",
           shown(r->omp_num_threads), shown(r->omp_wait_policy), shown(r->gomp_spincount),
           shown(r->omp_proc_bind), shown(r->omp_places));
    printf("oneDNN:   %s\n", r->dnnl);
    printf("GPU:      %s\n", r->gpu);
    if (b->gpu) {
        cuda_version(v1, sizeof v1, r->cuda_runtime);
        cuda_version(v2, sizeof v2, r->cuda_driver);
        cudnn_version(v3, sizeof v3, r->cudnn);
        cudnn_version(v4, sizeof v4, r->cudnn_built);
        printf("          CUDA runtime %s, driver %s, cuDNN %s (built with %s)\n", v1,
               r->cuda_driver ? v2 : "none", v3, v4);
        printf("          cuBLAS %s, NCCL %s\n", r->cublas, r->nccl);
        for (int i = 0; i < r->n_devices; i++)
            printf("          device %d: %s, compute %d.%d, %.1f GiB\n", i, r->devices[i].name,
                   r->devices[i].major, r->devices[i].minor, r->devices[i].memory_gib);
    }
    printf("MPI:      %s\n", r->mpi);
    if (!r->n_notes)
        printf("notes:    none (nothing missing or mismatched)\n");
    for (int i = 0; i < r->n_notes; i++)
        printf("note:     %s\n", r->notes[i]);
}

static void print_json(const cdl_doctor_report *r)
{
    const cdl_build_info *b = &r->build;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "version", b->version);
    cJSON *build = cJSON_AddObjectToObject(o, "build");
    cJSON_AddBoolToObject(build, "gpu", b->gpu);
    cJSON_AddBoolToObject(build, "mpi", b->mpi);
    cJSON_AddBoolToObject(build, "san", b->san);
    cJSON_AddBoolToObject(build, "dnnl", b->dnnl);
    cJSON_AddStringToObject(build, "compiler", b->compiler);
    cJSON_AddStringToObject(build, "cflags", b->cflags);
    cJSON *blas = cJSON_AddObjectToObject(o, "blas");
    cJSON_AddStringToObject(blas, "library", r->blas_library);
    cJSON_AddStringToObject(blas, "config", r->blas_config);
    cJSON_AddStringToObject(blas, "core", r->blas_core);
    cJSON_AddNumberToObject(blas, "threads", r->blas_threads);
    cJSON_AddBoolToObject(blas, "openmp", r->blas_openmp);
    cJSON *cores = cJSON_AddObjectToObject(o, "cores");
    cJSON_AddNumberToObject(cores, "online", r->cores_online);
    cJSON_AddNumberToObject(cores, "usable", r->cores_usable);
    cJSON *omp = cJSON_AddObjectToObject(o, "openmp");
    cJSON_AddNumberToObject(omp, "default_threads", r->omp_max_threads);
    cJSON_AddNumberToObject(omp, "cdl_threads", r->omp_procs);
    const struct {
        const char *name, *value;
    } env[] = {{"OMP_NUM_THREADS", r->omp_num_threads},
               {"OMP_WAIT_POLICY", r->omp_wait_policy},
               {"GOMP_SPINCOUNT", r->gomp_spincount},
               {"OMP_PROC_BIND", r->omp_proc_bind},
               {"OMP_PLACES", r->omp_places}};
    for (size_t i = 0; i < sizeof env / sizeof env[0]; i++) {
        if (env[i].value[0])
            cJSON_AddStringToObject(omp, env[i].name, env[i].value);
        else
            cJSON_AddNullToObject(omp, env[i].name);
    }
    cJSON_AddStringToObject(o, "onednn", r->dnnl);
    cJSON *gpu = cJSON_AddObjectToObject(o, "gpu");
    cJSON_AddStringToObject(gpu, "status", r->gpu);
    cJSON_AddNumberToObject(gpu, "cuda_runtime", r->cuda_runtime);
    cJSON_AddNumberToObject(gpu, "cuda_driver", r->cuda_driver);
    cJSON_AddNumberToObject(gpu, "cudnn", r->cudnn);
    cJSON_AddNumberToObject(gpu, "cudnn_built", r->cudnn_built);
    cJSON_AddStringToObject(gpu, "cublas", r->cublas);
    cJSON_AddStringToObject(gpu, "nccl", r->nccl);
    cJSON *devices = cJSON_AddArrayToObject(gpu, "devices");
    for (int i = 0; i < r->n_devices; i++) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "name", r->devices[i].name);
        char cc[16];
        snprintf(cc, sizeof cc, "%d.%d", r->devices[i].major, r->devices[i].minor);
        cJSON_AddStringToObject(d, "compute", cc);
        cJSON_AddNumberToObject(d, "memory_gib", r->devices[i].memory_gib);
        cJSON_AddItemToArray(devices, d);
    }
    cJSON_AddStringToObject(o, "mpi", r->mpi);
    cJSON *notes = cJSON_AddArrayToObject(o, "notes");
    for (int i = 0; i < r->n_notes; i++)
        cJSON_AddItemToArray(notes, cJSON_CreateString(r->notes[i]));
    char *text = cli_json_text(o);
    if (text)
        printf("%s\n", text);
    free(text);
    cJSON_Delete(o);
}

int cmd_doctor(int argc, char **argv)
{
    Args a;
    Error e = {0};
    if (args_parse(argc, argv, doctor_opts, N_DOCTOR_OPTS, &a, &e))
        return cli_fail(&e);
    if (args_get(&a, "--help")) {
        args_print_help("doctor", "[--json]",
                        "Report the build (version, options, compiler, flags) and the machine: "
                        "BLAS library, cores, threads, OpenMP settings, oneDNN, CUDA and its "
                        "devices, MPI; notes say what is missing or mismatched.",
                        doctor_opts, N_DOCTOR_OPTS);
        return 0;
    }
    if (a.n_positional) {
        fprintf(stderr, "cdl: doctor takes no arguments (got '%s')\n", a.positional[0]);
        return CDL_EUSAGE;
    }
    cdl_doctor_report *r = malloc(sizeof *r);
    if (!r) {
        fprintf(stderr, "cdl: out of memory\n");
        return CDL_ERUNTIME;
    }
    cdl_doctor(r);
    if (args_get(&a, "--json"))
        print_json(r);
    else
        print_text(r);
    free(r);
    return 0;
}

int cmd_version(int argc, char **argv)
{
    Args a;
    Error e = {0};
    if (args_parse(argc, argv, version_opts, 1, &a, &e))
        return cli_fail(&e);
    if (args_get(&a, "--help")) {
        args_print_help("version", "", "Print the version and build options on one line.",
                        version_opts, 1);
        return 0;
    }
    if (a.n_positional) {
        fprintf(stderr, "cdl: version takes no arguments (got '%s')\n", a.positional[0]);
        return CDL_EUSAGE;
    }
    cdl_build_info b;
    cdl_build(&b);
    print_version(&b);
    return 0;
}
