/* SPDX-License-Identifier: Apache-2.0 */
/* Allocation fault injection and OOM sweeps (raft's heap-fault-delay):
 * each allocating operation is rerun failing the Nth allocation, N = 1, 2,
 * ... until a run completes without hitting the fault. Every run must fail
 * cleanly (an error code, no crash), leave no memory behind (checked here
 * against the allocator's own count, and by LeakSanitizer in the asan
 * build), and, for the builder, leave the object usable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

/* How live heap bytes are counted: ASan's allocator statistics; under
 * another sanitizer (which owns malloc), not at all; otherwise by wrapping
 * glibc's allocator below. */
#if defined(__SANITIZE_ADDRESS__)
#define MT_ASAN 1
#elif defined(__SANITIZE_THREAD__)
#define MT_NO_HEAP_COUNT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MT_ASAN 1
#elif __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define MT_NO_HEAP_COUNT 1
#endif
#endif

#if !defined(MT_ASAN) && !defined(MT_NO_HEAP_COUNT)
#include <malloc.h>
#endif

#include "common/batch.h"
#include "common/cfg.h"
#include "common/mem.h"
#include "common/rpc.h"

#define MT_MAX_SWEEP 10000 /* a sweep longer than this is a bug */

#ifdef MT_ASAN
/* From <sanitizer/allocator_interface.h>, which gcc does not install. */
size_t __sanitizer_get_current_allocated_bytes(void); /* NOLINT */

/* Bytes currently allocated from the C heap. */
static size_t mt_heap_bytes(void)
{
    return __sanitizer_get_current_allocated_bytes();
}
#elif defined(MT_NO_HEAP_COUNT)
static size_t mt_heap_bytes(void)
{
    return 0; /* the sanitizer's own leak report has to do */
}
#else
/* Without a sanitizer, count live bytes by wrapping glibc's allocator
 * (glibc supports replacing malloc; mallinfo would count chunks parked in
 * the thread cache as used). Unsigned arithmetic: only differences matter. */
/* NOLINTBEGIN(bugprone-reserved-identifier): replacing the allocator */
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

static size_t mt_live_bytes;

void *malloc(size_t n)
{
    void *p = __libc_malloc(n);

    if (p != NULL) {
        mt_live_bytes += malloc_usable_size(p);
    }
    return p;
}

void *calloc(size_t count, size_t size)
{
    void *p = __libc_calloc(count, size);

    if (p != NULL) {
        mt_live_bytes += malloc_usable_size(p);
    }
    return p;
}

void *realloc(void *p, size_t n)
{
    size_t old = p != NULL ? malloc_usable_size(p) : 0;
    void *q = __libc_realloc(p, n);

    if (q != NULL) {
        mt_live_bytes += malloc_usable_size(q) - old;
    } else if (n == 0) {
        mt_live_bytes -= old; /* glibc freed p */
    }
    return q;
}

void free(void *p)
{
    if (p != NULL) {
        mt_live_bytes -= malloc_usable_size(p);
    }
    __libc_free(p);
}

/* NOLINTEND(bugprone-reserved-identifier) */

static size_t mt_heap_bytes(void)
{
    return mt_live_bytes;
}
#endif

static void test_fault_fails_exactly_the_nth(void **state)
{
    void *a;
    void *b;
    void *c;

    (void)state;
    mem_fault_set(2, 0);
    a = mem_malloc(8);
    b = mem_calloc(2, 8);
    c = mem_realloc(NULL, 8);
    assert_non_null(a);
    assert_null(b);
    assert_non_null(c);
    assert_int_equal(mem_fault_count(), 1);
    mem_free(a);
    mem_free(c);

    mem_fault_set(1, 1); /* sticky: every allocation from now on */
    assert_null(mem_malloc(1));
    assert_null(mem_strdup("x"));
    assert_null(mem_strndup("xyz", 2));
    assert_null(mem_realloc(NULL, 1));
    assert_int_equal(mem_fault_count(), 4);
    mem_fault_set(0, 0);
    assert_int_equal(mem_fault_count(), 0);
    a = mem_strndup("xyz", 2);
    assert_string_equal(a, "xy");
    mem_free(a);
    a = mem_malloc(0); /* zero-byte requests still return a pointer */
    assert_non_null(a);
    mem_free(a);
    mem_free(NULL);
}

struct mt_rec {
    int64_t ts;
    const char *key;
    const char *value;
};

static const struct mt_rec mt_recs[] = {
    {10, "k0", "value zero"},
    {11, NULL, "v1"},
    {9, "k2", NULL},
    {15, "k3", "a longer value that makes the record body grow a bit"},
    {12, "k4", "v4"},
};

