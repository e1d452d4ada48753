/* SPDX-License-Identifier: Apache-2.0 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tests/unit/test_group_fixture.h"

#define GFX_RING 64
#define GFX_STR  256

static char gfx_ring[GFX_RING][GFX_STR];
static unsigned gfx_ring_next;
static char gfx_kept[GFX_RING][GFX_STR]; /* ids: a ring of their own */
static unsigned gfx_kept_next;

const char *gfx_keep(const char *s)
{
    char *b = gfx_kept[gfx_kept_next++ % GFX_RING];

    snprintf(b, GFX_STR, "%s", s != NULL ? s : "(null)");
    return b;
}

const char *gfx_str(struct weir_slice s)
{
    char *b = gfx_ring[gfx_ring_next++ % GFX_RING];
    size_t n = s.len < GFX_STR - 1 ? s.len : GFX_STR - 1;

    if (n > 0) {
        memcpy(b, s.p, n);
    }
    b[n] = '\0';
    return b;
}

static void gfx_copy(char *dst, size_t cap, const char *src, size_t len)
{
    if (len >= cap) {
        len = cap - 1;
    }
    if (len > 0) {
        memcpy(dst, src, len);
    }
    dst[len] = '\0';
}

/* Point r's view at r's own copies. */
static void gfx_record_fix(struct gfx_record *r)
{
    size_t i;

    r->v.protocol_type = r->protocol_type;
    r->v.protocol = r->protocol;
    r->v.leader_id = r->leader;
    r->v.members = r->m;
    for (i = 0; i < r->v.n_members; i++) {
        r->m[i].member_id = r->strs[i][0];
        r->m[i].client_id = r->strs[i][1];
        r->m[i].client_host = r->strs[i][2];
        r->m[i].assignment.p = (const uint8_t *)r->strs[i][3];
        r->m[i].metadata.p = r->meta[i];
    }
}

void gfx_record_take(const struct group_core *g, struct gfx_record *r)
{
    struct group_view v;
    size_t i;
    size_t k;

    group_core_describe(g, &v);
    assert_true(v.n_members <= 16);
    memset(r, 0, sizeof(*r));
    r->valid = true;
    r->v = v;
    gfx_copy(r->protocol_type, sizeof(r->protocol_type), v.protocol_type,
             strlen(v.protocol_type));
    gfx_copy(r->protocol, sizeof(r->protocol), v.protocol, strlen(v.protocol));
    gfx_copy(r->leader, sizeof(r->leader), v.leader_id, strlen(v.leader_id));
    for (i = 0; i < v.n_members; i++) {
        const struct group_member_view *m = &v.members[i];
        const char *parts[3] = {m->member_id, m->client_id, m->client_host};

        r->m[i] = *m;
        for (k = 0; k < 3; k++) {
            const char *p = parts[k] != NULL ? parts[k] : "";
            gfx_copy(r->strs[i][k], sizeof(r->strs[i][k]), p, strlen(p));
        }
        gfx_copy(r->strs[i][3], sizeof(r->strs[i][3]),
                 (const char *)m->assignment.p, m->assignment.len);
        assert_true(m->metadata.len <= sizeof(r->meta[i]));
        if (m->metadata.len > 0) {
            memcpy(r->meta[i], m->metadata.p, m->metadata.len);
        }
    }
    gfx_record_fix(r);
}

void gfx_record_copy(struct gfx_record *dst, const struct gfx_record *src)
{
    *dst = *src;
    gfx_record_fix(dst);
}

void gfx_init(struct gfx *f, const struct group_config *cfg)
{
    memset(f, 0, sizeof(*f));
    if (cfg != NULL) {
        f->cfg = *cfg;
    } else {
        group_config_init(&f->cfg);
    }
    group_actions_init(&f->out);
    assert_int_equal(group_core_new(&f->cfg, "g1", &f->g), 0);
    f->next_request = 100;
}

void gfx_fini(struct gfx *f)
{
    group_core_free(f->g);
    group_actions_fini(&f->out);
}

