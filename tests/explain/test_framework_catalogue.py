"""The framework messages of catalogue_frameworks: one line per signal in the format its source
prints (shapes written for these tests, filled with our own values), look-alikes that must not
match, and the prefilter keys that must let every example through and stay off routine NCCL
lines."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from rankmap.adapters.local import explain_files
from rankmap.explain.catalogue import KEYS, SIGNALS
from rankmap.explain.catalogue_frameworks import FRAMEWORK_KEYS, FRAMEWORK_SIGNALS
from rankmap.explain.docread import _search, read_document
from rankmap.findings import Severity

BY_ID = {s.id: s for s in SIGNALS}

EXAMPLES = {
    "accelerate-device-map-distributed": "ValueError: You can't train a model that has been loaded "
    "with `device_map='auto'` in any distributed mode.",
    "accelerate-quantized-other-device": "ValueError: You can't train a model that has been loaded "
    "in 8-bit precision on a different device than the one you're training on.",
    "ddp-multi-device-module": "ValueError: DistributedDataParallel device_ids and output_device "
    "arguments only work with single-device/multiple-device GPU modules or CPU modules",
    "cuda-fork-reinit": "RuntimeError: Cannot re-initialize CUDA in forked subprocess.",
    "tf-unknown-device": "RuntimeError: /job:localhost/replica:0/task:0/device:GPU:2 unknown "
    "device.",
    "tf-unknown-gpu0": "RuntimeError: /job:localhost/replica:0/task:0/device:GPU:0 unknown device.",
    "tf-visible-list-invalid": "InvalidArgumentError: 'visible_device_list' listed an invalid GPU "
    "id '5' but visible device count is 1",
    "tf-visible-list-duplicate": "visible_device_list contained a duplicate entry: 2,2",
    "tf-visible-after-init": "RuntimeError: Visible devices cannot be modified after being "
    "initialized",
    "lightning-gpu-unavailable": " But your machine only has: [0, 1]",
    "lightning-no-gpu": "MisconfigurationException: GPUs requested but none are available.",
    "lightning-accelerator-unavailable": "MisconfigurationException: `CUDAAccelerator` can not "
    "run on your system since the accelerator is not available.",
    "tf-gpu-libraries-missing": "W gpu_device.cc:1850] Cannot dlopen some GPU libraries. Please "
    "make sure the missing libraries mentioned above are installed properly",
    "tf-arch-not-built": "W gpu_device.cc:2300] TensorFlow was not built with CUDA kernel "
    "binaries compatible with compute capability 10.0.",
    "vllm-heads-tp": "ValueError: Total number of attention heads (40) must be divisible by "
    "tensor parallel size (6).",
    "vllm-unique-ip": "RuntimeError: Every node should have a unique IP address. Got 2 nodes with "
    "node ids ['a1', 'b2'] and 1 unique IP addresses {'172.17.0.3'}.",
    "tf-single-worker": "INFO:tensorflow:Single-worker MultiWorkerMirroredStrategy with "
    "local_devices = ('/device:GPU:0',), communication = CommunicationImplementation.AUTO",
    "ds-no-launcher": "[INFO] [comm.py:652:init_distributed] Not using the DeepSpeed or dist "
    "launchers, attempting to detect MPI environment...",
    "ds-local-only": "[WARNING] [runner.py:202:fetch_hostfile] Unable to find hostfile, will "
    "proceed with training with local resources only.",
    "slurm-ntasks-ignored": "srun: Warning: can't honor --ntasks-per-node set to 2 which doesn't "
    "match the requested tasks 6 with the number of requested nodes 2.",
    "lightning-duplicate-ids": "MisconfigurationException: Device ID's (GPU) must be unique.",
    "lightning-notebook-one-gpu": "Trainer will use only 1 of 8 GPUs because it is running inside "
    "an interactive / notebook environment.",
    "lightning-slurm-mismatch": "You set `devices=2` in Lightning, but the number of tasks per "
    "node configured in SLURM `--ntasks-per-node=4` does not match.",
    "lightning-srun-unused": "The `srun` command is available on your system but is not used.",
    "lightning-ds-device-indices": "RuntimeError: The selected device indices [1, 3] don't match "
    "the local rank values of processes.",
    "ray-raylet-visible": "ValueError: Attempting to start raylet with 8 GPU, but "
    "CUDA_VISIBLE_DEVICES contains ['3'].",
    "ray-task-unschedulable": "WARNING -- The actor or task with ID 5f1e cannot be scheduled "
    "right now. It requires {GPU: 2.000000} for placement, however the cluster currently cannot",
    "vllm-node-no-gpu": "ValueError: Current node has no GPU available. "
    "current_node_resource={'CPU': 16.0}",
    "vllm-gpus-exceed-pg": "WARNING ray_utils.py:300] The number of required GPUs exceeds the "
    "total number of available GPUs in the placement group.",
    "vllm-driver-no-gpu": "ValueError: Ray does not allocate any GPUs on the driver node.",
    "vllm-world-size-gpus": "World size (8) is larger than the number of available GPUs (2) in "
    "this node.",
    "vllm-memory-profiling": "AssertionError: Error in memory profiling. Initial free memory 100, "
    "current free memory 90.",
    "sglang-memory-unbalanced": "RuntimeError: The memory capacity is unbalanced. Some GPUs may "
    "be occupied by other processes. min_per_gpu_memory=3.1",
    "horovod-slots": "ValueError: Requested more processes (16) than there are available slots (8)",
    "horovod-stall": "One or more tensors were submitted to be reduced, gathered or broadcasted "
    "by subset of ranks and are waiting for remainder of ranks for more than 60 seconds.",
    "ds-hostfile-slot": "ValueError: No slot '7' specified on host 'gpu-b'",
    "ds-launcher-options": "ValueError: Cannot specify num_nodes/gpus with include/exclude",
    "ds-no-gpu": "RuntimeError: Unable to proceed, no GPU resources available",
    "accelerate-defaults": "\t`--num_processes` was set to a value of `4`",
    "accelerate-multi-gpu-one-proc": "ValueError: You need to use at least 2 processes to use "
    "`--multi_gpu`.",
    "jax-distributed-order": "RuntimeError: jax.distributed.initialize() must be called before "
    "any JAX calls that might initialise the XLA backend.",
    "jax-cpu-jaxlib": "WARNING:jax._src.xla_bridge: An NVIDIA GPU may be present on this machine, "
    "but a CUDA-enabled jaxlib is not installed. Falling back to cpu.",
    "jax-cuda-outdated": "RuntimeError: Outdated cuDNN installation found.",
    "ompi-bind-overload": "processes than cpus on a resource:",
    "slurm-step-refused": "srun: Job step creation temporarily disabled, retrying (Requested nodes "
    "are busy)",
    "fairseq-world-of-one": "ValueError: Cannot initialize distributed with "
    "distributed_world_size=1",
    "dali-shard-past-shards": 'Assert on "num_shards_ > shard_id_" failed: num_shards needs to be '
    "greater than shard_id",
    "paddle-gpus-not-visible": "AssertionError: Can't find your gpus 6 in "
    "CUDA_VISIBLE_DEVICES[2,3].",
    "mxnet-cpu-build": "MXNetError: [10:00:00] src/storage/storage.cc:150: Compile with "
    "USE_CUDA=1 to enable GPU usage",
    "mxnet-no-gpu": "Check failed: num_gpu_device > 0 (0 vs. 0) : GPU usage requires at least 1 GPU",
    "keras-multi-gpu-count": "ValueError: To call `multi_gpu_model` with `gpus=2`, we expect the "
    "following devices to be available: ['/cpu:0', '/gpu:0', '/gpu:1']. However this machine only "
    "has: ['/cpu:0']. Try reducing `gpus`.",
    "keras-multi-gpu-names": "ValueError: To call `multi_gpu_model` with `gpus=2`, we expect the "
    "following devices to be available: ['/cpu:0', '/gpu:0', '/gpu:1']. However this machine only "
    "has: ['/device:GPU:0', '/device:GPU:1']. Try reducing `gpus`.",
    "cupy-multiple-packages": "UserWarning: CuPy may not function correctly because multiple CuPy "
    "packages are installed in your environment:",
    "trt-engine-incompatible": "[TRT] [E] 6: The engine plan file is generated on an incompatible "
    "device, expecting compute 9.0 got compute 8.9, please rebuild.",
    "trtllm-world-size": "AssertionError: Engine world size (4) != Runtime world size (2)",
    "rocblas-arch": "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: "
    "No such file or directory for GPU arch : gfx1036",
    "rocm-smi-no-driver": "ERROR:root:Driver not initialized (amdgpu not found in modules)",
    "nvshmem-init-failed": "init.cu:1000: non-zero status: 7 nvshmem detect topo failed",
}

# Lines that look like a framework message but are not one: each must stay unmatched.
LOOK_ALIKES = {
    "tf-visible-list-invalid": "visible_device_list = '0,1' (the list is valid)",
    "lightning-gpu-unavailable": "my machine only has two GPUs",
    "lightning-slurm-mismatch": "I set devices=4 in Lightning and ntasks-per-node=4 in SLURM",
    "ray-raylet-visible": "Attempting to start the raylet on node 10.0.0.2",
    "ray-task-unschedulable": "The actor or task with ID 5f1e cannot be scheduled right now. It "
    "requires {CPU: 1.000000} for placement",
    "vllm-world-size-gpus": "World size (2) is equal to the number of available GPUs (2)",
    "vllm-memory-profiling": "INFO Memory profiling takes 3.1 seconds",
    "horovod-slots": "Requested 4 processes on 4 slots",
    "jax-cuda-outdated": "Found CUDA installation at /usr/local/cuda",
    "slurm-step-refused": "srun: job 12 queued and waiting for resources",
    "dali-shard-past-shards": "fn.readers.file(shard_id=rank, num_shards=world_size)",
    "fairseq-world-of-one": "| distributed init (rank 0): tcp://localhost:12345",
    "paddle-gpus-not-visible": "CUDA_VISIBLE_DEVICES=2,3 python -m paddle.distributed.launch",
    "trt-engine-incompatible": "[TRT] [I] Loaded engine plan file model.plan",
    "rocblas-arch": "rocBLAS info: TensileLibrary loaded for gfx90a",
    "nvshmem-init-failed": "NVSHMEM: transports initialized: IBGDA",
    "tf-gpu-libraries-missing": "Successfully opened dynamic library libcudart.so.12",
    "vllm-heads-tp": "Total number of attention heads (32) and tensor parallel size (4)",
    "lightning-accelerator-unavailable": "GPU available: True (cuda), used: True",
}

# Routine lines of a healthy NCCL log: no key of a log-side signal may occur in them.
ROUTINE_NCCL = (
    "node-7:301:355 [3] NCCL INFO Channel 02/0 : 3[3] -> 4[4] via P2P/CUMEM/read",
    "node-7:301:355 [3] NCCL INFO comm 0x5d1 rank 3 nranks 8 cudaDev 3 busId 61000 - Init START",
    "node-7:301:355 [3] NCCL INFO comm 0x5d1 rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId 61000 "
    "commId 0xab - Init COMPLETE",
    "node-7:301:355 [3] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0",
    "node-7:301:355 [3] NCCL INFO Using network IB",
    "node-7:301:355 [3] NCCL INFO ncclCommInitRank comm 0x5d1 rank 3 nranks 8 cudaDev 3 - Init",
    "node-7:301:355 [3] NCCL INFO cudaDriverVersion 12040",
    "NCCL version 2.21.5+cuda12.4",
)


def test_every_framework_signal_is_registered_with_its_keys() -> None:
    assert set(FRAMEWORK_KEYS) == {s.id for s in FRAMEWORK_SIGNALS}
    for sig in FRAMEWORK_SIGNALS:
        assert sig.id in BY_ID and BY_ID[sig.id].keys == FRAMEWORK_KEYS[sig.id] == KEYS[sig.id]
        assert sig.framework, sig.id
        assert "http" in sig.fact, sig.id  # the source or doc page it was written from
        assert all(k == k.lower() for k in sig.keys or FRAMEWORK_KEYS[sig.id]), sig.id


def test_one_example_per_signal() -> None:
    assert set(EXAMPLES) == set(FRAMEWORK_KEYS)


@pytest.mark.parametrize("sid", sorted(EXAMPLES))
def test_each_example_is_recognised_through_the_prefilter(sid: str) -> None:
    sig, line = BY_ID[sid], EXAMPLES[sid]
    assert sig.pattern.search(line), sid
    assert any(k in line.lower() for k in sig.keys), sid
    text = "step 10 loss 1.25\n" * 40 + line + "\n" + "step 11 loss 1.24\n" * 40
    assert _search(sig, text, text.lower()), sid
    assert sid in read_document(line + "\n").hits


@pytest.mark.parametrize("sid", sorted(LOOK_ALIKES))
def test_look_alikes_are_not_recognised(sid: str) -> None:
    assert not BY_ID[sid].pattern.search(LOOK_ALIKES[sid]), sid


def test_no_key_occurs_in_routine_nccl_lines() -> None:
    for line in ROUTINE_NCCL:
        low = line.lower()
        for sig in FRAMEWORK_SIGNALS:
            assert not any(k in low for k in FRAMEWORK_KEYS[sig.id]), (sig.id, line)


def _first(text: str) -> tuple[str, Severity]:
    first = explain_files([Path("-")], stdin=io.StringIO(text)).ordered_findings()[0]
    return first.category, first.severity


@pytest.mark.parametrize(
    ("line", "category"),
    [
        (EXAMPLES["paddle-gpus-not-visible"], "visible_devices_mismatch"),
        (EXAMPLES["ray-raylet-visible"], "visible_devices_mismatch"),
        (EXAMPLES["trt-engine-incompatible"], "version_mismatch"),
        (EXAMPLES["lightning-slurm-mismatch"], "launcher_config"),
        (EXAMPLES["trtllm-world-size"], "launcher_config"),
        (EXAMPLES["sglang-memory-unbalanced"], "oversubscribed"),
        (EXAMPLES["vllm-world-size-gpus"], "oversubscribed"),
    ],
)
def test_a_framework_message_alone_names_its_cause(line: str, category: str) -> None:
    got, severity = _first(line + "\n")
    assert got == category
    assert severity in (Severity.ERROR, Severity.WARNING)


def test_a_context_message_alone_is_no_mapping_alarm() -> None:
    # accelerate's defaults notice and Lightning's srun hint are context, not failures
    for sid in ("accelerate-defaults", "lightning-srun-unused"):
        assert not BY_ID[sid].failure
        category, severity = _first(EXAMPLES[sid] + "\n")
        assert severity == Severity.INFO or category == "other", sid


def test_heads_that_tensor_parallelism_cannot_divide_are_no_mapping_alarm() -> None:
    line = (
        "ValueError: Total number of attention heads (40) must be divisible by tensor parallel "
        "size (3)."
    )
    assert BY_ID["vllm-heads-tp"].outside
    category, severity = _first(f"# vllm serve with 3 GPUs fails\n{line}\n")
    assert severity == Severity.INFO or category == "other"
