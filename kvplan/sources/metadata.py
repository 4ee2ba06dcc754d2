"""GGUF-style metadata (a key/value dict) → :class:`ModelDescription`, with llama.cpp's rules.

This is a port of the memory-relevant parts of ``llama_model_base::load_hparams`` and each
architecture's ``load_arch_hparams`` (src/llama-model.cpp, src/models/*.cpp). GGUF files and YAML
specs both arrive here as the same key/value dict, so both follow exactly the same rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvplan.errors import HParamsError, UnknownArchitectureError
from kvplan.facts import archs
from kvplan.model import Layer, ModelDescription, SwaType
from kvplan.sources.state_hparams import load_state_hparams
from kvplan.sources.values import T_U32, VALUE_TYPE_NAMES, ArrayValue

LLAMA_MAX_LAYERS = 512
#: the architectures whose memory layout depends on a layer's feed-forward width (Nemotron-H routes by it)
#: architectures whose own hparams loader reads attention.key_length / value_length after llama_model's generic
#: pass, which leaves them 0 where layer 0 has no heads (PLaMo 2's first layers are Mamba: src/models/plamo2.cpp)
_OWN_HEAD_SIZE = frozenset({"plamo2"})
_N_FF_ARCHS = frozenset({"nemotron_h", "nemotron_h_moe", "openelm", "deci"})


class _Keys:
    """Typed access to ``{arch}.*`` keys with llama.cpp's get_key / get_key_or_arr semantics."""

    def __init__(
        self, kv: Mapping[str, Any], arch: str, source: str, kv_types: Mapping[str, int] | None = None
    ) -> None:
        self.kv = kv
        self.arch = arch
        self.source = source
        self.kv_types = kv_types or {}  # GGUF value types (GGUF files only; specs and config.json have none)

    def full(self, key: str) -> str:
        return key.replace("{arch}", self.arch) if "{arch}" in key else f"{self.arch}.{key}"

    def has(self, key: str) -> bool:
        return self.full(key) in self.kv

    def _fail(self, key: str, message: str) -> HParamsError:
        return HParamsError(f"{self.source}: {self.full(key)}: {message}")

    def scalar(self, key: str, default: Any = None, required: bool = False) -> Any:
        name = self.full(key)
        if name not in self.kv:
            if required:
                raise self._fail(key, "key not found in model (llama.cpp requires it)")
            return default
        value = self.kv[name]
        if isinstance(value, ArrayValue):
            raise self._fail(key, f"expected a single value, found an array of {value.count}")
        return value

    def uint(self, key: str, default: int | None = 0, required: bool = False) -> int:
        value = self.scalar(key, None, required)
        if value is None:
            return default  # type: ignore[return-value]
        gguf_type = self.kv_types.get(self.full(key), T_U32)
        if gguf_type != T_U32:  # llama.cpp's get_key reads these into uint32_t and checks the stored type
            raise HParamsError(
                f"{self.source}: key {self.full(key)} has wrong type {VALUE_TYPE_NAMES[gguf_type]} "
                "but expected type u32 (llama.cpp refuses to load it)"
            )
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._fail(key, f"expected an unsigned integer, found {value!r}")
        if value < 0 or value > 0xFFFFFFFF:
            raise self._fail(key, f"expected an unsigned 32-bit integer, found {value}")
        return value

    def array(self, key: str) -> list[Any] | None:
        name = self.full(key)
        value = self.kv.get(name)
        if not isinstance(value, ArrayValue):
            return None
        if value.values is None:
            raise self._fail(key, f"array of {value.count} elements is too long for a per-layer array")
        return list(value.values)

    def key_or_arr(self, key: str, n: int, default: list[int], allow_bool: bool = False) -> list[int]:
        """get_key_or_arr: a scalar fills every layer; an array must have exactly ``n`` entries."""
        name = self.full(key)
        if name not in self.kv:
            return default
        value = self.kv[name]
        if isinstance(value, ArrayValue):
            items = self.array(key) or []
            if len(items) != n:
                raise self._fail(key, f"wrong array length {len(items)}, expected {n} (block_count)")
            out = []
            for v in items:
                if isinstance(v, bool) and allow_bool:
                    v = int(v)
                if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                    raise self._fail(key, f"expected non-negative integers, found {v!r}")
                out.append(v)
            return out
        if allow_bool and isinstance(value, bool):
            return [int(value)] * n
        scalar = self.uint(key)
        return [scalar] * n


