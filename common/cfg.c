/* SPDX-License-Identifier: Apache-2.0 */
#include "common/cfg.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/mem.h"

static const struct cfg_option *
cfg_find(const struct cfg_option *opts, size_t n, const char *name)
{
    char norm[128];
    size_t i;

    if (strlen(name) >= sizeof(norm)) {
        return NULL;
    }
    for (i = 0; name[i] != '\0'; i++) {
        norm[i] = name[i] == '_' ? '-' : (char)tolower((unsigned char)name[i]);
    }
    norm[i] = '\0';
    for (i = 0; i < n; i++) {
        if (strcmp(opts[i].name, norm) == 0) {
            return &opts[i];
        }
    }
    return NULL;
}

int cfg_parse_int(const char *s, int64_t *out)
{
    char *end;
    long long v;
    int64_t mul = 1;

    errno = 0;
    v = strtoll(s, &end, 10);
    if (end == s || errno != 0) {
        return WEIR_ECONFIG;
    }
    if (*end != '\0') {
        switch (tolower((unsigned char)*end)) {
        case 'k':
            mul = 1024;
            break;
        case 'm':
            mul = 1024 * 1024;
            break;
        case 'g':
            mul = 1024 * 1024 * 1024;
            break;
        default:
            return WEIR_ECONFIG;
        }
        end++;
        if (*end == 'i' || *end == 'I') {
            end++;
        }
        if (*end == 'b' || *end == 'B') {
            end++;
        }
        if (*end != '\0') {
            return WEIR_ECONFIG;
        }
    }
    if ((v > 0 && v > INT64_MAX / mul) || (v < 0 && v < INT64_MIN / mul)) {
        return WEIR_ECONFIG;
    }
    *out = (int64_t)v * mul;
    return 0;
}

int cfg_parse_bool(const char *s, bool *out)
{
    if (strcasecmp(s, "true") == 0 || strcmp(s, "1") == 0 ||
        strcasecmp(s, "yes") == 0 || strcasecmp(s, "on") == 0) {
        *out = true;
        return 0;
    }
    if (strcasecmp(s, "false") == 0 || strcmp(s, "0") == 0 ||
        strcasecmp(s, "no") == 0 || strcasecmp(s, "off") == 0) {
        *out = false;
        return 0;
    }
    return WEIR_ECONFIG;
}

static int cfg_assign(const struct cfg_option *o,
                      void *target,
                      const char *value,
                      const char *source,
                      struct err_detail *ed)
{
    char *field = (char *)target + o->offset;
    int64_t iv;
    bool bv;
    char *sv;

    switch (o->type) {
    case CFG_STR:
        sv = value != NULL ? mem_strdup(value) : NULL;
        if (value != NULL && sv == NULL) {
            return err_set(ed, WEIR_ENOMEM, "out of memory");
        }
        mem_free(*(char **)(void *)field);
        *(char **)(void *)field = sv;
        return 0;
    case CFG_INT:
        if (value == NULL || cfg_parse_int(value, &iv) != 0) {
            return err_set(ed, WEIR_ECONFIG,
                           "%s: '%s' is not an integer for %s", source,
                           value != NULL ? value : "", o->name);
        }
        if (iv < o->min || iv > o->max) {
            return err_set(ed, WEIR_ECONFIG,
                           "%s: %s = %lld is outside [%lld, %lld]", source,
                           o->name, (long long)iv, (long long)o->min,
                           (long long)o->max);
        }
        *(int64_t *)(void *)field = iv;
        return 0;
    case CFG_BOOL:
        if (value == NULL || cfg_parse_bool(value, &bv) != 0) {
            return err_set(ed, WEIR_ECONFIG, "%s: '%s' is not a boolean for %s",
                           source, value != NULL ? value : "", o->name);
        }
        *(bool *)(void *)field = bv;
        return 0;
    }
    return err_set(ed, WEIR_ECONFIG, "%s: bad option type", source);
}

int cfg_defaults(const struct cfg_option *opts,
                 size_t n,
                 void *target,
                 struct err_detail *ed)
{
    size_t i;
    int rv;

    for (i = 0; i < n; i++) {
        if (opts[i].type == CFG_STR) {
            *(char **)(void *)((char *)target + opts[i].offset) = NULL;
        }
    }
    for (i = 0; i < n; i++) {
        if (opts[i].def == NULL) {
            continue;
        }
        rv = cfg_assign(&opts[i], target, opts[i].def, "default", ed);
        if (rv != 0) {
            return rv;
        }
    }
    return 0;
}

