/* darknet cfg compatibility: the darknet sections cdl refuses (with what they are), and the
 * darknet keys no cdl layer reads that are accepted anyway: ignored with a warning, or
 * accepted only at the value that makes them a no-op. */
#ifndef CDL_DARKNET_COMPAT_H
#define CDL_DARKNET_COMPAT_H

#include "io/cfg.h"

/* CDL_EUSAGE "FILE:LINE: unsupported section [NAME]: ..." when s names a darknet layer that
 * cdl does not implement (detection, recurrent, locally connected, ...); CDL_OK for any other
 * name, known or not. */
int darknet_check_section(const Cfg *cfg, const CfgSection *s, Error *e);

/* For every entry of s that no getter has read and that darknet_compat.c lists for s's section:
 * marks it used, then refuses it (CDL_EUSAGE "FILE:LINE: unsupported value ... for key ...")
 * when it must keep its no-op value and does not, or else adds a cfg warning naming FILE:LINE,
 * once per section name and key. Call after the section's parser, before cfg_check_unused. */
int darknet_check_keys(Cfg *cfg, CfgSection *s, Error *e);

#endif
