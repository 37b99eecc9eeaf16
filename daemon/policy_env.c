/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The environment filter: builds a command's environment from what toolsd
 * sets itself (base), the locale/terminal names, and the names the skill
 * passes through, taking values from the env map the client sent at
 * OpenSession. Nothing is inherited.
 *
 * The secret check is categorical: a secret-shaped name never passes, even
 * when the skill lists it (deny wins over skill). Skills are written by
 * people who copy each other's pass_env lists; the check exists so that an
 * OPENAI_API_KEY in the orchestrator's environment never reaches code the
 * model controls. It errs on the side of refusal: false positives on names
 * (MONKEY ends in KEY) are acceptable because every listed name that is
 * refused is reported back to the client in the dropped list.
 *
 * Runs in the broker, as the peer's uid, with no capabilities. Pure: no I/O,
 * no logging. Every input count is bounded by POLICY_ENV_ENTRIES_MAX and
 * lookups go through sorted indexes, so the work is O(n log n).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "macro.h"
#include "policy.h"

#define ENV_NAME_MAX 255

/* Suffixes: the usual spellings of keys and tokens ("KEY" alone, not only
 * "_KEY", so that APIKEY and SECRETKEY are caught), personal access tokens,
 * auth blobs, and connection strings that carry a password. */
static const char *const secret_suffixes[] = {
        "KEY", "TOKEN", "_PAT", "AUTH", "_PASS", "_PWD", "_DSN",
        "DATABASE_URL", "DATABASE_URI", "REDIS_URL", "MONGO_URL", "MONGO_URI",
        "MONGODB_URI", "MONGODB_URL", "AMQP_URL",
};

/* Anywhere in the name. SESSION is here on purpose: session ids and cookies
 * are bearer credentials, and the desktop ones (XDG_SESSION_*,
 * DBUS_SESSION_BUS_ADDRESS) point at host IPC a tool has no business with. */
static const char *const secret_infixes[] = {
        "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "PRIVATE",
        "COOKIE", "SESSION", "API_KEY", "APIKEY", "ACCESS_KEY", "_TOKEN_",
        "_AUTH_", "AUTHORIZATION", "CONNECTION_STRING",
};

/* Providers and tools whose variables are mostly credentials or point at
 * them; whole families are refused rather than guessing which member is
 * harmless. LD_* and GCONV_PATH are not secrets but loader variables: they
 * make every dynamically linked program load code named by the client. */
static const char *const secret_prefixes[] = {
        "SSH_", "GPG_", "GNUPG", "AWS_", "AZURE_", "GOOGLE_", "GCP_", "GCLOUD_",
        "CLOUDSDK_", "STRIPE_", "GITHUB_", "GH_", "GITLAB_", "GL_", "BITBUCKET_",
        "OPENAI_", "ANTHROPIC_", "CLAUDE_", "MISTRAL_", "COHERE_", "GROQ_",
        "DEEPSEEK_", "OPENROUTER_", "REPLICATE_", "TOGETHER_", "GEMINI_",
        "HF_", "HUGGING", "NPM_TOKEN", "NPM_CONFIG_", "PYPI", "TWINE_",
        "TWILIO_", "SLACK_", "DISCORD_", "TELEGRAM_", "SENDGRID_", "DOCKER_",
        "VAULT_", "KUBECONFIG", "NETRC", "LD_", "GCONV_PATH",
};

static bool has_prefix_ci(const char *s, size_t len, const char *prefix) {
        size_t n = strlen(prefix);
        return len >= n && strncasecmp(s, prefix, n) == 0;
}

static bool has_suffix_ci(const char *s, size_t len, const char *suffix) {
        size_t n = strlen(suffix);
        return len >= n && strncasecmp(s + len - n, suffix, n) == 0;
}

bool policy_env_name_is_secret(const char *name) {
        if (!name)
                return false;

        size_t len = strlen(name);

        for (size_t i = 0; i < ELEMENTSOF(secret_prefixes); i++)
                if (has_prefix_ci(name, len, secret_prefixes[i]))
                        return true;
        for (size_t i = 0; i < ELEMENTSOF(secret_suffixes); i++)
                if (has_suffix_ci(name, len, secret_suffixes[i]))
                        return true;
        for (size_t i = 0; i < ELEMENTSOF(secret_infixes); i++)
                if (strcasestr(name, secret_infixes[i]))
                        return true;
        return false;
}

