/* The [net] keys that are not the net's own, checked when a net is built (core/net.h
 * net_read_foreign_keys): training's settings. */
#include "core/net.h"
#include "train/train_settings.h"

int net_read_foreign_keys(const Cfg *cfg, Error *e)
{
    TrainSettings t;
    return train_settings_read(cfg, &t, e);
}
