"""``rankmap bench``: an nccl-tests-like bandwidth sweep through torch.distributed.

:mod:`rankmap.bench.sizes` (pure: sizes, formulas, table), :mod:`rankmap.bench.link` (pure:
theoretical link bandwidth), :mod:`rankmap.adapters.torch_bench` (the torch loop, an adapter).
"""
