/* A program that uses libcdl.a through cdl.h alone, linked with cdl.pc's flags by
 * tests/check_public_lib.sh: it defines names that cdl uses internally (gemm, error_set), which
 * must not collide, opens the cfg given and prints "CxHxW CLASSES PARAMS". */
#include <stdio.h>

#include "cdl.h"

/* Same names as cdl's internal ones, defined differently. */
int gemm(int x)
{
    return x + 1;
}

int error_set(void)
{
    return 0;
}

int main(int argc, char **argv)
{
    char err[1024];
    cdl_model *m;
    if (argc != 2 || cdl_model_open(argv[1], NULL, &m, err, sizeof err)) {
        fprintf(stderr, "link_check: %s\n", argc == 2 ? err : "usage: link_check CFG");
        return 1;
    }
    cdl_model_summary s;
    cdl_model_get_summary(m, &s);
    printf("%dx%dx%d %d %zu\n", s.c, s.h, s.w, cdl_model_classes(m), s.params);
    cdl_model_free(m);
    return gemm(error_set()) == 1 ? 0 : 1;
}
