"""Catalogue signals about devices: visibility, MIG, containers, host identity, per-process
binding, the rank used as the device, GPU 0 symptoms, oversubscription (see signal_model)."""

from __future__ import annotations

from rankmap.explain.context import VISIBLE_VARS
from rankmap.explain.signal_model import (
    CODE,
    CUDA_DEV,
    LAUNCHERS,
    NCCL,
    NOT_LOG,
    NOT_PROSE,
    PROSE,
    PT,
    SENTENCE,
    TEXT,
    Signal,
)
from rankmap.explain.signal_model import sig as _s
from rankmap.launch_vars import RANK_VARS

# A variable that holds each process's own rank (launchers.md §9).
_RANK_VAR = "(?:" + "|".join(sorted(RANK_VARS, key=lambda n: (-len(n), n))) + ")"
# A Python value that is the process's local rank: str(local_rank), f"{args.local_rank}",
# os.environ["LOCAL_RANK"], os.environ.get("SLURM_LOCALID", "0")
_PY_RANK_VALUE = (
    r"(?:(?:str|int)\(\s*)*(?:f[\"']\{)?(?:os\.environ(?:\.get\(|\[)\s*[\"']" + _RANK_VAR
    + r"\b|(?:\w+\.){0,3}local_rank\b)"
)  # fmt: skip

# The words prose uses for "the processes of a job" and for "run on / use" (every inflection):
# one vocabulary for the symptoms below, so "all 4 tasks were running on GPU 0", "the workers
# used the same GPU" and "both ranks share one device" read alike.
_AGENTS = (
    r"(?:processes|process|procs|proc|ranks|rank|workers|worker|tasks|task|jobs|job|instances|instance|"
    r"actors|actor|engines|engine|replicas|replica|trainers|trainer|models|model|programs|"
    r"pods|containers|threads|pids|PIDs)"
)
_ON = (
    r"(?:(?:are|were|is|was|get|gets|got|ended up|end up|ends up|go|goes|went|land|lands|landed|"
    r"(?:are |were |is |was |all )?(?:running|placed|allocated|assigned|scheduled|bound|mapped|"
    r"put|pinned|started|launched|created)|run|runs|ran|sit|sits|sat|stay|stays|stayed|all)"
    r"(?: all)? (?:on|to|onto|in)|(?:are|were|is|was|get|gets|got) (?:all )?(?:assigned|given)|"
    r"use|uses|used|using|share|shares|shared|sharing|occupy|"
    r"occupies|occupied|occupying|select|selects|selected|pick|picks|picked|choose|chooses|chose|"
    r"see|sees|saw|allocate|allocates|allocated|allocating|(?:collide|collides|collided|colliding|"
    r"clash|clashes|clashed|clashing) (?:on|over|at)|(?:compete|competes|competed|competing|contend|"
    r"contends|contended|contending|fight|fights|fought|fighting) (?:for|over))"
)
# What a process does to a GPU it holds memory on (never "sees": every process sees them all)
_TAKES = (
    r"(?:uses|used|(?:is|was) using|grabs|grabbed|(?:is|was) grabbing|claims|claimed|takes|took|"
    r"occupies|occupied|allocates(?: memory)? on|allocated(?: memory)? on|initiali[sz]es|"
    r"initiali[sz]ed|creates? (?:a )?contexts? on|created (?:a )?contexts? on|runs on|ran on|"
    r"(?:is|was) running on|lands on|landed on|(?:is|was) placed on)"
)
# A job scheduler by name, not any "scheduler" (an LR or a diffusion scheduler) or "allocation"
_SCHEDULER = (
    r"(?:batch system|(?:job|batch|cluster|workload) scheduler|\bslurm\b|\bjsrun\b|\blsf\b|"
    r"\bflux (?:run|submit|batch|alloc)\b|\bpbs\b|(?:job|slurm|node|gpu) allocation|resource "
    r"manager)"
)
_VISIBLE_VAR = f"(?:{'|'.join(VISIBLE_VARS)})"
_IN_SENTENCE = SENTENCE + "{0,80}"  # the document reader searches one line at a time
_QUANT = r"(?:all|both|two|several|multiple|many|\d+)"
# after "on GPU 0": not a range or a list of GPUs ("GPU 0-3", "GPU 0 and GPU 1": no pile-up,
# review 43), unless the others are said to be idle ("on GPU 0 and GPUs 1-7 are empty")
# GPU 0 as writers name it: "gpu 0", "cuda:0", "device0", TensorFlow's "/gpu:0", "the first GPU"
# (not "the first GPU of its list": each process's own first GPU)
_GPU0 = (
    # "GPU 0", "cuda:0", and a named index: "device_id=0", "gpu index 0"
    r"(?:/?(?:gpu|cuda|device)(?:[ _](?:id|index|idx|ordinal))?(?:[ :]|\s?=\s?)?0\b|"
    r"(?:the )?(?:1st|first) (?:gpu|cuda device)\b"
    r"(?! (?:of|in|from) (?:its|their|each|his|her|the|that|this) ))"
)
# "GPU 0", "GPU=0", "cuda:0", "device #0" (not the start of a range or a list: "GPU 0-3")
_GPU0_NAMED = r"(?:gpu|cuda|device)\s?[=:#]?\s?0\b(?!\s?(?:[-,–]|and|or|&)\s?\d)"
# what a reporter sees a GPU do: hold the work (not what a message says: "OOM on GPU 0")
_HOLDS = r"(?:filled|full|used|busy|occupied|loaded|utili[sz]ed)\b"
# the work going somewhere: "still runs on", "always lands on", "instead uses"
_RUNS = (
    r"(?:runs?|running|ran|goes|going|went|lands?|landed|loads?|loaded|uses?|using|used|"
    r"allocat\w*|puts?|sits?|shows? up|ends? up)"
)
_NOT_A_RANGE = (
    r"(?!\s?(?:[-,–]|\.\.|…|to)\s?\d| (?:and|or|&) (?:gpus? ?|cuda:?|devices? ?)?(?:\d|one|two)\b"
    r"(?![^.\n]{0,25}\b(?:idle|empty|unused|free|at 0 ?%|not used|unutili[sz]ed)))"
)
# What a node "gets" when it is given a rank ("all pods get rank 0", "each node has node_rank=0")
SAME_RANK_VERBS = ("get", "gets", "got", "has", "have", "are", "is", "were", "was", "launched with",
                    "start with", "starts with", "report", "reports")  # fmt: skip

# Where a process reads its rank in the whole job (not on its node), in every launcher's and
# framework's spelling (reference/launchers.md §1, §5, §6: RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK,
# PMI_RANK, PMIX_RANK; torch.distributed, Horovod, mpi4py and JAX calls).
_GLOBAL_RANK = (
    # (MPI codes: world_rank / mpi_rank is the job-wide rank, MPI_Comm_rank's usual names)
    r"(?:(?:dist\.|torch\.distributed\.)?get_rank\(\)|hvd\.rank\(\)|(?:world|mpi)_rank\b|(?:\w+\.)?\w*comm\w*\."
    r"(?:Get_rank\(\)|rank\b)|jax\.process_index\(\)|int\(\s*os\.(?:environ(?:\.get\(|\[)|getenv\()"
    r"\s*['\"](?:RANK|SLURM_PROCID|OMPI_COMM_WORLD_RANK|PMI_RANK|PMIX_RANK)['\"](?:\s*,[^()]{0,12})?\s*[\])]"
    r"[^()]{0,8}\))"
)

# What NCCL "thinks" of several machines (not the writer's own opinion: "I think", "we assume").
_TAKES_FOR = (
    r"(?<!\bI )(?<!\bwe )(?<!\bWe )\b(?:thinks?|thought|treats?|treated|assumes?|assumed|"
    r"considers?|considered"
)
# The names of the visible-devices variables an "ignored" report names.
_VISIBLE = r"(?:(?:CUDA|HIP|ROCR)_VISIBLE_DEVICES|visible devices)"

