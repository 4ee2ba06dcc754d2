// Development tool (issue 24): an LD_PRELOAD interposer for ggml_gallocr_reserve_n_size, the call through which
// ggml's scheduler sizes every backend's compute buffer (ggml_backend_sched_reserve_size). It appends the graph
// copy the scheduler made -- every leaf and node with its buffer id -- to $DUMP_SCHED as JSON lines in
// graph_dump.cpp's format plus "b", then {"k":"S","sizes":[...]} ($DUMP_SCHED_N of them: the backends).
// Build: scripts/oracle/build_dump_sched.sh. Not used by kvplan or its tests.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-impl.h"

typedef void (*real_t)(ggml_gallocr_t, struct ggml_cgraph *, const int *, const int *, size_t *);

static const struct ggml_tensor ** seen;
static int n_seen, cap_seen;
static int id_of(const struct ggml_tensor * t) {
    if (!t) return -1;
    for (int i = n_seen - 1; i >= 0; i--) if (seen[i] == t) return i;
    if (n_seen == cap_seen) { cap_seen = cap_seen ? 2 * cap_seen : 4096; seen = realloc(seen, cap_seen * sizeof(*seen)); }
    seen[n_seen] = t;
    return n_seen++;
}

static void dump(FILE * f, const char * kind, int i, const struct ggml_tensor * t, int b) {
    fprintf(f, "{\"k\":\"%s\",\"i\":%d,\"id\":%d,\"op\":\"%s\",\"type\":\"%s\",\"ne\":[%lld,%lld,%lld,%lld],"
           "\"nb\":[%zu,%zu,%zu,%zu],\"bytes\":%zu,\"flags\":%d,\"ext\":%d,\"view\":%d,\"offs\":%zu,\"b\":%d,\"src\":[",
           kind, i, id_of(t), ggml_op_name(t->op), ggml_type_name(t->type),
           (long long) t->ne[0], (long long) t->ne[1], (long long) t->ne[2], (long long) t->ne[3],
           t->nb[0], t->nb[1], t->nb[2], t->nb[3], ggml_nbytes(t), t->flags,
           (t->data != NULL || t->buffer != NULL) ? 1 : 0, id_of(t->view_src), t->view_offs, b);
    int first = 1;
    for (int j = 0; j < GGML_MAX_SRC; j++) {
        if (!t->src[j]) continue;
        fprintf(f, "%s[%d,%d]", first ? "" : ",", j, id_of(t->src[j]));
        first = 0;
    }
    char name[GGML_MAX_NAME];
    strncpy(name, t->name, sizeof(name));
    for (char * c = name; *c; c++) if (*c == '"' || *c == '\\' || (unsigned char) *c < 32) *c = '_';
    fprintf(f, "],\"name\":\"%s\"}\n", name);
}

void ggml_gallocr_reserve_n_size(ggml_gallocr_t galloc, struct ggml_cgraph * graph, const int * node_buffer_ids,
                                 const int * leaf_buffer_ids, size_t * sizes) {
    real_t real = (real_t) dlsym(RTLD_NEXT, "ggml_gallocr_reserve_n_size");
    real(galloc, graph, node_buffer_ids, leaf_buffer_ids, sizes);
    const char * path = getenv("DUMP_SCHED");
    if (!path) return;
    FILE * f = fopen(path, "a");
    n_seen = 0;
    for (int i = 0; i < graph->n_leafs; i++) dump(f, "L", i, graph->leafs[i], leaf_buffer_ids ? leaf_buffer_ids[i] : 0);
    for (int i = 0; i < graph->n_nodes; i++) dump(f, "N", i, graph->nodes[i], node_buffer_ids ? node_buffer_ids[i] : 0);
    fprintf(f, "{\"k\":\"S\",\"sizes\":[");
    int n = getenv("DUMP_SCHED_N") ? atoi(getenv("DUMP_SCHED_N")) : 0;  // the backends: devices + CPU
    for (int i = 0; i < n; i++) fprintf(f, "%s%zu", i ? "," : "", sizes[i]);
    fprintf(f, "]}\n");
    fclose(f);
}
