/* The [net] keys that are not the net's own, checked when a net is built (core/net.h
 * net_read_foreign_keys): training's settings, and the CPU backend's options, which a net on
 * another backend keeps for the CPU (a checkpoint of it runs there). */
#include "backend/cpu/cpu_options.h"
#include "core/net.h"
#include "train/train_settings.h"

int net_read_foreign_keys(Cfg *cfg, Error *e)
{
    TrainSettings t;
    CpuOptions o;
    int st = train_settings_read(cfg, &t, e);
    return st ? st : cpu_options_read(cfg, 0, &o, e);
}
