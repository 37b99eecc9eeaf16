/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target of proto/idl.c: parses the input as an interface
 * description and, when it parses, validates a few fixed JSON values against
 * every method's input and output and every error. Unprivileged.
 */

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "idl.h"
#include "macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const values[] = {
        "{}",
        "{\"a\": 1, \"b\": \"x\", \"c\": [1, 2.5, null], \"d\": {\"e\": {}}}",
        "{\"a\": null, \"x\": true, \"y\": [[[]]], \"z\": {\"k\": [\"red\", \"v1\"]}}",
        ("{\"skill\": {\"name\": \"s\", \"tools\": [\"a\"], \"limits\": {\"timeout_ms\": 1}},"
         " \"artifacts_root\": \"/a\", \"env\": {\"A\": \"1\"}}"),
        "{\"a\": {\"a\": {\"a\": {\"a\": {\"a\": {\"a\": {}}}}}}}",
        "[1]",
};

static void try_name(const struct idl_interface *iface, const char *name, struct json_object *v) {
        _cleanup_free_ char *f1 = NULL, *f2 = NULL, *f3 = NULL;

        (void) idl_has_method(iface, name);
        (void) idl_has_error(iface, name);
        (void) idl_validate_method(iface, name, true, v, &f1);
        (void) idl_validate_method(iface, name, false, v, &f2);
        (void) idl_validate_error(iface, name, v, &f3);
}

/* The header lists no members, so every capitalised word of the text is
 * tried as one: that covers each method, error and type the text declares. */
static void try_all(const struct idl_interface *iface, const char *text, struct json_object *v) {
        char name[64];
        unsigned tried = 0;

        for (const char *p = text; *p && tried < 128; p++) {
                size_t n = 0;
                if (!(*p >= 'A' && *p <= 'Z') || (p > text && isalnum((unsigned char) p[-1])))
                        continue;
                while (isalnum((unsigned char) p[n]) && n < sizeof(name) - 1)
                        n++;
                memcpy(name, p, n);
                name[n] = '\0';
                try_name(iface, name, v);
                tried++;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = NULL, *error = NULL;
        struct idl_interface *iface = NULL;

        if (size > 64 * 1024)
                return 0;
        text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = '\0';

        if (idl_parse(text, &iface, &error) < 0)
                return 0;
        (void) idl_name(iface);
        for (size_t i = 0; i < ELEMENTSOF(values); i++) {
                _cleanup_json_ struct json_object *v = json_tokener_parse(values[i]);
                try_all(iface, text, v);
        }
        try_all(iface, text, NULL);
        idl_free(iface);
        return 0;
}