int cfg_set(const struct cfg_option *opts,
            size_t n,
            void *target,
            const char *name,
            const char *value,
            const char *source,
            struct err_detail *ed)
{
    const struct cfg_option *o = cfg_find(opts, n, name);

    if (o == NULL) {
        return err_set(ed, WEIR_ECONFIG, "%s: unknown option '%s'", source,
                       name);
    }
    return cfg_assign(o, target, value, source, ed);
}

struct cfg_ini_ctx {
    const struct cfg_option *opts;
    size_t n;
    void *target;
    const char *source;
    struct err_detail *ed;
    int rv;
};

static int cfg_ini_handler(void *user,
                           const char *section,
                           const char *name,
                           const char *value)
{
    struct cfg_ini_ctx *c = user;
    char where[300];

    (void)section;
    if (c->rv != 0) {
        return 0;
    }
    (void)snprintf(where, sizeof(where), "%s [%s]", c->source, section);
    if (strcmp(name, CFG_FLAG_CONFIG) == 0) {
        c->rv = err_set(c->ed, WEIR_ECONFIG,
                        "%s: 'config' cannot be set "
                        "inside a config file",
                        where);
        return 0;
    }
    c->rv = cfg_set(c->opts, c->n, c->target, name, value, where, c->ed);
    return c->rv == 0;
}

static int cfg_ini_result(struct cfg_ini_ctx *c, int parse_rv)
{
    if (c->rv != 0) {
        return c->rv;
    }
    if (parse_rv > 0) {
        return err_set(c->ed, WEIR_ECONFIG, "%s:%d: syntax error", c->source,
                       parse_rv);
    }
    if (parse_rv < 0) {
        return err_set(c->ed, WEIR_ENOMEM, "%s: cannot parse", c->source);
    }
    return 0;
}

int cfg_load_string(const struct cfg_option *opts,
                    size_t n,
                    void *target,
                    const char *text,
                    const char *source,
                    struct err_detail *ed)
{
    struct cfg_ini_ctx c = {opts, n, target, source, ed, 0};

    return cfg_ini_result(&c, ini_parse_string(text, cfg_ini_handler, &c));
}

int cfg_load_file(const struct cfg_option *opts,
                  size_t n,
                  void *target,
                  const char *path,
                  struct err_detail *ed)
{
    struct cfg_ini_ctx c = {opts, n, target, path, ed, 0};
    FILE *f = fopen(path, "r");
    int rv;

    if (f == NULL) {
        return err_sys(ed, WEIR_ECONFIG, errno, "fopen",
                       "cannot read config file %s", path);
    }
    rv = ini_parse_file(f, cfg_ini_handler, &c);
    (void)fclose(f);
    return cfg_ini_result(&c, rv);
}

static void cfg_env_name(const char *name, char *out, size_t cap)
{
    size_t i;
    size_t k = 0;
    const char *pre = "WEIR_";

    for (i = 0; pre[i] != '\0' && k + 1 < cap; i++) {
        out[k++] = pre[i];
    }
    for (i = 0; name[i] != '\0' && k + 1 < cap; i++) {
        out[k++] = name[i] == '-' ? '_' : (char)toupper((unsigned char)name[i]);
    }
    out[k] = '\0';
}

static int cfg_load_env(const struct cfg_option *opts,
                        size_t n,
                        void *target,
                        struct err_detail *ed)
{
    char env[160];
    const char *v;
    size_t i;
    int rv;

    for (i = 0; i < n; i++) {
        cfg_env_name(opts[i].name, env, sizeof(env));
        v = getenv(env); /* NOLINT(concurrency-mt-unsafe): start-up only */
        if (v == NULL) {
            continue;
        }
        rv = cfg_assign(&opts[i], target, v, env, ed);
        if (rv != 0) {
            return rv;
        }
    }
    return 0;
}

/* Find --config in argv (flag beats WEIR_CONFIG). */
static const char *cfg_config_path(int argc, char **argv, int first)
{
    int i;
    size_t k = strlen("--config=");

    for (i = first; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            break;
        }
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
            return argv[i + 1];
        }
        if (strncmp(argv[i], "--config=", k) == 0) {
            return argv[i] + k;
        }
    }
    return getenv("WEIR_CONFIG"); /* NOLINT(concurrency-mt-unsafe) */
}

static int cfg_load_args(const struct cfg_option *opts,
                         size_t n,
                         void *target,
                         int argc,
                         char **argv,
                         int first,
                         bool *help,
                         int *rest,
                         struct err_detail *ed)
{
    char name[128];
    char flag[sizeof(name) + 2]; /* "--name", the source in messages */
    const struct cfg_option *o;
    const char *value;
    const char *eq;
    int i;
    int rv;