static int gfx_step(struct gfx *f, struct group_event *ev)
{
    int rv;

    ev->now_ms = f->now_ms;
    if (ev->type == GROUP_EV_JOIN || ev->type == GROUP_EV_SYNC) {
        ev->request_id = f->last_request = f->next_request++;
    }
    rv = group_core_step(f->g, ev, &f->out);
    assert_int_equal(rv, 0);
    assert_int_equal(group_core_check_invariants(f->g), 0);
    if (f->out.persist) {
        assert_true(f->out.persist_seq > f->persist_seq);
        f->persist_seq = f->out.persist_seq;
    }
    return f->out.result;
}

int gfx_join_full(struct gfx *f,
                  const char *member_id,
                  const char *client,
                  const char *protocol_type,
                  const char *protos,
                  uint32_t session_ms,
                  uint32_t rebalance_ms)
{
    struct group_event ev = {.type = GROUP_EV_JOIN};
    struct group_protocol p[GROUP_MAX_PROTOCOLS + 2];
    char names[GROUP_MAX_PROTOCOLS + 2][32];
    char meta[GROUP_MAX_PROTOCOLS + 2][64];
    char token[16];
    const char *s = protos;
    size_t n = 0;

    while (*s != '\0' && n < GROUP_MAX_PROTOCOLS + 2) {
        size_t len = strcspn(s, ",");

        snprintf(names[n], sizeof(names[n]), "%.*s", (int)len, s);
        snprintf(meta[n], sizeof(meta[n]), "%s:%s", client, names[n]);
        p[n].name = names[n];
        p[n].metadata.p = (const uint8_t *)meta[n];
        p[n].metadata.len = strlen(meta[n]);
        n++;
        s += len + (s[len] == ',');
    }
    snprintf(token, sizeof(token), "t%d", ++f->tokens);
    ev.member_id = member_id;
    ev.u.join.client_id = client;
    ev.u.join.client_host = "/127.0.0.1";
    ev.u.join.new_member_token = token;
    ev.u.join.session_timeout_ms = session_ms;
    ev.u.join.rebalance_timeout_ms = rebalance_ms;
    ev.u.join.protocol_type = protocol_type;
    ev.u.join.protocols = p;
    ev.u.join.n_protocols = n;
    return gfx_step(f, &ev);
}

int gfx_join(struct gfx *f, const char *member_id, const char *client)
{
    return gfx_join_full(f, member_id, client, "consumer", "range", 10000,
                         5000);
}

int gfx_sync(struct gfx *f,
             const char *member_id,
             int32_t generation,
             const char *assign)
{
    struct group_event ev = {.type = GROUP_EV_SYNC};
    struct group_assignment a[16];
    char ids[16][64];
    const char *s = assign != NULL ? assign : "";
    size_t n = 0;

    while (*s != '\0' && n < 16) {
        size_t len = strcspn(s, ",");
        const char *eq = memchr(s, '=', len);

        assert_non_null(eq);
        snprintf(ids[n], sizeof(ids[n]), "%.*s", (int)(eq - s), s);
        a[n].member_id = ids[n];
        a[n].assignment.p = (const uint8_t *)eq + 1;
        a[n].assignment.len = (size_t)(s + len - eq - 1);
        n++;
        s += len + (s[len] == ',');
    }
    ev.member_id = member_id;
    ev.generation_id = generation;
    ev.u.sync.assignments = a;
    ev.u.sync.n_assignments = n;
    return gfx_step(f, &ev);
}

static int gfx_simple(struct gfx *f,
                      enum group_event_type type,
                      const char *member_id,
                      int32_t generation)
{
    struct group_event ev = {.type = type};

    ev.member_id = member_id;
    ev.generation_id = generation;
    return gfx_step(f, &ev);
}

int gfx_heartbeat(struct gfx *f, const char *member_id, int32_t generation)
{
    return gfx_simple(f, GROUP_EV_HEARTBEAT, member_id, generation);
}