# fmt: off
DEVICE_SIGNALS: tuple[Signal, ...] = (
    # --- invalid device / visibility, every framework's spelling --------------------------------
    _s("hip-invalid-device", r"hipErrorInvalidDevice|HIP error: invalid device ordinal",
       {},
       "ROCm HIP runtime: hipErrorInvalidDevice is CUDA's invalid device ordinal "
       "(https://rocm.docs.amd.com/projects/HIP/en/latest/reference/error_codes.html)",
       failure=True, framework="rocm"),
    _s("xla-invalid-device", r"CUDA_ERROR_INVALID_DEVICE",
       {"per_process_visible_devices": 1},
       f"{CUDA_DEV} §1: an index >= the visible count; JAX defaults to all local GPUs per process",
       failure=True, framework="jax"),
    _s("uuid-as-int", r"invalid literal for int\(\) with base 10: '(?:GPU|MIG)-",
       {"visible_devices_mismatch": 4},
       f"{CUDA_DEV} §1: CUDA_VISIBLE_DEVICES may hold GPU-/MIG- UUIDs; code that parses "
       "entries as integers fails (https://github.com/vllm-project/vllm/issues/13815); a MIG- "
       "UUID there is a MIG instance (mig-uuid adds its points)",
       failure=True),
    _s("mig-uuid-int", r"MIG-[0-9a-f]{8}-[0-9a-f-]+'?\s*(?:is not|cannot be|invalid)",
       {"mig": 4, "visible_devices_mismatch": 2}, f"{NCCL} (c): MIG instances are named by UUID",
       failure=True),
    # the machine has no GPU at all ("CPU only nodes on perlmutter", b26 dev): a GPU build that
    # finds none there failed on its host, not on a mapping (combinations_platform.no_gpu_on_the_host)
    # (not a login node where the environment was installed: the job runs elsewhere)
    _s("cpu-only-host", r"\bCPU[- ]only (?:compute )?(?:nodes?|machines?|partitions?|hosts?|servers?|"
       r"instances?|queues?)\b|(?<!\blogin )\b(?:nodes?|machines?|hosts?) (?:without|with no|that have "
       r"no) (?:any )?GPUs?\b|"
       # macOS has no CUDA (NVIDIA's drivers stop at 10.13): a Mac is a host without a CUDA GPU
       r"\bmac ?OS\b|\bOS ?X\b|\bMacBook\b|\bApple (?:M[1-4]|[Ss]ilicon)\b", {"other": 1},
       f"{CUDA_DEV} §1: a host with no GPU reports no device whatever the visible list",
       where=PROSE,
       fix="Run on a machine with an NVIDIA or AMD GPU, or ask for the CPU where there is none "
       "(`accelerator='cpu'` in Lightning, `--device cpu`, no `.cuda()`); a Mac has no CUDA GPU"),
    _s("no-cuda-device", r"no CUDA-capable device is detected|CUDA_ERROR_NO_DEVICE|cudaErrorNoDevice"
       # (not torch.load's "Attempting to deserialize object on a CUDA device but
       # torch.cuda.is_available() is False": a checkpoint opened on a CPU machine, review 49)
       r"|Found no NVIDIA driver|(?<!on a CUDA device but )torch\.cuda\.is_available\(\) (?:is|"
       r"returns?) False"
       r"|No (?:CUDA|HIP|ROCm) GPUs are available|hipErrorNoDevice|no ROCm-capable device"
       # ProcessGroupNCCL's constructor when the process sees no GPU (ProcessGroupNCCL.cpp:
       # TORCH_CHECK(at::cuda::getNumGPUs() != 0, ...)): the same fact, not a build without NCCL
       r"|ProcessGroupNCCL is only supported with GPUs, no GPUs found",
       {"visible_devices_mismatch": 3, "container_mapping": 3, "per_process_visible_devices": 2},
       f"{CUDA_DEV} §1 (an empty or wrong CUDA_VISIBLE_DEVICES hides every GPU) and §3 "
       "(a container started without GPUs)", failure=True),
    _s("cuda-init-unknown", r"CUDA initialization: CUDA unknown error|Setting the available "
       r"devices to be zero",
       {"container_mapping": 2.5, "version_mismatch": 1.5, "visible_devices_mismatch": 0.5},
       "PyTorch's own warning when cuInit fails: it names a CUDA_VISIBLE_DEVICES change after "
       f"start ({CUDA_DEV} §1); the same unknown error follows a container that lost its device "
       "nodes and a driver updated without reloading (https://github.com/NVIDIA/nvidia-docker/"
       "issues/1671)", failure=True),
    # the index the framework prints set against the GPU nvidia-smi shows ("current_device() is
    # 0 but nvidia-smi shows my job on GPU 3"): CUDA numbers the visible GPUs from 0, nvidia-smi
    # numbers every GPU of the machine (cuda_devices.md §1-2)
    _s("index-vs-nvidia-smi", r"(?:cuda:\d|current_device\(\)|device (?:index|id)|\bindex)"
       r"[^.\n]{0,40}\b(?:is|=|==|returns?|prints?|says?) ?\d\b[^.\n]{0,60}\bnvidia-smi\b[^.\n]{0,40}"
       r"\bGPU ?\d|\bnvidia-smi\b[^.\n]{0,40}\bGPU ?\d\b[^.\n]{0,60}\b(?:cuda:\d|current_device"
       r"\(\)|device (?:index|id))", {"visible_devices_mismatch": 1.5},
       f"{CUDA_DEV} §1-2: CUDA renumbers the visible GPUs from 0; nvidia-smi shows physical ones",
       where=PROSE),
    _s("cvd-mentioned", r"CUDA_VISIBLE_DEVICES?\b", {"visible_devices_mismatch": 1},
       f"{CUDA_DEV} §1"),
    _s("cvd-assigned", r"CUDA_VISIBLE_DEVICES?['\"`]?\s*(?:=|to(?: be)?|as)\s*['\"`]?\d",
       {"visible_devices_mismatch": 1},
       f"{CUDA_DEV} §1: the user narrowed the visible GPUs"),
    # ("still" with what the process still does: "CUDA_VISIBLE_DEVICES=2,3 still OOMs" says
    # nothing of the list; review 58)
    _s("cvd-ignored", _VISIBLE + r"[^\n]{0,80}(?:still (?:runs?|running|sees?|seeing|shows?|showing|"
       r"lists?|visible|lands?|goes|picks?|loads?|(?:uses?|using|used|occup\w*|allocat\w*) (?:all|"
       r"every|the same|the other|other|gpu|cuda|device|card|\d+ (?:gpus|cards|devices))|"
       r"on (?:all|every|the same|gpu|cuda|device|card))|ignor\w*|(?:not|n't)(?: being)? "
       r"(?:work\w*|respect\w*|honou?r\w*|passed|appl\w*|tak\w* effect)|no effect|"
       r"overwrit|overrid|unavailab)|" + _VISIBLE + SENTENCE + r"{0,80}\balways\b(?! (?:worked|works|work|been (?:fine|ok|okay|working)|ran|runs|succeed\w*|passed))|(?:ignor\w*|(?:not|n't) respect\w*|(?:not|n't) honou?r\w*|"
       r"overrid\w*|overwrit\w*)" + SENTENCE + r"{0,30}CUDA_VISIBLE_DEVICES|(?:(?<!configured )(?<!designed )(?<!built )(?<!set up )\bto|"
       r"\bshould|\bnow|\bmake\w*"
       r"(?: \w+){0,2}|\bfix\w*[^.\n]{0,30}) respect\w* (?:the )?(?:user'?s? )?(?:CUDA|HIP|ROCR)_VISIBLE_DEVICES",
       # a symptom of several causes: set after CUDA initialised, or replaced by a launcher
       # (DeepSpeed), a framework (Ray, Slurm binding) or the container runtime; the context
       # decides (explain/combinations.py)
       {"visible_devices_mismatch": 2.5, "launcher_config": 1, "per_process_visible_devices": 1},
       f"{CUDA_DEV} §1: CVD is read when CUDA initialises; a later assignment (in code, a "
       "launcher, a framework) replaces the user's list",
       failure=True),
    _s("device-count-wrong", r"device_count\(\)[^\n]{0,40}(?:only|returns?|shows?|is) "
       r"(?:only )?(?:1|one|0)\b|(?:sees?|detects?|shows?) only (?:one|1) gpu",
       {"mig": 2, "visible_devices_mismatch": 2, "container_mapping": 1}, f"{CUDA_DEV} §1",
       failure=True),
    _s("cvd-set-in-code", r"os\.environ\[\s*['\"]CUDA_VISIBLE_DEVICES['\"]\s*\]\s*=(?!\s*"
       + _PY_RANK_VALUE + ")|"  # a per-rank value is cvd-per-rank
       r"os\.environ\.setdefault\(\s*['\"]CUDA_VISIBLE_DEVICES",
       {"visible_devices_mismatch": 3},
       f"{CUDA_DEV} §1: CVD is read once when CUDA initialises; setting it in code after that, "
       "or per process, renumbers devices", where=CODE),
    # the CUDA twins weigh like their mention (cvd-mentioned): a name is context, not a cause
    _s("hip-visible", r"HIP_VISIBLE_DEVICES|ROCR_VISIBLE_DEVICES", {"visible_devices_mismatch": 1},
       "ROCm: HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES narrow and renumber GPUs like "
       "CUDA_VISIBLE_DEVICES (https://rocm.docs.amd.com/en/latest/conceptual/gpu-isolation.html)",
       framework="rocm"),
    _s("tf-visible-list", r"visible_device_list", {"visible_devices_mismatch": 1},
       "TensorFlow GPUOptions.visible_device_list renumbers like CUDA_VISIBLE_DEVICES "
       "(https://www.tensorflow.org/api_docs/python/tf/compat/v1/GPUOptions)",
       framework="tensorflow"),
    _s("device-order", r"CUDA_DEVICE_ORDER|FASTEST_FIRST", {"visible_devices_mismatch": 3},
       f"{CUDA_DEV} §2: CUDA's default order is fastest first, nvidia-smi's is PCI bus order"),
    # NVML (and nvidia-smi) number the physical GPUs; CUDA and PyTorch number the visible ones
    _s("nvml-vs-cuda-index", r"\bNVML\b[^.\n]{0,40}\b(?:vs\.?|versus|against|and)\b[^.\n]{0,20}"
       r"\b(?:pytorch|torch|cuda)\b[^.\n]{0,20}\b(?:index\w*|numbering|ids|ordinals?|indices)|"
       r"\b(?:index\w*|numbering|ordinals?)\b[^.\n]{0,30}\bNVML\b[^.\n]{0,30}\b(?:pytorch|torch|cuda)\b",
       {"visible_devices_mismatch": 3},
       f"{CUDA_DEV} §5.1: NVML ignores CUDA_VISIBLE_DEVICES and numbers GPUs in PCI order; CUDA "
       "numbers the visible ones from 0"),
    _s("physical-id", r"physical[_ ]device[_ ]id|device_id_to_physical|physical (?:gpu |device )?"
       r"(?:ids?|index|indices|ordinals?|numbers?)|logical (?:gpu |device )?(?:ids?|index|indices)|"
       r"(?:actual|real) (?:gpu |device )?(?:ids?|index|indices|numbers?)|(?:not|non)[- ]contiguous|gaps? in (?:the )?(?:gpu |device )?(?:ids|indices|list)|"
       r"start(?:ing)? (?:gpu )?id (?:is )?not (?:equal to )?0|not start(?:ing)? (?:at|from|with) 0",
       {"visible_devices_mismatch": 3}, f"{CUDA_DEV} §1: after narrowing, devices are renumbered "
       "from 0; a physical index used as a logical one is wrong or out of range"),
    # the rule itself ("set CUDA_VISIBLE_DEVICES before importing torch"): advice or the fix,
    # no failure on its own
    _s("cvd-before-import", r"CUDA_VISIBLE_DEVICES[^.\n]{0,30}before (?:`|')?import(?:ing)? torch",
       {"visible_devices_mismatch": 3},
       f"{CUDA_DEV} §1: CUDA reads CUDA_VISIBLE_DEVICES once, when it initialises"),
    _s("cvd-after-init", r"CUDA_VISIBLE_DEVICES[^.\n]{0,80}\b(?:after|once)\b[^.\n]{0,40}(?:import"
       r"(?:ing)? torch|CUDA (?:is |was |has been )?initiali[sz]|is_available|cuda init|torch\.cuda|"
       r"the first CUDA call)|(?:after|once) (?:import(?:ing)? torch|CUDA (?:is |was |has been )?"
       r"initiali[sz]\w*|(?:calling )?torch\.cuda\.\w+)[^.\n]{0,60}CUDA_VISIBLE_DEVICES",
       {"visible_devices_mismatch": 5},
       f"{CUDA_DEV} §1: CUDA reads CUDA_VISIBLE_DEVICES once, when it initialises; a later "
       "change has no effect or breaks the device count (PyTorch's device < num_gpus assert)",
       failure=True),
    # --- MIG ------------------------------------------------------------------------------------
    _s("mig-profile", r"\bmig-\d+g\.\d+gb\b|\b\d+g\.\d+gb\b", {"mig": 5},
       f"{NCCL} (c): MIG profiles are named <slices>g.<mem>gb"),
    _s("mig-uuid", r"\bMIG-(?:GPU-)?[0-9a-f]{8}", {"mig": 4}, f"{NCCL} (c)", case=True),
    _s("mig-mode", r"\bMIG(?: mode)?\s+(?:is\s+)?(?:enabled|on)\b|\bMIG (?:instance|device|slice|"
       r"partition)s?\b|\bmulti-instance gpu", {"mig": 4}, f"{NCCL} (c)"),
    # not the "MIG M." column header of every nvidia-smi table (the table reader reports MIG mode)
    _s("mig-word", r"\bMIG\b(?!\s*M\.)", {"mig": 3}, f"{NCCL} (c)", case=True),
    _s("mig-caps", r"/capabilities/gpu\d+/mig/|nvidia-caps/nvidia-cap\d+", {"mig": 4},
       f"{NCCL} (c): MIG instances are exposed to containers as /proc/driver/nvidia/capabilities "
       "gi/ci access files and /dev/nvidia-caps devices"),
    # --- containers / Kubernetes ----------------------------------------------------------------
    _s("nvidia-visible", r"NVIDIA_VISIBLE_DEVICES", {"container_mapping": 3},
       f"{CUDA_DEV} §3: the container toolkit exposes the GPUs NVIDIA_VISIBLE_DEVICES names"),
    _s("nvd-ignored", r"NVIDIA_VISIBLE_DEVICES" + SENTENCE + r"{0,60}(?:ignor\w*|(?:not|n't)(?: being)? "
       r"(?:respect\w*|honou?r\w*|work\w*|appl\w*)|no effect|overrid\w*)|(?:multiple|all|more|"
       r"every|\d+) GPUs? (?:are |is )?(?:visible|shown|seen)[^.\n]{0,40}(?:despite|although|even "
       r"though|in (?:a|the|each|my) (?:container|pod))|\b(?:pod|container)s?\b"
       + SENTENCE + r"{0,80}\b(?:shows?|"
       r"showing|sees?|seeing|lists?|listing|exposes?) (?:all|every|the whole node's|\d+) (?:\d+ )?"
       r"(?:of the )?(?:node's |host's )?GPUs",
       {"container_mapping": 4},
       f"{CUDA_DEV} §3-4: the container runtime (or the device plugin) decides which GPUs a "
       "container sees; a privileged container or a runtime ignoring NVIDIA_VISIBLE_DEVICES sees "
       "them all", failure=True),
    _s("k8s-gpu-resource", r"nvidia\.com/gpu|amd\.com/gpu", {"container_mapping": 3},
       f"{CUDA_DEV} §4: the device plugin allocates GPUs per container"),
    _s("k8s-mig-resource", r"nvidia\.com/mig-", {"mig": 4, "container_mapping": 2},
       f"{CUDA_DEV} §4 / {NCCL} (c): MIG strategy of the device plugin"),
    _s("device-plugin", r"device[- ]plugin|kubelet|gpu-operator", {"container_mapping": 3},
       f"{CUDA_DEV} §4"),
    _s("docker-daemon", r"Error response from daemon|could not select device driver|"
       r"unknown or invalid runtime name: nvidia|"
       # compose's `device_ids:` key (YAML at the start of its line, or a quoted JSON key), not
       # PyTorch DDP's "DDP Initialized with: ..., device_ids: 0, ..." log line (review 65)
       r"(?m:^)\s*(?:-\s*)?['\"]?device_ids['\"]?\s*:\s*(?:\[|(?m:$))|[{,]\s*['\"]device_ids['\"]\s*:|"
       # (compose's value is a list, inline or on the lines below; DDP's log prints a scalar,
       # also on a line of its own: "device_ids: 0", review 17)
       r"[{,]\s*device_ids\s*:\s*\[|(?m:^)\s*count: all",
       {"container_mapping": 4}, f"{CUDA_DEV} §3", failure=True),
    _s("docker-gpus", r"docker run|podman run|--gpus[ =](?:all\b|['\"]*device=)|nvidia-docker|--runtime[ =]nvidia|"
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
       r"(?:same|identical)|same /etc/hostname|hosts? ?(?:names? )?(?:with|that share|sharing) "
       r"(?:the )?same (?:host ?name )?prefix|(?:full|whole) host ?name instead of|"
       # "both nodes have hostname \"dgx\"", "all pods report the hostname localhost"
       r"\b(?:both|all|two|every|each of the) (?:\w+ )?(?:(?:nodes|machines|hosts|servers|pods|"
       r"containers|vms)\b[^.\n]{0,40}\b)?(?:have|has|report|show|use|got|get)s? (?:the )?(?:same )?"
       r"host ?name\b|"
       # "`hostname` prints gpu-template on each", "hostname is node0 on both machines"
       r"\bhost ?name`?\s(?:prints|returns|shows|gives|says|is|reads)\s['\"`]?[\w.-]+['\"`]?\s(?:on|in|for)\s"
       r"(?:each|both|all|every)\b",
       {"host_identity": 5, "container_mapping": 1},
       f"{NCCL} (b): ranks whose host hash (hostname + boot_id) match are one host"),
    # a setting, not a sameness: containers on the host's network (or given a hostname) share
    # or choose the name NCCL hashes; they are one host only when they run on one
    # torchrun reads --node_rank with the static rendezvous only; a launch that leaves it out
    # (or passes it to c10d) gives nodes the rank another node has (duplicated node ranks)
    _s("node-rank-unset", r"--?node[_-]rank\b[^.\n]{0,80}\b(?:required|missing|ignored|only (?:used|"
       r"honou?red|read)|not (?:used|passed|set|honou?red))|\b(?:add|pass|set)\w* (?:the )?['`\"]?"
       r"node[_-]rank\b|\bevery node\b[^.\n]{0,40}\bnode[_ ]rank (?:0|zero)\b|"
       # "our launcher omitted `--node-rank`", "did not pass --node-rank to vLLM" (b23 dev)
       r"\b(?:missing|omitted|omits|omit|forgot|forgotten|without|never passe[sd]|(?:did|does)(?:n't| "
       r"not) pass|not passing)\s(?:the\s)?[`'\"]?--?node[_-]rank\b",
       {"launcher_config": 2.5, "host_identity": 2},
       f"{LAUNCHERS} §1: torchrun's --node-rank is used with the static rendezvous backend only "
       "(confirmed by pytorch/pytorch#182374); without it every node is node 0"),
    # every node (pod, slice, replica) started with the rank another one has: a node-rank or
    # process-id setting that is the same everywhere (Lightning: global rank = node_rank *
    # processes + local rank, launchers.md "Lightning"); the node's *local* rank 0 is normal
    _s("ranks-duplicated", r"\bduplicat\w* (?:global |node |process |worker )?(?:ranks?|process "
       r"ids?|process indices|node[_ -]ranks?)\b|\b(?:ranks?|process ids?|node[_ -]ranks?) (?:are|"
       r"were|is|was|get|got) (?:all )?duplicated\b|\b(?:all|every|each|both) (?:of the )?(?:pods?|"
       r"nodes?|workers?|machines?|slices?|replicas?|containers?|hosts?)\b[^.\n]{0,40}\b(?:"
       + "|".join(SAME_RANK_VERBS)
       + r") (?:the same )?(?:node[_ -]?)?rank(?:=| )?(?:0|zero)\b(?! (?:for|of|on|in) (?:their|its|"
       r"each|the) (?:own )?local)"
       # "--node_rank=0 on both machines", "both nodes started with --node_rank 0"
       r"|(?:--)?(?:node|machine)[_-]rank[= :]+0\b[^.\n]{0,30}\b(?:on|for|in) (?:both|all|every|each)"
       r"\b|\b(?:both|all|every|each) (?:of the )?(?:nodes|machines|hosts|servers)\b[^.\n]{0,30}"
       r"(?:--)?(?:node|machine)[_-]rank[= :]+0\b",
       {"host_identity": 4, "launcher_config": 2},
       f"{LAUNCHERS} (Lightning, torchrun): a rank is node rank x processes + local rank; nodes "
       "given the same node rank (or process id) claim the same ranks", where=TEXT),
    _s("host-network", r"--hostname|hostNetwork|host network|--net(?:work)?[= ]host\b",
       {"host_identity": 1.5, "container_mapping": 1},
       f"{NCCL} (b): the host hash is hostname + boot_id; a container on the host network has "
       "the host's hostname"),
    # several machines or containers taken for one host ("NCCL treats our two nodes as one
    # machine"); a setting-like statement (it is also how one describes a healthy single node),
    # so not a failure on its own. The writer's own opinion ("I think they are on the same node")
    # is not NCCL's behaviour; neutral verbs (detects, sees) state a true fact
    _s("taken-for-one-host", _TAKES_FOR + r"|believes?|regards?)\b[^.\n]{0,50}\b(?:are|"
       r"is|were|was|being|to be|as|for)?\s?(?:on |in )?(?:the )?same (?:physical )?"
       r"(?:node|host|machine)\b|" + _TAKES_FOR + r"|takes?|took)\b[^.\n]{0,30}\b(?:nodes|"
       r"machines|hosts|containers|pods|servers|VMs)\b[^.\n]{0,20}\b(?:as|for|are|were|to be)"
       r" (?:one|a single|the same) (?:physical )?(?:node|host|machine)\b",
       {"host_identity": 3.5},
       f"{NCCL} (b): NCCL takes ranks whose hostname and boot_id agree for one host",
       where=PROSE),
    # a setting, not a failure (one machine named localhost is fine): under NO_FAILURE_GUESS a
    # guess needs failure words too
    _s("hostname-localhost",
       r"\bhost ?names?\W{0,3}(?:is|are|was|were|of|set to|reports?|returns?)?\W{0,3}['\"`]?localhost\b",
       {"host_identity": 3.5},
       f"{NCCL} (b): a container named localhost on every machine is one host to NCCL",
       where=PROSE),
    _s("boot-id", r"boot_id|NCCL_HOSTID|host[ _-]?hash|hostHash", {"host_identity": 4},
       f"{NCCL} (b)"),
    _s("hostname-resolution", r"gethostname|gethostid|\bFQDN|fully qualified|local ?host detection|"
       r"hostlist|short host ?name|/etc/hosts|host ?names? to (?:detect|determine|identify|tell|"
       r"decide|find out)\b", {"host_identity": 3}, f"{NCCL} (b)"),
    _s("two-pods-one-node", r"(?:two|2|multiple|several) (?:pods|containers) (?:on|in) "
       r"(?:the same|one|a single) (?:node|host|machine)", {"host_identity": 3,
       "container_mapping": 3}, f"{NCCL} (b): containers of one machine share boot_id"),
    # several nodes (Ray nodes, containers) on one machine or IP: a framework that groups
    # workers by hostname or IP takes them for one node (ray-project/ray Train's node-rank
    # grouping, horovod's Ray backend: both moved to node IDs)
    _s("nodes-share-host", r"\b(?:multiple|several|two|2|many) (?:\w+ )?(?:nodes|"
       r"containers|pods)\b[^.\n]{0,40}\b(?:on|share|sharing|using|with) (?:the )?same (?:ip\b"
       r"(?: address)?|(?:physical )?(?:host|machine)\b(?!\s*(?:type|model|image|config\w*|class|"
       r"size|spec\w*|os|setup|kind)\b))|multi[- ]?container\W{0,6}"
       r"single[- ]?host|\bnodes (?:are|were) (?:co-?located|collocated)\b|\b(?:co-?located|"
       r"collocated) (?:ray )?(?:nodes|containers)\b",
       {"host_identity": 3.5, "container_mapping": 1},
       f"{NCCL} (b): machines (or nodes) told apart by hostname or IP are one when they share it",
       where=TEXT),
    _s("p2p-ipc", r"via P2P/IPC|via SHM|P2P/IPC/read", {"host_identity": 1, "other": 1},
       f"{NCCL} (d): NCCL picked an intra-host transport"),
    # --- per-process visibility (Slurm, Ray, MPI, dask, JAX) -----------------------------------
    _s("gpus-per-task", r"(?:--)?gpus[-_]per[-_]task|SLURM_GPUS_PER_TASK|(?:--)?gpu[-_]bind"
       r"(?![= ](?:verbose,)?none)|gres/gpu:1\b|SLURM_STEP_GPUS|(?:--)?ntasks[-_]per[-_]gpu",
       {"per_process_visible_devices": 4},
       f"{LAUNCHERS} §5: per-task binding gives every task its own CUDA_VISIBLE_DEVICES "
       "(--ntasks-per-gpu implies --gpu-bind=single:N: https://slurm.schedmd.com/sbatch.html)"),
    # Apptainer / Singularity with a clean environment: the host's variables (the per-task
    # CUDA_VISIBLE_DEVICES Slurm set) do not reach the container (apptainer run --cleanenv / -e:
    # "clean environment before running container", https://apptainer.org/docs/user/latest/cli/
    # apptainer_run.html); a setting, its combination with a per-task binding is in containers.py
    # (case-sensitive: -C is --containall, -c is --contain, which keeps the environment)
    _s("container-cleanenv", r"\b(?:[Aa]pptainer|[Ss]ingularity|APPTAINER|SINGULARITY)\b[^\n]{0,120}?"
       r"\s(?:--cleanenv|-e|--containall|-C)(?=\s)",
       {"container_mapping": 1},
       "https://apptainer.org/docs/user/latest/cli/apptainer_run.html (--cleanenv: clean "
       "environment before running container; --containall implies it)", case=True),
    # jsrun's resource sets (IBM JSM, Summit/Sierra): `-g 1` gives each resource set one GPU and
    # its tasks only that one, as device 0 (review 67: every rank printed CUDA_VISIBLE_DEVICES=0)
    _s("jsrun-gpu-per-set", r"\bjsrun\b[^\n]{0,120}?\s(?:-g\s?|--gpu_per_rs[= ])1\b",
       {"per_process_visible_devices": 4},
       "https://github.com/olcf-tutorials/jsrun_quick_start_guide (a resource set groups the "
       "GPUs its tasks use: -g / --gpu_per_rs GPUs per set); that each set's tasks see only its "
       "GPUs, renumbered from 0, is unverified beyond the guide (what jsrun's ranks print)"),
    # a visible-devices list set from each process's own rank (``export
    # CUDA_VISIBLE_DEVICES=$SLURM_LOCALID`` in a task wrapper): every process sees one GPU, its
    # own, as device 0 (reference/cuda_devices.md §1-2)
    _s("cvd-per-rank", rf"(?:{'|'.join(VISIBLE_VARS)})\s*=\s*[\"']?\$\{{?{_RANK_VAR}\b|"
       # a loop's variable, one GPU per launched process: for i in 0 1 2 3; do
       # CUDA_VISIBLE_DEVICES=$i python ... & (review 33)
       # (names of one index only: a `$gpu` may hold a list, `for gpu in "0,1" "2,3"`; review 38)
       rf"(?:{'|'.join(VISIBLE_VARS)})=[\"']?\$\{{?(?:i|j|k|idx|gpu_?id|gpu_?idx|device_id|"
       r"rank|local_rank)\}?[\"']?(?=\s)|"
       # Python: os.environ["CUDA_VISIBLE_DEVICES"] = str(local_rank) / os.environ["LOCAL_RANK"]
       rf"(?:{'|'.join(VISIBLE_VARS)})[\"']\]\s*=\s*{_PY_RANK_VALUE}",
       {"per_process_visible_devices": 4},
       f"{CUDA_DEV} §1-2: a visible-devices list of one entry per process renumbers that GPU to "
       "device 0 inside it"),
    # the binding --gpus-per-task implies "can be overridden with an explicit --tres-bind=gres/gpu
    # specification" (https://slurm.schedmd.com/sbatch.html, --gpus-per-task): none = no binding
    _s("gpu-bind-none", r"(?:--)?(?:gpu[-_]bind[= ](?:verbose,)?|tres[-_]bind[= ]gres/gpu:)none\b",
       {"per_process_visible_devices": -4},
       f"{LAUNCHERS} §5: --gpu-bind=none leaves every task of a node the step's whole list "
       "(https://slurm.schedmd.com/sbatch.html)", where=NOT_PROSE),
    # Ray's own API and Ray Train's worker prefixes ("(RayTrainWorker pid=...)")
    # (num_gpus= with its value or a name: not PyTorch's "device=1, num_gpus=" of the
    # device-count assert)
    _s("ray", r"\bRay actor|ray\.remote|@ray\.remote|RayWorkerWrapper|\bray::|"
       r"(?<![-\w])(?<!device=, )(?<!device=\d, )(?<!device=\d\d, )(?<!device=\d\d\d, )"
       r"num_gpus\s*=\s*(?:\d|\.\d|[A-Za-z_])|"
       r"RayTaskError|ray\.exceptions|RayActorError|ray\.get_gpu_ids|ray\.train\b|TorchTrainer|"
       r"\((?:RayTrainWorker|BackendExecutor|TrainTrainable)\w* pid=",
       {"per_process_visible_devices": 3},
       f"{LAUNCHERS} §8: Ray sets each worker's CUDA_VISIBLE_DEVICES to its assigned GPUs",
       framework="ray"),
    # the switch that turns Ray's per-worker list off: every worker sees every device, so one
    # that selects no device of its own (or a fixed local rank 0) uses the first (b24 dev)
    _s("ray-noset", r"RAY_EXPERIMENTAL_NOSET_\w*VISIBLE_DEVICES",
       {"no_set_device": 3, "per_process_visible_devices": -2},
       f"{LAUNCHERS} §8: RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES=1 disables Ray's masking, so "
       "every worker sees all GPUs (the same switch exists per accelerator)", framework="ray"),
    # a fractional GPU request (`num_gpus=0.5`): Ray schedules several tasks or actors on one GPU
    # (docs.ray.io, "Fractional GPUs"), and NCCL refuses two ranks of one communicator on one GPU
    # (reference/nccl.md (a)): more processes than GPUs (reviews 62, 63)
    _s("ray-fractional-gpu", r"(?<![-\w])num_gpus\s*=\s*0?\.\d+|['\"]GPU['\"]\s*:\s*0?\.\d+",
       {"oversubscribed": 4},
       f"https://docs.ray.io/en/latest/ray-core/scheduling/accelerators.html (fractional GPUs "
       f"share one GPU) and {NCCL} (a)", where=NOT_PROSE),
    # Ray named in words ("Ray 2.9", "RaySGD", "Ray Train workers"): which framework started the
    # processes, no cause on its own; an invalid device under it is Ray's per-worker list
    # (combinations._per_process_ordinals)
    _s("ray-named", r"(?<![-\w/])Ray(?:SGD|Train|Tune|Serve)(?![-\w/])|(?<![-\w/])Ray (?:v?\d|"
       r"version|cluster|workers?|actors?|jobs?|head|nodes?|tasks?|Train|Tune|Serve|Core|Data|"
       r"runtime|placement)\b|\b(?:with|using|via|under|on|in|through) Ray\b(?! \w+ed\b)", {},
       f"{LAUNCHERS} §8: Ray sets each worker's CUDA_VISIBLE_DEVICES to its assigned GPUs",
       framework="ray", case=True),
    _s("dask-cuda", r"dask[-_]cuda|LocalCUDACluster|dask_cuda", {"per_process_visible_devices": 2},
       "dask-cuda starts one worker per GPU with its own CUDA_VISIBLE_DEVICES "
       "(https://docs.rapids.ai/api/dask-cuda/stable/)", framework="dask"),
    # JAX's process_id numbers the processes of the whole job, 0..num_processes-1: a local rank
    # alone (SLURM_LOCALID, LOCAL_RANK) repeats 0 on every node, so two hosts register task 0.
    # Context: on one machine the local rank is the global one (combinations._jax_local_id)
    _s("jax-process-id-local", r"process_id\s*=\s*(?:int\(\s*)?(?:os\.environ\[\s*['\"]"
       r"(?:SLURM_LOCALID|LOCAL_RANK|OMPI_COMM_WORLD_LOCAL_RANK|MPI_LOCALRANKID)['\"]\s*\]|"
       r"os\.(?:environ\.get|getenv)\(\s*['\"](?:SLURM_LOCALID|LOCAL_RANK|"
       r"OMPI_COMM_WORLD_LOCAL_RANK)['\"][^()\n]{0,20}\)|(?:args\.)?local_rank)\s*\)?\s*(?=[,)\n]|$)",
       {},
       "JAX: process_id is the process's index in [0, num_processes) over all hosts "
       "(https://docs.jax.dev/en/latest/_autosummary/jax.distributed.initialize.html); a local "
       "rank repeats on every node", where=NOT_PROSE, framework="jax"),
    _s("jax-distributed", r"jax\.distributed|local_device_ids|jax\.local_devices",
       {"per_process_visible_devices": 2},
       "JAX: jax.distributed.initialize(local_device_ids=...) picks each process's GPUs "
       "(https://jax.readthedocs.io/en/latest/multi_process.html)", framework="jax"),
    # prose that puts a scheduler and the visible-devices list in one sentence ("the batch
    # system pre-selects a GPU per rank with CUDA_VISIBLE_DEVICES", "Slurm assigns 4,5,6,7 but
    # the code overwrites CUDA_VISIBLE_DEVICES"): the list is the scheduler's, per job or task
    _s("scheduler-sets-cvd", _SCHEDULER + _IN_SENTENCE + _VISIBLE_VAR + "|" + _VISIBLE_VAR
       + _IN_SENTENCE + _SCHEDULER,
       {"per_process_visible_devices": 2.5},
       f"{LAUNCHERS} §5: Slurm (jsrun, flux, LSF likewise) sets CUDA_VISIBLE_DEVICES to the "
       "GPUs of the job or of each task (https://slurm.schedmd.com/gres.html#GPU_Management)",
       where=PROSE),
    _s("slurm-tasks", r"\bsrun\b|#SBATCH|\bsbatch\b|SLURM_LOCALID|SLURM_PROCID|--ntasks-per-node",
       {}, f"{LAUNCHERS} §5: Slurm starts the tasks (it sets no LOCAL_RANK; CUDA_VISIBLE_DEVICES "
       "per step, or per task with task binding)", framework="slurm"),
    _s("local-rank-as-device", r"set_device\(\s*(?:int\()?\s*(?:args\.|self\.|opt\.|config\.)?"
       r"(?:local_rank|localrank|slurm_localid)\b|set_device\(\s*int\(\s*os\.environ(?:\.get\(|\[)"
       r"\s*['\"](?:LOCAL_RANK|SLURM_LOCALID|OMPI_COMM_WORLD_LOCAL_RANK)['\"]|"
       # Horovod's and the frameworks' own local rank (review 44)
       r"(?:set_device|Device|cudaSetDevice|hipSetDevice|visible_device_list\s*=\s*str)\(\s*"
       r"(?:hvd\.local_rank\(\)|(?:\w+\.)?get_local_rank\(\))",
       {}, f"{PT} §1: the device is selected by the local rank (the right index, as long as the "
       "process sees every GPU of its node)", where=NOT_PROSE),
    _s("one-gpu-used", r"only (?:uses?|using|used|utili[sz]\w*|runs? on|saw|sees?|attach\w* to|"
       r"binds? to|bound to) (?:a |one )?"
       r"(?:single|one|1) (?:gpu|device|card)|only (?:the )?(?:1st|first|one) gpu (?:works?|is used|"
       r"loads?|trains?|is busy|is utili[sz]ed|has memory)|only (?:one|1|a single) (?:gpu|device|card)[^.\n]{0,30}"
       r"(?:is |are |gets? |being )*(?:used|utili[sz]ed|busy|running|active)|"
       # one GPU doing the work, the others idle, in the shapes reports take: "only one GPU does
       # any work", "the other GPUs stay idle", "gpu:2 to gpu:7 does nothing", "only one of the
       # cards is used"
       r"only (?:one|1|a single) (?:gpu|device|card) (?:does|did|is doing) (?:any |the )?work|"
       r"\bthe other (?:\d+ |three |seven )?(?:gpus|cards|devices) (?:are|were|stay|stayed|remain|"
       r"remained|sit|sat|do|did) (?:completely |totally |all )?(?:idle|unused|nothing)|"
       r"\b(?:gpu|cuda)[: ]?[1-9] (?:to|-) (?:gpu|cuda)[: ]?\d+ (?:does|do|did) nothing|"
       r"only one of (?:them|the (?:\d+ )?(?:gpus|cards|devices)|my (?:\d+ )?(?:gpus|cards)) "
       r"(?:is |was |gets? |got |are |were )?(?:being )?(?:used|utili[sz]ed|busy|working|active|"
       r"running)",
       {"launcher_config": 2, "no_set_device": 1, "per_process_visible_devices": 0.5},
       f"{LAUNCHERS} §1: one process per node (nproc_per_node / devices not passed) uses one GPU; "
       f"every process on one GPU is a missing set_device ({PT} §1)", failure=True),
    # the reporter sees GPU 0 hold the work ("only GPU=0 is filled", "it still runs on cuda:0"),
    # not what a message says of it (PyTorch names the first visible GPU "GPU 0" under any list):
    # no cause alone; against a visible-devices list without GPU 0 it says the list did not
    # apply (explain/combinations.py)
    _s("gpu0-named-used", r"only (?:the )?" + _GPU0_NAMED + r"[^.\n]{0,25}?\b(?:is |was |gets? |got |"
       r"being |are |were )?" + _HOLDS + r"|" + _GPU0_NAMED + r"[^.\n]{0,25}?\b" + _HOLDS
       + r"[^.\n]{0,20}\binstead\b|\bstill[^.\n]{0,12}\b" + _RUNS + r" (?:on |to |in )?(?:the )?"
       + _GPU0_NAMED + r"|\balways (?:runs?|lands?|goes|ends? up|shows? up|loads?|allocat\w*) "
       r"(?:on |to |in )?(?:the )?" + _GPU0_NAMED,
       {}, f"{CUDA_DEV} §1: the GPU the reporter sees used", where=PROSE),
    # the reporter sees a GPU idle ("nothing on GPU 3", "GPU 2 is empty"): against a list that
    # names it, the process is not where the list puts it (explain/combinations.py)
    _s("gpu-seen-idle", r"nothing (?:is )?(?:running |loaded )?on (?:the )?(?:gpu|cuda|device|card)"
       r"\s?[=:#]?\s?\d\b|(?:gpu|cuda|device|card)\s?[=:#]?\s?\d\b (?:is|stays|remains|was|"
       r"looks) (?:completely |totally )?(?:empty|idle|unused|free|untouched|at 0 ?%)",
       {}, f"{CUDA_DEV} §1: the GPU the reporter sees unused", where=PROSE),
    # a misspelled visible-devices variable: CUDA reads CUDA_VISIBLE_DEVICES only, exactly so
    # spelled; a near name has no effect and the process sees every GPU
    _s("cvd-misspelled", r"\b(?:CUDA_VISIBLE_DEVICE|CUDA_VISIBLE_DEVICS|CUDA_VISIBLE_DEVIES|"
       r"CUDA_VISBLE_DEVICES|CUDA_VISABLE_DEVICES|CUDA_VISIABLE_DEVICES|CUDA_VISIBEL_DEVICES|"
       r"CUDA_VISIBLE_DIVICES|CUDA_VISIBLES_DEVICES|CUDA_VISIBILE_DEVICES|CUDA_VISIBLE_DEVICE_S|"
       r"CUDA_DEVICES_VISIBLE|CUDA_VISIBLE_GPUS|CUDA_VISIBLE_DEVICES_)\b['\"`]?\]?\s*[=:]",
       # (a cause only where the paste sets no correctly spelled list too: a typo the writer
       # corrected is history; explain/combinations.py; upper case only: a Python variable
       # `cuda_visible_device = os.environ.get(...)` is no environment variable; review 61)
       {}, f"{CUDA_DEV} §1: CUDA reads CUDA_VISIBLE_DEVICES, spelled exactly so; another name "
       "leaves every GPU visible", where=NOT_LOG, case=True),
    # "CUDA_VISIBLE_DEVICES=1 picks the wrong card": the list names another GPU than the writer
    # meant (CUDA numbers fastest first by default, nvidia-smi by PCI bus)
    _s("wrong-gpu-picked", r"(?<!avoid )(?<!avoiding )(?<!prevent )(?<!not )(?<!never )(?<!to )"
       r"(?:picks?|picked|selects?|selected|uses?|used|using|runs? on|ran on|"
       r"lands? on|goes to|gets?) (?:the |a )?wrong (?:gpu|card|device)\b",
       # (a cause only against a list the writer set: explain/combinations.py)
       {},
       f"{CUDA_DEV} §1-2: CUDA's default order is fastest first, nvidia-smi's PCI bus order",
       failure=True, where=NOT_LOG),
    # a count of GPUs used below what is there: context, not a failure ("I'm only using 2 GPUs
    # for now" describes a setup; review 35)
    _s("some-gpus-used", r"only (?:uses?|using|used|utili[sz]\w*|runs? on|trains? on) (?:the first )?"
       r"(?:\d{1,3}|two|three|four|five|six|seven) (?:of (?:the |my |all )?(?:\d+ )?|out of \d+ )?"
       r"(?:gpus|devices|cards)\b(?! (?:per|each|for each))|only (?:\d{1,3}|two|three|four) "
       r"(?:of (?:the |my |all )?(?:\d+ )?|out of \d+ )?(?:gpus|devices|cards) (?:are|were|is|get) (?:being )?"
       r"(?:used|utili[sz]ed|busy)",
       {"launcher_config": 2, "visible_devices_mismatch": 0.5},
       f"{LAUNCHERS} §1: a launcher starts --nproc-per-node processes, one GPU each, however many "
       "GPUs are visible: a job that uses fewer GPUs than it sees was started with fewer processes"),
    _s("one-gpu-per-proc", r"one (?:gpu|device) per (?:process|task|worker|rank)|"
       r"visible devices (?:for|of|per|to) (?:each|every|all|the) (?:worker|process|task)|"
       r"process[- ]per[- ](?:gpu|device)|"
       r"(?:each|every) (?:process|task|worker|rank) (?:only )?sees? (?:only )?(?:one|a single|"
       r"(?:its|their) (?:own )?)(?:gpu|device|accelerator)|"
       r"(?:one|a single|single)[- ]visible[- ](?:gpu|device|accelerator)|"
       r"sees? (?:only )?(?:its|their) (?:own )?(?:gpu|device|accelerator) as (?:device |gpu |cuda:?)0|"
       # "the wrapper sets CUDA_VISIBLE_DEVICES to a single GPU for each MPI rank" (review 63)
       rf"{_VISIBLE_VAR} (?:to|=) (?:a single|one|only one|its own|their own|a different|a separate) "
       r"(?:\w+ )?(?:gpu|device|card|index|id)s?\b[^.\n]{0,20}?\b(?:for|per|to|of|in) (?:each|every) "
       r"(?:\w+ )?(?:rank|process|task|worker)",
       {"per_process_visible_devices": 3}, f"{LAUNCHERS} §5, §8"),
    _s("mpi-local", r"OMPI_COMM_WORLD_LOCAL_RANK|MPI_LOCALRANKID|jsrun|--map-by|-npernode|"
       r"mpi4py|mpi4jax|PMI_RANK", {"launcher_config": 1, "per_process_visible_devices": 1},
       f"{LAUNCHERS} §6: MPI launchers set no LOCAL_RANK or CUDA_VISIBLE_DEVICES",
       framework="mpi"),
    # --- global rank as device ------------------------------------------------------------------
    _s("rank-as-device-code", r"set_device\(\s*(?:(?:args\.|self\.|opt\.|config\.)(?:global_)?|global_)rank\s*\)|"
       r"cuda:\{?\s*(?:(?:args\.|self\.)(?:global_)?|global_)rank\s*\}?['\"]|"
       r"device_ids\s*=\s*\[\s*(?:args\.|self\.)rank\s*\]|"
       rf"(?:set_device|Device|cudaSetDevice|hipSetDevice|visible_device_list\s*=\s*str)\(\s*{_GLOBAL_RANK}\s*\)|"
       rf"cuda:\{{\s*{_GLOBAL_RANK}\s*\}}|"
       # torch.device("cuda", int(os.environ["RANK"])) (review 70: a traceback's source line)
       rf"device\(\s*['\"]cuda['\"]\s*,\s*{_GLOBAL_RANK}\s*\)|"
       r"Device\(\s*(?:(?:self\.|args\.)(?:hvd_|global_)?|hvd_|global_)rank\s*\)|"
       # JAX: local_device_ids lists this host's GPUs; the process id counts every host's
       rf"local_device_ids\s*=\s*\[\s*(?:process_id|{_GLOBAL_RANK})\s*\]",
       {"global_rank_as_device": 6}, f"{PT} §1: the device index must be the local rank",
       where=NOT_PROSE),
    # a bare ``rank``: torch.multiprocessing.spawn passes the process index under that name,
    # which is the local rank on one node and the global rank only when nodes add an offset
    _s("bare-rank-as-device", r"(?:set_device|Device)\(\s*rank\s*\)|cuda:\{?\s*rank\s*\}?['\"]|"
       r"local_device_ids\s*=\s*\[\s*(?:pid|rank|proc_id)\s*\]|"
       r"device_ids\s*=\s*\[\s*rank\s*\]|\.to\(\s*rank\s*\)",
       # below the context-alone gate (scoring.CONTEXT_GUESS = 3): ambiguous, it adds to a
       # failure of the family but is never alone a cause in a paste that shows none
       {"global_rank_as_device": 2.5},
       f"{PT} §1: the device index must be the local rank; mp.spawn's process index is one per "
       "node (https://pytorch.org/docs/stable/multiprocessing.html#spawning-subprocesses)",
       where=NOT_PROSE),
    _s("rank-not-local", r"(?:global )?rank (?:instead of|rather than) (?:the )?local[_ ]rank|"
       r"local[_ ]rank (?:should be used|instead)|instead of (?:the )?local[_ ]rank|"
       r"should (?:be|use) (?:the )?local[_ ]rank|parallel_config\.rank|"
       r"global rank as (?:the )?device|(?:misuse|misused|wrong|incorrect|mistaken)(?: use)?(?: of)? (?:the )?global rank|"
       r"global rank (?:is|was) (?:misused|wrongly used|used by mistake)|rank/local_rank|world rank|rank in the world|global (?:process )?index|"
       # (a device word, not a host name such as gpu-n01: review 14)
       r"global rank[^.\n]{0,60}(?:device|cuda|gpu)(?![-\w])|get_rank\(\)(?!\s*\})[^.\n]{0,40}(?:device|cuda)|"
       r"local[_ ](?:rank|device|gpu|index)\w* (?:instead of|rather than) (?:the )?(?:global )?rank\b",
       {"global_rank_as_device": 4}, f"{PT} §1"),
    _s("local-rank-wrong", r"(?:\blocal[_ ]rank\w*\b" + SENTENCE + r"{0,60}\b(?:wrong|incorrect\w*|"
       r"not correct\w*|(?:is|was|equals?|returns?|returned|gives?) (?:the )?global)\b|"
       r"\b(?:fix\w*|correct\w*|wrong|incorrect)\b" + SENTENCE + r"{0,40}\blocal[_ ]rank)"
       # not the test of which process is the main one ("fix LOCAL_RANK to be RANK in
       # if_main_process": logging and saving, not the device; b24 dev)
       r"(?!" + SENTENCE + r"{0,60}\b(?:if_main_process|is_main\w*|is_master\w*|main_process\w*|"
       r"rank_zero\w*)\b)",
       {"global_rank_as_device": 2.5, "launcher_config": 1.5},
       f"{LAUNCHERS} §1: LOCAL_RANK is the rank within the node; a local rank that is wrong is "
       "most often the global rank (wrong from the second node on) or one the launcher never set",
       where=PROSE),
    # one command or config for every node ("the same command on both nodes", "copy-pasted the
    # yaml to the second machine"): context alone; with a node rank fixed in that command
    # (explain.node_launches) every node claims the same ranks
    _s("same-command-every-node", r"\b(?:same|identical|one|the very same) (?:launch(?:er)? )?"
       r"(?:command|script|config(?:uration)?|yaml|cmd|command line)s?[^.\n]{0,30}\b(?:on|for|to|"
       r"across|in) (?:both|all|each|every|the two|two) (?:machines|nodes|hosts|servers)\b|"
       r"\bcop(?:y|ied)[- ]?past\w* (?:the )?(?:same )?(?:command|config(?:uration)?|yaml|script)s?"
       r"[^.\n]{0,30}\b(?:machines?|nodes?|hosts?|servers?)\b",
       {"host_identity": 0.5, "launcher_config": 0.5},
       f"{LAUNCHERS} §1: each node needs its own --node-rank / machine_rank", where=PROSE),
    _s("multi-node", r"multi[- ]?node|multiple (?:nodes|machines|hosts)|across (?:nodes|machines)|"
       r"\b(?:two|2|several) (?:nodes|machines|hosts)\b|(?:second|other|2nd) (?:node|machine|host)|"
       # "a two-node job", "two Azure VMs", "both machines" (review 49)
       r"\b(?:two|2)-node\b|\b(?:two|2|both) (?:\w+ )?(?:vms|machines|servers)\b",
       # (a multi-node report names launcher set-up — rendezvous, node ranks, MASTER_ADDR, the
       # launcher's options — most often: launcher_config in 9 of the 21 multi-node failures of
       # the b21-b26 dev part, global_rank_as_device in none, host_identity in 5; launchers.md
       # §1, §4-§6); the global rank needs an invalid ordinal beside it (combinations_lists.py)
       {"launcher_config": 1, "host_identity": 1, "global_rank_as_device": 0.5},
       f"{PT} §1; {LAUNCHERS} §1", where=TEXT),
    # --- no set_device / everything on GPU 0 ----------------------------------------------------
    _s("all-on-gpu0", r"(?:all|every|each) (?:the )?(?:processes|ranks|workers|process|rank|worker)"
       # "each process sees its own GPU as device 0" is per-process visibility, not a pile-up
       r"(?![^.\n]{0,40}\b(?:its|their) (?:own )?(?:gpu|device|accelerator)\b)[^.\n]{0,40}(?:on|use|to|occupy|allocate)[^.\n]{0,20}" + _GPU0
       + _NOT_A_RANGE + "|"
       r"(?:extra|additional|more) (?:memory|processes|contexts?) on (?:gpu|cuda|device)[ :]?0|"
       r"(?:gpu|cuda|device)[ :]?0 (?:has|shows|gets|uses) (?:more|extra|additional|all|\d+ "
       # "more memory than I expected" compares with an expectation, not with the other GPUs
       # ("GPU 0 has 4 python processes": a process name between, review 54)
       r"(?:\w+ )?processes)(?![^.\n]{0,30}\bthan (?:I|we|you|expected|it should|needed|necessary)\b)|only (?:gpu|cuda)[ :]?0 (?:is|was) (?:used|busy|utili[sz]ed|working|active|loaded)|defaults? to cuda:0|"
       r"memory (?:on|of) (?:gpu|rank) 0|imbalanced? (?:gpu )?memory|always (?:use|uses|runs? on|"
       r"goes to) (?:the )?(?:gpu|cuda|device)[ :-]?0|"
       # (one process named as one: "rank 0's process on GPU 0" is rank 0 on its own GPU, review 68)
       r"(?:memory|space|contexts?|threads|(?<!'s )(?<!\bone )(?<!\bits )process(?:es)?|"
       r"instances?)[^.\n]{0,40}\b(?:on|in) (?:the )?"
       # ("processes on GPU 0 and GPU 1" names two GPUs: no pile-up, review 43; "on GPU 0 and
       # GPUs 1-7 are empty" contrasts them: a pile-up)
       r"['\"`]?(?:gpu ?0|cuda:0|device 0|the first gpu|1st gpu)\b" + _NOT_A_RANGE + "|"
       r"(?:everything|all (?:the )?(?:memory|tensors|allocations?|models?))[^.\n]{0,30}\b(?:on|to) "
       + _GPU0 + r"|(?:stuck|piled?|all) on (?:the )?"
       r"(?:1st|first) gpu|rank 0 has more|(?:memory|contexts?)[^.\n]{0,30}(?:on|of) rank ?[=:]? ?0\b|"
       # a count of two or more ("4 processes"), not an id ("[PG GUID 0 Rank 0] using GPU 0")
       rf"\b(?:all|both|two|several|multiple|many|[2-9]|[1-9]\d+|every|each) (?:of (?:the|my|our) )?"
       rf"(?:\w+ )?"
       # "8 PIDs on GPU 0" (nvidia-smi read aloud) needs no verb
       rf"{_AGENTS}\b(?:[^.\n]{{0,40}}\b{_ON}| on) (?:the )?(?:(?:gpu|cuda|device)(?:[ :#-]?0| zero)|"
       # "the first GPU of its list" is each process's own first GPU: no pile-up
       rf"(?:1st|first) (?:gpu|cuda device|device)(?! (?:of|in|from) (?:its|their|each|his|her|"
       rf"the|that|this) ))\b"
       + _NOT_A_RANGE,
       {"no_set_device": 4, "other": 2}, f"{PT} §1: without set_device every rank works on cuda:0",
       failure=True),
    _s("gpu0-heavier", r"(?:gpu|cuda|device)[ :-]?0\b[^.\n]{0,50}(?:higher|more|larger|bigger|"
       r"heavier) than (?:the |all )?(?:other|rest|remaining|others|gpus? ?[1-9])|"
       r"(?:load|memory|usage)[^.\n]{0,20}(?:unbalanced|imbalanced)|\bunbalanced\b|"
       # "GPU 0 always occupies a lot of memory for each script": several processes' share of it
       r"(?:gpu|cuda|device)[ :-]?0\b[^.\n]{0,40}\b(?:occup\w*|us\w*|tak\w*|allocat\w*|hold\w*) "
       r"(?:a lot of|lots of|most of|much|more|extra|additional) (?:the )?(?:gpu )?(?:memory|vram)"
       r"[^.\n]{0,20}\b(?:for|in|of|from|by) (?:each|every|all)(?: the| other)? (?:process|rank|"
       r"worker|script|job)",
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
    # the writer says the script never selects the device ("forgot set_device", "missing
    # torch.cuda.set_device()", "we never call set_device")
    _s("set-device-missing", r"(?:\b(?:forg[oe]t(?:ting)?|missing|without|never|didn't|did not|"
       r"doesn't|does not|don't|do not|no|lack of|absence of) (?:to )?(?:call(?:ing)? |use |using "
       r"|a |any )?(?:torch\.cuda\.)?set_device\b"
       # ... in words: "we don't set a device per process", "never pin each rank to its GPU"
       r"|\b(?:never|didn't|did not|don't|do not|doesn't|does not|forgot to) (?:explicitly )?"
       r"(?:set|select|pick|choose|assign|pin|bind) (?:a |the |any |each |every )?(?:rank |process |"
       r"worker )?(?:to (?:a |its |their )?(?:own )?)?(?:cuda )?(?:device|gpu)s? ?(?:per|for each|for "
       r"every|in each|in every|on each)? ?(?:process|rank|worker)?\b"
       # "I left out the GPU pinning block" (Horovod's examples pin each process to a GPU)
       r"|\b(?:left out|leave out|skipped|removed|dropped|commented out|omitted|without) (?:the |any )?"
       r"(?:gpu|device) (?:pinning|pin)\b"
       # "every rank just uses the current (default) device": nothing selected per process
       r"|\b(?:every|each|all) (?:the )?(?:ranks?|process(?:es)?|workers?) (?:just |only |simply )?"
       r"uses? the (?:current|default) (?:\(default\) )?(?:cuda )?(?:device|gpu)\b"
       # a fix told as its change, at the start of its line (a PR's bullet): "- initialize CUDA
       # device before creating the process group" (not "we already set the device before ...")
       r"|(?m:^)[ \t>*-]{0,4}(?:set|sets|setting|initiali[sz](?:e|es|ed|ing)|select(?:s|ed|ing)?|"
       r"bind(?:s|ing)?|pin(?:s|ned|ning)?) (?:the |each rank's |each process's )?(?:cuda |gpu )?"
       r"device (?:\w+ ){0,3}?before (?:creating|initiali[sz]ing|calling) (?:the )?"
       r"(?:process group|init_process_group|distributed)\b)"
       # "without set_device it failed, so I added it": told as what was fixed (review 25)
       r"(?![^.\n]{0,60}\b(?:so|then|and) (?:I|we) (?:added|call(?:ed)?|use[ds]?)\b)",
       # the writer saying so names the cause (STRONG), even next to the OOM it causes
       {"no_set_device": 5}, f"{PT} §1: without set_device every rank works on cuda:0",
       where=TEXT),
    _s("same-gpu", r"(?:both|two|all|several|multiple) (?:the )?(?:processes|ranks|workers|"
       r"models?|instances)[^.\n]{0,30}(?:on|use|share) (?:the )?same (?:single )?(?:gpu|device)|"
       r"(?<!to be )on the same (?:gpu|device|cuda device)|"
       rf"\b{_QUANT} (?:of (?:the|my|our) )?(?:\w+ )?{_AGENTS}\b[^.\n]{{0,40}}\b{_ON} (?:the |one )?"
       r"(?:very )?same (?:\w+ )?(?:gpus?|devices?|cards?|cuda devices?)\b|"
       r"\bsame (?:single |physical )?(?:gpu|device|card) (?:with|by|from|across|for|between) (?:the )?"
       rf"(?:multiple|several|two|all|many|both|\d+) {_AGENTS}\b",
       {"no_set_device": 2, "oversubscribed": 1, "visible_devices_mismatch": 1},
       f"{NCCL} (a): two ranks on one GPU", failure=True),
    _s("procs-on-every-gpu", rf"\b{_QUANT} (?:of (?:the|my|our) )?(?:\w+ )?{_AGENTS}\b{SENTENCE}{{0,40}}"
       rf"\b(?:{_ON}) (?:each|every|all (?:the )?(?:\d+ )?(?:gpus|devices|cards))\b(?: (?:gpu|device|card))?"
       # "..., one each" / "one per GPU": one process per GPU, the design described
       r"(?!(?: (?:gpu|device|card))?[,;:]? \(?(?:one|1) (?:each|per (?:gpu|device|card)))|"
       # "each worker grabs both GPUs", "every process allocates memory on all GPUs" (review 63);
       # not "each process sees all GPUs": every launcher's process does, before it selects one
       r"\b(?:each|every) (?:single )?(?:\w+ )?(?:process|rank|worker|task|actor|replica|trainer)\b"
       rf"{SENTENCE}{{0,40}}?\b{_TAKES} (?:all|both|every) (?:of )?(?:the )?(?:\d+ )?"
       r"(?:gpus|devices|cards|gpu|device|card)\b(?![,;:]? \(?(?:one|1) (?:each|per (?:gpu|device|card)))"
       r"(?! (?:memory|mem|ram|vram|utili[sz]ation)\b)|"  # "uses all the GPU memory of its card"
       # "tf use all gpus in one machine, and killed my other training job" (b25 dev): TensorFlow
       # and JAX take memory on every GPU they see (https://www.tensorflow.org/guide/gpu)
       # (not a wish, "I want TF to use all GPUs", nor a strategy that spreads one model)
       r"(?<!\bmake )(?<!\blet )(?<!\bdoes )(?<!\bdid )(?<!\bcan )(?<!\bwill )(?<!\bshould )"
       r"\b(?:tf|tensorflow|jax|keras)\b (?:(?!to\b|can\b|will\b|should\b)\w+ )?(?:use|uses|used|takes|took|grabs|grabbed|"
       r"occupies|occupied|allocates|allocated|starts|started|initiali[sz]es|initiali[sz]ed) "
       r"(?:all|every) (?:of )?(?:my |the )?(?:\d+ )?(?:\w+ )?(?:gpus|cards|devices|k80s|v100s|a100s)\b"
       r"(?![^.\n]{0,40}\b(?:\w*strategy|mirrored\w*|distribut\w*|parallel\w*|pmap|pjit|shard\w*)\b)",
       {"no_set_device": 3},
       f"{PT} §1 and Horovod's guide (pin each process to one GPU: hvd.local_rank(), "
       "https://horovod.readthedocs.io/en/stable/tensorflow.html): a process that selects no GPU "
       "creates a context, and in TensorFlow takes memory, on every GPU it sees", failure=True,
       where=PROSE),
    _s("procs-share-a-gpu", rf"\b{_AGENTS}\b(?: that| which| all)? (?:share|shares|shared|sharing) "
       r"(?:a|one|the|a single) (?:\w+ )?(?:gpu|device|card)\b",
       {"oversubscribed": 2, "no_set_device": 1},
       f"{NCCL} (a): two processes of one job on one GPU (NCCL refuses them in one communicator)",
       failure=True, where=PROSE),
    _s("duplicate-gpu-words", r"\bduplicat\w* (?:gpus?|devices?|cuda devices?)\b|\b(?:gpus?|devices?) "
       r"(?:is |are |was |were )?(?:used |assigned |selected )?twice\b",
       {"oversubscribed": 1.5, "no_set_device": 1.5, "visible_devices_mismatch": 0.5},
       f"{NCCL} (a): NCCL's duplicate-GPU check refuses two ranks of one communicator on one GPU; "
       "more processes than GPUs and a missing set_device are its commonest causes "
       f"({LAUNCHERS} §1)", failure=True, where=PROSE),
    _s("jobs-share-gpus", r"(?:two|several|multiple|\d+) (?:\w+ ){0,2}(?:jobs|trainings|training "
       r"(?:jobs|processes|runs)|programs|experiments|runs|instances)[^.\n]{0,30}(?:on|share|using|"
       r"use) (?:the )?same (?:\w+ (?:of )?)?(?:gpus?|devices?|cards?)",
       {"oversubscribed": 3, "no_set_device": 1},
       f"{LAUNCHERS} §1: independent jobs on one set of GPUs share them (one process per GPU is "
       "the launchers' assumption)", failure=True),
    _s("same-local-rank", r"local[_ ]rank (?:is |as |=\s*)?0 (?:on|for|in) (?:both|all|every)|"
       r"all (?:the )?local[_ ]ranks? (?:is |are |as )?0|same local[_ ]rank",
       {"launcher_config": 4}, f"{LAUNCHERS} §9: who sets LOCAL_RANK", failure=True),
    # --- oversubscription -----------------------------------------------------------------------
    _s("more-procs-than-gpus", r"more (?:\w+ ){0,2}(?:processes|ranks|workers|tasks)\b[^.\n]{0,40}? "
       r"than (?:the )?(?:number of )?(?:available |visible )?(?:gpus?|gpu devices|devices|cards)\b|n?procs?_per_node\s*>\s*\w*gpus|"
       r"only (?:have|has) (?:\d|one|two|three|four) (?:gpus?|cards?|devices?)|"
       r"(?:nproc_per_node|nproc-per-node|num_processes|--num_gpus)[^\n]{0,30}(?:larger|greater|more)|"
       r"nproc[_-]per[_-]node\W{0,3} (?:should|must|has to|needs to) be (?:set to )?(?:the )?(?:number|count|#) "
       r"of (?:gpus|devices)(?: per node| on (?:each|the|one) node)?",
       {"oversubscribed": 4}, f"{LAUNCHERS} §1: one process per GPU"),
    # the same fact told as a count against one GPU or as a rule the run broke: "launches 2 MPI
    # processes but the runner has only 1 GPU", "ranks != GPUs", "4 ranks and 1 GPU"
    _s("procs-exceed-gpus-words",
       r"\b(?:\d+|two|three|four|several|multiple) (?:mpi |worker |training )?(?:processes|ranks|"
       r"PEs|tasks|workers)\b" + _IN_SENTENCE + r"\bbut\b" + _IN_SENTENCE + r"\b(?:only|just) "
       # "only 1 GPU is used" is the ranks-on-one-GPU symptom, not a count of GPUs
       r"(?:has |have |had )?(?:1|one|a single) (?:gpus?|device|card)\b(?! (?:is|was|gets?|got|"
       r"shows?|being|does|did) )|\branks? ?(?:!=|≠|do not match|don't match|does not match|"
       r"doesn't match) ?(?:the )?(?:number of )?(?:available )?gpus?\b|number of (?:mpi )?"
       r"(?:ranks|processes) (?:must|should|has to|needs? to|are required to|is required to) match "
       r"the number of (?:available )?gpus|requires? the number of (?:mpi )?(?:ranks|processes) to "
       r"match the number of (?:available )?gpus|\b(?:\d+|two|three|four) (?:mpi )?(?:ranks|"
       r"processes|PEs) and (?:1|one|a single) gpu\b(?! (?:per|each|for each|apiece))",
       {"oversubscribed": 4}, f"{LAUNCHERS} §1: one process per GPU", where=PROSE),
)
# fmt: on
