/* SPDX-License-Identifier: Apache-2.0 */
/* Options: one table per program. Each option is a flag (--data-dir), a
 * config-file key (data-dir or data_dir, INI, sections ignored) and an
 * environment variable (WEIR_DATA_DIR). Precedence, lowest first:
 * default, config file (--config FILE or WEIR_CONFIG), environment, flags.
 * Values land in a caller struct at the option's offset:
 * CFG_STR -> char * (owned; cfg_free releases), CFG_INT -> int64_t,
 * CFG_BOOL -> bool. Integers take k/m/g suffixes (x1024). */
#ifndef COMMON_CFG_H
#define COMMON_CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"

enum cfg_type { CFG_STR, CFG_INT, CFG_BOOL };

struct cfg_option {
    const char *name; /* lower-case, dashes: "data-dir" */
    enum cfg_type type;
    const char *def; /* default as text; NULL = unset (CFG_STR only) */
    const char *help;
    size_t offset;    /* offsetof(target struct, field) */
    int64_t min, max; /* CFG_INT bounds, inclusive */
};

#define CFG_FLAG_CONFIG "config"

/* Set every option to its default. Errors: WEIR_ENOMEM. */
WEIR_MUST_CHECK int cfg_defaults(const struct cfg_option *opts,
                                 size_t n,
                                 void *target,
                                 struct err_detail *ed);
/* Set one option from text; `source` names where it came from, for errors
 * ("--data-dir", "WEIR_DATA_DIR", "broker.ini:3").
 * Errors: WEIR_ECONFIG (unknown name, bad value, out of range). */
WEIR_MUST_CHECK int cfg_set(const struct cfg_option *opts,
                            size_t n,
                            void *target,
                            const char *name,
                            const char *value,
                            const char *source,
                            struct err_detail *ed);
/* Apply an INI file. Errors: WEIR_ECONFIG, WEIR_EIO (cannot read). */
WEIR_MUST_CHECK int cfg_load_file(const struct cfg_option *opts,
                                  size_t n,
                                  void *target,
                                  const char *path,
                                  struct err_detail *ed);
/* Apply an INI document held in memory (fuzzing, tests). */
WEIR_MUST_CHECK int cfg_load_string(const struct cfg_option *opts,
                                    size_t n,
                                    void *target,
                                    const char *text,
                                    const char *source,
                                    struct err_detail *ed);

/* Full load: defaults, file, environment, then argv[first..argc). Flags are
 * --name VALUE or --name=VALUE; a CFG_BOOL flag alone means true.
 * *help is set when --help/-h was given (nothing else is done then).
 * Arguments that are not options are an error unless `rest` is non-NULL:
 * then parsing stops at the first one and *rest is its index. */
WEIR_MUST_CHECK int cfg_load(const struct cfg_option *opts,
                             size_t n,
                             void *target,
                             int argc,
                             char **argv,
                             int first,
                             bool *help,
                             int *rest,
                             struct err_detail *ed);

/* Free CFG_STR values. */
void cfg_free(const struct cfg_option *opts, size_t n, void *target);

/* Print every option with its flag, environment variable, default and
 * help text. */
void cfg_print_help(FILE *f, const struct cfg_option *opts, size_t n);

/* Write "name = value" lines of the effective configuration. */
void cfg_dump(FILE *f,
              const struct cfg_option *opts,
              size_t n,
              const void *target);

/* Parse an integer with an optional k/m/g suffix. Errors: WEIR_ECONFIG. */
WEIR_MUST_CHECK int cfg_parse_int(const char *s, int64_t *out);
WEIR_MUST_CHECK int cfg_parse_bool(const char *s, bool *out);

#endif /* COMMON_CFG_H */