int gfx_leave(struct gfx *f, const char *member_id)
{
    return gfx_simple(f, GROUP_EV_LEAVE, member_id, 0);
}

int gfx_commit(struct gfx *f, const char *member_id, int32_t generation)
{
    return gfx_simple(f, GROUP_EV_COMMIT, member_id, generation);
}

int gfx_tick(struct gfx *f)
{
    return gfx_simple(f, GROUP_EV_TICK, NULL, 0);
}

int gfx_advance(struct gfx *f, uint64_t ms)
{
    f->now_ms += ms;
    return gfx_tick(f);
}

int gfx_persist_failed(struct gfx *f, int error)
{
    struct group_event ev = {.type = GROUP_EV_PERSISTED};

    assert_true(f->persist_seq > 0);
    ev.u.persisted.seq = f->persist_seq;
    ev.u.persisted.error = error;
    return gfx_step(f, &ev);
}

int gfx_persisted(struct gfx *f)
{
    return gfx_persist_failed(f, 0);
}

const struct group_answer *gfx_answer(const struct gfx *f, uint64_t request_id)
{
    size_t i;

    for (i = 0; i < f->out.n_answers; i++) {
        if (f->out.answers[i].request_id == request_id) {
            return &f->out.answers[i];
        }
    }
    return NULL;
}

enum group_state gfx_state(const struct gfx *f)
{
    struct group_view v;

    group_core_describe(f->g, &v);
    return v.state;
}

int32_t gfx_generation(const struct gfx *f)
{
    struct group_view v;

    group_core_describe(f->g, &v);
    return v.generation_id;
}

const char *gfx_new_member(struct gfx *f, const char *client)
{
    char id[64];

    snprintf(id, sizeof(id), "%s-t%d", client, f->tokens + 1);
    assert_int_equal(gfx_join(f, "", client), 0);
    return gfx_keep(id);
}

void gfx_stable_group(struct gfx *f, int n, const char **ids)
{
    char client[16];
    char assign[512] = "";
    uint64_t req[16];
    int i;
    int j;

    for (i = 0; i < n; i++) {
        snprintf(client, sizeof(client), "c%d", i + 1);
        ids[i] = gfx_new_member(f, client);
        req[i] = f->last_request;
        for (j = 0; j < i; j++) {
            snprintf(client, sizeof(client), "c%d", j + 1);
            assert_int_equal(gfx_join(f, ids[j], client), 0);
            req[j] = f->last_request;
        }
        if (i < n - 1) {
            assert_int_equal(gfx_persisted(f), 0); /* generation i + 1 */
        }
    }
    /* the rebalance completed: nothing is answered before its record */
    assert_true(f->out.persist);
    assert_int_equal(f->out.n_answers, 0);
    assert_int_equal(gfx_state(f), GROUP_COMPLETING_REBALANCE);
    assert_int_equal(gfx_persisted(f), 0);
    for (i = 0; i < n; i++) {
        const struct group_answer *a = gfx_answer(f, req[i]);

        assert_non_null(a);
        assert_int_equal(a->error, 0);
        assert_int_equal(a->generation_id, n);
        assert_string_equal(a->leader_id, ids[0]);
        snprintf(assign + strlen(assign), sizeof(assign) - strlen(assign),
                 "%s%s=a-%s", i > 0 ? "," : "", ids[i], ids[i]);
    }
    assert_int_equal(gfx_state(f), GROUP_COMPLETING_REBALANCE);
    assert_int_equal(gfx_sync(f, ids[0], n, assign), 0);
    assert_true(f->out.persist);
    assert_int_equal(f->out.n_answers, 0);
    assert_int_equal(gfx_state(f), GROUP_COMPLETING_REBALANCE);
    assert_int_equal(gfx_persisted(f), 0);
    assert_int_equal(f->out.n_answers, 1);
    assert_int_equal(gfx_state(f), GROUP_STABLE);
    for (i = 1; i < n; i++) {
        assert_int_equal(gfx_sync(f, ids[i], n, NULL), 0);
        assert_non_null(gfx_answer(f, f->last_request));
    }
}
