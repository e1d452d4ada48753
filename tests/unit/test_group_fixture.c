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
    }
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
    assert_int_equal(gfx_state(f), GROUP_STABLE);
    for (i = 1; i < n; i++) {
        assert_int_equal(gfx_sync(f, ids[i], n, NULL), 0);
        assert_non_null(gfx_answer(f, f->last_request));
    }
}