#define MT_N_RECS ((int32_t)(sizeof(mt_recs) / sizeof(mt_recs[0])))

static int mt_add(struct batch_builder *bb, int32_t i)
{
    const struct batch_kv h = {"h", 1, "hv", 2};
    const struct mt_rec *r = &mt_recs[i];

    return batch_builder_add(
        bb, r->ts, r->key, r->key != NULL ? (int32_t)strlen(r->key) : 0,
        r->value, r->value != NULL ? (int32_t)strlen(r->value) : 0, &h,
        (uint32_t)(i % 2));
}

/* One run of the builder scenario with allocation `n` failing (sticky
 * or not). A failed add must leave the builder as it was: the same add is
 * retried with injection off and the finished batch must hold every
 * record. Returns true when the fault was never hit. */
static bool mt_builder_run(unsigned long n, int sticky)
{
    struct batch_builder bb;
    struct weir_slice out;
    struct batch_header h;
    struct batch_iter it;
    struct batch_record rec;
    unsigned long hits = 0;
    int32_t i;
    int rv;

    batch_builder_init(&bb);
    mem_fault_set(n, sticky);
    for (i = 0; i < MT_N_RECS; i++) {
        rv = mt_add(&bb, i);
        if (rv != 0) {
            assert_int_equal(rv, WEIR_ENOMEM);
            hits += mem_fault_count();
            mem_fault_set(0, 0);
            assert_int_equal(mt_add(&bb, i), 0);
        }
    }
    hits += mem_fault_count();
    mem_fault_set(0, 0);
    assert_int_equal(batch_builder_finish(&bb, &out), 0);
    assert_int_equal(batch_validate(out, 1u << 20, &h, NULL), 0);
    assert_int_equal(h.record_count, MT_N_RECS);
    assert_int_equal(batch_iter_init(&it, out, NULL), 0);
    for (i = 0; i < MT_N_RECS; i++) {
        assert_int_equal(batch_iter_next(&it, &rec), 1);
        assert_true(rec.timestamp == mt_recs[i].ts);
        assert_int_equal(rec.key_null, mt_recs[i].key == NULL);
    }
    batch_builder_fini(&bb);
    return hits == 0;
}

static void test_oom_sweep_batch_builder(void **state)
{
    size_t before = mt_heap_bytes();
    unsigned long n;
    int sticky;

    (void)state;
    for (sticky = 0; sticky <= 1; sticky++) {
        for (n = 1; n < MT_MAX_SWEEP; n++) {
            bool clean = mt_builder_run(n, sticky);
            assert_int_equal(mt_heap_bytes(), before);
            if (clean) {
                break;
            }
        }
        assert_true(n > 1); /* the sweep did inject something */
        assert_true(n < MT_MAX_SWEEP);
    }
}

/* A produce request with three partitions and a client id, packed. */
static size_t mt_pack_request(uint8_t *out, size_t cap)
{
    Weir__Request r = WEIR__REQUEST__INIT;
    Weir__ProduceRequest p = WEIR__PRODUCE_REQUEST__INIT;
    Weir__ProducePartition pp[3] = {WEIR__PRODUCE_PARTITION__INIT,
                                    WEIR__PRODUCE_PARTITION__INIT,
                                    WEIR__PRODUCE_PARTITION__INIT};
    Weir__ProducePartition *ptrs[3] = {&pp[0], &pp[1], &pp[2]};
    size_t i;

    for (i = 0; i < 3; i++) {
        pp[i].topic = "orders";
        pp[i].partition = (int32_t)i;
        pp[i].payload_bytes = 10;
    }
    p.acks = -1;
    p.n_partitions = 3;
    p.partitions = ptrs;
    r.correlation_id = 99;
    r.client_id = "oom-client";
    r.body_case = WEIR__REQUEST__BODY_PRODUCE;
    r.produce = &p;
    assert_true(weir__request__get_packed_size(&r) <= cap);
    return weir__request__pack(&r, out);
}

