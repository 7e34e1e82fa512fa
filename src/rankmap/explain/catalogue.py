"""The signal catalogue: every textual recogniser of the whole-paste reader, as data.

Each :class:`Signal` is a regular expression (most are plain literals) with the categories it
supports and a weight, the segment kinds it applies to (see :mod:`rankmap.explain.document`),
whether it marks a *failure* of this family (a failure with weak support still gets a best guess;
context signals alone never do), and the fact it rests on: a section of ``shared/reference/``
or a public thread. The structured recognisers (duplicate GPU, invalid ordinal, Init lines, the
launch simulation, the script analysis) live in :mod:`rankmap.explain.patterns` and
:mod:`rankmap.explain.scoring`; this table holds everything else.

Weights: 5-6 a message that names the cause, 3-4 a symptom or a setting that points at one
category, 1-2 context that makes a category plausible. Negative weights speak against.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

ANY = frozenset({"log", "prose", "code", "shell", "config", "env"})
TEXT = frozenset({"log", "prose"})
PROSE = frozenset({"prose"})
CODE = frozenset({"code"})
NOT_PROSE = frozenset({"log", "code", "shell", "config", "env"})

CUDA_DEV = "reference/cuda_devices.md"
LAUNCHERS = "reference/launchers.md"
NCCL = "reference/nccl.md"
PT = "reference/pytorch_nccl.md"


@dataclass(frozen=True)
class Signal:
    """One recogniser: pattern -> categories with weights, and the fact behind it."""

    id: str
    pattern: re.Pattern[str]
    supports: tuple[tuple[str, float], ...]
    fact: str
    where: frozenset[str] = ANY
    failure: bool = False  # the text shows a failure of this family (not only context)
    framework: str | None = None  # the framework the signal identifies, if any
    keys: tuple[str, ...] = ()  # lowercase substrings every match contains (see KEYS)


def _s(
    sid: str,
    regex: str,
    supports: dict[str, float],
    fact: str,
    *,
    where: frozenset[str] = ANY,
    failure: bool = False,
    framework: str | None = None,
    case: bool = False,
) -> Signal:
    flags = 0 if case else re.IGNORECASE
    return Signal(
        sid, re.compile(regex, flags), tuple(supports.items()), fact, where, failure, framework
    )


# fmt: off
SIGNALS: tuple[Signal, ...] = (
    # --- invalid device / visibility, every framework's spelling --------------------------------
    _s("hip-invalid-device", r"hipErrorInvalidDevice|HIP error: invalid device ordinal",
       {"oversubscribed": 2, "visible_devices_mismatch": 2, "per_process_visible_devices": 1},
       "ROCm HIP runtime: hipErrorInvalidDevice is CUDA's invalid device ordinal "
       "(https://rocm.docs.amd.com/projects/HIP/en/latest/reference/error_codes.html)",
       failure=True, framework="rocm"),
    _s("xla-invalid-device", r"CUDA_ERROR_INVALID_DEVICE",
       {"per_process_visible_devices": 2, "oversubscribed": 2, "visible_devices_mismatch": 1},
       f"{CUDA_DEV} §1: an index >= the visible count; JAX defaults to all local GPUs per process",
       failure=True, framework="jax"),
    _s("uuid-as-int", r"invalid literal for int\(\) with base 10: '(?:GPU|MIG)-",
       {"visible_devices_mismatch": 6, "mig": 1},
       f"{CUDA_DEV} §1: CUDA_VISIBLE_DEVICES may hold GPU-/MIG- UUIDs; code that parses "
       "entries as integers fails (https://github.com/vllm-project/vllm/issues/13815)",
       failure=True),
    _s("mig-uuid-int", r"MIG-[0-9a-f]{8}-[0-9a-f-]+'?\s*(?:is not|cannot be|invalid)",
       {"mig": 4, "visible_devices_mismatch": 2}, f"{NCCL} (c): MIG instances are named by UUID",
       failure=True),
    _s("no-cuda-device", r"no CUDA-capable device is detected|CUDA_ERROR_NO_DEVICE|cudaErrorNoDevice"
       r"|Found no NVIDIA driver|torch\.cuda\.is_available\(\) (?:is|returns?) False"
       r"|No CUDA GPUs are available",
       {"visible_devices_mismatch": 3, "container_mapping": 3, "per_process_visible_devices": 2},
       f"{CUDA_DEV} §1 (an empty or wrong CUDA_VISIBLE_DEVICES hides every GPU) and §3 "
       "(a container started without GPUs)", failure=True),
    _s("cvd-mentioned", r"CUDA_VISIBLE_DEVICES?\b", {"visible_devices_mismatch": 1},
       f"{CUDA_DEV} §1"),
    _s("cvd-assigned", r"CUDA_VISIBLE_DEVICES?\s*=\s*['\"]?\d", {"visible_devices_mismatch": 1},
       f"{CUDA_DEV} §1: the user narrowed the visible GPUs"),
    _s("cvd-ignored", r"CUDA_VISIBLE_DEVICES[^\n]{0,80}(?:still|ignored|not (?:work|respected|"
       r"honou?red|passed)|always|overwrit|overrid)", {"visible_devices_mismatch": 4},
       f"{CUDA_DEV} §1: a later assignment (in code or a wrapper) replaces the user's list",
       failure=True),
    _s("device-count-wrong", r"device_count\(\)[^\n]{0,40}(?:only|returns?|shows?|is) "
       r"(?:only )?(?:1|one|0)\b|(?:sees?|detects?|shows?) only (?:one|1) gpu",
       {"mig": 2, "visible_devices_mismatch": 2, "container_mapping": 1}, f"{CUDA_DEV} §1",
       failure=True),
    _s("cvd-set-in-code", r"os\.environ\[\s*['\"]CUDA_VISIBLE_DEVICES['\"]\s*\]\s*=|"
       r"os\.environ\.setdefault\(\s*['\"]CUDA_VISIBLE_DEVICES",
       {"visible_devices_mismatch": 3},
       f"{CUDA_DEV} §1: CVD is read once when CUDA initialises; setting it in code after that, "
       "or per process, renumbers devices", where=CODE),
    _s("hip-visible", r"HIP_VISIBLE_DEVICES|ROCR_VISIBLE_DEVICES",
       {"visible_devices_mismatch": 3, "per_process_visible_devices": 1},
       "ROCm: HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES narrow and renumber GPUs like "
       "CUDA_VISIBLE_DEVICES (https://rocm.docs.amd.com/en/latest/conceptual/gpu-isolation.html)",
       framework="rocm"),
    _s("tf-visible-list", r"visible_device_list", {"visible_devices_mismatch": 4},
       "TensorFlow GPUOptions.visible_device_list renumbers like CUDA_VISIBLE_DEVICES "
       "(https://www.tensorflow.org/api_docs/python/tf/compat/v1/GPUOptions)",
       framework="tensorflow"),
    _s("device-order", r"CUDA_DEVICE_ORDER|FASTEST_FIRST", {"visible_devices_mismatch": 3},
       f"{CUDA_DEV} §2: CUDA's default order is fastest first, nvidia-smi's is PCI bus order"),
    _s("physical-id", r"physical[_ ]device[_ ]id|device_id_to_physical",
       {"visible_devices_mismatch": 2}, f"{CUDA_DEV} §1: logical -> physical index"),
    # --- MIG ------------------------------------------------------------------------------------
    _s("mig-profile", r"\bmig-\d+g\.\d+gb\b|\b\d+g\.\d+gb\b", {"mig": 5},
       f"{NCCL} (c): MIG profiles are named <slices>g.<mem>gb"),
    _s("mig-uuid", r"\bMIG-(?:GPU-)?[0-9a-f]{8}", {"mig": 4}, f"{NCCL} (c)", case=True),
    _s("mig-mode", r"\bMIG(?: mode)?\s+(?:is\s+)?(?:enabled|on)\b|\bMIG (?:instance|device|slice|"
       r"partition)s?\b|\bmulti-instance gpu", {"mig": 4}, f"{NCCL} (c)"),
    _s("mig-word", r"\bMIG\b", {"mig": 3}, f"{NCCL} (c)", case=True),
    # --- containers / Kubernetes ----------------------------------------------------------------
    _s("nvidia-visible", r"NVIDIA_VISIBLE_DEVICES", {"container_mapping": 3},
       f"{CUDA_DEV} §3: the container toolkit exposes the GPUs NVIDIA_VISIBLE_DEVICES names"),
    _s("k8s-gpu-resource", r"nvidia\.com/gpu|amd\.com/gpu", {"container_mapping": 3},
       f"{CUDA_DEV} §4: the device plugin allocates GPUs per container"),
    _s("k8s-mig-resource", r"nvidia\.com/mig-", {"mig": 4, "container_mapping": 2},
       f"{CUDA_DEV} §4 / {NCCL} (c): MIG strategy of the device plugin"),
    _s("device-plugin", r"device[- ]plugin|kubelet|gpu-operator", {"container_mapping": 3},
       f"{CUDA_DEV} §4"),
    _s("docker-daemon", r"Error response from daemon|could not select device driver|"
       r"unknown or invalid runtime name: nvidia|device_ids|count: all",
       {"container_mapping": 4}, f"{CUDA_DEV} §3", failure=True),
    _s("docker-gpus", r"docker run|--gpus[ =](?:all\b|['\"]*device=)|nvidia-docker|--runtime[ =]nvidia|"
       r"nvidia-container|container toolkit|docker-compose|docker compose",
       {"container_mapping": 2}, f"{CUDA_DEV} §3"),
    _s("docker-word", r"\bdocker\b|\bcontainers?\b", {"container_mapping": 1}, f"{CUDA_DEV} §3"),
    _s("inside-container", r"(?:inside|in) (?:a |the |my )?(?:docker|container|pod)s?\b|"
       r"\bpods?\b", {"container_mapping": 1, "host_identity": 1}, f"{CUDA_DEV} §3-4",
       where=PROSE),
    _s("privileged", r"--privileged|privileged: true|\bprivileged\b", {"container_mapping": 2},
       f"{CUDA_DEV} §3: a privileged container sees every GPU of the host"),
    _s("nvml-unknown", r"Failed to initialize NVML: Unknown Error", {"container_mapping": 6},
       "Containers lose their GPU devices after a systemd cgroup reload "
       "(https://github.com/NVIDIA/nvidia-docker/issues/1671)", failure=True),
    _s("cgroup", r"\bcgroups?\b|devices\.allow", {"container_mapping": 2}, f"{CUDA_DEV} §3"),
    # --- host identity --------------------------------------------------------------------------
    _s("same-hostname", r"same host ?name|identical host ?names?|hostnames? (?:are|is) (?:the )?"
       r"(?:same|identical)|same /etc/hostname|--hostname|hostNetwork|host network",
       {"host_identity": 5, "container_mapping": 1},
       f"{NCCL} (b): ranks whose host hash (hostname + boot_id) match are one host"),
    _s("boot-id", r"boot_id|NCCL_HOSTID|host[ _-]?hash|hostHash", {"host_identity": 4},
       f"{NCCL} (b)"),
    _s("hostname-resolution", r"gethostname|\bFQDN|fully qualified|local ?host detection|"
       r"hostlist|short host ?name|/etc/hosts", {"host_identity": 3}, f"{NCCL} (b)"),
    _s("two-pods-one-node", r"(?:two|2|multiple|several) (?:pods|containers) (?:on|in) "
       r"(?:the same|one|a single) (?:node|host|machine)", {"host_identity": 3,
       "container_mapping": 3}, f"{NCCL} (b): containers of one machine share boot_id"),
    _s("p2p-ipc", r"via P2P/IPC|via SHM|P2P/IPC/read", {"host_identity": 1, "other": 1},
       f"{NCCL} (d): NCCL picked an intra-host transport"),
    # --- per-process visibility (Slurm, Ray, MPI, dask, JAX) -----------------------------------
    _s("gpus-per-task", r"--gpus-per-task|gpus_per_task|SLURM_GPUS_PER_TASK|--gpu-bind|"
       r"gres/gpu:1\b|SLURM_STEP_GPUS", {"per_process_visible_devices": 4},
       f"{LAUNCHERS} §5: per-task binding gives every task its own CUDA_VISIBLE_DEVICES"),
    _s("ray", r"\bRay actor|ray\.remote|@ray\.remote|RayWorkerWrapper|\bray::|num_gpus\s*=|"
       r"RayTaskError|ray\.exceptions|RayActorError|"
       r"RAY_EXPERIMENTAL_NOSET", {"per_process_visible_devices": 3},
       f"{LAUNCHERS} §8: Ray sets each worker's CUDA_VISIBLE_DEVICES to its assigned GPUs",
       framework="ray"),
    _s("dask-cuda", r"dask[-_]cuda|LocalCUDACluster|dask_cuda", {"per_process_visible_devices": 4},
       "dask-cuda starts one worker per GPU with its own CUDA_VISIBLE_DEVICES "
       "(https://docs.rapids.ai/api/dask-cuda/stable/)", framework="dask"),
    _s("jax-distributed", r"jax\.distributed|local_device_ids|jax\.local_devices",
       {"per_process_visible_devices": 2},
       "JAX: jax.distributed.initialize(local_device_ids=...) picks each process's GPUs "
       "(https://jax.readthedocs.io/en/latest/multi_process.html)", framework="jax"),
    _s("one-gpu-per-proc", r"one (?:gpu|device) per (?:process|task|worker|rank)|"
       r"visible devices (?:for|of|per|to) (?:each|every|all|the) (?:worker|process|task)|"
       r"process[- ]per[- ](?:gpu|device)|"
       r"each (?:process|"
       r"task|worker) (?:only )?sees? (?:only )?(?:one|a single|its own) gpu",
       {"per_process_visible_devices": 3}, f"{LAUNCHERS} §5, §8"),
    _s("mpi-local", r"OMPI_COMM_WORLD_LOCAL_RANK|MPI_LOCALRANKID|jsrun|--map-by|-npernode|"
       r"mpi4py|mpi4jax|PMI_RANK", {"launcher_config": 1, "per_process_visible_devices": 1},
       f"{LAUNCHERS} §6: MPI launchers set no LOCAL_RANK or CUDA_VISIBLE_DEVICES",
       framework="mpi"),
    # --- global rank as device ------------------------------------------------------------------
    _s("rank-as-device-code", r"set_device\(\s*(?:args\.|self\.|opt\.|config\.)?(?:global_)?rank\s*\)|"
       r"cuda:\{?\s*(?:args\.|self\.)?(?:global_)?rank\s*\}?['\"]|"
       r"device_ids\s*=\s*\[\s*(?:args\.|self\.)?rank\s*\]|"
       r"set_device\(\s*(?:dist\.|torch\.distributed\.)?get_rank\(\)|"
       r"set_device\(\s*int\(os\.environ\[['\"](?:RANK|SLURM_PROCID)['\"]\]|"
       r"Device\(\s*(?:self\.|args\.)?(?:hvd_|global_)?rank\s*\)|hvd\.rank\(\)\s*\)",
       {"global_rank_as_device": 6}, f"{PT} §1: the device index must be the local rank",
       where=NOT_PROSE),
    _s("rank-not-local", r"(?:global )?rank (?:instead of|rather than) (?:the )?local[_ ]rank|"
       r"local[_ ]rank (?:should be used|instead)|instead of (?:the )?local[_ ]rank|"
       r"should (?:be|use) (?:the )?local[_ ]rank|parallel_config\.rank|"
       r"global rank as (?:the )?device|rank/local_rank|world rank|rank in the world|global (?:process )?index|"
       r"global rank[^.\n]{0,60}(?:device|cuda|gpu)|get_rank\(\)[^.\n]{0,40}(?:device|cuda)",
       {"global_rank_as_device": 4}, f"{PT} §1"),
    _s("multi-node", r"multi[- ]?node|multiple (?:nodes|machines|hosts)|across (?:nodes|machines)|"
       r"\b(?:two|2|several) (?:nodes|machines)|(?:second|other|2nd) (?:node|machine|host)",
       {"global_rank_as_device": 1, "host_identity": 1}, f"{PT} §1", where=TEXT),
    # --- no set_device / everything on GPU 0 ----------------------------------------------------
    _s("all-on-gpu0", r"(?:all|every|each) (?:the )?(?:processes|ranks|workers|process|rank|worker)"
       r"[^.\n]{0,40}(?:on|use|to|occupy|allocate)[^.\n]{0,20}(?:gpu|cuda|device)[ :]?0\b|"
       r"(?:extra|additional|more) (?:memory|processes|contexts?) on (?:gpu|cuda|device)[ :]?0|"
       r"(?:gpu|cuda|device)[ :]?0 (?:has|shows|gets|uses) (?:more|extra|additional|all|\d+ "
       r"processes)|only (?:gpu|cuda)[ :]?0 (?:is|was) used|defaults? to cuda:0|"
       r"memory (?:on|of) (?:gpu|rank) 0|imbalanced? (?:gpu )?memory|always (?:use|uses|runs? on|"
       r"goes to) (?:the )?(?:gpu|cuda|device)[ :-]?0|"
       r"(?:memory|space|contexts?|threads|processes|instances)[^.\n]{0,40}\b(?:on|in) ['\"`]?"
       r"(?:gpu ?0|cuda:0|device 0|the first gpu|1st gpu)|(?:stuck|piled?|all) on (?:the )?"
       r"(?:1st|first) gpu|rank 0 has more|(?:memory|contexts?)[^.\n]{0,30}(?:on|of) rank 0",
       {"no_set_device": 4, "other": 2}, f"{PT} §1: without set_device every rank works on cuda:0",
       failure=True),
    _s("gpu0-heavier", r"(?:gpu|cuda|device)[ :-]?0\b[^.\n]{0,50}(?:higher|more|larger|bigger|"
       r"heavier) than|(?:load|memory|usage)[^.\n]{0,20}(?:unbalanced|imbalanced)|\bunbalanced\b",
       {"no_set_device": 3, "other": 1}, f"{PT} §1: work that lands on cuda:0 of every rank",
       failure=True),
    _s("cuda-no-index-code", r"device\s*=\s*['\"]cuda['\"]|\.to\(\s*['\"]cuda['\"]\s*\)|"
       r"\.cuda\(\s*\)|torch\.device\(\s*['\"]cuda['\"]\s*\)",
       {"no_set_device": 2}, f"{PT} §1: 'cuda' without an index is the current device, cuda:0 "
       "unless set_device was called", where=NOT_PROSE),
    _s("torch-load-no-map", r"torch\.load\((?![^)\n]*map_location)[^)\n]*\)",
       {"other": 2, "no_set_device": 1},
       "torch.load restores tensors to the device they were saved from (GPU 0) unless "
       "map_location is given (https://pytorch.org/docs/stable/generated/torch.load.html)",
       where=NOT_PROSE),
    _s("map-location", r"map_location", {"other": 2, "no_set_device": 1},
       "https://pytorch.org/docs/stable/generated/torch.load.html"),
    _s("set-device-word", r"set_device", {"no_set_device": 1}, f"{PT} §1"),
    _s("same-gpu", r"(?:both|two|all|several|multiple) (?:the )?(?:processes|ranks|workers|"
       r"models?|instances)[^.\n]{0,30}(?:on|use|share) (?:the )?same (?:single )?(?:gpu|device)|"
       r"on the same (?:gpu|device|cuda device)",
       {"no_set_device": 2, "oversubscribed": 1, "visible_devices_mismatch": 1},
       f"{NCCL} (a): two ranks on one GPU", failure=True),
    _s("same-local-rank", r"local[_ ]rank (?:is |as |=\s*)?0 (?:on|for|in) (?:both|all|every)|"
       r"all (?:the )?local[_ ]ranks? (?:is |are |as )?0|same local[_ ]rank",
       {"launcher_config": 4}, f"{LAUNCHERS} §9: who sets LOCAL_RANK", failure=True),
    # --- oversubscription -----------------------------------------------------------------------
    _s("more-procs-than-gpus", r"more (?:processes|ranks|workers)(?: per node)? than (?:gpus|"
       r"devices|cards)|n?procs?_per_node\s*>\s*\w*gpus|"
       r"only (?:have|has) (?:\d|one|two|three|four) (?:gpus?|cards?|devices?)|"
       r"(?:nproc_per_node|nproc-per-node|num_processes|--num_gpus)[^\n]{0,30}(?:larger|greater|more)",
       {"oversubscribed": 4}, f"{LAUNCHERS} §1: one process per GPU"),
    # --- launcher / framework configuration -----------------------------------------------------
    _s("unrecognized-args", r"unrecognized arguments?:|error: unrecognized|no such option|"
       r"unexpected keyword argument|got an unexpected", {"launcher_config": 4},
       f"{LAUNCHERS} §1-4: launchers add or forward options the program must accept",
       failure=True),
    _s("rank-out-of-range", r"Invalid rank \d+, rank should be in the interval|rank \d+ is out of "
       r"range|rank should be (?:in|less than)", {"launcher_config": 5, "oversubscribed": 1},
       f"{LAUNCHERS} §5, §7: more tasks were started than the framework's world size",
       failure=True),
    _s("local-rank-arg", r"--local[-_]rank", {"launcher_config": 3},
       f"{LAUNCHERS} §2: torch.distributed.launch passes --local-rank (torchrun sets LOCAL_RANK)"),
    _s("dist-launch", r"torch\.distributed\.launch|use_env", {"launcher_config": 2},
       f"{LAUNCHERS} §2"),
    _s("accelerate-config", r"accelerate config|distributed_type|num_processes|gpu_ids|"
       r"default_config\.yaml", {"launcher_config": 3}, f"{LAUNCHERS} §3"),
    _s("deepspeed-include", r"--include|--exclude|hostfile|\bslots\s*=|--num_gpus",
       {"launcher_config": 2}, f"{LAUNCHERS} §4"),
    _s("lightning", r"ddp_spawn|strategy\s*=\s*['\"]ddp|Trainer\([^)]*(?:gpus|devices)\s*=|"
       r"num_nodes\s*=", {"launcher_config": 2}, f"{LAUNCHERS} §7", framework="lightning"),
    _s("horovod", r"horovodrun|hvd\.local_rank|hvd\.init|horovod", {"launcher_config": 1},
       "Horovod: pin each process with hvd.local_rank() "
       "(https://horovod.readthedocs.io/en/stable/pytorch.html)", framework="horovod"),
    _s("master-addr", r"MASTER_ADDR|MASTER_PORT|init_method|env://|rdzv", {"launcher_config": 1},
       f"{LAUNCHERS} §1"),
    _s("spawn-independent", r"mp\.spawn|multiprocessing\.spawn|torch\.multiprocessing",
       {"launcher_config": 1, "no_set_device": 1}, f"{LAUNCHERS} §1"),
    # --- versions: CUDA / driver / NCCL / arch --------------------------------------------------
    _s("no-kernel-image", r"no kernel image is available|not compatible with the current PyTorch "
       r"installation|CUDA capability sm_\d+ is not compatible|sm_\d+ is not compatible|"
       r"no binary for gpu|hipErrorNoBinaryForGpu|invalid device function|"
       r"cudaErrorNoKernelImageForDevice",
       {"version_mismatch": 6}, f"{NCCL} (g): binaries carry code for a list of architectures",
       failure=True),
    _s("driver-too-old", r"driver version is insufficient|CUDA driver version is insufficient|"
       r"NVIDIA driver on your system is too old|CUDA_ERROR_SYSTEM_DRIVER_MISMATCH|"
       r"cudaErrorInsufficientDriver|unsupported toolchain|forward compatibility|"
       r"Driver/library version mismatch|CUDA_ERROR_UNSUPPORTED_PTX_VERSION|ptxas[^\n]{0,80}"
       r"(?:too old|unsupported|newer)|driver[^\n]{0,40}too old",
       {"version_mismatch": 6}, f"{NCCL} (g): CUDA runtime and driver requirements", failure=True),
    _s("gfx-arch", r"\bgfx\d{3,4}", {"version_mismatch": 1},
       "ROCm GPU architecture names (https://rocm.docs.amd.com/en/latest/reference/gpu-arch-specs.html)"),
    _s("gfx-override", r"HSA_OVERRIDE_GFX_VERSION", {"version_mismatch": 4},
       "ROCm: the code objects of a wheel are built per gfx architecture "
       "(https://rocm.docs.amd.com/en/latest/reference/gpu-arch-specs.html)", framework="rocm"),
    _s("cudnn", r"CuDNN library|cudnn[^\n]{0,40}(?:version|mismatch|not found|compiled)|"
       r"Loaded runtime CuDNN|libcudart\.so\.\d+[^\n]{0,40}(?:not found|cannot open)|"
       r"Could not load dynamic library 'lib(?:cudart|cublas|cudnn)",
       {"version_mismatch": 4}, "TensorFlow/PyTorch builds pin CUDA/cuDNN versions "
       "(https://www.tensorflow.org/install/source#gpu)", failure=True),
    _s("upgraded-driver", r"after (?:upgrading|updating|installing) (?:the |my |nvidia )*driver|"
       r"(?:driver|cuda|nccl) (?:upgrade|update)d?|(?:downgrad|upgrad)(?:e|ed|ing) "
       r"(?:to )?(?:the )?(?:driver|cuda|nccl|torch|pytorch)",
       {"version_mismatch": 3}, f"{NCCL} (g)", where=TEXT),
    _s("cuda-versions", r"torch\.version\.cuda|nvcc --version|cu1\d{2}\b|\+cu\d{3}|CUDA Version: "
       r"\d+\.\d|cuda[- ]?toolkit", {"version_mismatch": 1}, f"{NCCL} (g)"),
    _s("ofed", r"MLNX_OFED|HPC-X|hpcx|OFED version", {"version_mismatch": 2}, f"{NCCL} (g)"),
    _s("nccl-version-mismatch", r"NCCL version mismatch|different NCCL versions?|libnccl[^\n]{0,30}"
       r"(?:mismatch|conflict)", {"version_mismatch": 5}, f"{NCCL} (e)", failure=True),
    # --- GPU peer access / IPC / NVSHMEM (category other unless identity is wrong) ---------------
    _s("peer-access", r"peer access (?:is )?not (?:supported|enabled)|cudaErrorPeerAccess|"
       r"peer mapping resources exhausted|canAccessPeer|can_device_access_peer|"
       r"p2p (?:access )?(?:is )?not supported",
       {"other": 4}, "CUDA peer access between GPUs depends on topology/IOMMU "
       "(https://docs.nvidia.com/cuda/cuda-c-programming-guide/#peer-to-peer-memory-access)",
       failure=True),
    _s("custom-allreduce", r"custom[ _-]?all[ _-]?reduce", {"other": 4},
       "vLLM/TensorRT-LLM custom all-reduce needs GPU peer access "
       "(https://docs.vllm.ai/en/latest/serving/distributed_serving.html)"),
    _s("iommu", r"\biommu\b|ACS (?:enabled|override)|pci=noats", {"other": 4},
       "NCCL troubleshooting: IOMMU/ACS block GPU peer traffic "
       "(https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html)"),
    _s("p2p-disable", r"NCCL_P2P_DISABLE|NCCL_P2P_LEVEL|NCCL_SHM_DISABLE", {"other": 2},
       f"{NCCL} (f)"),
    _s("cuda-ipc", r"cudaIpc\w*|IPC handle|invalid resource handle|CUDA IPC",
       {"other": 3, "container_mapping": 1, "host_identity": 1},
       f"{NCCL} (b): P2P/IPC is chosen for ranks NCCL takes for one host", failure=True),
    _s("nvshmem", r"nvshmem|DeepEP|IBGDA|gdrcopy", {"other": 3, "container_mapping": 1},
       "NVSHMEM needs peer/RDMA access inside the container "
       "(https://docs.nvidia.com/nvshmem/api/faq.html)", framework="nvshmem"),
    _s("hang-first-collective", r"\b(?:hangs?|hung|hanging|stuck|freez(?:e|es|ing))\b",
       {"other": 1, "host_identity": 1}, f"{NCCL} (d): a hang at the first collective",
       failure=True, where=TEXT),
    _s("nccl-generic-error", r"NCCL (?:error|WARN)|ncclUnhandledCudaError|ncclSystemError|"
       r"unhandled cuda error|unhandled system error|RCCL|nccl-tests|all_reduce_perf",
       {"other": 1}, f"{NCCL} (e)", failure=True),
    # --- frameworks (identify only) --------------------------------------------------------------
    _s("vllm", r"\bvllm\b|VllmWorker|EngineCore|tensor[-_]parallel[-_]size", {},
       "vLLM", framework="vllm"),
    _s("sglang", r"\bsglang\b|sgl_kernel", {}, "SGLang", framework="sglang"),
    _s("cupy", r"\bcupy\b|cupy_backends", {"version_mismatch": 1}, "CuPy", framework="cupy"),
    _s("tensorflow", r"\btensorflow\b|tf\.config|tf\.distribute", {}, "TensorFlow",
       framework="tensorflow"),
)
# fmt: on

# The categories a mapping question can have (contract), in a stable order for ties.
CATEGORIES: tuple[str, ...] = (
    "oversubscribed",
    "visible_devices_mismatch",
    "no_set_device",
    "global_rank_as_device",
    "per_process_visible_devices",
    "mig",
    "container_mapping",
    "host_identity",
    "launcher_config",
    "version_mismatch",
    "other",
)

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
    "lightning": ("ddp_spawn", "strategy", "trainer(", "num_nodes"),
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
}
SIGNALS = tuple(replace(s, keys=KEYS[s.id]) for s in SIGNALS)
