/* The names of the backends (core/backend.h). */
#include "core/backend.h"

const char *backend_name(Backend b)
{
    return b == CDL_BACKEND_CPU ? "CPU" : "GPU";
}
