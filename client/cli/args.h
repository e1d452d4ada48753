/* SPDX-License-Identifier: Apache-2.0 */
/* Command-line parsing for the weir CLI: long options from a table
 * (--name VALUE, --name=VALUE, flags, repeatable options), positional
 * arguments anywhere, "--" ends options. Pure: no output, no exit; errors
 * come back as a message for the caller to print as a usage error.
 * Locality: any thread. */
#ifndef CLIENT_CLI_ARGS_H
#define CLIENT_CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum args_kind {
    ARGS_FLAG,  /* --name */
    ARGS_VALUE, /* --name VALUE, the last one wins */
    ARGS_LIST,  /* --name VALUE, repeatable, all kept in order */
};

struct args_spec {
    const char *name; /* long name, without "--" */
    char short_name;  /* -x, or 0 */
    enum args_kind kind;
    const char *metavar; /* for help: "N" */
    const char *help;
};

#define ARGS_MAX_SPECS 32
#define ARGS_MAX_POS   16
#define ARGS_MAX_LIST  64

struct args {
    const struct args_spec *specs; /* borrowed */
    size_t n_specs;
    bool seen[ARGS_MAX_SPECS];
    const char *value[ARGS_MAX_SPECS]; /* borrowed from argv */
    const char *list[ARGS_MAX_SPECS][ARGS_MAX_LIST];
    size_t n_list[ARGS_MAX_SPECS];
    const char *pos[ARGS_MAX_POS]; /* positional arguments */
    size_t n_pos;
};

/* Parse argv[0..argc). stop_at_pos: stop at the first positional
 * argument (for "weir [global options] COMMAND ...") and set *used to
 * its index. Returns 0, or -1 with a message in err. */
int args_parse(const struct args_spec *specs,
               size_t n_specs,
               int argc,
               char **argv,
               bool stop_at_pos,
               struct args *out,
               int *used,
               char *err,
               size_t err_len);

bool args_has(const struct args *a, const char *name);
/* The option's value, or NULL when absent. */
const char *args_get(const struct args *a, const char *name);
/* Values of a repeatable option; *n set to their count. */
const char *const *args_list(const struct args *a, const char *name, size_t *n);

/* Parse a decimal integer in [min, max] (k/m/g suffixes x1024 when
 * allow_suffix). Returns 0, or -1 with a message naming `what`. */
int args_int(const char *s,
             const char *what,
             int64_t min,
             int64_t max,
             bool allow_suffix,
             int64_t *out,
             char *err,
             size_t err_len);

/* Print the option table, two columns. */
void args_print_options(FILE *f, const struct args_spec *specs, size_t n);

#endif /* CLIENT_CLI_ARGS_H */
