/* SPDX-License-Identifier: Apache-2.0 */
/* All allocation goes through here so tests can fail the Nth allocation
 * (OOM sweeps). Locality: any thread; the fault counter is a test hook and
 * is not meant to be used concurrently. */
#ifndef COMMON_MEM_H
#define COMMON_MEM_H

#include <stddef.h>
#include <stdint.h>

void *mem_malloc(size_t n);
void *mem_calloc(size_t count, size_t size);
void *mem_realloc(void *p, size_t n);
char *mem_strdup(const char *s);
char *mem_strndup(const char *s, size_t n);
void mem_free(void *p);

/* Grow an array *arr of *cap elements of `size` bytes so it holds at least
 * `need` (doubling, at least 4). Returns 0 or WEIR_ENOMEM, leaving the
 * array as it was on failure. */
int mem_grow(void **arr, uint32_t *cap, uint32_t need, size_t size);

/* Test hook: make the nth allocation from now fail (1 = the next one), and
 * every one after it when `sticky`. n = 0 switches injection off. */
void mem_fault_set(unsigned long n, int sticky);
/* Allocations that have been failed on purpose since the last set. */
unsigned long mem_fault_count(void);

#endif /* COMMON_MEM_H */
