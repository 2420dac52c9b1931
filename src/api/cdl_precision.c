/* The public API's choice of numerics (cdl.h): fp32, or bf16 products with float32 sums. */
#include "cdl.h"

#include "cdl_model.h"

int cdl_precision_check(const char *name, char *err, size_t err_size)
{
    GemmPrecision p;
    Error e = {0};
    if (net_precision_from_name(name, &p))
        return error_set(&e, CDL_EUSAGE, "unknown precision '%s' (expected %s)", name,
                         net_precision_names()),
               api_report(&e, err, err_size);
    return CDL_OK;
}

int cdl_model_set_precision(cdl_model *model, const char *name, char *err, size_t err_size)
{
    GemmPrecision p;
    if (net_precision_from_name(name, &p))
        return cdl_precision_check(name, err, err_size);
    net_set_precision(&model->net, p);
    /* bf16 layers take their rounded operands' memory at resize */
    const int capacity = model->capacity;
    model->capacity = 0;
    Error e = {0};
    return api_model_reserve(model, capacity, &e) ? api_report(&e, err, err_size) : CDL_OK;
}
