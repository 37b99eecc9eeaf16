/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: status_page_parse() on arbitrary bytes, as root's
 * broker reads another user's page; and the seqlock reader on a page whose
 * header is arbitrary bytes. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "status_page.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct status_counts c;

        if (size > STATUS_PAGE_TEXT_MAX)
                return 0;
        struct json_object *list = json_object_new_array();
        if (!list)
                return 0;
        int r = status_page_parse((const char *) data, size, 1000, 1u << 30, list, &c);
        if (r == 0) {
                /* What was accepted is well-formed: sessions of uid 1000,
                 * no more listed than counted unless it says truncated. */
                for (size_t i = 0; i < json_object_array_length(list); i++) {
                        struct json_object *o = json_object_array_get_idx(list, i), *v;
                        if (!json_object_object_get_ex(o, "uid", &v) || json_object_get_int64(v) != 1000)
                                abort();
                        if (!json_object_object_get_ex(o, "session", &v) ||
                            strlen(json_object_get_string(v)) != 32)
                                abort();
                }
                if (json_object_array_length(list) < c.sessions && !c.truncated)
                        abort();
        } else if (r != -EBADMSG || json_object_array_length(list) != 0) {
                abort();
        }
        json_object_put(list);

        /* The header (and text) as the writer left it. */
        static _Alignas(8) char page[STATUS_PAGE_SIZE];
        static char buf[STATUS_PAGE_TEXT_MAX];
        size_t len = 0;
        memset(page, 0, sizeof(struct status_page));
        memcpy(page, data, size < STATUS_PAGE_SIZE ? size : STATUS_PAGE_SIZE);
        r = status_page_snapshot((const struct status_page *) page, buf, sizeof buf, &len);
        if (r == 0 && len > STATUS_PAGE_TEXT_MAX)
                abort();
        return 0;
}
