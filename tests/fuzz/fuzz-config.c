/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the toolsd.conf parser (daemon/config.c): any text
 * over the defaults, then the cross-field checks. Must never crash, leak or
 * read past the text; on failure an error message must be set.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct toolsd_config c;
        char *text, *error = NULL;
        int r;

        if (size > 64 * 1024)
                return 0;
        text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';

        if (config_init_defaults(&c) < 0) {
                free(text);
                return 0;
        }
        r = config_load_string(&c, text, "fuzz.conf", &error);
        if (r == -EINVAL && !error)
                abort();
        free(error);
        error = NULL;
        r = config_validate(&c, &error);
        if (r < 0 && !error)
                abort();
        if (c.n_ro_paths > TOOLSD_CONFIG_RO_PATHS_MAX || c.ro_paths[c.n_ro_paths])
                abort();
        free(error);
        config_done(&c);
        free(text);
        return 0;
}
