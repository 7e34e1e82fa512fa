"""Fixes in the words of the framework the paste shows (reviews 18 and 26: a JAX, CuPy or
TensorFlow user was told to call ``torch.cuda.set_device`` and to pass torchrun's
``--nproc-per-node``).

A finding's fix comes from its code (``rankmap.codes``), written for PyTorch launches. Where the
catalogue recognised another framework (:attr:`rankmap.explain.docread.DocFacts.frameworks`)
and the input shows no PyTorch, the fix of a mapping category is said the way that framework
selects devices and starts processes. Each entry rests on the framework's own documentation.
"""

from __future__ import annotations

from dataclasses import replace

from rankmap.explain.docfacts import DocFacts
from rankmap.findings import Finding

_JAX = "https://jax.readthedocs.io/en/latest/multi_process.html"
_TF = "https://www.tensorflow.org/api_docs/python/tf/config/set_visible_devices"
_CUPY = "https://docs.cupy.dev/en/stable/reference/generated/cupy.cuda.Device.html"
_HVD = "https://horovod.readthedocs.io/en/stable/pytorch.html"
_RAY = "https://docs.ray.io/en/latest/ray-core/scheduling/accelerators.html"
_VLLM = "https://docs.vllm.ai/en/latest/serving/distributed_serving.html"
_NCCL_TESTS = "https://github.com/NVIDIA/nccl-tests#usage"

_PER_PROCESS = {
    "jax": "Give each process its own GPU(s): `jax.distributed.initialize(local_device_ids=[i])` "
    "with the process's local index, or a CUDA_VISIBLE_DEVICES per process, and place work on "
    f"`jax.local_devices()` (this process's), not `jax.devices()` (every process's) ({_JAX}).",
    "tensorflow": "Pick the worker's GPU before any op: `gpus = tf.config.list_physical_devices"
    "('GPU'); tf.config.set_visible_devices(gpus[local_index], 'GPU')`, with the index among the "
    "GPUs this process sees (its local rank, not the task index of TF_CONFIG) "
    f"({_TF}).",
    "cupy": "Select the device in every process before any allocation or communicator: "
    "`cupy.cuda.Device(local_rank).use()` with the rank on its own node (e.g. "
    "OMPI_COMM_WORLD_LOCAL_RANK), and create the NcclCommunicator after it "
    f"({_CUPY}).",
    "horovod": "Pin each process to the GPU of its local rank: `torch.cuda.set_device("
    "hvd.local_rank())` (PyTorch) or `tf.config.set_visible_devices(gpus[hvd.local_rank()], "
    "'GPU')` (TensorFlow), and start as many processes per host as it has GPUs: `horovodrun -np "
    f"TOTAL -H host1:GPUS,host2:GPUS` ({_HVD}).",
    "ray": "Inside a Ray worker use the GPUs Ray assigned it (Ray sets its CUDA_VISIBLE_DEVICES: "
    "they are cuda:0.., see `ray.get_gpu_ids()`) and request them with `num_gpus` "
    f"({_RAY}).",
}
_SERVING = (
    "Give the engine as many visible GPUs as tensor_parallel_size x pipeline_parallel_size "
    "(CUDA_VISIBLE_DEVICES listing that many, or a smaller --tensor-parallel-size), one engine per "
    f"set of GPUs ({_VLLM})."
)
_TESTS = (
    "nccl-tests: one process per GPU (`mpirun -np TOTAL_GPUS ... -g 1`) or one process per node "
    "that drives all its GPUs (`-np NODES ... -g GPUS_PER_NODE`); each process takes the GPUs of "
    f"its local rank on its host, so hosts must have distinct hostnames ({_NCCL_TESTS})."
)
# each process already sees only its own GPU(s): the index the framework is given must count
# from 0 in that process (review 59: a JAX job under `srun --gpus-per-task=1` was told to pass
# its local index, which is what failed)
_OWN_LIST = (
    "Each process already sees only the GPU(s) its launcher or scheduler gave it (a per-task "
    "CUDA_VISIBLE_DEVICES, `srun --gpus-per-task`, Ray's assignment): inside it they count from 0, "
)
_SEES_ITS_OWN = {
    "jax": _OWN_LIST + "so pass `jax.distributed.initialize(local_device_ids=[0])` or leave "
    "`local_device_ids` out; or give every task all of the node's GPUs and select by local index "
    f"({_JAX}).",
    "tensorflow": _OWN_LIST + "so use `tf.config.list_physical_devices('GPU')[0]`; or give every "
    f"task all of the node's GPUs and select by local rank ({_TF}).",
    "cupy": _OWN_LIST + "so use `cupy.cuda.Device(0).use()`; or give every process all of the "
    f"node's GPUs and select by local rank ({_CUPY}).",
    "horovod": _OWN_LIST + "so pin `torch.cuda.set_device(0)` (or `gpus[0]` in TensorFlow); "
    "`hvd.local_rank()` is the index only when every process sees all of the node's GPUs "
    f"({_HVD}).",
    "ray": _PER_PROCESS["ray"],
}
# framework -> category -> fix
FIXES: dict[str, dict[str, str]] = {
    fw: {
        **dict.fromkeys(("no_set_device", "global_rank_as_device", "oversubscribed"), text),
        "per_process_visible_devices": _SEES_ITS_OWN[fw],
    }
    for fw, text in _PER_PROCESS.items()
}
for _fw in ("vllm", "sglang", "tensorrt-llm"):
    FIXES[_fw] = {"oversubscribed": _SERVING, "visible_devices_mismatch": _SERVING}