def _swa_pattern(n_layer: int, n_layer_all: int, period: int, dense_first: bool) -> list[bool]:
    """llama_hparams::set_swa_pattern."""
    out = []
    for il in range(n_layer_all):
        if il >= n_layer:
            out.append(False)
        elif dense_first:
            out.append(period == 0 or il % period != 0)
        else:
            out.append(period == 0 or il % period < period - 1)
    return out


def _swa_array(keys: _Keys, n_layer_all: int, required: bool) -> list[bool] | None:
    items = keys.array("attention.sliding_window_pattern")
    if items is None:
        if required:
            raise keys._fail("attention.sliding_window_pattern", "per-layer array not found (llama.cpp requires it)")
        return None
    if len(items) > LLAMA_MAX_LAYERS:
        raise keys._fail("attention.sliding_window_pattern", f"array longer than {LLAMA_MAX_LAYERS}")
    flags = [bool(v) for v in items[:n_layer_all]]
    return flags + [False] * (n_layer_all - len(flags))


def _load_swa(keys: _Keys, arch: str, n_layer: int, n_layer_all: int) -> tuple[SwaType, int, list[bool]]:
    none = (SwaType.NONE, 0, [False] * n_layer_all)
    rule = archs.SWA_RULES.get(arch)
    window_key = "attention.sliding_window"
    if rule is None:
        return none
    found = keys.has(window_key)
    window = keys.uint(window_key, 0) if found else 0
    if rule.when == "key>0" and window <= 0:
        return none
    if rule.when == "found" and found and window == 0:
        return none
    if rule.when == "n_layer==64":
        window = keys.uint(window_key, rule.window_default or 0)
        if n_layer != 64:
            return (SwaType.NONE, window, [False] * n_layer_all)
    if rule.when == "always" and not found and rule.window_default is None:
        keys.uint(window_key, required=True)  # raises: llama.cpp requires the key
    if not found and rule.window_default is not None:
        window = rule.window_default
    if rule.window_forced is not None:
        window = rule.window_forced
    if rule.pattern is None:
        pattern = _swa_array(keys, n_layer_all, required=True)
    else:
        pattern = _swa_array(keys, n_layer_all, required=False)
        if pattern is None:
            period = keys.uint("attention.sliding_window_pattern", rule.pattern)
            pattern = _swa_pattern(n_layer, n_layer_all, period, rule.dense_first)
    assert pattern is not None
    return rule.swa_type, window, pattern


#: the context length llama.cpp's Mamba converters write when the checkpoint names none ("arbitrary value")
MAMBA_PLACEHOLDER_CTX = 2**20


