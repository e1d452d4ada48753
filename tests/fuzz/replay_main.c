/* SPDX-License-Identifier: Apache-2.0 */
/* Replay driver for fuzz targets built without libFuzzer (librdkafka's
 * WITH_MAIN): runs LLVMFuzzerTestOneInput once over every file named on the
 * command line and every regular file in every directory named, in sorted
 * order, so ctest replays the seed corpus and past crashes under ASan on an
 * ordinary build. Arguments starting with '-' (libFuzzer flags) are
 * ignored. Exits non-zero if a file cannot be read or nothing was run. */
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path, size_t *count)
{
    FILE *f = fopen(path, "rb");
    uint8_t *data;
    long size;
    size_t got;

    if (f == NULL) {
        perror(path);
        return 1;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0) {
        perror(path);
        (void)fclose(f);
        return 1;
    }
    /* exactly `size` bytes, so ASan sees any read past the input */
    data = malloc(size > 0 ? (size_t)size : 1);
    if (data == NULL) {
        (void)fclose(f);
        return 1;
    }
    got = fread(data, 1, (size_t)size, f);
    (void)fclose(f);
    if (got != (size_t)size) {
        (void)fprintf(stderr, "%s: short read\n", path);
        free(data);
        return 1;
    }
    (void)LLVMFuzzerTestOneInput(data, got);
    free(data);
    (*count)++;
    return 0;
}

static int replay_dir(const char *dir, size_t *count)
{
    struct dirent **names;
    struct stat st;
    char path[4096];
    int n;
    int i;
    int rv = 0;

    n = scandir(dir, &names, NULL, alphasort);
    if (n < 0) {
        perror(dir);
        return 1;
    }
    for (i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.') {
            (void)snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
            if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                rv |= replay_file(path, count);
            }
        }
        free(names[i]);
    }
    free(names);
    return rv;
}

int main(int argc, char **argv)
{
    struct stat st;
    size_t count = 0;
    int rv = 0;
    int i;

    for (i = 1; i < argc; i++) {
        if (argv[i][0] == '-') {
            continue;
        }
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            rv = 1;
        } else if (S_ISDIR(st.st_mode)) {
            rv |= replay_dir(argv[i], &count);
        } else {
            rv |= replay_file(argv[i], &count);
        }
    }
    (void)printf("%s: replayed %zu inputs\n", argv[0], count);
    return rv != 0 || count == 0 ? 1 : 0;
}
