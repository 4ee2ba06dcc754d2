"""The commands as library functions: a typed request in (kvplan.options.requests, built by
kvplan.options.build), the typed report out (kvplan.report.document.Document). Each loads its models once, asks the
layers below, and builds the report; nothing here parses a flag, prints, writes a file or formats a number.
Long work reports to ``progress`` (kvplan.progress) when one is given.

The command line (kvplan.cli) and the keyword functions of the library (kvplan.api) both call these.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvplan.capacity.request import Request
from kvplan.options.requests import (
    CheckRequest,
    CommandRequest,
    CompareRequest,
    CurveRequest,
    ExplainRequest,
    FitRequest,
    GpusRequest,
    ModelsRequest,
    SimulateRequest,
)
from kvplan.progress import Progress, listening, report
from kvplan.report.document import Document
from kvplan.report.server_flags import with_server_flags
from kvplan.units import Units


def estimate(req: Request, units: Units = Units.IEC, progress: Progress | None = None) -> Document:
    """What llama.cpp allocates for the request's KV cache and state, per cache, and why."""
    from kvplan.capacity.deployment import evaluate_request, load_models, model_of
    from kvplan.report.estimate import estimate_document

    with listening(progress):
        req = load_models(req)
        return with_server_flags(estimate_document(evaluate_request(model_of(req), req), units), req.server_flags)


def fit(req: FitRequest, units: Units = Units.IEC, progress: Progress | None = None) -> Document:
    """What fits on the request's GPUs: llama.cpp's own fit (``fit_on``), or the flags as given and the solver."""
    from kvplan.capacity.deployment import evaluate_request, load_models, model_of
    from kvplan.report.fit import fit_document, fit_on_document

    with listening(progress):
        r = load_models(req.request)
        model = model_of(r)
        if req.fit_on is None:
            return with_server_flags(fit_document(evaluate_request(model, r), units), r.server_flags)
        from kvplan.capacity.llamacpp_fit import choose

        choice, chosen = choose(model, r, req.fit_on.margins_mib, req.fit_on.n_ctx_min)
        return with_server_flags(fit_on_document(choice, evaluate_request(model, chosen), r, units), r.server_flags)


def compare(req: CompareRequest, units: Units = Units.IEC, progress: Progress | None = None) -> Document:
    """The model's attention layout next to MHA / GQA / MQA what-ifs and every cache type."""
    from kvplan.analysis.compare import compare as build
    from kvplan.capacity.deployment import load_models, model_of
    from kvplan.capacity.llamacpp_settings import settings_for
    from kvplan.report.compare import compare_document
    from kvplan.runtimes.llamacpp import Backend

    with listening(progress):
        r = load_models(req.request)
        doc = compare_document(build(model_of(r), settings_for(r.llamacpp, Backend.CPU), req.contexts))
        return with_server_flags(doc, r.server_flags)


def curve(req: CurveRequest, units: Units = Units.IEC, progress: Progress | None = None) -> Document:
    """Bytes against context per cache; with GPUs, the decode floor at each point."""
    from kvplan.analysis.curve import curve as build
    from kvplan.capacity.deployment import load_models, model_of
    from kvplan.capacity.llamacpp_settings import settings_for
    from kvplan.report.curve import curve_document
    from kvplan.runtimes.llamacpp import Backend

    with listening(progress):
        r = load_models(req.request)
        model = model_of(r)
        result = build(model, settings_for(r.llamacpp, Backend.CPU), req.contexts)
        if r.hardware is None:
            return with_server_flags(curve_document(result), r.server_flags)
        from kvplan.simulation.setup import decode_floors

        totals = tuple(p.total_bytes for p in result.points)
        decode, basis = decode_floors(model, r, totals, result.first.context.n_seq, req.bandwidth)
        return with_server_flags(curve_document(result, decode, basis), r.server_flags)


