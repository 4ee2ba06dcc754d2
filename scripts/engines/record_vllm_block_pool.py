"""Record vLLM 0.33.0's own KVCacheManager and BlockPool, block by block, under random admissions, decodes,
preemptions, re-admissions and ends (tests/fixtures/engines/vllm_block_pool.json; tests/simulation/
test_vllm_block_pool.py replays every operation through kvplan's port and compares).

usage (inside a venv with vllm==0.33.0, scripts/engines/README.md):
    python scripts/engines/record_vllm_block_pool.py [--drives 40] [--ops 400]

One full-attention group of ``num_blocks`` blocks of ``block_size`` tokens (KVCacheConfig, FullAttentionSpec), the
manager as the scheduler builds it (``KVCacheManager(kv_cache_config, max_model_len, block_size, block_size,
enable_caching=…)``), requests as the engine builds them (``Request`` with the sha256 block hasher EngineCore
gives them; the prompt's first ``shared_prefix`` tokens common to every request that has it, every other token
distinct). The operations are the scheduler's calls:

- admit: ``get_computed_blocks(request)``, then ``allocate_slots(request, num_tokens - hits, hits, blocks,
  full_sequence_must_fit=True)``; admitted, the request has computed all its tokens;
- decode: a token appended (``append_output_token_ids``: its block hashes follow), ``allocate_slots(request, 1)``;
- leave: ``free(request)``, preempted (computed tokens back to 0, waiting again) or finished.

Each operation's record: what it was, whether the allocation succeeded, the hit blocks, the blocks it appended to
the request's table, and the pool's free blocks after it.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

import torch
from vllm import SamplingParams
from vllm.utils.hashing import get_hash_fn_by_name
from vllm.v1.core.kv_cache_manager import KVCacheManager
from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
from vllm.v1.request import Request, RequestStatus

OUT = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "engines" / "vllm_block_pool.json"
MAX_MODEL_LEN = 1 << 20


def drive(seed: int, num_blocks: int, bs: int, shared: int, ops: int, caching: bool) -> list[list[Any]]:
    spec = FullAttentionSpec(block_size=bs, num_kv_heads=1, head_size=64, dtype=torch.float16)
    config = KVCacheConfig(num_blocks, [], [KVCacheGroupSpec(["layer.0"], spec)])
    manager = KVCacheManager(config, MAX_MODEL_LEN, bs, bs, enable_caching=caching)
    hash_fn = get_hash_fn_by_name("sha256")
    init_none_hash(hash_fn)
    hasher = get_request_block_hasher(bs, hash_fn, 0)
    pool = manager.block_pool
    rng = random.Random(seed)
    requests: dict[int, Request] = {}
    waiting: list[int] = []
    running: list[int] = []
    record: list[list[Any]] = []

    def table(rid: int) -> list[int]:
        return (
            list(manager.get_block_ids(str(rid))[0])
            if str(rid) in manager.coordinator.single_type_managers[0].req_to_blocks
            else []
        )

    for step in range(ops):
        what = rng.random()
        if what < 0.2 or not (waiting or running):
            rid, prompt = step, rng.randint(1, 6 * bs)
            share = shared if rng.random() < 0.7 else 0
            tokens = [7 + i for i in range(share)] + [100_000 + rid * 1000 + i for i in range(prompt)]
            requests[rid] = Request(
                request_id=str(rid),
                prompt_token_ids=tokens,
                sampling_params=SamplingParams(max_tokens=10**6, ignore_eos=True),
                pooling_params=None,
                block_hasher=hasher if caching else None,
            )
            waiting.append(rid)
            record.append(["arrive", rid, prompt + share, share])
        elif what < 0.45 and waiting:
            rid = rng.choice(waiting)
            r = requests[rid]
            before = table(rid)
            blocks, hit_tokens, _ = manager.get_computed_blocks(r)
            hits = list(blocks.get_block_ids()[0])
            got = manager.allocate_slots(r, r.num_tokens - hit_tokens, hit_tokens, blocks, full_sequence_must_fit=True)
            if got is not None:
                r.num_computed_tokens = r.num_tokens
                r.status = RequestStatus.RUNNING
                waiting.remove(rid)
                running.append(rid)
            record.append(["admit", rid, got is not None, hits, table(rid)[len(before) :], pool.get_num_free_blocks()])
        elif what < 0.8 and running:
            rid = rng.choice(running)
            r = requests[rid]
            before = table(rid)
            r.append_output_token_ids(10_000_000 + rid * 10_000 + r.num_output_tokens)
            got = manager.allocate_slots(r, 1)
            if got is not None:
                r.num_computed_tokens += 1
            record.append(["decode", rid, got is not None, table(rid)[len(before) :], pool.get_num_free_blocks()])
        elif running:
            rid = rng.choice(running)
            r = requests[rid]
            finish = rng.random() < 0.4
            manager.free(r)
            r.num_computed_tokens = 0
            r.status = RequestStatus.FINISHED_STOPPED if finish else RequestStatus.PREEMPTED
            running.remove(rid)
            if not finish:
                waiting.append(rid)
            record.append(["leave", rid, finish, pool.get_num_free_blocks()])
    return record


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--drives", type=int, default=40)
    ap.add_argument("--ops", type=int, default=400)
    args = ap.parse_args()
    rng = random.Random(2026_12_05)
    cases = []
    for k in range(args.drives):
        params = {
            "seed": rng.randrange(2**32),
            "num_blocks": rng.choice([8, 12, 20, 33, 60, 120]),
            "block_size": rng.choice([1, 2, 4, 16]),
            "shared_prefix": rng.choice([0, 3, 8, 33]),
            "caching": k % 5 != 4,
        }
        ops = drive(params["seed"], params["num_blocks"], params["block_size"], params["shared_prefix"],
                    args.ops, params["caching"])  # fmt: skip
        cases.append({**params, "ops": ops})
    import vllm

    OUT.write_text(
        json.dumps(
            {"vllm": vllm.__version__, "recorded_by": "scripts/engines/record_vllm_block_pool.py", "cases": cases},
            separators=(",", ":"),
        )
        + "\n"
    )
    print(f"{len(cases)} drives, {sum(len(c['ops']) for c in cases)} operations -> {OUT}")


if __name__ == "__main__":
    main()