    for (i = first; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            *help = true;
            return 0;
        }
        if (strncmp(a, "--", 2) != 0 || strcmp(a, "--") == 0) {
            if (rest != NULL) {
                *rest = strcmp(a, "--") == 0 ? i + 1 : i;
                return 0;
            }
            return err_set(ed, WEIR_ECONFIG, "unexpected argument '%s'", a);
        }
        a += 2;
        eq = strchr(a, '=');
        (void)snprintf(name, sizeof(name), "%.*s",
                       (int)(eq != NULL ? (size_t)(eq - a) : strlen(a)), a);
        if (strcmp(name, CFG_FLAG_CONFIG) == 0) {
            if (eq == NULL && i + 1 >= argc) {
                return err_set(ed, WEIR_ECONFIG,
                               "option '--config' needs a value");
            }
            i += eq == NULL ? 1 : 0; /* handled before */
            continue;
        }
        o = cfg_find(opts, n, name);
        if (o == NULL) {
            return err_set(ed, WEIR_ECONFIG,
                           "unknown option '--%s' (see --help)", name);
        }
        if (eq != NULL) {
            value = eq + 1;
        } else if (o->type == CFG_BOOL &&
                   (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0 ||
                    cfg_parse_bool(argv[i + 1], &(bool){false}) != 0)) {
            value = "true";
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            return err_set(ed, WEIR_ECONFIG, "option '--%s' needs a value",
                           name);
        }
        (void)snprintf(flag, sizeof(flag), "--%s", name);
        rv = cfg_assign(o, target, value, flag, ed);
        if (rv != 0) {
            return rv;
        }
    }
    if (rest != NULL) {
        *rest = argc;
    }
    return 0;
}

int cfg_load(const struct cfg_option *opts,
             size_t n,
             void *target,
             int argc,
             char **argv,
             int first,
             bool *help,
             int *rest,
             struct err_detail *ed)
{
    const char *path;
    int rv;

    *help = false;
    rv = cfg_defaults(opts, n, target, ed);
    if (rv != 0) {
        return rv;
    }
    /* --help works even when the file or environment is broken */
    for (int i = first; rest == NULL && i < argc && strcmp(argv[i], "--") != 0;
         i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            *help = true;
            return 0;
        }
    }
    path = cfg_config_path(argc, argv, first);
    if (path != NULL && path[0] != '\0') {
        rv = cfg_load_file(opts, n, target, path, ed);
        if (rv != 0) {
            return rv;
        }
    }
    rv = cfg_load_env(opts, n, target, ed);
    if (rv != 0) {
        return rv;
    }
    return cfg_load_args(opts, n, target, argc, argv, first, help, rest, ed);
}

void cfg_free(const struct cfg_option *opts, size_t n, void *target)
{
    size_t i;
    char **p;

    for (i = 0; i < n; i++) {
        if (opts[i].type == CFG_STR) {
            p = (char **)(void *)((char *)target + opts[i].offset);
            mem_free(*p);
            *p = NULL;
        }
    }
}

void cfg_print_help(FILE *f, const struct cfg_option *opts, size_t n)
{
    char env[160];
    size_t i;

    (void)fprintf(f, "  --config FILE   INI file of the options below "
                     "(env WEIR_CONFIG)\n");
    for (i = 0; i < n; i++) {
        cfg_env_name(opts[i].name, env, sizeof(env));
        (void)fprintf(
            f, "  --%s %s\n      %s\n      env %s, default: %s\n", opts[i].name,
            opts[i].type == CFG_INT    ? "N"
            : opts[i].type == CFG_BOOL ? "[true|false]"
                                       : "VALUE",
            opts[i].help, env, opts[i].def != NULL ? opts[i].def : "(none)");
    }
}

void cfg_dump(FILE *f,
              const struct cfg_option *opts,
              size_t n,
              const void *target)
{
    const char *field;
    size_t i;

    for (i = 0; i < n; i++) {
        field = (const char *)target + opts[i].offset;
        switch (opts[i].type) {
        case CFG_STR:
            (void)fprintf(f, "%s = %s\n", opts[i].name,
                          *(char *const *)(const void *)field != NULL
                              ? *(char *const *)(const void *)field
                              : "");
            break;
        case CFG_INT:
            (void)fprintf(f, "%s = %lld\n", opts[i].name,
                          (long long)*(const int64_t *)(const void *)field);
            break;
        case CFG_BOOL:
            (void)fprintf(f, "%s = %s\n", opts[i].name,
                          *(const bool *)(const void *)field ? "true"
                                                             : "false");
            break;
        }
    }
}