static void test_oom_sweep_rpc_request_decode(void **state)
{
    uint8_t packed[256];
    struct weir_slice s = {packed, mt_pack_request(packed, sizeof(packed))};
    size_t before = mt_heap_bytes();
    Weir__Request *d;
    unsigned long n;
    int rv;

    (void)state;
    for (n = 1; n < MT_MAX_SWEEP; n++) {
        mem_fault_set(n, 0);
        rv = rpc_request_decode(s, 30, &d, NULL);
        if (mem_fault_count() == 0) {
            mem_fault_set(0, 0);
            assert_int_equal(rv, 0);
            assert_int_equal(d->correlation_id, 99);
            assert_string_equal(d->produce->partitions[2]->topic, "orders");
            rpc_request_free(d);
            break;
        }
        mem_fault_set(0, 0);
        /* out of memory is retriable, not the client's fault */
        assert_int_equal(rv, WEIR_ENOMEM);
        assert_null(d);
        assert_int_equal(mt_heap_bytes(), before);
    }
    assert_true(n > 1);
    assert_true(n < MT_MAX_SWEEP);
    assert_int_equal(mt_heap_bytes(), before);
}

static void test_oom_sweep_rpc_response_decode_and_encode(void **state)
{
    Weir__Response r = WEIR__RESPONSE__INIT;
    Weir__FetchResponse f = WEIR__FETCH_RESPONSE__INIT;
    Weir__FetchPartitionResult fr = WEIR__FETCH_PARTITION_RESULT__INIT;
    Weir__FetchPartitionResult *frp = &fr;
    struct weir_buf b;
    struct weir_slice s;
    size_t before = mt_heap_bytes();
    Weir__Response *d;
    unsigned long n;
    int rv;

    (void)state;
    fr.topic = "t";
    fr.error_message = "fine";
    fr.payload_bytes = 5;
    f.n_partitions = 1;
    f.partitions = &frp;
    r.correlation_id = 3;
    r.body_case = WEIR__RESPONSE__BODY_FETCH;
    r.fetch = &f;

    buf_init(&b);
    mem_fault_set(1, 0);
    assert_int_equal(rpc_encode_response(&r, 5, &b), WEIR_ENOMEM);
    mem_fault_set(0, 0);
    buf_fini(&b);
    assert_int_equal(rpc_encode_response(&r, 5, &b), 0);
    s.p = b.data + 8;
    s.len = b.len - 8;
    for (n = 1; n < MT_MAX_SWEEP; n++) {
        mem_fault_set(n, 0);
        rv = rpc_response_decode(s, 5, &d, NULL);
        if (mem_fault_count() == 0) {
            mem_fault_set(0, 0);
            assert_int_equal(rv, 0);
            assert_string_equal(d->fetch->partitions[0]->error_message, "fine");
            rpc_response_free(d);
            break;
        }
        mem_fault_set(0, 0);
        assert_int_equal(rv, WEIR_ENOMEM);
        assert_null(d);
    }
    assert_true(n > 1);
    assert_true(n < MT_MAX_SWEEP);
    buf_fini(&b);
    assert_int_equal(mt_heap_bytes(), before);
}

struct mt_conf {
    char *a;
    char *b;
    int64_t n;
};

static void test_oom_sweep_cfg(void **state)
{
    static const struct cfg_option opts[] = {
        {"a", CFG_STR, "default-a", "", offsetof(struct mt_conf, a), 0, 0},
        {"b", CFG_STR, NULL, "", offsetof(struct mt_conf, b), 0, 0},
        {"n", CFG_INT, "1", "", offsetof(struct mt_conf, n), 0, 100},
    };
    struct mt_conf c;
    struct err_detail ed;
    size_t before = mt_heap_bytes();
    unsigned long n;
    int rv;

    (void)state;
    for (n = 1; n < MT_MAX_SWEEP; n++) {
        memset(&c, 0, sizeof(c));
        mem_fault_set(n, 0);
        rv = cfg_defaults(opts, 3, &c, &ed);
        if (rv == 0) {
            rv = cfg_load_string(opts, 3, &c, "a = x\nb = y\nn = 7\nb = z\n",
                                 "mem", &ed);
        }
        if (mem_fault_count() == 0) {
            mem_fault_set(0, 0);
            assert_int_equal(rv, 0);
            assert_string_equal(c.a, "x");
            assert_string_equal(c.b, "z");
            assert_int_equal(c.n, 7);
            cfg_free(opts, 3, &c);
            break;
        }
        mem_fault_set(0, 0);
        assert_int_equal(rv, WEIR_ENOMEM);
        cfg_free(opts, 3, &c);
        assert_int_equal(mt_heap_bytes(), before);
    }
    assert_true(n > 1);
    assert_true(n < MT_MAX_SWEEP);
    assert_int_equal(mt_heap_bytes(), before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fault_fails_exactly_the_nth),
        cmocka_unit_test(test_oom_sweep_batch_builder),
        cmocka_unit_test(test_oom_sweep_rpc_request_decode),
        cmocka_unit_test(test_oom_sweep_rpc_response_decode_and_encode),
        cmocka_unit_test(test_oom_sweep_cfg),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
