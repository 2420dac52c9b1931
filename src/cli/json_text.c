/* The subcommands' JSON output: every string of the tree (values and keys, names read from
 * files among them) made valid UTF-8 before printing, so that --json stays JSON whatever bytes a
 * file or class name holds. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/utf8.h"

/* *s = a valid UTF-8 copy of itself when it is not (allocated as cJSON allocates; the old one
 * freed when owned): 1 when replaced, 0 when valid, -1 when out of memory. */
static int repair(char **s, int owned)
{
    char *copy;
    const int st = utf8_valid_copy(*s, &copy);
    if (st <= 0)
        return st;
    char *kept = cJSON_malloc(strlen(copy) + 1);
    if (kept)
        strcpy(kept, copy);
    free(copy);
    if (!kept)
        return -1;
    if (owned)
        cJSON_free(*s);
    *s = kept;
    return 1;
}

static int repair_tree(cJSON *o)
{
    for (cJSON *c = o; c; c = c->next) {
        const int key = c->string ? repair(&c->string, !(c->type & cJSON_StringIsConst)) : 0;
        if (key > 0)
            c->type &= ~cJSON_StringIsConst; /* the repaired key is cJSON's to free */
        if (key < 0 || (cJSON_IsString(c) && c->valuestring && repair(&c->valuestring, 1) < 0))
            return -1;
        if (c->child && repair_tree(c->child))
            return -1;
    }
    return 0;
}

char *cli_json_text(cJSON *o)
{
    return repair_tree(o) ? NULL : cJSON_PrintUnformatted(o);
}