def describe(  # noqa: C901 - load_hparams: one branch per architecture rule, as llama.cpp has them
    kv: Mapping[str, Any],
    *,
    source: str,
    source_kind: str,
    name: str | None = None,
    weight_bytes: int | None = None,
    n_params: int | None = None,
    tensor_names: frozenset[str] | None = None,
    kv_types: Mapping[str, int] | None = None,
) -> ModelDescription:
    """Build the normalised model description from GGUF-style metadata."""
    arch = kv.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise HParamsError(f"{source}: general.architecture: key not found in model")
    if arch not in archs.KNOWN_ARCHS:
        raise UnknownArchitectureError(
            f"{source}: architecture {arch!r} is not one llama.cpp knows; describe it with a YAML spec "
            "using a known architecture (see `kvplan models` and the README)"
        )
    keys = _Keys(kv, arch, source, kv_types)
    memory = archs.memory_kind(arch, dict(kv))
    model_name = name or kv.get("general.name") or arch
    if not isinstance(model_name, str):
        model_name = arch

    n_ctx_train = keys.uint("context_length", required=True)
    n_embd = keys.uint("embedding_length", required=True)
    n_layer_all = keys.uint("block_count", required=True)
    if not 0 < n_layer_all <= LLAMA_MAX_LAYERS:
        raise keys._fail("block_count", f"{n_layer_all} is outside 1..{LLAMA_MAX_LAYERS}")
    n_layer_nextn = keys.uint("nextn_predict_layers", 0)
    if n_layer_nextn > n_layer_all:
        raise keys._fail("nextn_predict_layers", f"{n_layer_nextn} exceeds block_count {n_layer_all}")
    causal = kv.get(keys.full("attention.causal"), True)
    causal = bool(causal) if isinstance(causal, (bool, int)) else True
    notes: list[str] = []

    n_head = keys.key_or_arr("attention.head_count", n_layer_all, [0] * n_layer_all)
    n_head_kv = keys.key_or_arr("attention.head_count_kv", n_layer_all, list(n_head))

    if arch == "deepseek4" and n_layer_nextn > 0 and tensor_names is not None:
        probe = f"blk.{n_layer_all - n_layer_nextn}.nextn.eh_proj.weight"
        if probe not in tensor_names:
            n_layer_nextn = 0
    router_layer = -1
    if arch == "graniteswitch":
        # llama.cpp appends a single-head router layer after the real ones (src/models/granite-switch.cpp)
        n_real = n_layer_all - n_layer_nextn
        router_layer = n_real
        n_layer_all = n_real + 1
        n_layer_nextn = 1
        n_head = [*n_head[:n_real], 1]
        n_head_kv = [*n_head_kv[:n_real], 1]
    if arch == "nanbeige":
        loops = keys.uint("num_loops", 1)
        if loops < 1:
            raise keys._fail("num_loops", "must be at least 1")
        n_phys = n_layer_all - n_layer_nextn
        if n_phys * loops > LLAMA_MAX_LAYERS:
            raise keys._fail("num_loops", f"{n_phys} layers x {loops} loops exceeds {LLAMA_MAX_LAYERS}")
        if loops > 1:
            n_head = n_head[:n_phys] * loops
            n_head_kv = n_head_kv[:n_phys] * loops
            n_layer_all = n_phys * loops
            notes.append(f"{n_phys} physical layers run {loops} times: {n_layer_all} KV layers")

    n_layer = n_layer_all - n_layer_nextn
    head0 = n_head[0] if n_head else 0
    if head0 > 0:
        head_k_full = n_embd // head0
        head_v_full = n_embd // head0
        head_k_full = keys.uint("attention.key_length", head_k_full)
        head_v_full = keys.uint("attention.value_length", head_v_full)
    else:
        head_k_full = head_v_full = 0
    if arch in _OWN_HEAD_SIZE:  # its load_arch_hparams reads the head sizes again, whatever layer 0 is
        head_k_full = keys.uint("attention.key_length", head_k_full)
        head_v_full = keys.uint("attention.value_length", head_v_full)
    head_k_swa = keys.uint("attention.key_length_swa", head_k_full)
    head_v_swa = keys.uint("attention.value_length_swa", head_v_full)
    if arch in ("gemma4", "gemma4-assistant"):
        head_k_swa = keys.uint("attention.key_length_swa", required=True)
        head_v_swa = keys.uint("attention.value_length_swa", required=True)

    mla = False
    if arch in archs.MLA_KEY_ARCHS:
        k_mla = keys.uint("attention.key_length_mla", 0)
        v_mla = keys.uint("attention.value_length_mla", 0)
        mla = k_mla > 0 and v_mla > 0
    if arch in ("kimi-k3", "glm5-next"):
        lora = keys.uint("attention.kv_lora_rank", 0)
        head_v_full = lora

    swa_type, n_swa, is_swa = _load_swa(keys, arch, n_layer, n_layer_all)
    declared_window = 0
    if arch == "phi3" and keys.uint("attention.sliding_window", 0) > 0:
        notes.append("the GGUF sets a sliding window, but llama.cpp disables Phi-3 SWA: every layer is full")
        declared_window = keys.uint("attention.sliding_window")
    if swa_type != SwaType.NONE and not any(is_swa):
        raise HParamsError(
            f"{source}: {arch} uses sliding-window attention but no layer is marked SWA (llama.cpp asserts on this)"
        )

    n_layer_kv_from_start = -1
    if arch == "gemma3n":
        n_layer_kv_from_start = 20
    elif arch == "gemma4":
        n_layer_kv_from_start = n_layer_all - keys.uint("attention.shared_kv_layers", 0)

    state = load_state_hparams(keys, arch, n_embd, n_layer, n_layer_all, n_head, n_head_kv, head_k_full)
    recurrent = state.recurrent
    if arch == "lfm2" and keys.uint("attention.sliding_window", 0) > 0:
        # every attention (non-conv) trunk layer uses the window (src/models/lfm2.cpp)
        swa_type, n_swa = SwaType.STANDARD, keys.uint("attention.sliding_window")
        is_swa = [il < n_layer and not recurrent[il] for il in range(n_layer_all)]
    if arch == "deepseek4":
        # every layer, nextn included, is SWA (src/models/deepseek4.cpp)
        swa_type, n_swa = SwaType.STANDARD, keys.uint("attention.sliding_window", required=True)
        is_swa = [True] * n_layer_all

    layers = []
    for il in range(n_layer_all):
        swa = is_swa[il]
        has_kv = n_layer_kv_from_start < 0 or il < n_layer_kv_from_start
        kv_source = None
        if not has_kv:
            # reuse map (src/llama-model.cpp create_memory: n_layer_kv_from_start - (is_swa(il) ? 2 : 1)): the
            # last owned layer of the same kind, in the same (window or full) cache
            kv_source = n_layer_kv_from_start - (2 if is_swa[il] else 1) if n_layer_kv_from_start >= 2 else None
        layers.append(
            Layer(
                index=il,
                n_head=n_head[il],
                n_head_kv=n_head_kv[il],
                head_k=head_k_swa if swa else head_k_full,
                head_v=head_v_swa if swa else head_v_full,
                swa=swa,
                nextn=il >= n_layer,
                has_kv=has_kv,
                kv_source=kv_source,
                recurrent=recurrent[il],
                n_ff=state.n_ff[il] if arch in _N_FF_ARCHS else 0,  # memory reads it only here
                indexer=state.indexer_full[il],
                compress_ratio=state.compress_ratios[il] if state.compress_ratios else 0,
                ple=il in state.ple_layers,
            )
        )
    if n_layer_kv_from_start >= 0 and n_layer_kv_from_start < n_layer_all:
        notes.append(
            f"layers {n_layer_kv_from_start}..{n_layer_all - 1} reuse the KV of earlier layers (no memory of their own)"
        )

    return ModelDescription(
        name=model_name,
        arch=arch,
        source=source,
        source_kind=source_kind,
        n_layer_all=n_layer_all,
        n_layer_nextn=n_layer_nextn,
        n_embd=n_embd,
        n_ctx_train=n_ctx_train,
        layers=tuple(layers),
        memory=memory,
        swa_type=swa_type,
        n_swa=n_swa,
        mla=mla,
        causal=causal,
        router_layer=router_layer,
        notes=tuple(notes),
        weight_bytes=weight_bytes,
        n_params=n_params,
        recurrent_params=state.params,
        declared_window=declared_window,
        ctx_declared=not (arch in ("mamba", "mamba2") and n_ctx_train == MAMBA_PLACEHOLDER_CTX),
        n_embd_r=state.n_embd_r,
        n_embd_s=state.n_embd_s,
        ple_conv_state=state.ple_conv_state,
        indexer_head_size=state.indexer_head_size,
        indexer_kpool=state.indexer_kpool,
        n_layer_dense_lead=state.n_layer_dense_lead,
        **_moe(kv, arch, n_layer_all - n_layer_nextn, n_embd),
    )


