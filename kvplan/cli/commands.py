"""The commands: which options each takes, and a body that builds the request, calls the library and returns a
Document. Nothing here computes a number or formats one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from kvplan.capacity.request import Raw, Request, build_request
from kvplan.capacity.settings import SETTINGS_BY_DEST
from kvplan.cli.argv import Option, Parsed, Positional
from kvplan.errors import OutputError, UsageError
from kvplan.report.document import Document, Format
from kvplan.units import Units

MODEL = Positional(
    "MODEL",
    "a .gguf file (or http(s)://, hf:// URL), a .yaml spec, a config.json or model folder, "
    "or a catalog name or its Hugging Face id (`kvplan models`)",
)
FORMATS = tuple(f.value for f in Format)
OUTPUT = (
    Option("format", ("-o", "--format"), f"{', '.join(FORMATS)} (table)", "output", "FORMAT"),
    Option(
        "units",
        ("--units",),
        "iec (KiB, MiB, GiB), si (kB, MB, GB) or bytes, for every figure a person reads; "
        "CSV and JSON always carry integer bytes",
        "output",
        "UNITS",
    ),
)
OUTPUT_GROUPS = {"output": "Output", "command": "Options"}


def _settings(*dests: str) -> tuple[Option, ...]:
    return tuple(Option.of(SETTINGS_BY_DEST[d]) for d in dests)


LLAMACPP_CONTEXT = (
    "ctx_size",
    "ctx_per_seq",
    "parallel",
    "kv_unified",
    "batch_size",
    "ubatch_size",
    "cache_type_k",
    "cache_type_v",
    "flash_attn",
    "swa_full",
)
ENGINE = (
    "max_model_len",
    "max_num_seqs",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "kv_cache_dtype",
    "block_size",
    "gpu_memory_utilization",
    "mem_fraction_static",
    "free_gpu_memory_fraction",
    "max_num_batched_tokens",
    "disable_hybrid_kv_cache_manager",
    "kv_cache_memory_bytes",
    "enable_prefix_caching",
    "mamba_ssm_cache_dtype",
)
BUDGETS = ("max_kv", "max_total", "min_ctx", "min_parallel", "headroom")
#: simulate's budgets (kvplan.simulation.budgets.SIM_BUDGETS, repeated here so that --help imports nothing heavy)
SIM_BUDGET_FLAGS = {
    "max_preemptions": ("--max-preemptions", "preemptions over the run"),
    "max_failed": ("--max-failed", "requests the server fails (llama-server: context exceeded, prompt too long)"),
    "max_ttft_p99": ("--max-ttft-p99", "the p99 TTFT floor (500ms, 2s)"),
    "max_itl_p99": ("--max-itl-p99", "the p99 inter-token latency floor (50ms)"),
    "max_peak_kv": ("--max-peak-kv", "the peak share of KV blocks in use (90%)"),
}


@dataclass(frozen=True)
class Invocation:
    parsed: Parsed
    fmt: Format
    units: Units
    model: object = None  # a ModelDescription already loaded (the library API), else MODEL is read

    def raw(self, *exclude: str) -> dict[str, Raw]:
        return {k: v for k, v in self.parsed.values.items() if k in SETTINGS_BY_DEST and k not in exclude}

    def value(self, dest: str) -> str | None:
        item = self.parsed.values.get(dest)
        return None if item is None else str(item.value)


@dataclass(frozen=True)
class Command:
    name: str
    brief: str  # one line for `kvplan --help`
    summary: str
    positionals: tuple[Positional, ...]
    options: tuple[Option, ...]
    body: Callable[[Invocation], Document]
    extra_groups: dict[str, str] = field(default_factory=lambda: dict(OUTPUT_GROUPS))


def _request(inv: Invocation, *, need_hardware: bool = False, exclude: tuple[str, ...] = ()) -> Request:
    table = None
    path = inv.value("gpus_file")
    if path is not None:
        from kvplan.capacity.hardware import parse_gpu_table
        from kvplan.sources.files import load_nodes, plain, read_text

        text = read_text(path, "a GPU table (NAME: memory)")
        try:
            table = parse_gpu_table(plain(load_nodes(text, path, "the file is empty; expected NAME: memory lines")))
        except ValueError as exc:
            from kvplan.errors import SpecError

            raise SpecError(path, None, None, str(exc)) from None
    req = build_request(
        inv.parsed.positionals["MODEL"], inv.raw("gpus_file", *exclude), gpu_table=table, need_hardware=need_hardware
    )
    return req if inv.model is None else replace(req, loaded=inv.model)


def estimate(inv: Invocation) -> Document:
    from kvplan.capacity.deployment import evaluate_request, load_model_for
    from kvplan.report.estimate import estimate_document

    req = _request(inv)
    return estimate_document(evaluate_request(load_model_for(req), req), inv.units)


def fit(inv: Invocation) -> Document:
    from kvplan.capacity.deployment import evaluate_request, load_model_for
    from kvplan.report.fit import fit_document

    req = _request(inv, need_hardware=True, exclude=("fit", "fit_target", "fit_ctx"))
    given = inv.value("fit")
    # llama.cpp's default is --fit on (common_params::fit_params); the serving engines have no such fit
    mode = str(given if given is not None else "off" if req.is_engine else "on").strip().lower()
    if mode not in ("on", "off"):
        raise UsageError(f"expected on or off, not {mode!r}", inv.parsed.values["fit"].origin.key)
    if mode == "off":
        for dest in ("fit_target", "fit_ctx"):
            if inv.value(dest) is not None:
                raise UsageError("applies to llama.cpp's fit: give --fit on", inv.parsed.values[dest].origin.key)
        return fit_document(evaluate_request(load_model_for(req), req), inv.units)
    from kvplan.capacity.llamacpp_fit import choose
    from kvplan.report.fit import fit_on_document

    if req.is_engine:
        raise UsageError("llama.cpp's fit is llama.cpp's: drop --engine", inv.parsed.values["fit"].origin.key)
    margins = _fit_targets(inv)
    n_ctx_min = _int_option(inv, "fit_ctx", 4096)
    model = load_model_for(req)
    choice, chosen = choose(model, req, margins, n_ctx_min)
    return fit_on_document(choice, evaluate_request(model, chosen), req, inv.units)


def _fit_targets(inv: Invocation) -> tuple[int, ...]:
    raw = inv.value("fit_target")
    if raw is None:
        return (1024,)
    try:
        values = tuple(int(x) for x in str(raw).split(","))
        if not values or any(v < 0 or v > 1 << 30 for v in values):
            raise ValueError
    except ValueError:
        raise UsageError(f"expected MiB per device, 1024 or 1024,2048, not {raw!r}", "--fit-target") from None
    return values


def _int_option(inv: Invocation, dest: str, default: int) -> int:
    raw = inv.value(dest)
    if raw is None:
        return default
    text = str(raw).strip()
    if not text.isdigit() or not 0 < int(text) <= 1 << 24:
        raise UsageError(f"expected a whole number of tokens, not {raw!r}", inv.parsed.values[dest].origin.key)
    return int(text)


def _contexts(inv: Invocation, default: str | None) -> tuple[object, Request]:
    from kvplan.analysis.curve import parse_contexts

    item = inv.parsed.values.get("contexts")
    text = str(item.value) if item is not None else default
    contexts = None
    if text is not None:
        try:
            contexts = parse_contexts(text)
        except ValueError as exc:
            raise UsageError(str(exc), item.origin.key if item else "--ctx-size") from None
    return contexts, _request(inv, exclude=("contexts",))


def compare(inv: Invocation) -> Document:
    from kvplan.analysis.compare import compare as build
    from kvplan.analysis.curve import Contexts
    from kvplan.capacity.deployment import load_model_for
    from kvplan.capacity.llamacpp_settings import settings_for
    from kvplan.report.compare import compare_document
    from kvplan.runtimes.llamacpp import Backend

    contexts, req = _contexts(inv, None)
    points = contexts.points if isinstance(contexts, Contexts) else ()
    return compare_document(build(load_model_for(req), settings_for(req.llamacpp, Backend.CPU), points))


def curve(inv: Invocation) -> Document:
    from kvplan.analysis.curve import Contexts
    from kvplan.analysis.curve import curve as build
    from kvplan.capacity.deployment import load_model_for
    from kvplan.capacity.llamacpp_settings import settings_for
    from kvplan.report.curve import chart, curve_document
    from kvplan.runtimes.llamacpp import Backend

    contexts, req = _contexts(inv, "1k:128k")
    assert isinstance(contexts, Contexts)
    model = load_model_for(req)
    result = build(model, settings_for(req.llamacpp, Backend.CPU), contexts)
    svg_path = inv.value("svg")
    if svg_path is not None:
        from kvplan.render.chart import svg

        write_file(svg_path, svg(chart(result), inv.units))
    if req.hardware is None:
        return curve_document(result)
    from kvplan.capacity.weights import model_weights
    from kvplan.simulation.roofline import active, decode_floor, expert_fraction
    from kvplan.simulation.setup import hardware_for

    hw = hardware_for(req, _float(inv, "bandwidth", low=1, high=1e6), None, need_peak=False)
    weights = model_weights(model, req.weights, req.weight_bytes)
    act = active(model, expert_fraction(model))
    # a token reads one row of the embedding table; an MoE step at least its dense part and one token's experts
    read = round((weights.total_bytes - weights.input_bytes) * act.read_share)
    decode = tuple(decode_floor(read, p.total_bytes, hw) for p in result.points)
    basis = (
        f"decode reads: the weights a token passes through ({weights.basis}) and the whole cache, once per step, "
        f"for all {result.first.context.n_seq} sequence(s); ITL floor = that at {hw.bandwidth / 1e12:.3g} TB/s "
        f"({hw.source}), a floor, never a measurement" + (f"; {act.note}" if act.note else "")
    )
    return curve_document(result, decode, basis)


def check(inv: Invocation) -> Document:
    from kvplan.checks.deployments import load_deployments
    from kvplan.checks.evaluate import check_exit, evaluate
    from kvplan.report.check import check_document

    results = [evaluate(d) for d in load_deployments(inv.parsed.positionals["FILE"])]
    doc = check_document(results, check_exit(results), inv.units)
    junit = inv.value("junit")
    if junit is not None:
        from kvplan.render.junit import junit as render_junit

        write_file(junit, render_junit(doc))
    return doc


def models(inv: Invocation) -> Document:
    from kvplan.analysis.catalog import catalog_entries
    from kvplan.report.catalog import catalog_document

    return catalog_document(catalog_entries(inv.value("arch"), inv.value("family")))


def _float(inv: Invocation, dest: str, *, low: float, high: float) -> float | None:
    text = inv.value(dest)
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not low <= value <= high:
        raise UsageError(
            f"expected a number from {low:g} to {high:g}, not {text!r}", inv.parsed.values[dest].origin.key
        )
    return value


def simulate(inv: Invocation) -> Document:
    import sys

    from kvplan.capacity.deployment import load_model_for
    from kvplan.report.simulate import simulate_document
    from kvplan.simulation.budgets import SIM_BUDGETS, findings, sim_budgets
    from kvplan.simulation.setup import prepare
    from kvplan.simulation.workload import WORKLOAD_KEYS, workload_file, workload_from

    req = _request(inv, need_hardware=True)
    given: dict[str, tuple[object, str]] = {}
    lines: dict[str, int] = {}
    path = inv.value("workload")
    if path is not None:
        given, lines = workload_file(path)
    cli = {key: (inv.value(key), flag) for key, flag in WORKLOAD_KEYS.items() if inv.value(key) is not None}
    if "request_rate" in cli or "max_concurrency" in cli or "trace" in cli:  # the flags' mode replaces the file's
        for mode in ("request_rate", "max_concurrency", "trace"):
            given.pop(mode, None)
    given.update(cli)
    try:
        workload = workload_from(given)
    except UsageError as exc:
        if path is not None and exc.param in lines:
            from kvplan.errors import SpecError

            raise SpecError(path, lines[exc.param], exc.param, exc.detail) from None
        raise
    budgets = sim_budgets(
        {key: (inv.value(key), flag) for key, (flag, _) in SIM_BUDGETS.items() if inv.value(key) is not None}
    )
    model = load_model_for(req)
    prepared = prepare(
        model,
        req,
        async_scheduling=(inv.value("async_scheduling") or "True") == "True",
        bandwidth=_float(inv, "bandwidth", low=1, high=1e6),
        peak_tflops=_float(inv, "peak_tflops", low=0.1, high=1e6),
    )
    show = sys.stderr.isatty()

    def progress(t: float, n: int) -> None:
        if show:
            sys.stderr.write(f"\rsimulating: {t:,.1f} s of traffic, {n:,} requests")
            sys.stderr.flush()

    result = prepared.run(workload, progress)
    if show:
        sys.stderr.write("\r\033[K")
    doc = simulate_document(prepared, workload, result, inv.units, findings(result, budgets))
    svg = inv.value("svg")
    if svg is not None:
        from kvplan.render.simulate_svg import render as render_svg

        write_file(svg, render_svg(doc))
    return doc


def gpus(inv: Invocation) -> Document:
    from kvplan.report.gpus import gpus_document

    return gpus_document()


def write_file(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None


CONTEXTS_COMPARE = Option(
    "contexts",
    ("-c", "--ctx-size", "--ctx"),
    "contexts shared by the -np sequences, as "
    "llama.cpp's -c: 8k,32k,128k (or a range 1k:128k); default: the trained context",
    "llama.cpp",
    "LIST",
)
CONTEXTS_CURVE = Option(
    "contexts",
    ("-c", "--ctx-size", "--ctx"),
    "1k:1M (doubling), 1k:64k:4k (a step; the end is included) or 4k,8k,32k (a list); default 1k:128k",
    "llama.cpp",
    "RANGE",
)

COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        Command(
            "estimate",
            "bytes llama.cpp allocates for KV cache and state, and why",
            "How many bytes llama.cpp allocates for the KV cache and state of MODEL, exactly, and why.",
            (MODEL,),
            (
                *_settings(
                    *LLAMACPP_CONTEXT,
                    "rs_seq",
                    "backend",
                    "mtp",
                    "spec_type",
                    "model_draft",
                    "cache_type_k_draft",
                    "cache_type_v_draft",
                    "max_kv",
                    "max_total",
                    "min_ctx",
                ),
                *OUTPUT,
            ),
            estimate,
        ),
        Command(
            "fit",
            "what fits on GPUs: longest context, most sequences, cheapest cache",
            "What fits on the GPUs for llama.cpp (or --engine vllm|sglang|trtllm): without a context, the "
            "longest that fits; with --ctx-per-seq (or --max-model-len) alone, the most sequences; with both, a "
            "check; --cache-types auto, the least lossy cache types.",
            (MODEL,),
            (
                *_settings(
                    "gpu",
                    "memory",
                    "gpus_file",
                    "engine",
                    *LLAMACPP_CONTEXT,
                    "n_gpu_layers",
                    "tensor_split",
                    "override_tensor",
                    "cpu_moe",
                    "n_cpu_moe",
                    "no_kv_offload",
                    "model_draft",
                    "gpu_layers_draft",
                    "mtp",
                    "spec_type",
                    "cache_type_k_draft",
                    "cache_type_v_draft",
                    "backend",
                    *ENGINE,
                    "weights",
                    "weight_bytes",
                    "params",
                    "overhead",
                    "cache_types",
                    *BUDGETS,
                ),
                Option(
                    "fit",
                    ("-fit", "--fit"),
                    "on: the -c, -ngl, -ts and -ot llama.cpp's own fit chooses from the flags given "
                    "(common_fit_params, ported; exact with the compute measured: --overhead); off: kvplan plans "
                    "exactly the flags given, and answers the longest context or the most sequences (on, as "
                    "llama.cpp; the engines: off)",
                    "llama.cpp",
                    "on|off",
                ),
                Option(
                    "fit_target",
                    ("-fitt", "--fit-target"),
                    "with --fit on: MiB each GPU keeps free (1024; one value, or one per GPU)",
                    "llama.cpp",
                    "MiB[,MiB]",
                ),
                Option(
                    "fit_ctx",
                    ("-fitc", "--fit-ctx"),
                    "with --fit on: the smallest context the fit may choose (4096)",
                    "llama.cpp",
                    "N",
                ),
                *OUTPUT,
            ),
            fit,
        ),
        Command(
            "compare",
            "MHA / GQA / MQA what-ifs and every cache type, side by side",
            "MODEL's attention layout next to MHA / GQA / MQA what-ifs and every cache type, side by side.",
            (MODEL,),
            (
                CONTEXTS_COMPARE,
                *_settings(*[d for d in LLAMACPP_CONTEXT if d not in ("ctx_size", "ctx_per_seq")]),
                *OUTPUT,
            ),
            compare,
        ),
        Command(
            "curve",
            "bytes against context per cache; --svg for a chart",
            "Bytes against context for each cache: padding steps, where windows stop growing, the slope.",
            (MODEL,),
            (
                CONTEXTS_CURVE,
                *_settings(
                    *[d for d in LLAMACPP_CONTEXT if d not in ("ctx_size", "ctx_per_seq")],
                    "rs_seq",
                    "gpu",
                    "weights",
                    "weight_bytes",
                    "params",
                ),
                Option(
                    "bandwidth",
                    ("--bandwidth",),
                    "with --gpu: memory bandwidth, GB/s (default: the GPU table's)",
                    "hardware",
                    "GB/S",
                ),
                Option("svg", ("--svg",), "also write the chart as an SVG file", "output", "FILE"),
                *OUTPUT,
            ),
            curve,
        ),
        Command(
            "check",
            "every deployment of a file against its budgets (CI)",
            "Every deployment of FILE against its budgets: exit 0 all pass, 1 a budget fails, 3 bad "
            "input, 4 unsupported.",
            (Positional("FILE", "the deployments file (README: CI checks)"),),
            (Option("junit", ("--junit",), "also write a JUnit XML report to this file", "output", "FILE"), *OUTPUT),
            check,
        ),
        Command(
            "simulate",
            "requests over time: llama-server's slots, vLLM's scheduler",
            "A workload through llama-server's slots (the default runtime) or vLLM 0.33's own scheduler (--engine "
            "vllm; ported and proven step for step): KV in use, failed requests or preemptions, and cancels over "
            "time, and roofline floors for TTFT and inter-token latency.",
            (MODEL,),
            (
                *_settings(
                    "gpu",
                    "memory",
                    "gpus_file",
                    "engine",
                    *LLAMACPP_CONTEXT,
                    *ENGINE,
                    "weights",
                    "weight_bytes",
                    "params",
                    "overhead",
                ),
                Option(
                    "async_scheduling",
                    ("--async-scheduling",),
                    "vLLM's async scheduling, on by default",
                    "engine",
                    None,
                    negate=("--no-async-scheduling",),
                ),
                Option(
                    "workload",
                    ("--workload",),
                    "a YAML file of these workload keys (request_rate: 10, prompt_len: ..., as a deployments "
                    "entry's workload:); flags given as well win",
                    "workload",
                    "FILE",
                ),
                Option("request_rate", ("--request-rate",), "Poisson arrivals, requests per second", "workload", "R"),
                Option("max_concurrency", ("--max-concurrency",), "instead: N requests always in flight", "workload"),
                Option(
                    "trace",
                    ("--trace",),
                    "instead: a JSONL or CSV trace of arrival, prompt_tokens, output_tokens[, cancel_after] (seconds)",
                    "workload",
                    "FILE",
                ),
                Option(
                    "prompt_len",
                    ("--prompt-len", "--input-len"),
                    "prompt tokens: N, uniform:LO:HI or lognormal:MEDIAN:SIGMA (1024)",
                    "workload",
                    "DIST",
                ),
                Option("output_len", ("--output-len",), "output tokens, the same forms (256)", "workload", "DIST"),
                Option("duration", ("--duration",), "seconds of arrivals (60); the run drains after", "workload", "S"),
                Option(
                    "cancel_rate",
                    ("--cancel-rate",),
                    "share of requests the client cancels, after a random share of their tokens (0)",
                    "workload",
                    "P",
                ),
                Option("shared_prefix", ("--shared-prefix",), "tokens every prompt starts with (0)", "workload"),
                Option("seed", ("--seed",), "the random seed (0)", "workload"),
                Option(
                    "bandwidth",
                    ("--bandwidth",),
                    "GPU memory bandwidth, GB/s (default: the GPU table's)",
                    "hardware",
                    "GB/S",
                ),
                Option(
                    "peak_tflops",
                    ("--peak-tflops",),
                    "dense BF16 peak, TFLOPS (default: the GPU table's)",
                    "hardware",
                    "T",
                ),
                *(Option(k, (flag,), what, "budgets", "LIMIT") for k, (flag, what) in SIM_BUDGET_FLAGS.items()),
                Option(
                    "svg", ("--svg",), "also write blocks, running and waiting over time as an SVG", "output", "FILE"
                ),
                *OUTPUT,
            ),
            simulate,
            extra_groups={**OUTPUT_GROUPS, "workload": "Workload", "budgets": "Budgets (exit 1 when one fails)"},
        ),
        Command(
            "models",
            "the built-in catalog of models",
            "The built-in catalog of model specs.",
            (),
            (
                Option("arch", ("--arch",), "only models of this GGUF architecture", "command", "ARCH"),
                Option(
                    "family", ("--family",), "only models of this family (llama, qwen, gemma, ...)", "command", "NAME"
                ),
                *OUTPUT,
            ),
            models,
        ),
        Command(
            "gpus",
            "the GPU presets --gpu takes",
            "The GPU presets --gpu takes, with the memory kvplan uses and where it comes from.",
            (),
            OUTPUT,
            gpus,
        ),
    )
}
