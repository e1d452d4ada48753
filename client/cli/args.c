/* SPDX-License-Identifier: Apache-2.0 */
#include "client/cli/args.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int args_find(const struct args_spec *specs,
                     size_t n,
                     const char *name,
                     size_t len,
                     char short_name)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (short_name != 0 ? specs[i].short_name == short_name
                            : strlen(specs[i].name) == len &&
                                  strncmp(specs[i].name, name, len) == 0) {
            return (int)i;
        }
    }
    return -1;
}

/* One option at argv[*i]; may consume the next argument as its value. */
static int args_option(
    struct args *a, int argc, char **argv, int *i, char *err, size_t err_len)
{
    const char *arg = argv[*i];
    const char *name = arg[1] == '-' ? arg + 2 : arg + 1;
    const char *eq = arg[1] == '-' ? strchr(name, '=') : NULL;
    size_t len = eq != NULL ? (size_t)(eq - name) : strlen(name);
    const char *value = eq != NULL ? eq + 1 : NULL;
    int k;

    if (arg[1] != '-' && len != 1) {
        (void)snprintf(err, err_len, "unknown option '%s'", arg);
        return -1;
    }
    k = args_find(a->specs, a->n_specs, name, len, arg[1] == '-' ? 0 : name[0]);
    if (k < 0) {
        (void)snprintf(err, err_len, "unknown option '%s'", arg);
        return -1;
    }
    if (a->specs[k].kind == ARGS_FLAG) {
        if (value != NULL) {
            (void)snprintf(err, err_len, "option '--%s' takes no value",
                           a->specs[k].name);
            return -1;
        }
        a->seen[k] = true;
        return 0;
    }
    if (value == NULL) {
        if (*i + 1 >= argc) {
            (void)snprintf(err, err_len, "option '--%s' needs a value",
                           a->specs[k].name);
            return -1;
        }
        value = argv[++*i];
    }
    a->seen[k] = true;
    a->value[k] = value;
    if (a->specs[k].kind == ARGS_LIST) {
        if (a->n_list[k] == ARGS_MAX_LIST) {
            (void)snprintf(err, err_len, "option '--%s' given too often",
                           a->specs[k].name);
            return -1;
        }
        a->list[k][a->n_list[k]++] = value;
    }
    return 0;
}

int args_parse(const struct args_spec *specs,
               size_t n_specs,
               int argc,
               char **argv,
               bool stop_at_pos,
               struct args *out,
               int *used,
               char *err,
               size_t err_len)
{
    bool only_pos = false;
    int i;

    memset(out, 0, sizeof(*out));
    out->specs = specs;
    out->n_specs = n_specs < ARGS_MAX_SPECS ? n_specs : ARGS_MAX_SPECS;
    if (used != NULL) {
        *used = argc;
    }
    for (i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (!only_pos && strcmp(arg, "--") == 0) {
            only_pos = true;
            continue;
        }
        if (!only_pos && arg[0] == '-' && arg[1] != '\0') {
            if (args_option(out, argc, argv, &i, err, err_len) != 0) {
                return -1;
            }
            continue;
        }
        if (stop_at_pos) {
            if (used != NULL) {
                *used = i;
            }
            return 0;
        }
        if (out->n_pos == ARGS_MAX_POS) {
            (void)snprintf(err, err_len, "too many arguments");
            return -1;
        }
        out->pos[out->n_pos++] = arg;
    }
    return 0;
}

static int args_index(const struct args *a, const char *name)
{
    return args_find(a->specs, a->n_specs, name, strlen(name), 0);
}

bool args_has(const struct args *a, const char *name)
{
    int k = args_index(a, name);

    return k >= 0 && a->seen[k];
}

const char *args_get(const struct args *a, const char *name)
{
    int k = args_index(a, name);

    return k >= 0 && a->seen[k] ? a->value[k] : NULL;
}

const char *const *args_list(const struct args *a, const char *name, size_t *n)
{
    int k = args_index(a, name);

    *n = k >= 0 ? a->n_list[k] : 0;
    return k >= 0 ? a->list[k] : NULL;
}

int args_int(const char *s,
             const char *what,
             int64_t min,
             int64_t max,
             bool allow_suffix,
             int64_t *out,
             char *err,
             size_t err_len)
{
    char *end;
    long long v;
    int64_t mul = 1;

    errno = 0;
    v = strtoll(s, &end, 10);
    if (end != s && allow_suffix && *end != '\0' && end[1] == '\0') {
        switch (tolower((unsigned char)*end)) {
        case 'k':
            mul = 1024;
            end++;
            break;
        case 'm':
            mul = 1024 * 1024;
            end++;
            break;
        case 'g':
            mul = 1024 * 1024 * 1024;
            end++;
            break;
        default:
            break;
        }
    }
    if (end == s || *end != '\0' || errno != 0 || v > INT64_MAX / mul ||
        v < INT64_MIN / mul || v * mul < min || v * mul > max) {
        (void)snprintf(err, err_len,
                       "%s must be an integer from %lld to %lld, not '%s'",
                       what, (long long)min, (long long)max, s);
        return -1;
    }
    *out = v * mul;
    return 0;
}

void args_print_options(FILE *f, const struct args_spec *specs, size_t n)
{
    char left[64];
    char shortopt[8] = "    ";
    size_t i;

    for (i = 0; i < n; i++) {
        if (specs[i].help == NULL) {
            continue;
        }
        if (specs[i].short_name != 0) {
            (void)snprintf(shortopt, sizeof(shortopt), "-%c, ",
                           specs[i].short_name);
        } else {
            (void)snprintf(shortopt, sizeof(shortopt), "    ");
        }
        (void)snprintf(left, sizeof(left), "%s--%s%s%s", shortopt,
                       specs[i].name, specs[i].kind == ARGS_FLAG ? "" : " ",
                       specs[i].kind == ARGS_FLAG ? ""
                       : specs[i].metavar != NULL ? specs[i].metavar
                                                  : "VALUE");
        (void)fprintf(f, "  %-32s %s\n", left, specs[i].help);
    }
}