def _moe(kv: Mapping[str, Any], arch: str, n_layer: int, n_embd: int) -> dict[str, Any]:
    """Routed experts per layer and per token, and their parameters from the hyperparameters (gate, up and down
    projections of n_embd × expert_feed_forward_length in every MoE layer: after the leading dense ones, every
    interleave step's). Read leniently: only the roofline uses them."""

    def num(key: str) -> int:
        value = kv.get(f"{arch}.{key}")
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

    n_expert, n_used = num("expert_count"), num("expert_used_count")
    if not n_expert or not n_used:
        return {}
    n_ff = num("expert_feed_forward_length")  # llama.cpp's n_ff_exp
    if not n_ff and arch in _EXPERTS_OF_N_FF:
        n_ff = num("feed_forward_length")
    moe_layers = max(0, n_layer - num("leading_dense_block_count"))
    step = num("interleave_moe_layer_step")
    if step > 1:
        moe_layers = n_layer // step
    params = 3 * n_embd * n_ff * n_expert * moe_layers if n_ff else None
    return {"n_expert": n_expert, "n_expert_used": n_used, "expert_params": params}


#: architectures whose expert tensors are feed_forward_length wide in llama.cpp (load_tensors: n_ff, no n_ff_exp)
_EXPERTS_OF_N_FF = frozenset({"llama", "phimoe", "olmoe", "granitemoe", "dbrx", "jamba"})
