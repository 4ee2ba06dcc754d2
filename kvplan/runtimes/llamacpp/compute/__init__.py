"""llama.cpp's compute buffers: its worst-case graph (graph.py, builders per architecture) planned by a port of
ggml's graph allocator (alloc.py)."""
