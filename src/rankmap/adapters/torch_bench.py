"""The measuring loop of ``rankmap bench`` through torch.distributed (imports torch lazily).

Per size: ``warmup`` untimed operations, a barrier, ``iters`` timed operations (CUDA synchronised
before the clock stops), the per-rank average time averaged over ranks (as nccl-tests does), then
one checking operation with known values whose wrong elements are summed over ranks.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from rankmap.bench.sizes import BenchResult, element_count, make_result
from rankmap.errors import UnavailableError, UsageError


@dataclass(frozen=True)
class BenchConfig:
    """What to measure."""

    op: str
    sizes: tuple[int, ...]
    dtype: str
    backend: str | None  # None: nccl when CUDA is available, else gloo
    warmup: int
    iters: int
    timeout_s: float = 300.0


@dataclass
class World:
    """The process group the sweep runs in."""

    rank: int
    size: int
    local_rank: int
    backend: str
    device: Any  # torch.device
    owned: bool  # we initialised it, so we destroy it


def _torch() -> Any:
    try:
        import torch
        import torch.distributed  # noqa: F401
    except ImportError:
        raise UnavailableError(
            "rankmap bench needs torch", hint="pip install 'rankmap[torch]'"
        ) from None
    return torch


def init_world(backend: str | None, environ: Mapping[str, str], timeout_s: float) -> World:
    """Join the launcher's world (env://), or a world of one when not under a launcher."""
    torch = _torch()
    dist = torch.distributed
    cuda = bool(torch.cuda.is_available())
    backend = backend or ("nccl" if cuda else "gloo")
    if backend == "nccl" and not cuda:
        raise UnavailableError("--backend nccl needs CUDA, and no CUDA device is available")
    local_rank = int(environ.get("LOCAL_RANK", "0") or 0)
    device = torch.device("cpu")
    if backend == "nccl":
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    owned = not dist.is_initialized()
    if owned:
        timeout = timedelta(seconds=timeout_s)
        if "WORLD_SIZE" in environ and "MASTER_ADDR" in environ:
            dist.init_process_group(backend, timeout=timeout)
        else:  # not under a launcher: a world of one
            path = os.path.join(tempfile.mkdtemp(prefix="rankmap-bench-"), "store")
            store = dist.FileStore(path, 1)
            dist.init_process_group(backend, store=store, rank=0, world_size=1, timeout=timeout)
    return World(dist.get_rank(), dist.get_world_size(), local_rank, backend, device, owned)


def close_world(world: World) -> None:
    """Destroy the process group when :func:`init_world` created it."""
    if world.owned:
        _torch().distributed.destroy_process_group()


def _dtype(torch: Any, name: str) -> Any:
    return getattr(torch, name)


