/* Data-parallel runs in the public API (cdl.h): the ranks of train/dist.h. */
#include "cdl.h"
#include "train/dist.h"

int cdl_dist_init(int *argc, char ***argv)
{
    return dist_init(argc, argv);
}

int cdl_dist_rank(void)
{
    return dist_rank();
}

int cdl_dist_size(void)
{
    return dist_size();
}

int cdl_dist_local_rank(int *local_size)
{
    return dist_local_rank(local_size);
}

int cdl_dist_agree(int status, int *report)
{
    return dist_agree(status, report);
}

void cdl_dist_finalize(int status)
{
    dist_finalize(status);
}
