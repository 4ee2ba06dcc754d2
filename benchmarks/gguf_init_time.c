// Times llama.cpp's own GGUF parser (gguf_init_from_file, metadata only) on a file, best of N runs.
// Build: cc -O2 benchmarks/gguf_init_time.c -I$L/ggml/include -L$BUILD/bin -lggml-base -Wl,-rpath,$BUILD/bin
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "gguf.h"

int main(int argc, char ** argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s FILE [RUNS]\n", argv[0]); return 2; }
    int runs = argc > 2 ? atoi(argv[2]) : 10;
    double best = 1e9;
    for (int i = 0; i < runs; i++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        struct gguf_init_params p = { /*no_alloc =*/ true, /*ctx =*/ NULL };
        struct gguf_context * ctx = gguf_init_from_file(argv[1], p);
        clock_gettime(CLOCK_MONOTONIC, &b);
        if (!ctx) { fprintf(stderr, "gguf_init_from_file failed\n"); return 1; }
        gguf_free(ctx);
        double s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
        if (s < best) best = s;
    }
    printf("%.6f\n", best);
    return 0;
}
