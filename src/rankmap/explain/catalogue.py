"""The signal catalogue: every textual recogniser of the whole-paste reader, as data.

The signals are in :mod:`rankmap.explain.catalogue_device`,
:mod:`rankmap.explain.catalogue_stack` and :mod:`rankmap.explain.catalogue_family` (failure
classes with priors; their shape and weights: :mod:`rankmap.explain.signal_model`);
here they are assembled with their prefilter keys (:data:`KEYS`).
"""

from __future__ import annotations

from dataclasses import replace

from rankmap.categories import CATEGORIES  # the contract's categories, in a stable order for ties
from rankmap.explain.catalogue_device import DEVICE_SIGNALS
from rankmap.explain.catalogue_family import FAMILY_KEYS, FAMILY_SIGNALS
from rankmap.explain.catalogue_stack import STACK_SIGNALS
from rankmap.explain.signal_model import Signal

__all__ = ["CATEGORIES", "KEYS", "NEGATABLE", "SIGNALS", "Signal"]


# Prefilter keys: lowercase substrings one of which every match of the signal contains. The
# document reader runs a signal's regex only on lines holding a key (Python's case-insensitive
# regex search is slow on megabytes; ``str.find`` of a few keys is not).
KEYS: dict[str, tuple[str, ...]] = {
    "hip-invalid-device": ("hiperrorinvaliddevice", "hip error"),
    "xla-invalid-device": ("cuda_error_invalid_device",),
    "uuid-as-int": ("invalid literal for int",),
    "mig-uuid-int": ("mig-",),
    "no-cuda-device": (
        "cuda-capable",
        "cuda_error_no_device",
        "cudaerrornodevice",
        "found no nvidia driver",
        "is_available",
        "no cuda gpus",
    ),
    "cvd-mentioned": ("cuda_visible_device",),
    "cvd-ignored": ("cuda_visible_device",),
    "device-count-wrong": ("device_count", "only one gpu", "only 1 gpu"),
    "cvd-set-in-code": ("cuda_visible_devices",),
    "hip-visible": ("hip_visible_devices", "rocr_visible_devices"),
    "tf-visible-list": ("visible_device_list",),
    "device-order": ("cuda_device_order", "fastest_first"),
    "physical-id": ("physical",),
    "mig-profile": ("gb",),
    "mig-uuid": ("mig-",),
    "mig-mode": ("mig", "multi-instance"),
    "mig-word": ("mig",),
    "nvidia-visible": ("nvidia_visible_devices",),
    "k8s-gpu-resource": ("nvidia.com/gpu", "amd.com/gpu"),
    "k8s-mig-resource": ("nvidia.com/mig-",),
    "device-plugin": ("device-plugin", "device plugin", "kubelet", "gpu-operator"),
    "docker-daemon": (
        "error response from daemon",
        "could not select device driver",
        "unknown or invalid runtime",
        "device_ids",
        "count: all",
    ),
    "docker-gpus": ("docker", "--gpus", "nvidia-container", "container toolkit", "--runtime"),
    "cvd-assigned": ("cuda_visible_device",),
    "inside-container": ("docker", "container", "pod"),
    "docker-word": ("docker", "container"),
    "privileged": ("privileged",),
    "nvml-unknown": ("failed to initialize nvml",),
    "cgroup": ("cgroup", "devices.allow"),
    "same-hostname": ("host name", "hostname", "hostnetwork", "host network"),
    "boot-id": ("boot_id", "nccl_hostid", "hash"),
    "hostname-resolution": (
        "gethostname",
        "fqdn",
        "fully qualified",
        "host detection",
        "hostlist",
        "host name",
        "hostname",
        "/etc/hosts",
    ),
    "two-pods-one-node": ("pods", "containers"),
    "p2p-ipc": ("p2p/ipc", "via shm"),
    "gpus-per-task": (
        "gpus-per-task",
        "gpus_per_task",
        "gpu-bind",
        "gres/gpu:1",
        "slurm_step_gpus",
    ),
    "ray": ("ray", "num_gpus"),
    "dask-cuda": ("dask", "localcudacluster"),
    "jax-distributed": ("jax.", "local_device_ids"),
    "one-gpu-per-proc": ("per ", "each ", "visible devices", "process-per"),
    "mpi-local": (
        "ompi_comm_world_local_rank",
        "mpi_localrankid",
        "jsrun",
        "--map-by",
        "-npernode",
        "mpi4py",
        "mpi4jax",
        "pmi_rank",
    ),
    "rank-as-device-code": ("set_device", "cuda:", "device_ids", "device(", "hvd.rank()"),
    "rank-not-local": (
        "local_rank",
        "local rank",
        "global",
        "parallel_config",
        "get_rank",
        "world",
    ),
    "multi-node": ("multi", "across ", " nodes", " machines", "second ", "other ", "2nd "),
    "all-on-gpu0": (
        "gpu-0",
        "gpu0",
        "gpu 0",
        "gpu:0",
        "cuda:0",
        "cuda0",
        "cuda 0",
        "device 0",
        "device0",
        "device:0",
        "first gpu",
        "1st gpu",
        "imbalance",
        "rank 0 has",
        "on rank 0",
        "of rank 0",
    ),
    "gpu0-heavier": (
        "gpu0",
        "gpu 0",
        "gpu-0",
        "gpu:0",
        "cuda:0",
        "cuda0",
        "cuda 0",
        "device 0",
        "device0",
        "device:0",
        "device-0",
        "unbalanced",
        "imbalanced",
    ),
    "cuda-no-index-code": ("'cuda'", '"cuda"', ".cuda("),
    "torch-load-no-map": ("torch.load",),
    "map-location": ("map_location",),
    "set-device-word": ("set_device",),
    "same-gpu": ("same",),
    "same-local-rank": ("local_rank", "local rank"),
    "more-procs-than-gpus": ("than", "_per_node", "only ha", "nproc", "num_processes", "num_gpus"),
    "unrecognized-args": (
        "unrecognized",
        "no such option",
        "unexpected keyword",
        "got an unexpected",
    ),
    "local-rank-arg": ("--local",),
    "rank-out-of-range": ("invalid rank", "out of range", "rank should be"),
    "dist-launch": ("torch.distributed.launch", "use_env"),
    "accelerate-config": (
        "accelerate config",
        "distributed_type",
        "num_processes",
        "gpu_ids",
        "default_config.yaml",
    ),
    "deepspeed-include": ("--include", "--exclude", "hostfile", "slots", "--num_gpus"),
    "lightning": ("ddp_spawn", "strategy", "trainer(", "num_nodes", "--gpus", "initializing d"),
    "horovod": ("horovod", "hvd."),
    "master-addr": ("master_addr", "master_port", "init_method", "env://", "rdzv"),
    "spawn-independent": ("spawn", "torch.multiprocessing"),
    "no-kernel-image": (
        "no kernel image",
        "not compatible",
        "no binary for gpu",
        "hiperrornobinaryforgpu",
        "invalid device function",
        "cudaerrornokernelimagefordevice",
    ),
    "driver-too-old": (
        "insufficient",
        "too old",
        "driver_mismatch",
        "unsupported toolchain",
        "forward compatibility",
        "version mismatch",
        "unsupported_ptx",
        "ptxas",
    ),
    "gfx-override": ("hsa_override_gfx_version",),
    "gfx-arch": ("gfx",),
    "cudnn": ("cudnn", "libcudart", "could not load dynamic library"),
    "upgraded-driver": ("upgrad", "updat", "install", "downgrad"),
    "cuda-versions": (
        "torch.version.cuda",
        "nvcc",
        "cu1",
        "+cu",
        "cuda version",
        "cuda toolkit",
        "cuda-toolkit",
        "cudatoolkit",
    ),
    "ofed": ("mlnx_ofed", "hpc-x", "hpcx", "ofed version"),
    "nccl-version-mismatch": ("nccl version mismatch", "different nccl version", "libnccl"),
    "peer-access": ("peer", "p2p not supported", "p2p access", "p2p is not"),
    "custom-allreduce": ("custom",),
    "iommu": ("iommu", "acs ", "pci=noats"),
    "p2p-disable": ("nccl_p2p_disable", "nccl_p2p_level", "nccl_shm_disable"),
    "cuda-ipc": ("cudaipc", "ipc handle", "invalid resource handle", "cuda ipc"),
    "nvshmem": ("nvshmem", "deepep", "ibgda", "gdrcopy"),
    "hang-first-collective": ("hang", "hung", "stuck", "freez"),
    "nccl-generic-error": (
        "nccl error",
        "nccl warn",
        "ncclunhandledcudaerror",
        "ncclsystemerror",
        "unhandled cuda error",
        "unhandled system error",
        "rccl",
        "nccl-tests",
        "all_reduce_perf",
    ),
    "vllm": ("vllm", "enginecore", "parallel_size", "parallel-size"),
    "sglang": ("sglang", "sgl_kernel"),
    "cupy": ("cupy",),
    "tensorflow": ("tensorflow", "tf."),
    **FAMILY_KEYS,
}
# Settings and context that prose can deny ("not using docker", "no MIG", "MIG disabled",
# "without Ray"): a negated prose match is skipped (rankmap.explain.docread.negated). Messages and
# contrasts ("rank instead of local_rank", "doesn't support MIG") are never negatable.
NEGATABLE = frozenset(
    {
        "mig-profile", "mig-uuid", "mig-mode", "mig-word", "nvidia-visible", "k8s-gpu-resource",
        "k8s-mig-resource", "device-plugin", "docker-gpus", "docker-word", "inside-container",
        "privileged", "cgroup", "two-pods-one-node", "gpus-per-task", "ray", "dask-cuda",
        "jax-distributed", "mpi-local", "multi-node", "lightning", "horovod", "accelerate-config",
        "deepspeed-include", "upgraded-driver", "hip-visible", "cvd-assigned", "cvd-mentioned",
        "visible-devices-any", "same-hostname", "spawn-independent", "p2p-disable",
    }
)  # fmt: skip
SIGNALS: tuple[Signal, ...] = tuple(
    replace(s, keys=KEYS[s.id], negatable=s.id in NEGATABLE)
    for s in (*DEVICE_SIGNALS, *STACK_SIGNALS, *FAMILY_SIGNALS)
)
