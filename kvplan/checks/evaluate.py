"""`kvplan check`: every deployment evaluated with the same code as `estimate` and `fit` — it passes, fails a
budget (with the nearest setting that passes every budget), or errors (its model cannot be read, or the runtime
refuses it) without hiding the others."""

from __future__ import annotations

from dataclasses import dataclass, replace

from kvplan.capacity.deployment import Evaluation, evaluate_request, load_models, model_of
from kvplan.capacity.request import Request
from kvplan.checks.deployments import Deployment
from kvplan.errors import EXIT_NO, EXIT_OK, KvplanError, overall_exit
from kvplan.model import ModelDescription


@dataclass(frozen=True)
class DeploymentResult:
    deployment: Deployment
    evaluation: Evaluation | None
    error: KvplanError | None = None

    @property
    def name(self) -> str:
        return self.deployment.name

    @property
    def status(self) -> str:
        if self.error is not None:
            return "error"
        assert self.evaluation is not None
        return "pass" if self.evaluation.passed else "fail"

    @property
    def exit_code(self) -> int:
        if self.error is not None:
            return self.error.exit_code
        return EXIT_OK if self.status == "pass" else EXIT_NO


def checked_request(model: ModelDescription, req: Request) -> Request:
    """A deployment is a check of one configuration: what it leaves out takes the runtime's default (llama.cpp
    -c 0, the trained context; an engine's --max-model-len, the context the engine derives). An engine's
    max_num_seqs is its scheduler cap: the deployment passes when the engine starts (one request of max_model_len
    fits); ``min_parallel`` is the budget for requests that must fit at once."""
    if req.is_engine:
        e = req.engine
        from kvplan.runtimes.engines import ENGINES

        default = ENGINES[req.runtime].default_max_len(model)
        return replace(req, engine=replace(e, max_model_len=e.max_model_len or default))
    o = req.llamacpp
    if o.ctx_size is None and o.ctx_per_seq is None:
        return replace(req, llamacpp=replace(o, ctx_size=0))
    if o.ctx_per_seq is not None and o.parallel is None:
        return replace(req, llamacpp=replace(o, parallel=1))
    return req


def evaluate(dep: Deployment) -> DeploymentResult:
    try:
        req = load_models(dep.request)
        model = model_of(req)
        ev = evaluate_request(model, checked_request(model, req), suggest=True)
        if dep.workload is not None:  # the deployment as configured (the engine's own defaults), over time
            from kvplan.simulation.budgets import findings
            from kvplan.simulation.setup import prepare

            p = prepare(model, req)
            ev = replace(ev, findings=ev.findings + findings(p.run(dep.workload), dep.sim_budgets))
        return DeploymentResult(dep, ev)
    except KvplanError as exc:
        return DeploymentResult(dep, None, exc)


def check_exit(results: list[DeploymentResult]) -> int:
    return overall_exit([r.exit_code for r in results])