FIXES["nccl-tests"] = {
    "oversubscribed": _TESTS,
    "global_rank_as_device": _TESTS,
    "no_set_device": _TESTS,
}
FIXES["rocm"] = {
    "container_mapping": "Pass the AMD GPUs to the container: `--device=/dev/kfd --device=/dev/dri` "
    "(one `/dev/dri/renderD*` per GPU to narrow), or `amd.com/gpu: N` in a pod spec; inside it, "
    "HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES narrow further "
    "(https://rocm.docs.amd.com/projects/install-on-linux/en/latest/how-to/docker.html).",
}


def framework_of(doc: DocFacts | None, text_has_torch: bool) -> str | None:
    """The framework whose fixes apply: the first one the catalogue recognised that has fixes,
    where the input shows no PyTorch (Horovod and the serving engines run on it: theirs apply
    anyway)."""
    if doc is None:
        return None
    seen = set(doc.frameworks)
    for fw in _PRIORITY:
        if fw in seen and (not text_has_torch or fw in _ON_TORCH):
            return fw
    return None


# the most specific first: a test binary or a library over the engine that runs it, an engine
# over the cluster it runs on
_PRIORITY = (
    "nccl-tests",
    "cupy",
    "jax",
    "tensorflow",
    "horovod",
    "vllm",
    "sglang",
    "tensorrt-llm",
    "ray",
    "rocm",
)


_ON_TORCH = frozenset({"horovod", "vllm", "sglang", "tensorrt-llm", "ray", "nccl-tests", "rocm"})


def in_framework_words(
    findings: list[Finding],
    doc: DocFacts | None,
    texts: list[str],
    named: frozenset[str] = frozenset(),
) -> list[Finding]:
    """``findings`` with the fixes of the framework the input shows, where it has its own;
    a fix the evidence itself ``named`` (one cause, not the category's) stays."""
    has_torch = any("torch" in t.lower() for t in texts)  # (torchrun too): its fixes apply
    fw = framework_of(doc, has_torch)
    if fw is None:
        return findings
    table = FIXES[fw]
    return [
        replace(f, fix=table[f.category]) if f.category in table and f.fix not in named else f
        for f in findings
    ]
