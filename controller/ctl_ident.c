/* SPDX-License-Identifier: Apache-2.0 */
/* The identity of the controller's data directory (meta.properties, with
 * the cluster id). A cluster id is made once, by `weir-controller
 * --format` or by auto-format on an empty directory, and checked at every
 * start after that. A directory without one is only accepted when it
 * already holds a metadata log (made before cluster ids existed: adopted
 * with a new id). Anything else, such as a lost volume or a mistyped
 * --data-dir, refuses to start instead of passing an empty directory off
 * as the cluster's metadata: brokers would otherwise be told that nothing
 * exists. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/datadir.h"
#include "common/metaprops.h"
#include "common/trace.h"
#include "controller/ctl_io.h"

/* A snapshot, or a metadata.log with at least one byte in it. */
static bool ctl_ident_has_metadata(const char *dir)
{
    char path[4096];
    struct stat st;

    if (datadir_exists(dir, CTL_SNAPSHOT_FILE)) {
        return true;
    }
    if (snprintf(path, sizeof(path), "%s/%s", dir, CTL_LOG_FILE) >=
        (int)sizeof(path)) {
        return true; /* cannot tell: never treat it as empty */
    }
    if (stat(path, &st) != 0) {
        return errno != ENOENT;
    }
    return st.st_size > 0;
}

/* The id to give a new cluster: the cluster-id option, else random. */
static int
ctl_ident_new(const char *want, struct metaprops *p, struct err_detail *ed)
{
    metaprops_init(p);
    if (want == NULL || want[0] == '\0') {
        return metaprops_new_id(p->cluster_id, ed);
    }
    if (!metaprops_id_valid(want, strlen(want))) {
        return err_set(ed, WEIR_ECONFIG,
                       "cluster-id '%s' is not 1..%d characters of A-Z a-z "
                       "0-9 _ -",
                       want, METAPROPS_ID_MAX);
    }
    (void)snprintf(p->cluster_id, sizeof(p->cluster_id), "%s", want);
    return 0;
}

int ctl_ident_format(const char *dir,
                     const char *cluster_id,
                     char out[CTL_CLUSTER_ID_CAP],
                     struct err_detail *ed)
{
    struct metaprops p;
    bool found;
    int rv;

    rv = metaprops_read(dir, &p, &found, ed);
    if (rv != 0) {
        return rv;
    }
    if (found) {
        return err_set(ed, WEIR_ECONFIG,
                       "%s is already formatted (cluster.id=%s): refusing to "
                       "format it again; remove its contents first only if "
                       "the cluster's metadata is really to be thrown away",
                       dir, p.cluster_id);
    }
    if (ctl_ident_has_metadata(dir)) {
        return err_set(ed, WEIR_ECONFIG,
                       "%s holds a metadata log made before cluster ids: "
                       "start the controller without --format to keep it "
                       "(it gets a cluster id then)",
                       dir);
    }
    rv = ctl_ident_new(cluster_id, &p, ed);
    if (rv == 0) {
        rv = metaprops_write(dir, &p, ed);
    }
    if (rv == 0) {
        (void)snprintf(out, CTL_CLUSTER_ID_CAP, "%s", p.cluster_id);
    }
    return rv;
}

static int ctl_ident_unformatted(struct ctl_server *s, struct err_detail *ed)
{
    const char *dir = s->cfg.data_dir;
    bool legacy = ctl_ident_has_metadata(dir);
    struct metaprops p;
    int rv;

    if (!legacy && !s->cfg.auto_format) {
        return err_set(
            ed, WEIR_ECONFIG,
            "data dir %s is not formatted (no %s). To create a new cluster "
            "run: weir-controller --format --data-dir %s (or set "
            "auto-format=true / WEIR_AUTO_FORMAT=true). If the cluster "
            "exists, point --data-dir at its metadata: starting empty would "
            "tell every broker that no topic exists",
            dir, METAPROPS_FILE, dir);
    }
    rv = ctl_ident_new(s->cfg.cluster_id, &p, ed);
    if (rv == 0) {
        rv = metaprops_write(dir, &p, ed);
    }
    if (rv != 0) {
        return rv;
    }
    (void)snprintf(s->cluster_id, sizeof(s->cluster_id), "%s", p.cluster_id);
    if (legacy) {
        trace_warn("controller",
                   "event=data_dir_adopted dir=%s cluster_id=%s msg=\"a "
                   "metadata log from before cluster ids: it gets this new "
                   "id, and brokers that have none store it\"",
                   dir, s->cluster_id);
    } else {
        trace_info("controller",
                   "event=data_dir_formatted dir=%s cluster_id=%s auto=true",
                   dir, s->cluster_id);
    }
    return 0;
}

int ctl_ident_load(struct ctl_server *s, struct err_detail *ed)
{
    const char *want = s->cfg.cluster_id;
    struct metaprops p;
    bool found;
    int rv;

    rv = metaprops_read(s->cfg.data_dir, &p, &found, ed);
    if (rv != 0) {
        return rv;
    }
    if (!found) {
        return ctl_ident_unformatted(s, ed);
    }
    if (p.cluster_id[0] == '\0') {
        return err_set(ed, WEIR_ECORRUPT, "%s/%s has no cluster.id",
                       s->cfg.data_dir, METAPROPS_FILE);
    }
    if (want != NULL && want[0] != '\0' && strcmp(want, p.cluster_id) != 0) {
        return err_set(ed, WEIR_ECONFIG,
                       "cluster-id is %s but data dir %s belongs to cluster "
                       "%s",
                       want, s->cfg.data_dir, p.cluster_id);
    }
    (void)snprintf(s->cluster_id, sizeof(s->cluster_id), "%s", p.cluster_id);
    return 0;
}
