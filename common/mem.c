/* SPDX-License-Identifier: Apache-2.0 */
#include "common/mem.h"

#include "common/err.h"

#include <stdlib.h>
#include <string.h>

static unsigned long mem_fault_countdown;
static int mem_fault_sticky;
static unsigned long mem_fault_failed;

static int mem_should_fail(void)
{
    if (mem_fault_countdown == 0) {
        return 0;
    }
    if (mem_fault_countdown == 1) {
        if (!mem_fault_sticky) {
            mem_fault_countdown = 0;
        }
        mem_fault_failed++;
        return 1;
    }
    mem_fault_countdown--;
    return 0;
}

void mem_fault_set(unsigned long n, int sticky)
{
    mem_fault_countdown = n;
    mem_fault_sticky = sticky;
    mem_fault_failed = 0;
}

unsigned long mem_fault_count(void)
{
    return mem_fault_failed;
}

void *mem_malloc(size_t n)
{
    if (mem_should_fail()) {
        return NULL;
    }
    return malloc(n == 0 ? 1 : n);
}

void *mem_calloc(size_t count, size_t size)
{
    if (mem_should_fail()) {
        return NULL;
    }
    return calloc(count == 0 ? 1 : count, size == 0 ? 1 : size);
}

void *mem_realloc(void *p, size_t n)
{
    if (mem_should_fail()) {
        return NULL;
    }
    return realloc(p, n == 0 ? 1 : n);
}

char *mem_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *d = mem_malloc(len + 1);

    if (d == NULL) {
        return NULL;
    }
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

char *mem_strdup(const char *s)
{
    return mem_strndup(s, strlen(s));
}

void mem_free(void *p)
{
    free(p);
}

int mem_grow(void **arr, uint32_t *cap, uint32_t need, size_t size)
{
    uint32_t ncap = *cap < 4 ? 4 : *cap;
    void *p;

    if (need <= *cap) {
        return 0;
    }
    while (ncap < need) {
        ncap = ncap > UINT32_MAX / 2 ? need : ncap * 2;
    }
    p = mem_realloc(*arr, (size_t)ncap * size);
    if (p == NULL) {
        return WEIR_ENOMEM;
    }
    *arr = p;
    *cap = ncap;
    return 0;
}