def simulate(req: SimulateRequest, units: Units = Units.IEC, progress: Progress | None = None) -> Document:
    """The workload through llama-server's slots or vLLM's scheduler, with the simulation's budgets."""
    from kvplan.capacity.deployment import load_models, model_of
    from kvplan.report.simulate import simulate_document
    from kvplan.simulation.budgets import findings
    from kvplan.simulation.setup import prepare

    with listening(progress):
        r = load_models(req.request)
        prepared = prepare(
            model_of(r),
            r,
            async_scheduling=req.async_scheduling,
            bandwidth=req.bandwidth,
            peak_tflops=req.peak_tflops,
            sglang=req.sglang,
        )
        span = req.workload.span

        def step(t: float, n: int) -> None:
            report("simulating", t, span, "s", f"{n:,} requests")

        result = prepared.run(req.workload, step)
        doc = simulate_document(prepared, req.workload, result, units, findings(result, req.budgets))
        return with_server_flags(doc, r.server_flags)


def check(req: CheckRequest, units: Units = Units.IEC, progress: Progress | None = None) -> Document:
    """Every deployment of the file against its budgets."""
    from kvplan.checks.deployments import load_deployments
    from kvplan.checks.evaluate import check_exit, evaluate
    from kvplan.report.check import check_document

    with listening(progress):
        deployments = load_deployments(req.path)
        results = []
        for i, d in enumerate(deployments):
            report("checking", i, len(deployments), "deployments", d.name)
            results.append(evaluate(d))
        return check_document(results, check_exit(results), units)


def models(req: ModelsRequest, units: Units = Units.IEC, progress: Progress | None = None) -> Document:
    """The built-in catalog, of one architecture or family where given."""
    from kvplan.analysis.catalog import catalog_entries
    from kvplan.report.catalog import catalog_document

    return catalog_document(catalog_entries(req.arch, req.family))


def gpus(req: GpusRequest, units: Units = Units.IEC, progress: Progress | None = None) -> Document:
    """The GPU presets."""
    from kvplan.report.gpus import gpus_document

    return gpus_document()


def explain(req: ExplainRequest, units: Units = Units.IEC, progress: Progress | None = None) -> Document:
    """A llama.cpp, vLLM or SGLang startup log against kvplan's plan of the settings it states, figure by figure."""
    from kvplan.analysis.explain import explain_llamacpp, model_for
    from kvplan.report.explain import explain_document
    from kvplan.sources.llamacpp_log import LlamaCppLog, read_server_log
    from kvplan.sources.sglang_log import SglangLog

    log = read_server_log(req.log)
    if not isinstance(log, LlamaCppLog):
        from kvplan.analysis.explain_vllm import GpuFacts, engine_model_for
        from kvplan.capacity.hardware import gpu_table, parse_gpus

        model = engine_model_for(log.model, req.log, req.model)
        preset = parse_gpus(req.gpu).model if req.gpu else gpu_table()["H10080GB"]
        assert preset is not None
        gpu = GpuFacts(preset.name, preset.memory_bytes, preset.capability)
        if isinstance(log, SglangLog):
            from kvplan.analysis.explain_sglang import explain_sglang
            from kvplan.report.explain import explain_sglang_document

            return explain_sglang_document(explain_sglang(log, model, gpu, req.gpu is None), model, units)
        from kvplan.analysis.explain_vllm import explain_vllm
        from kvplan.report.explain import explain_vllm_document

        return explain_vllm_document(explain_vllm(log, model, gpu, req.gpu is None), model, units)
    model = model_for(log, req.log, req.model)
    return explain_document(explain_llamacpp(log, model), log.runs, model, units, log.build)


RUN: dict[str, Callable[[Any, Units, Progress | None], Document]] = {
    "estimate": estimate,
    "fit": fit,
    "compare": compare,
    "curve": curve,
    "check": check,
    "simulate": simulate,
    "models": models,
    "gpus": gpus,
    "explain": explain,
}


def run(command: str, req: CommandRequest, units: Units = Units.IEC, progress: Progress | None = None) -> Document:
    """The command ``command`` (kvplan.options.commands) on its typed request."""
    return RUN[command](req, units, progress)