def _buffers(torch: Any, op: str, count: int, dtype: Any, world: World) -> tuple[Any, Any]:
    """(input, output) of one operation; zeros, so repeated reductions never overflow."""
    n = world.size
    if op == "all_reduce" or op == "broadcast":
        buf = torch.zeros(count, dtype=dtype, device=world.device)
        return buf, buf
    if op == "all_gather":
        out = torch.zeros(count, dtype=dtype, device=world.device)
        return torch.zeros(count // n, dtype=dtype, device=world.device), out
    if op == "reduce_scatter":
        return (
            torch.zeros(count, dtype=dtype, device=world.device),
            torch.zeros(count // n, dtype=dtype, device=world.device),
        )
    raise UsageError(f"unknown op {op!r}")


def _operation(op: str, inp: Any, out: Any) -> Callable[[], None]:
    import torch.distributed as dist

    if op == "all_reduce":
        return lambda: dist.all_reduce(inp)
    if op == "broadcast":
        return lambda: dist.broadcast(inp, src=0)
    if op == "all_gather":
        return lambda: dist.all_gather_into_tensor(out, inp)
    return lambda: dist.reduce_scatter_tensor(out, inp)


def _sync(torch: Any, world: World) -> None:
    if world.device.type == "cuda":
        torch.cuda.synchronize(world.device)


def time_operation(fn: Callable[[], None], warmup: int, iters: int, world: World) -> float:
    """Seconds per operation on this rank, averaged over all ranks."""
    torch = _torch()
    dist = torch.distributed
    for _ in range(warmup):
        fn()
    _sync(torch, world)
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    _sync(torch, world)
    elapsed = (time.perf_counter() - start) / iters
    total = torch.tensor([elapsed], dtype=torch.float64, device=world.device)
    dist.all_reduce(total)
    return float(total.item()) / world.size


def _pattern(torch: Any, count: int, offset: int, rank: int, dtype: Any, device: Any) -> Any:
    """Element i of rank r holds ``r + 1 + (i + offset) % 4``: exact in every dtype."""
    idx = torch.arange(offset, offset + count, device=device) % 4
    return (idx + rank + 1).to(dtype)


def count_wrong(op: str, count: int, dtype_name: str, world: World) -> int:
    """Run ``op`` once on known values; elements that differ from the expected, summed over ranks."""
    torch = _torch()
    dist = torch.distributed
    dtype, n, r, dev = _dtype(torch, dtype_name), world.size, world.rank, world.device
    chunk = count // n if op in ("all_gather", "reduce_scatter") else count
    base = n * (n + 1) // 2
    if op == "all_reduce":
        buf = _pattern(torch, count, 0, r, dtype, dev)
        dist.all_reduce(buf)
        got, expected = buf, (torch.arange(count, device=dev) % 4) * n + base
    elif op == "broadcast":
        buf = (
            _pattern(torch, count, 0, 0, dtype, dev)
            if r == 0
            else torch.zeros_like(_pattern(torch, count, 0, 0, dtype, dev))
        )
        dist.broadcast(buf, src=0)
        got, expected = buf, _pattern(torch, count, 0, 0, torch.float64, dev)
    elif op == "all_gather":
        out = torch.zeros(chunk * n, dtype=dtype, device=dev)
        dist.all_gather_into_tensor(out, _pattern(torch, chunk, 0, r, dtype, dev))
        expected = torch.cat([_pattern(torch, chunk, 0, q, torch.float64, dev) for q in range(n)])
        got = out
    else:
        out = torch.zeros(chunk, dtype=dtype, device=dev)
        dist.reduce_scatter_tensor(out, _pattern(torch, chunk * n, 0, r, dtype, dev))
        expected = (torch.arange(r * chunk, (r + 1) * chunk, device=dev) % 4) * n + base
        got = out
    # Integer types wrap around like the reduction itself (int64 -> int8 keeps the low bits).
    expected = expected.to(torch.int64).to(dtype).to(torch.float64)
    diff = (got.to(torch.float64) - expected).abs()
    tol = 0.0 if not got.is_floating_point() else 1e-2 * expected.abs() + 1e-6
    wrong = torch.tensor([int((diff > tol).sum().item())], dtype=torch.int64, device=dev)
    dist.all_reduce(wrong)
    return int(wrong.item())


def run_sweep(
    config: BenchConfig,
    world: World,
    on_result: Callable[[BenchResult], None] | None = None,
) -> list[BenchResult]:
    """Measure every size of ``config``; ``on_result`` is called as each size completes."""
    torch = _torch()
    dtype = _dtype(torch, config.dtype)
    results = []
    for size in config.sizes:
        count = element_count(config.op, size, config.dtype, world.size)
        if count < 1:
            continue
        try:
            inp, out = _buffers(torch, config.op, count, dtype, world)
        except RuntimeError as exc:  # torch.OutOfMemoryError and the CPU allocator's error
            if "memory" not in str(exc).lower():
                raise
            raise UsageError(
                f"-e: cannot allocate the {size}-byte buffers on {world.device}: out of memory",
                hint="use a smaller -e (--maxbytes)",
            ) from None
        seconds = time_operation(
            _operation(config.op, inp, out), config.warmup, config.iters, world
        )
        wrong = count_wrong(config.op, count, config.dtype, world)
        result = make_result(config.op, size, count, config.dtype, seconds, world.size, wrong)
        results.append(result)
        if on_result is not None:
            on_result(result)
    if not results:
        raise UsageError(
            f"no size in {config.sizes[0]}..{config.sizes[-1]} bytes holds one {config.dtype} "
            f"element per rank ({world.size} rank(s)); nothing was measured",
            hint="raise -b / -e",
        )
    return results


def device_locality(world: World) -> Any:
    """The topology entry (``GpuLocality``) of this rank's CUDA device, found by its PCI bus id
    through NVML; None on an older torch without PCI info (cuda_devices.md §5.2)."""
    torch = _torch()
    props = torch.cuda.get_device_properties(world.device)
    bus = getattr(props, "pci_bus_id", None)
    if bus is None:
        return None
    from rankmap.adapters.nvml_topology import gpu_locality_by_bus_id

    domain, dev = getattr(props, "pci_domain_id", 0), getattr(props, "pci_device_id", 0)
    return gpu_locality_by_bus_id(f"{domain:04x}:{bus:02x}:{dev:02x}.0")
