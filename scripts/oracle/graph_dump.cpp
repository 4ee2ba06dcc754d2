// Development tool for kvplan's compute-buffer port (issue 24): loads a GGUF as the oracle harness does, creates a
// context, reserves llama.cpp's worst-case prompt graph (llama_graph_reserve, as sched_reserve does) and prints
// every leaf and node the graph allocator sees, one JSON object per line:
//   {"k":"L"|"N","i":index,"id":tensor id,"op":...,"type":...,"ne":[4],"nb":[4],"bytes":ggml_nbytes,
//    "flags":...,"ext":has data or buffer,"view":view_src id or -1,"offs":view_offs,"src":[ids],"name":...}
// then one line {"k":"B","buft":...,"compute":bytes} per compute buffer (llama_get_memory_breakdown).
// Build: see scripts/oracle/build_graph_dump.sh. Not used by kvplan or its tests.
#include "llama.h"
#include "llama-ext.h"
#include "ggml.h"
#include "ggml-backend.h"
#include "ggml-impl.h"
#include "gguf.h"
#include "ggml-alloc.h"
#include "ggml-cpu.h"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

static ggml_type parse_type(const char * s) {
    const char * names[] = {"f32","f16","q4_0","q4_1","","","q5_0","q5_1","q8_0"};
    if (!strcmp(s,"bf16")) return GGML_TYPE_BF16;
    if (!strcmp(s,"iq4_nl")) return GGML_TYPE_IQ4_NL;
    for (int i = 0; i < 9; i++) if (!strcmp(s, names[i])) return (ggml_type) i;
    fprintf(stderr, "bad type %s\n", s); exit(1);
}

static std::map<const ggml_tensor *, int> ids;
static int id_of(const ggml_tensor * t) {
    if (!t) return -1;
    auto it = ids.find(t);
    if (it != ids.end()) return it->second;
    int n = (int) ids.size();
    ids[t] = n;
    return n;
}

static void dump(const char * kind, int i, const ggml_tensor * t) {
    printf("{\"k\":\"%s\",\"i\":%d,\"id\":%d,\"op\":\"%s\",\"desc\":\"%s\",\"type\":\"%s\",\"ne\":[%lld,%lld,%lld,%lld],"
           "\"nb\":[%zu,%zu,%zu,%zu],\"bytes\":%zu,\"flags\":%d,\"ext\":%d,\"view\":%d,\"offs\":%zu,\"src\":[",
           kind, i, id_of(t), ggml_op_name(t->op), ggml_op_desc(t), ggml_type_name(t->type),
           (long long) t->ne[0], (long long) t->ne[1], (long long) t->ne[2], (long long) t->ne[3],
           t->nb[0], t->nb[1], t->nb[2], t->nb[3], ggml_nbytes(t), t->flags,
           (t->data != nullptr || t->buffer != nullptr) ? 1 : 0, id_of(t->view_src), t->view_offs);
    bool first = true;
    for (int j = 0; j < GGML_MAX_SRC; j++) {
        if (!t->src[j]) continue;
        printf("%s[%d,%d]", first ? "" : ",", j, id_of(t->src[j]));
        first = false;
    }
    std::string name = t->name;
    for (auto & c : name) if (c == '"' || c == '\\' || (unsigned char) c < 32) c = '_';
    printf("],\"name\":\"%s\"}\n", name.c_str());
}

int main(int argc, char ** argv) {
    if (argc < 2) { fprintf(stderr, "usage: graph_dump model.gguf [key=val...]\n"); return 1; }
    llama_backend_init();
    llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    auto mp = llama_model_default_params();
    auto cp = llama_context_default_params();
    mp.no_alloc = true;
    for (int i = 2; i < argc; i++) {
        std::string a = argv[i];
        auto eq = a.find('=');
        std::string k = a.substr(0, eq), v = a.substr(eq + 1);
        if (k == "n_ctx") cp.n_ctx = atoi(v.c_str());
        else if (k == "n_batch") cp.n_batch = atoi(v.c_str());
        else if (k == "n_ubatch") cp.n_ubatch = atoi(v.c_str());
        else if (k == "n_seq_max") cp.n_seq_max = atoi(v.c_str());
        else if (k == "fa") cp.flash_attn_type = (llama_flash_attn_type) atoi(v.c_str());
        else if (k == "swa_full") cp.swa_full = atoi(v.c_str());
        else if (k == "kv_unified") cp.kv_unified = atoi(v.c_str());
        else if (k == "type_k") cp.type_k = parse_type(v.c_str());
        else if (k == "type_v") cp.type_v = parse_type(v.c_str());
        else if (k == "no_alloc") mp.no_alloc = atoi(v.c_str());
        else if (k == "embeddings") cp.embeddings = atoi(v.c_str());
        else { fprintf(stderr, "unknown key %s\n", k.c_str()); return 1; }
    }
    gguf_init_params gp = { /*no_alloc*/ true, /*ctx*/ nullptr };
    gguf_context * meta = gguf_init_from_file(argv[1], gp);
    if (!meta) { fprintf(stderr, "gguf read failed\n"); return 2; }
    llama_model * model = llama_model_init_from_user(meta, [](ggml_tensor *, void *) {}, nullptr, mp);
    if (!model) { fprintf(stderr, "load failed\n"); return 2; }
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "ctx failed\n"); return 3; }
    auto mb = llama_get_memory_breakdown(ctx);
    const uint32_t n_tokens = std::min(llama_n_ctx(ctx), llama_n_ubatch(ctx));
    const uint32_t n_seqs = llama_n_seq_max(ctx);
    ggml_cgraph * gf = llama_graph_reserve(ctx, n_tokens, n_seqs, n_tokens);
    if (!gf) { fprintf(stderr, "reserve failed\n"); return 4; }
    for (int i = 0; i < gf->n_leafs; i++) dump("L", i, gf->leafs[i]);
    for (int i = 0; i < gf->n_nodes; i++) dump("N", i, gf->nodes[i]);
    {  // the same graph through ggml's allocator alone (no scheduler): separates the allocator from the splits
        ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
        size_t sz = 0;
        ggml_gallocr_reserve_n_size(ga, gf, nullptr, nullptr, &sz);
        printf("{\"k\":\"G\",\"compute\":%zu}\n", sz);
        if (const char * tp = getenv("TRACE_PREFIX")) {  // with a tracing build of ggml-alloc.c: one prefix traced
            ggml_cgraph view = ggml_graph_view(gf, 0, atoi(tp));
            view.leafs = gf->leafs;
            view.n_leafs = gf->n_leafs;
            setenv("AT_TRACE", "1", 1);
            ggml_gallocr_reserve_n_size(ga, &view, nullptr, nullptr, &sz);
            unsetenv("AT_TRACE");
        }
        if (getenv("PREFIX_SIZES")) {  // the allocator's size after each node (for finding where a port departs)
            for (int k = 1; k <= gf->n_nodes; k++) {
                ggml_cgraph view = ggml_graph_view(gf, 0, k);
                view.leafs = gf->leafs;
                view.n_leafs = gf->n_leafs;
                ggml_gallocr_reserve_n_size(ga, &view, nullptr, nullptr, &sz);
                printf("{\"k\":\"P\",\"n\":%d,\"compute\":%zu}\n", k, sz);
            }
        }
        ggml_gallocr_free(ga);
    }
    for (auto & [buft, d] : mb) {
        printf("{\"k\":\"B\",\"buft\":\"%s\",\"model\":%zu,\"context\":%zu,\"compute\":%zu}\n",
               ggml_backend_buft_name(buft), d.model, d.context, d.compute);
    }
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
