// llama-fit-params --fit-print on, in bytes: the memory llama.cpp projects per device (model, context, compute)
// for the flags given, as common_get_device_memory_data (common/fit.cpp) measures it and common_fit_print prints
// it in MiB: the model and a context loaded with no_alloc, each buffer type's bytes summed per device, host
// buffer types on the Host line. Built against the fit oracle (../shared/oracle/build_fit.sh) by
// scripts/oracle/build_fit_bytes.sh; the devices are ggml RPC servers (--rpc), whose buffers follow the CPU
// backend's rules. FIT_BYTES_LOG=1 passes llama.cpp's log (GGML_SCHED_DEBUG=2: the scheduler's splits) to stderr.
#include "arg.h"
#include "common.h"
#include "llama.h"
#include "../src/llama-ext.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char ** argv) {
    common_params params;
    common_init();
    if (!common_params_parse(argc, argv, params, LLAMA_EXAMPLE_FIT_PARAMS)) {
        return 1;
    }
    llama_backend_init();
    auto mparams = common_model_params_to_llama(params);
    auto cparams = common_context_params_to_llama(params);
    mparams.no_alloc = true;
    mparams.load_mode = LLAMA_LOAD_MODE_NONE;
    if (getenv("FIT_BYTES_LOG")) {
        llama_log_set([](ggml_log_level, const char * text, void *) { fputs(text, stderr); }, nullptr);
    } else {
        llama_log_set([](ggml_log_level level, const char * text, void *) {
            if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
        }, nullptr);
    }
    llama_model * model = llama_model_load_from_file(params.model.path.c_str(), mparams);
    if (!model) { fprintf(stderr, "failed to load model\n"); return 2; }
    llama_context * ctx = llama_init_from_model(model, cparams);
    if (!ctx) { fprintf(stderr, "failed to create the context\n"); return 3; }
    const size_t nd = llama_model_n_devices(model);
    struct row { size_t model = 0, context = 0, compute = 0; };
    std::vector<row> rows(nd + 1);
    for (const auto & [buft, mb] : llama_get_memory_breakdown(ctx)) {
        size_t at = nd;
        if (!ggml_backend_buft_is_host(buft)) {
            ggml_backend_dev_t dev = ggml_backend_buft_get_device(buft);
            at = nd + 1;
            for (size_t i = 0; i < nd; i++) {
                if (dev == llama_model_get_device(model, i)) { at = i; break; }
            }
            if (at > nd) continue;
        }
        rows[at].model += mb.model;
        rows[at].context += mb.context;
        rows[at].compute += mb.compute;
    }
    for (size_t i = 0; i <= nd; i++) {
        printf("%s %zu %zu %zu\n", i < nd ? ggml_backend_dev_name(llama_model_get_device(model, i)) : "Host",
               rows[i].model, rows[i].context, rows[i].compute);
    }
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