bool policy_env_name_valid(const char *name) {
        if (!name)
                return false;
        if (!(name[0] == '_' || (name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z')))
                return false;

        size_t i;
        for (i = 1; i <= ENV_NAME_MAX && name[i]; i++) {
                char c = name[i];
                if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
                        return false;
        }
        return i <= ENV_NAME_MAX;
}

/* Names that pass from the client without being listed: what a program needs
 * to print in the user's language and draw on the user's terminal. */
static bool env_name_is_implicit(const char *name) {
        if (strcmp(name, "LANG") == 0 || strcmp(name, "LANGUAGE") == 0 ||
            strcmp(name, "TERM") == 0 || strcmp(name, "TZ") == 0)
                return true;
        return strncmp(name, "LC_", 3) == 0 && policy_env_name_valid(name) &&
                !policy_env_name_is_secret(name);
}

/* A name with its position, sorted by (name, position): the first entry of
 * a run of equal names is the one that counts. */
struct name_ref {
        const char *name;
        size_t idx;
};

static int name_ref_compare(const void *a, const void *b) {
        const struct name_ref *x = a, *y = b;
        int c = strcmp(x->name, y->name);
        if (c != 0)
                return c;
        return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Builds the index over n names taken every stride bytes from first. */
static struct name_ref *name_index_new(const void *first, size_t stride, size_t n) {
        struct name_ref *ix = calloc(n + 1, sizeof(struct name_ref));
        if (!ix)
                return NULL;
        for (size_t i = 0; i < n; i++)
                ix[i] = (struct name_ref) {
                        .name = *(const char *const *) ((const uint8_t *) first + i * stride),
                        .idx = i,
                };
        qsort(ix, n, sizeof(struct name_ref), name_ref_compare);
        return ix;
}

/* The first entry named name, or NULL. */
static const struct name_ref *name_index_find(const struct name_ref *ix, size_t n, const char *name) {
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (strcmp(ix[mid].name, name) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < n && strcmp(ix[lo].name, name) == 0 ? &ix[lo] : NULL;
}

static char *env_entry_new(const char *name, const char *value) {
        size_t a = strlen(name), b = strlen(value);
        char *e = malloc(a + 1 + b + 1);
        if (!e)
                return NULL;
        memcpy(e, name, a);
        e[a] = '=';
        memcpy(e + a + 1, value, b + 1);
        return e;
}

/* Everything the build needs, so that each step fits in a function. */
struct env_build {
        const struct env_pair *base, *client;
        const char *const *pass;
        size_t n_base, n_pass, n_client;
        struct name_ref *base_ix, *pass_ix, *client_ix;
        char **envp, **dropped;         /* preallocated, NULL-filled */
        size_t n_envp, n_dropped;
};

static void env_build_done(struct env_build *b) {
        free(b->base_ix);
        free(b->pass_ix);
        free(b->client_ix);
        strv_free(b->envp);
        strv_free(b->dropped);
}

static int env_build_add(struct env_build *b, const char *name, const char *value) {
        char *e = env_entry_new(name, value);
        if (!e)
                return -ENOMEM;
        b->envp[b->n_envp++] = e;
        return 0;
}

static int env_build_drop(struct env_build *b, const char *name) {
        char *d = strdup(name);
        if (!d)
                return -ENOMEM;
        b->dropped[b->n_dropped++] = d;
        return 0;
}

static bool env_value_too_long(const char *value) {
        return strnlen(value, (size_t) POLICY_COMMAND_MAX + 1) > POLICY_COMMAND_MAX;
}

static int env_build_base(struct env_build *b) {
        for (size_t i = 0; i < b->n_base; i++) {
                const struct name_ref *r = name_index_find(b->base_ix, b->n_base, b->base[i].name);
                if (r->idx != i)
                        continue;       /* a later duplicate */
                int k = env_build_add(b, b->base[i].name, b->base[i].value);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* One of the skill's names. Refusals that depend on the name alone (invalid,
 * secret-shaped, reserved by base) are reported whether or not the client
 * set the name: they are a fault of the skill, worth saying every time. */
static int env_build_pass_one(struct env_build *b, const char *name) {
        if (!policy_env_name_valid(name) || policy_env_name_is_secret(name) ||
            name_index_find(b->base_ix, b->n_base, name))
                return env_build_drop(b, name);

        const struct name_ref *c = name_index_find(b->client_ix, b->n_client, name);
        if (!c)
                return 0;
        const char *value = b->client[c->idx].value;
        if (env_value_too_long(value))
                return env_build_drop(b, name);
        return env_build_add(b, name, value);
}

static int env_build_pass(struct env_build *b) {
        for (size_t i = 0; i < b->n_pass; i++) {
                if (name_index_find(b->pass_ix, b->n_pass, b->pass[i])->idx != i)
                        continue;       /* listed twice */
                int r = env_build_pass_one(b, b->pass[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The implicit names the client set, in name order (the client index is
 * sorted), unless base or the skill already decided about them. */
static int env_build_implicit(struct env_build *b) {
        for (size_t k = 0; k < b->n_client; k++) {
                const char *name = b->client_ix[k].name;
                int r;

                if (k > 0 && strcmp(b->client_ix[k - 1].name, name) == 0)
                        continue;       /* set twice: the first counts */
                if (!env_name_is_implicit(name) ||
                    name_index_find(b->base_ix, b->n_base, name) ||
                    name_index_find(b->pass_ix, b->n_pass, name))
                        continue;

                const char *value = b->client[b->client_ix[k].idx].value;
                if (env_value_too_long(value))
                        r = env_build_drop(b, name);
                else
                        r = env_build_add(b, name, value);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* NULL anywhere, or a base name that is not a name, is the caller's bug. */
static bool env_build_args_ok(const struct env_build *b) {
        if ((b->n_base > 0 && !b->base) || (b->n_pass > 0 && !b->pass) ||
            (b->n_client > 0 && !b->client))
                return false;
        for (size_t i = 0; i < b->n_base; i++)
                if (!policy_env_name_valid(b->base[i].name) || !b->base[i].value)
                        return false;
        for (size_t i = 0; i < b->n_pass; i++)
                if (!b->pass[i])
                        return false;
        for (size_t i = 0; i < b->n_client; i++)
                if (!b->client[i].name || !b->client[i].value)
                        return false;
        return true;
}

static int env_build_run(struct env_build *b) {
        int r;

        b->base_ix = name_index_new(b->base, sizeof(struct env_pair), b->n_base);
        b->pass_ix = name_index_new(b->pass, sizeof(const char *), b->n_pass);
        b->client_ix = name_index_new(b->client, sizeof(struct env_pair), b->n_client);
        b->envp = calloc(b->n_base + b->n_pass + b->n_client + 1, sizeof(char *));
        b->dropped = calloc(b->n_pass + b->n_client + 1, sizeof(char *));
        if (!b->base_ix || !b->pass_ix || !b->client_ix || !b->envp || !b->dropped)
                return -ENOMEM;

        r = env_build_base(b);
        if (r < 0)
                return r;
        r = env_build_pass(b);
        if (r < 0)
                return r;
        return env_build_implicit(b);
}

/* The rules, in the order of the output:
 *  1. base, in its order; toolsd's own, always kept, never overridden (for a
 *     name given twice the first counts);
 *  2. the names in pass, in its order, that the client set;
 *  3. the implicit names (LANG, LANGUAGE, LC_*, TERM, TZ) that the client set
 *     and neither base nor pass mention, sorted by name.
 * A client name set twice counts at its first entry. ret_dropped lists plain
 * names, each once: every name in pass that is invalid, secret-shaped or a
 * base name ("reserved"), whether or not the client set it, and every name
 * of 2. or 3. whose value is longer than POLICY_COMMAND_MAX. A client name
 * neither listed nor implicit is absent without a word: the client sends its
 * whole environment and most of it is none of the command's business. */
int policy_env_build(const struct env_pair *base, size_t n_base,
                     const char *const *pass, size_t n_pass,
                     const struct env_pair *client, size_t n_client,
                     char ***ret_envp, char ***ret_dropped) {
        struct env_build b = {
                .base = base, .n_base = n_base,
                .pass = pass, .n_pass = n_pass,
                .client = client, .n_client = n_client,
        };
        int r;

        if (!ret_envp || !ret_dropped)
                return -EINVAL;
        if (n_base > POLICY_ENV_ENTRIES_MAX || n_pass > POLICY_ENV_ENTRIES_MAX ||
            n_client > POLICY_ENV_ENTRIES_MAX)
                return -E2BIG;
        if (!env_build_args_ok(&b))
                return -EINVAL;

        r = env_build_run(&b);
        if (r < 0) {
                env_build_done(&b);
                return r;
        }

        *ret_envp = TAKE_PTR(b.envp);
        *ret_dropped = TAKE_PTR(b.dropped);
        env_build_done(&b);
        return 0;
}
