"""Catalogue signals that are *classes* of this family's failures, every framework's wording.

Each class is one regex over a family of messages (the invalid-device message of CUDA, HIP, XLA,
NCCL and PyTorch; every stack's visible-devices variable; device-count messages; generic device
and communicator errors; a hang at the first collective; a Ray placement group pinned to a node
address). Their weights are *priors*: what the symptom alone makes likely, small enough that any
specific signal or the context (launch, code, env, machine) decides. A failure of a class marks
the input as a failure of this family, so a best guess follows even on weak evidence
(:mod:`rankmap.explain.scoring`); the generic device/communicator classes lean to ``other`` (not a
mapping category), so a failure outside the mapping is never a mapping alarm on its own.

Messages that are *not* of this family are excluded inside the regexes: out-of-memory,
device-side asserts, ``invalid device function``/``pointer``/``context``.
"""

from __future__ import annotations

from rankmap.explain.priors import prior
from rankmap.explain.signal_model import (
    CUDA_DEV,
    LAUNCHERS,
    LOG,
    NCCL,
    PROSE,
    PT,
    SENTENCE,
    TEXT,
    Signal,
)
from rankmap.explain.signal_model import sig as _s
from rankmap.launch_vars import launcher_var_pattern

# Variables a launcher or scheduler sets for each process (launchers.md §9): a script that
# reads one its launcher does not set fails with a KeyError on it
_LAUNCH_VAR = launcher_var_pattern()
# The part of a CUDA/HIP error message that puts it outside the mapping family.
_NOT_FAMILY = (
    r"(?![^\n]{0,60}(?:out of memory|device-side assert|illegal memory access|"
    r"CUBLAS_STATUS|CUDNN_STATUS|misaligned address|launch failure))"
)

# The start of a log line, past the prefixes launchers and loggers add (rankmap.explain.prefix:
# PyTorch's "[rank3]: ", torchrun's "[default0]:", Open MPI's "[1,3]<stderr>: ", Ray's
# "(RayWorkerWrapper pid=12, ip=10.0.0.2) ", a logger's "ERROR 06-11 19:21:45 [worker.py:62] ",
# srun's "3: " and pdsh's "host: "): a frame or an exception printed by one rank of many.
_LINE = r"(?m)^(?:[^\n]{0,200}?[\])>]:?|[\w.-]{1,64}:[ \t])?[ \t]*"

# A prose report that the choice of GPU went wrong: a sentence (or a title) that names the
# selection of a device and a problem with it ("the GPU ids do not match nvidia-smi",
# "CUDA_VISIBLE_DEVICES is not properly set", "the process-GPU mapping is random", "all workers
# compete for the first GPU", "fix CUDA device selection").
_DEVICE_CHOICE = (
    r"(?:gpu|device|cuda|card)[ _-]?(?:ids?|index|indices|indexes|ordinals?|numbers?|numbering|"
    r"order(?:ing)?|selection|assignments?|mapping|placement|binding|affinity|indexing)\b|"
    r"\b(?:assign|map|bind|pin|allocat|distribut)\w* (?:(?:to|among|across|over|onto) )?(?:the )?"
    r"(?:gpus?|devices?|cards?)\b|"
    r"\b(?:process|rank|worker|task)(?:es|s)?[- ](?:to[- ])?(?:gpu|device)s?[- ](?:mapping|"
    r"assignments?|binding|affinity)|\blocal[_ ]rank\w*|nvidia-smi|rocm-smi|\b(?:CUDA|HIP|ROCR|NVIDIA)_VISIBLE_DEVICES"
    r"\b|\bset_device\b|\b(?:first|same|other|another|different) (?:gpu|device|card)s?\b"
)
# A problem word that is denied ("without errors", "never fails") or put as a condition to the
# reader ("if you get an error", advice in docs) reports nothing; "instead of passing ..." names
# another way of doing it, not a wrong outcome.
_NOT_DENIED = (
    r"(?<!without )(?<!without any )(?<!\bno )(?<!never )(?<!n't )(?<!not )(?<!you get an )"
    r"(?<!you see an )(?<!you hit an )(?<!you get )(?<!you see )"
)
_WRONG = (
    r"(?:\bnot|n't|never)(?: be| being| been| get| getting)? (?:properly |correctly |actually )?"
    r"(?:match\w*|respect\w*|honou?r\w*|work\w*|set|used|applied|assigned|selected|correct\w*|"
    r"recogni[sz]ed|consistent|the same)\b|\bmismatch\w*|\bdisagree\w*|\bwrong\w*|"
    r"\bincorrect\w*|\binstead\b(?! of \w+ing\b)|\binconsistent\w*|\brandom\w*|\bcompet\w*|"
    r"\bconflict\w*|\bfix\w*|"
    + _NOT_DENIED
    + r"\berror\w*|"
    + _NOT_DENIED
    + r"\bfail\w*|\bthrows?\b|"
    r"\bignor\w*|\bunexpected\w*|\bbroken\b|\bbug\b"
)
_PROBLEM_ABOUT_DEVICE = (
    r"\b(?:wrong|incorrect) (?:gpus?|devices?|cards?|cuda devices?)\b|"
    rf"(?:{_DEVICE_CHOICE}){SENTENCE}{{0,120}}(?:{_WRONG})|"
    rf"(?:{_WRONG}){SENTENCE}{{0,120}}(?:{_DEVICE_CHOICE})|"
    rf"(?:{_DEVICE_CHOICE}){SENTENCE}{{0,120}}\bbut\b{SENTENCE}{{0,80}}\b(?:gpu|device|cuda)[ :#]?\d"
)

# The PCIe settings between GPUs (IOMMU, ACS): a failure only in a sentence with a problem word
# ("corrupted until we turned IOMMU off"); named alone they are context (the iommu signal).
_PATH_SETTING = r"(?:\bIOMMU\b|\bPCIe? ACS\b|\bACS\b|pcie_acs_override|\b(?:amd|intel)_iommu)"
_PATH_PROBLEM = (
    r"\b(?:corrupt\w*|garbage(?! collect)|wrong|zeros?|hang\w*|hung|fail\w*|broken|errors?)\b"
)

# fmt: off
FAMILY_SIGNALS: tuple[Signal, ...] = (
    _s("invalid-device-any",
       r"\binvalid[ _]device(?:[ _](?:ordinal|id|index|number))?\b(?![ _](?:function|pointer|"
       r"context|symbol|handle|string))|\binvalid ordinal\b|CUDA_ERROR_INVALID_DEVICE\b|cudaErrorInvalidDevice\b|"
       r"hipErrorInvalidDevice\b|device ordinal (?:\d+ )?(?:is )?(?:out of range|invalid|not "
       r"valid)|ordinal \d+ (?:is )?out of range|(?:gpu|cuda|device) (?:index|id|ordinal) "
       r"\d+ (?:is )?(?:out of range|invalid|not (?:found|available|valid))|"
       r"no (?:gpu|cuda device|device) with (?:index|id|ordinal) \d+|"
       r"(?:device|gpu) index is out of range|must be in \[0, ?\d+\), but got \d+|"
       r"explicit device specification '[^'\n]{0,80}GPU:\d+' because no devices matching|"
       r"(?:device|gpu) (?:id|index|ordinal|number) (?:must|should) be (?:less|smaller) than (?:the )?"
       r"(?:gpu|device|visible device)s? (?:count|number)|"
       # MXNet: "Invalid GPU Id: 1, Valid device id should be less than device_count: 1"
       r"\binvalid (?:gpu|cuda) (?:id|index|ordinal)\b|device id should be less than device_count",
       prior("invalid-device-any"),
       f"{CUDA_DEV} §1: an index >= the number of visible devices is invalid in every stack "
       "(CUDA cudaErrorInvalidDevice, HIP hipErrorInvalidDevice, XLA CUDA_ERROR_INVALID_DEVICE)",
       failure=True),
    _s("visible-devices-any",
       r"\b(?:ASCEND_RT|ZE_AFFINITY|MLU|XPU|TPU)_VISIBLE_(?:DEVICES|CHIPS)\b|\bZE_AFFINITY_MASK\b|"
       r"\bGPU_DEVICE_ORDINAL\b|\bvisible[_ ]devices?\b",
       {"visible_devices_mismatch": 1},
       f"{CUDA_DEV} §1: every stack has a visible-devices variable that narrows and renumbers "
       "(HIP/ROCR, NVIDIA_, TF visible_device_list, JAX local_device_ids, oneAPI ZE_AFFINITY_MASK)"),
    _s("device-count-message",
       r"(?:only|but) (?:\d+|one|two|a single)(?: (?:gpus?|devices?|cuda devices?))?(?: (?:is|are|"
       r"was|were))? (?:available|visible|found|detected)\b(?! (?:to|for|in|per|on) (?:(?:each|"
       r"every|one|a single|a|per) )?(?:worker|process|task|rank|container|pod|job|actor)s?\b)|"
       r"only (?:see|sees|seeing|saw|seen|"
       r"detects?|detecting|finds?|finding|found|shows?|showing|recogni[sz]\w*) (?:a single|one|1|"
       r"two|\d+) (?:gpus?|devices?|cards?)\b(?! per)|"
       # not NCCL's "NET/IB : No device found." of every healthy host without an IB NIC
       # (reference/nccl.md, Bootstrap / network selection)
       r"(?<!NET/IB : )no (?:(?:supported|usable|visible|available|"
       r"compatible|cuda|gpu) )?(?:gpus?|cuda devices?|devices?) (?:were |"
       r"are |was |is )?(?:found|available|detected|visible)\b|exceeds? (?:the )?available "
       r"\(\d+\)|(?:found|detected|sees?|saw|shows?|"
       r"returns?) (?:only (?:\d+|one)|no|0) (?:gpus?|cuda devices?|devices?)\b(?! per)|"
       # a count is a symptom when it is none or one ("device_count() is 2" of a healthy job is
       # not): review 14
       r"device_count\(\)\s*(?:==|returns?|is|=|gives)\s*[01](?![\d.])|exceeds? (?:the )?(?:total )?(?:number of )?"
       r"available (?:gpus|devices)|(?:not enough|insufficient) (?:gpus|devices|gpu devices)|"
       r"requested \d+ (?:gpus|devices)[^\n]{0,40}(?:only|available|has)|"
       r"(?:number of|num) (?:available |visible )?(?:gpus|devices) \(\d+\)",
       prior("device-count-message"),
       f"{CUDA_DEV} §1, §3: a process sees fewer devices than the job expects (a narrowed "
       "visible list, a container without all GPUs, MIG) or the job asks for more than exist",
       failure=True),
    _s("device-error-any",
       r"(?:\bCUDA (?:error|failure|driver error)\b|cudaError(?!InvalidDevice)\w+|"
       r"CUDA_ERROR_(?!INVALID_DEVICE)\w+|cuda runtime error|\bAcceleratorError\b|"
       r"\bhipError(?!InvalidDevice)\w+|\bHIP error\b|\bXlaRuntimeError\b|"
       r"Unable to initialize backend '(?:cuda|rocm|gpu)')" + _NOT_FAMILY,
       prior("device-error-any"),
       "CUDA runtime API error codes (https://docs.nvidia.com/cuda/cuda-runtime-api/"
       "group__CUDART__TYPES.html); a device error without more says little about the mapping",
       failure=True),
    # a CUDA call inside NCCL failed (ncclUnhandledCudaError): the driver/runtime/NCCL build
    # that does not fit the GPU, a peer GPU the process cannot reach, a P2P path; more specific
    # than a communicator error in general, so it carries a prior of its own
    _s("nccl-cuda-call-failed",
       r"(?:unhandled cuda error|ncclUnhandledCudaError|NCCL WARN Cuda failure)" + _NOT_FAMILY,
       prior("nccl-cuda-call-failed"),
       f"{NCCL} (e): ncclUnhandledCudaError, 'a call to a CUDA function failed'",
       failure=True),
    _s("comm-error-any",
       r"\bnccl(?:InternalError|InvalidUsage|InvalidArgument|RemoteError|UnhandledCudaError|"
       r"SystemError)\b|\bDistBackendError\b|(?:\[E[\d :.]*|/)ProcessGroupNCCL\.cpp|"
       r"NCCL communicator[^\n]{0,40}"
       r"(?:abort|error|fail)|\b[RN]CCL (?:error|failure)\b|ncclCommInit\w* failed|"
       r"Watchdog caught collective operation timeout|"
       # nccl-tests' NCCLCHECK: "<host>: Test NCCL failure common.cu:1005 'invalid usage'"
       r"\bTest NCCL failure \S+ '",
       prior("comm-error-any"),
       f"{NCCL} (e): ncclUnhandledCudaError/SystemError = an external call failed, "
       "InvalidArgument/InvalidUsage = a programming error; the code alone names no cause",
       failure=True),
    _s("comm-init-error-words",
       r"\b(?:error|errors|fails?|failed|failing|failure|crash\w*)\b[^.\n]{0,40}\bncclCommInit\w*",
       prior("comm-error-any"),
       f"{NCCL} (e): a report that creating the communicator failed, in prose (the same prior as "
       "the communicator errors: the words name no cause)", failure=True, where=PROSE),
    _s("hang-at-collective",
       r"\b(?:hangs?|hung|hanging|stuck|freez\w*|blocks? forever|waits? forever|never returns?|"
       r"no progress)[^.\n]{0,50}(?:init_process_group|barrier|all_?reduce|broadcast|"
       r"first collective|ncclCommInit\w*|DistributedDataParallel|\bDDP\b|NCCL init|"
       r"initiali[sz]ation)|(?:init_process_group|barrier\(\)|all_?reduce|ncclCommInit\w*)"
       r"[^.\n]{0,40}(?:hangs?|hung|stuck|never returns?|freez\w*)",
       prior("hang-at-collective"),
       f"{NCCL} (b), (d): a hang at the first collective is ranks NCCL took for one host, an "
       f"unreachable peer, or a barrier on a guessed device ({PT} §2)",
       failure=True, where=TEXT),
    _s("gpu-held-by-another",
       r"Free memory on device \S+ \([\d.]+/[\d.]+ GiB\) on startup is less than desired|"
       r"CUDA-capable devices?(?:\(s\))? (?:is/are|is|are) busy or unavailable|cudaErrorDevicesUnavailable|"
       r"(?:another|other) process(?:es)? (?:is |are )?(?:already )?(?:using|holding|occupying|"
       r"running on) (?:the |this |that )?(?:gpu|device)|(?:gpu|device) \d+ (?:is )?already "
       r"(?:in use|occupied|busy)|"
       # the same error by its number (cudaErrorDevicesUnavailable = 46): "Return value 46 from
       # 'cudaStreamCreate'", "CUDA error 46" (b23 dev: exclusive-process GPUs, several PEs)
       r"\b(?:Return value|return(?:ed)? (?:value|code)|CUDA error|error code|CUDA_ERROR|cudaError)"
       r"[ :=]*46\b(?!\.\d| ?(?:GB|GiB|MiB|MB|%|ms|seconds))",
       prior("gpu-held-by-another"),
       f"{PT} §1: memory or an exclusive-mode context another process holds on the GPU: two "
       "processes on one device (CUDA compute modes: https://docs.nvidia.com/deploy/"
       "nvidia-smi/index.html)", failure=True),
    _s("device-placement",
       r"found at least two devices, cuda:\d+ and cuda:\d+|module must have its parameters and "
       r"buffers on device cuda:\d+[^\n]{0,60}found one of them on device: cuda:\d+|"
       r"device_ids and output_device arguments only work with single-device[^\n]{0,200}"
       r"(?:device\(type='cuda', index=\d+\)|cuda:\d+)",
       prior("device-placement"),
       f"{PT} §1: tensors created with 'cuda' / .cuda() go to the current device, cuda:0 unless "
       "set_device was called, so a rank's model and its data (or DDP's device_ids) end up on "
       "two GPUs; a visible-devices list that renumbers does the same", failure=True),
    _s("device-selection-problem", _PROBLEM_ABOUT_DEVICE, prior("device-selection-problem"),
       f"{CUDA_DEV} §1-2 and {PT} §1: which GPU a process uses is decided by the visible-devices "
       "list, CUDA's device order and the device the code selects; a report that this choice is "
       "wrong names no cause, the context decides", failure=True, where=PROSE),
    _s("visible-in-container",
       r"(?:container|pod|compose|service)s?\b[^.\n]{0,60}\b(?:CUDA|HIP|ROCR|NVIDIA)_VISIBLE_DEVICES|"
       r"(?:CUDA|HIP|ROCR|NVIDIA)_VISIBLE_DEVICES[^.\n]{0,60}\b(?:container|pod|compose service)s?\b",
       {"container_mapping": 2},
       f"{CUDA_DEV} §3: inside a container the runtime's device list comes first; a visible-devices "
       "variable per container renumbers again"),
    _s("negative-device-index",
       r"Device index must not be negative|\bcuda:-1\b|invalid device ordinal -1\b|"
       r"set_device\(-1\)",
       prior("negative-device-index"),
       "A device index of -1 is a local rank nobody set: a script written for "
       "torch.distributed.launch (`--local_rank`, default -1) run by torchrun, which sets "
       f"LOCAL_RANK instead ({LAUNCHERS} §2; https://github.com/qcf-568/DocTamper/issues/87); "
       "or get_device() of a CPU tensor", failure=True),
    _s("init-traceback",
       _LINE + r"File \"[^\"\n]+\", line \d+, in (?:set_device|_lazy_init|_lazy_call|manual_seed_all|"
       r"init_process_group|_new_process_group_helper|new_group|barrier|_sync_params_and_buffers|"
       r"_sync_module_states|_verify_param_shape_across_processes|_distributed_broadcast_coalesced|"
       r"init_distributed|init_device|init_worker_distributed_environment|"
       r"initialize_model_parallel|ensure_model_parallel_initialized)\b",
       prior("init-traceback"),
       f"{PT} §1, §7.1: a traceback through set_device, CUDA's lazy init, init_process_group or "
       "DDP's first broadcast: the device or the communicator could not be set up (the frames "
       "name where, not why)", failure=True, where=LOG),
    _s("collective-timeout",
       r"WorkNCCL\(SeqNum=[0-2],|NCCL timeout in communicator initiali[sz]ation",
       prior("collective-timeout"),
       f"{PT} §3: the watchdog's timeout of one of the first collectives (SeqNum 0-2) or of "
       "the communicator's initialisation: a hang at the first collective", failure=True,
       where=TEXT),
    _s("rank-env-missing",
       r"environment variable (?:LOCAL_RANK|RANK|WORLD_SIZE|LOCAL_WORLD_SIZE|MASTER_ADDR|"
       r"MASTER_PORT) expected, but not set|KeyError: ['\"]" + _LAUNCH_VAR + r"['\"]|"
       r"failed to (?:initiali[sz]e|init|set ?up)\b[^\n:]{0,40}: ['\"`]" + _LAUNCH_VAR + r"\b|"
       # a program's own print of the variable it did not get: "(LOCAL_RANK=unset)" (review 70)
       r"\b(?:LOCAL_RANK|LOCAL_WORLD_SIZE)['\"]?\s*[=:]\s*['\"<(]?(?:unset|not set)\b",
       {"launcher_config": 4},
       f"{PT} §7.1 (env:// needs RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) and {LAUNCHERS} §9 "
       "(who sets LOCAL_RANK): the launcher used does not set the variable the script reads",
       failure=True),
    # the same told in words: "LOCAL_RANK not being set in slurm", "started without exporting
    # LOCAL_RANK" (b24 dev: Slurm and MPI set their own variables, launchers.md §5-6, §9)
    _s("rank-env-unset-words",
       r"\b(?:LOCAL_RANK|LOCAL_WORLD_SIZE|WORLD_SIZE|NODE_RANK|RANK)\b`?\s(?:is |was |are |were )?"
       r"(?:not|n't|never) (?:being )?(?:set|exported|defined|passed)\b|\b[Ww]ithout (?:exporting|setting|"
       r"passing|defining) (?:the )?`?(?:LOCAL_RANK|RANK|WORLD_SIZE|LOCAL_WORLD_SIZE)\b",
       {"launcher_config": 3},
       f"{LAUNCHERS} §5, §6, §9: Slurm and MPI launchers set their own variables (SLURM_LOCALID, "
       "OMPI_COMM_WORLD_LOCAL_RANK), not torchrun's LOCAL_RANK / RANK / WORLD_SIZE",
       failure=True, where=PROSE, case=True),  # the variables' names, not the word "rank"
    _s("hardware-fault", r"\bECC (?:error|errors)\b|uncorrectable ECC|CUDA_ERROR_ECC_UNCORRECTABLE|"
       r"\bXid\b|fallen off the bus|GPU is lost|GPU has fallen|NVLink (?:error|down)|"
       r"row[- ]remap\w* (?:failure|pending)|CUDA_ERROR_HARDWARE_STACK_ERROR",
       {"other": 3},
       "A GPU hardware fault (ECC, Xid, off the bus) is a bad node, not a mapping "
       "(https://docs.nvidia.com/deploy/xid-errors/index.html)", failure=True),
    _s("ray-node-ip",
       r"['\"]node:(?:\d{1,3}(?:\.\d{1,3}){3}|<[\w ]{1,20}>|[\w.-]{1,64})['\"]\s*:\s*0\.001",
       {"host_identity": 4, "launcher_config": 1},
       f"{LAUNCHERS} §8: a Ray placement group pinned to a node address Ray does not know "
       "(multi-NIC hosts register under another IP; https://github.com/vllm-project/vllm/"
       "issues/7815)",
       failure=True, framework="ray"),
    _s("ray-resources-unmet", r"No available node types can fulfill resource request",
       {"oversubscribed": 2, "per_process_visible_devices": 1, "launcher_config": 1},
       f"{LAUNCHERS} §8: Ray's autoscaler says no node type holds the resources a task, actor or "
       "placement group asks for (https://docs.ray.io/en/latest/cluster/vms/user-guides/"
       "configuring-autoscaling.html): more GPUs asked than a node has, or a bundle pinned to a "
       "node Ray does not know (ray-node-ip)", failure=True, framework="ray"),
    _s("mpi-slots", r"not enough slots available in the system to satisfy",
       {"launcher_config": 2.5, "oversubscribed": 2},
       f"{LAUNCHERS} §6: mpirun starts at most the slots its hostfile or allocation gives each "
       "node (https://docs.open-mpi.org/en/v5.0.x/launching-apps/scheduling.html): -np above "
       "them is refused unless --oversubscribe", failure=True, framework="mpi"),
    # a pod waiting for free GPUs: the cluster may simply be full, so it ranks the causes of a
    # request that no node can hold without being a failure of the mapping (review 18)
    _s("k8s-gpu-unschedulable", r"Insufficient (?:nvidia\.com|amd\.com)/(?:gpu|mig-)",
       {"oversubscribed": 2, "container_mapping": 2},
       f"{CUDA_DEV} §4: the scheduler places a pod only on a node whose device plugin has its GPU "
       "request free (FailedScheduling: `0/N nodes are available: Insufficient nvidia.com/gpu`)"),
    _s("exception-any",
       _LINE + r"(?:\w+\.)*\w*(?:Error|Exception)\b(?:\([\w.]*\))?:|"
       r"Traceback \(most recent call last\)",
       prior("exception-any"),
       "An exception a program raised: something failed, the message says what "
       "(https://docs.python.org/3/library/exceptions.html); its class alone names no cause",
       failure=True, where=LOG),
    # --- failures outside this family: they never add points; without a failure of the family
    # they keep context alone (docker, a launcher, a CVD) from making a mapping guess ----------
    _s("outside-oom", r"CUDA out of memory|OutOfMemoryError|\bout of memory\b|\bOOM\b|"
       r"\bunable to allocate (?:gpu |device |cuda )?memory\b", {},
       "An out-of-memory error is a model/batch that does not fit "
       "(https://pytorch.org/docs/stable/notes/faq.html) unless other processes hold the GPU "
       f"({PT} §1: several ranks on cuda:0)", outside=True),
    # the process that holds the GPU is another user's, the writer says ("a colleague's jupyter
    # holds 51G", "另一个同事的 jupyter"; reviews 67, 73): a shared machine, not this job's map
    _s("other-users-process", r"\b(?:colleague|co-?worker|labmate|teammate|another user|other "
       r"users?|someone else|another person)(?:'s|s')\s+(?:\w+\s+)?(?:job|process|notebook|"
       r"jupyter|training|task|kernel)\b|(?:同事|同学|别人|其他人|其他用户)的\s*(?:\w+\s*)?"
       r"(?:jupyter|notebook|进程|任务|程序|作业)", {},
       "a GPU shared with other users' processes: their memory is not this job's ranks "
       "(https://pytorch.org/docs/stable/notes/faq.html)", where=PROSE),
    _s("outside-model-size", r"(?:model|network|it) (?:is |was )?too (?:big|large)|too (?:big|large) "
       r"(?:to|for) (?:fit|run|train)|does(?:n't| not) fit (?:in|on|into) (?:the |one |a single )?"
       r"(?:gpu|memory|vram)|(?<!tensor )(?<!pipeline )(?<!expert )model[- ]parallel(?:ism)?"
       r"(?![- _](?:size|group|rank|world))|split the model", {},
       "a model that does not fit one GPU is a memory/parallelism question "
       "(https://pytorch.org/docs/stable/notes/faq.html), not a mapping one; a mapping guess then "
       "needs a message that names its cause", outside=True),
    _s("outside-network", r"Connection refused|DEADLINE_EXCEEDED|Deadline Exceeded|Connection reset "
       r"by peer|No route to host|Network is unreachable|\bfirewall\b|security groups?\b|"
       r"\bufw\b|\biptables\b|ECONNREFUSED|ETIMEDOUT|"
       r"Connection timed out|Name or service not known|Temporary failure in name resolution|"
       r"Socket Timeout|DistNetworkError|DistStoreError|client socket has timed out|"
       r"Timed out (?:after \d+ seconds )?waiting for clients|timed out initiali[sz]ing process "
       r"group",
       {"other": 2},
       f"{NCCL} (e): socket errors are an unreachable peer or port; with a correct mapping they "
       "are a network problem (no device evidence)", outside=True),
    # ranks that disagree about a message: a collective called differently on some ranks, or
    # NCCL settings (protocol, buffer size) or builds that differ between them
    _s("nccl-message-truncated", r"[Mm]essage truncated\s*:?\s*(?:received|receiving) \d+ bytes "
       r"instead of \d+",
       {"other": 2, "version_mismatch": 1.5},
       "https://github.com/NVIDIA/nccl/pull/605 (merged: 'most often triggered by a mismatch in collective size or env "
       "settings between ranks') and https://github.com/NVIDIA/nccl/issues/626 (maintainer: inconsistent calls, or a "
       "protocol that differs because the environment differs)", failure=True),
    # a dtype the GPU's architecture lacks (bf16 before compute capability 8.0, vLLM's and
    # PyTorch's check): the model config, not which rank has which GPU
    _s("outside-dtype-arch", r"Bfloat16 is only supported on GPUs with compute capability|"
       r"(?:bf16|bfloat16)[^\n]{0,60}(?:not|only) supported[^\n]{0,60}compute capability|"
       r"Current CUDA Device does not support bfloat16",
       {"other": 1},
       "vLLM (vllm/worker/worker.py _check_if_gpu_supports_dtype) and PyTorch refuse bfloat16 on "
       "GPUs below compute capability 8.0 (https://docs.vllm.ai/: --dtype half): a dtype choice "
       "with a correct mapping", outside=True),
    # nccl-tests checks every result: "# Out of bounds values : N FAILED" (N > 0) is data that
    # arrived wrong, mostly a broken path between GPUs (ACS/IOMMU) rather than a mapping
    _s("nccl-tests-wrong-data", r"Out of bounds values\s*:\s*[1-9]\d*\s+FAILED",
       {"other": 3, "version_mismatch": 1},
       "nccl-tests (https://github.com/NVIDIA/nccl-tests, common.cu: the '#wrong' column and the "
       "'Out of bounds values' summary count results that differ from the expected ones); NCCL "
       "troubleshooting, 'PCI Access Control Services (ACS)'", failure=True),
    # NVSwitch systems (HGX/DGX) start CUDA only once the fabric manager has set up the switches:
    # until then every process fails with cudaErrorSystemNotReady (802)
    _s("fabric-manager-not-ready", r"system not yet initiali[sz]ed|cudaErrorSystemNotReady|"
       r"CUDA_ERROR_SYSTEM_NOT_READY|CUDA error 802\b|error code 802\b|"
       r"nvidia-fabricmanager[^\n]{0,40}\b(?:inactive|failed|not running|dead)",
       {"other": 3},
       "CUDA runtime API, cudaErrorSystemNotReady (802): the system is not ready, e.g. NVSwitch "
       "systems without a running fabric manager (https://docs.nvidia.com/cuda/cuda-runtime-api/"
       "group__CUDART__TYPES.html; https://docs.nvidia.com/datacenter/tesla/"
       "fabric-manager-user-guide/index.html)", failure=True,
       fix="Start the fabric manager on the node — `sudo systemctl enable --now "
       "nvidia-fabricmanager` — with the same version as the driver (`nvidia-smi` shows the "
       "driver's); NVSwitch systems fail CUDA's start with error 802 until it runs"),
    # ranks that call different collectives (TORCH_DISTRIBUTED_DEBUG=DETAIL's check): a code path
    # some ranks take and others do not (an uneven loop, a rank-0-only step), not the mapping
    _s("outside-collective-mismatch", r"Detected mismatch between collectives on ranks|is running "
       r"collective:?[^\n]{0,400}but Rank \d+ is running collective",
       {"other": 3},
       "https://pytorch.org/docs/stable/distributed.html#debugging-torch-distributed-applications "
       "(TORCH_DISTRIBUTED_DEBUG=DETAIL checks that all ranks call the same collective): ranks "
       "that run different collectives follow different code paths", outside=True,
       fix="Make every rank call the same collectives in the same order (the rank quoted runs "
       "another op or shape: a rank-dependent branch, an uneven last batch or eval loop)"),
    # an InfiniBand/RoCE work completion with an error status (12: retry count exceeded)
    _s("outside-ib-completion", r"Got completion from peer[^\n]{0,80}with (?:status|error)",
       {"other": 2},
       "NCCL's net_ib transport: a failed IB/RoCE work completion; 'such errors often indicate "
       "connectivity problems' (https://github.com/NVIDIA/nccl/issues/1664, maintainer; NCCL "
       "troubleshooting, networking issues)", outside=True),
    # an IB verbs resource that could not be created for lack of lockable memory: RDMA pins its
    # buffers, and a small memlock limit (ulimit -l 64 in many containers and pods) refuses it
    _s("outside-ib-memlock", r"Call to ibv_\w+ failed with error Cannot allocate memory",
       {"other": 2},
       "InfiniBand needs lockable memory: raise the memlock limit (Red Hat MRG messaging guide "
       "6.3.4, 'Allocate lockable memory for Infiniband', https://access.redhat.com/documentation/"
       "en-us/red_hat_enterprise_mrg/3/html/messaging_installation_and_configuration_guide/"
       "configure_infiniband_on_a_messaging_client)", outside=True,
       fix="Raise the locked-memory limit where the ranks run: `ulimit -l unlimited` (memlock in "
       "/etc/security/limits.conf), `docker run --ulimit memlock=-1`, or the container runtime's "
       "or pod's memlock limit; `ulimit -l` inside the job shows it"),
    # data that arrives wrong between two GPUs of one machine, or the PCIe settings behind it:
    # the path between GPUs, not which rank has which GPU (a GPU problem of the family: other)
    _s("p2p-path-broken", r"\b(?:corrupt\w*|garbage(?! collect)|wrong values|all zeros?)\b[^.\n]{0,80}\b(?:GPUs?|"
       r"cuda:\d|peer)\b|\b(?:from|between) (?:one )?(?:GPU|cuda:\d)\w* (?:to|and) (?:(?:another|the "
       r"other)(?: GPU\w*)?|GPU\w*|cuda:\d)[^.\n]{0,80}\b(?:corrupt\w*|garbage(?! collect)|wrong|zeros?)\b|"
       rf"{_PATH_PROBLEM}[^.\n]{{0,80}}{_PATH_SETTING}|{_PATH_SETTING}[^.\n]{{0,80}}{_PATH_PROBLEM}",
       {"other": 3},
       "NCCL troubleshooting, 'PCI Access Control Services (ACS)' and IOMMU "
       "(https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html): they "
       "redirect or break GPU-to-GPU traffic (hangs, corrupt data); NVIDIA/nccl#199",
       failure=True),
    # the same problem in the reporter's words: a connection between hosts that fails or is
    # filtered (ssh, TCP, an MPI or NCCL socket, NAT/iptables)
    _s("outside-network-words", r"\b(?:ssh|tcp|mpi|socket|network) connections? (?:issues?|problems?|"
       r"fail\w*|errors?|refused|lost|drops?|dropped)|\bconnection (?:back |between \w+ )?"
       r"(?:issues?|problems?)|\biptables?\b|\bmasquerad\w*|\bport \d* ?(?:is |was )?(?:blocked|"
       r"closed|filtered)", {"other": 1},
       f"{NCCL} (e): connections between hosts that fail or are filtered are a network problem "
       "with a correct mapping (no device evidence)", where=PROSE, outside=True),
    _s("outside-python", _LINE + r"(?:\w+\.)*(?:ModuleNotFoundError|ImportError|FileNotFoundError|"
       r"KeyError(?!: ['\"]" + _LAUNCH_VAR + r"['\"])|SyntaxError|IndentationError|NameError|UnicodeDecodeError|"
       r"PermissionError|JSONDecodeError|IsADirectoryError|NotADirectoryError|FileExistsError|"
       # the data itself (review 65: a cut-off JSONL line on rank 0, the others then time out)
       r"ArrowInvalid|ArrowTypeError|ArrowCapacityError|DatasetGenerationError|UnpicklingError|"
       r"ParserError)\b|"
       # a file system's errno (ENOENT, EIO, EACCES, EEXIST, ENOTDIR, EISDIR, ENOSPC, EROFS,
       # ENAMETOOLONG, EDQUOT; not the network's: EADDRINUSE is the store's port) and a model hub
       # that cannot be reached are the program's environment, not its GPUs
       r"\bOSError: (?:\[Errno (?:2|5|13|17|20|21|28|30|36|122)\]|We couldn't connect|Can't load|"
       r"[^\n]{0,120}huggingface\.co)|"
       r"TypeError: [^\n]{0,120}got an unexpected keyword "
       r"argument ['\"](?!(?:local[-_]rank|rank|world[-_]size|device_ids?|nproc\w*|num_processes|"
       r"master_(?:addr|port)|backend|init_method)['\"])", {},
       "Python's own exceptions name a program or installation error "
       "(https://docs.python.org/3/library/exceptions.html)", outside=True),
    _s("outside-data", r"DataLoader worker \(pid|insufficient shared memory|\bbus error\b|"
       r"No space left on device|\bnan loss|loss (?:is|becomes?|became|turns? into) nan|"
       r"device-side assert triggered|Segmentation fault|core dumped", {},
       "data loading, shared memory, disk, numerics and kernel asserts are outside the mapping "
       "(DataLoader workers need shared memory: https://github.com/pytorch/pytorch/issues/92134)",
       outside=True),
    # Open MPI cannot start its daemon on another node (PATH / LD_LIBRARY_PATH there): an
    # installation problem, before any rank runs
    _s("outside-mpi-start", r"ORTE was unable to reliably start one or more daemons|"
       r"orted: command not found|prted: command not found|PRTE has lost communication",
       {}, "Open MPI FAQ, running jobs: the remote nodes need Open MPI in PATH and "
       "LD_LIBRARY_PATH for non-interactive shells, or mpirun --prefix "
       "(https://docs.open-mpi.org/en/v5.0.x/launching-apps/ssh.html)", outside=True),
    # the scheduler's time limit, fp16 loss-scale underflow, a container killed for host memory
    _s("outside-job-limits", r"DUE TO TIME LIMIT|loss scale already at minimum|\bOOMKilled\b|"
       r"Batch job submission failed|Unable to allocate resources|Invalid partition name",
       {},
       "Slurm ends a job at its --time limit ('CANCELLED AT ... DUE TO TIME LIMIT', "
       "https://slurm.schedmd.com/sbatch.html) and refuses a request its partitions cannot meet "
       "before anything runs ('Batch job submission failed: Requested node configuration is not "
       "available', a scheduler policy); DeepSpeed stops when the dynamic fp16 loss scale "
       "cannot shrink further (https://www.deepspeed.ai/docs/config-json/, fp16); Kubernetes "
       "reports a container killed for memory as OOMKilled "
       "(https://kubernetes.io/docs/tasks/configure-pod-container/assign-memory-resource/)",
       outside=True),
)
# fmt: on

FAMILY_KEYS: dict[str, tuple[str, ...]] = {
    # every match ends in one of these words (or "without exporting/setting/...")
    "rank-env-unset-words": ("set", "export", "defin", "pass"),
    "outside-collective-mismatch": ("mismatch between collectives", "running collective"),
    "fabric-manager-not-ready": (
        "not yet initiali",
        "systemnotready",
        "system_not_ready",
        "cuda error",  # "CUDA error 802" / "error code 802" by their words, not the number
        "error code",
        "nvidia-fabricmanager",
    ),
    "invalid-device-any": (
        "invalid gpu",
        "invalid cuda",
        "less than device_count",
        "index is out of range",
        "must be in [0,",
        "invalid device",
        "invalid_device",
        "errorinvaliddevice",
        "ordinal",
        "gpu index",
        "gpu id",
        "device index",
        "device id",
        "cuda index",
        "cuda id",
        "no gpu with",
        "no device with",
        "explicit device specification",
        "must be less than",
        "should be less than",
        "must be smaller than",
        "should be smaller than",
        "no cuda device with",
    ),
    "comm-init-error-words": ("error", "fail", "crash"),
    "visible-devices-any": (
        "_visible_",
        "ze_affinity_mask",
        "gpu_device_ordinal",
        "visible device",
        "visible_device",
    ),
    "device-count-message": (
        "only",
        "found",
        "visible",
        "detected",
        "see",
        "saw",
        "show",
        "return",
        "device_count",
        "available",
        "not enough",
        "insufficient",
        "requested",
        "number of",
        "num ",
    ),
    "device-error-any": (
        "cuda error",
        "cuda failure",
        "cuda driver error",
        "cudaerror",
        "cuda_error_",
        "cuda runtime error",
        "acceleratorerror",
        "hiperror",
        "hip error",
        "xlaruntimeerror",
        "unable to initialize backend",
    ),
    # one key per alternative of the regex: a bare "nccl" would make every NCCL INFO line of a
    # big log a candidate (benchmarks/explain_1gb.py: 40x slower)
    "nccl-cuda-call-failed": ("unhandled cuda error", "ncclunhandledcudaerror", "cuda failure"),
    "comm-error-any": (
        "ncclinternalerror",
        "ncclinvalidusage",
        "ncclinvalidargument",
        "ncclremoteerror",
        "ncclunhandledcudaerror",
        "ncclsystemerror",
        "distbackenderror",
        "processgroupnccl.cpp",
        "nccl communicator",
        "nccl error",
        "nccl failure",
        "test nccl failure",
        "rccl error",
        "rccl failure",
        " failed",  # ncclCommInit\w* failed; not "ncclcomminit": every Init line holds it
        "watchdog caught",
    ),
    "hang-at-collective": (
        "hang",
        "hung",
        "stuck",
        "freez",
        "forever",
        "never return",
        "no progress",
    ),
    "ray-node-ip": ("node:",),
    "ray-resources-unmet": ("no available node types",),
    "mpi-slots": ("not enough slots",),
    "k8s-gpu-unschedulable": ("insufficient nvidia.com/", "insufficient amd.com/"),
    "init-traceback": (
        "set_device",
        "_lazy_init",
        "_lazy_call",
        "manual_seed_all",
        "init_process_group",
        "_new_process_group_helper",
        "new_group",
        "barrier",
        "_sync_params_and_buffers",
        "_sync_module_states",
        "_verify_param_shape_across_processes",
        "_distributed_broadcast_coalesced",
        "init_distributed",
        "init_device",
        "init_worker_distributed_environment",
        "model_parallel",
    ),
    "collective-timeout": ("worknccl(seqnum=", "nccl timeout in communicator"),
    "negative-device-index": ("must not be negative", "cuda:-1", "ordinal -1", "set_device(-1)"),
    "other-users-process": (
        "colleague",
        "coworker",
        "co-worker",
        "labmate",
        "teammate",
        "another user",
        "other user",
        "someone else",
        "another person",
        "同事",
        "同学",
        "别人",
        "其他人",
        "其他用户",
    ),  # fmt: skip
    "rank-env-missing": (
        "expected, but not set",
        "keyerror",
        "failed to init",
        "failed to set",
        "unset",
        "not set",
    ),
    "exception-any": ("error", "exception", "traceback"),
    "gpu-held-by-another": (
        # "Return value 46", "CUDA error: 46", "error code=46" by the words before the number: a
        # number alone is no key (a 512-rank log holds "46" on every tenth line; the regex decides)
        "return value",
        "returned value",
        "return code",
        "returned code",
        "cuda error",
        "error code",
        "cuda_error",
        "cudaerror",
        "free memory on device",
        "busy or unavailable",
        "cudaerrordevicesunavailable",
        "other process",
        "already in use",
        "already occupied",
        "already busy",
    ),
    "device-selection-problem": (
        "gpu",
        "device",
        "cuda ",
        "cuda_",
        "cuda-",
        "card",
        "assign",
        "map",
        "bind",
        "pin",
        "allocat",
        "distribut",
        "local_rank",
        "local rank",
        "nvidia-smi",
        "rocm-smi",
        "_visible_devices",
        "set_device",
    ),
    "device-placement": (
        "found at least two devices",
        "must have its parameters and buffers on device",
        "device_ids and output_device",
    ),
    "visible-in-container": ("_visible_devices",),
    "hardware-fault": (
        "ecc",
        "xid",
        "fallen off the bus",
        "gpu is lost",
        "gpu has fallen",
        "nvlink",
        "row-remap",
        "row remap",
        "hardware_stack_error",
    ),
    "nccl-message-truncated": ("message truncated",),
    "outside-oom": ("out of memory", "outofmemoryerror", "oom", "unable to allocate"),
    "outside-model-size": ("too big", "too large", "fit", "parallel", "split the model"),
    "p2p-path-broken": ("corrupt", "garbage", "wrong values", "zero", "iommu", "acs"),
    "outside-network-words": ("connection", "iptable", "masquerad", "port"),
    "outside-ib-completion": ("got completion from peer",),
    "outside-ib-memlock": ("ibv_",),
    "nccl-tests-wrong-data": ("out of bounds values",),
    "outside-network": (
        "connection refused",
        "deadline",
        "connection reset",
        "no route to host",
        "network is unreachable",
        "firewall",
        "security group",
        "ufw",
        "iptables",
        "econnrefused",
        "etimedout",
        "connection timed out",
        "name or service not known",
        "temporary failure in name resolution",
        "socket timeout",
        "distnetworkerror",
        "diststoreerror",
        "client socket has timed out",
        "waiting for clients",
        "timed out initializing process group",
        "timed out initialising process group",
    ),
    "outside-python": (
        "modulenotfounderror",
        "importerror",
        "filenotfounderror",
        "keyerror",
        "syntaxerror",
        "indentationerror",
        "nameerror",
        "unicodedecodeerror",
        "permissionerror",
        "jsondecodeerror",
        "isadirectoryerror",
        "notadirectoryerror",
        "fileexistserror",
        "arrowinvalid",
        "arrowtypeerror",
        "arrowcapacityerror",
        "datasetgenerationerror",
        "unpicklingerror",
        "parsererror",
        "oserror: ",
        "got an unexpected keyword",
    ),
    "outside-data": (
        "dataloader worker",
        "insufficient shared memory",
        "bus error",
        "no space left",
        "nan",
        "device-side assert",
        "segmentation fault",
        "core dumped",
    ),
    "outside-mpi-start": (
        "unable to reliably start",
        "orted: command",
        "prted: command",
        "prte has lost",
    ),
    "outside-job-limits": (
        "due to time limit",
        "loss scale already at minimum",
        "oomkilled",
        "submission failed",
        "unable to allocate resources",
        "invalid partition name",
    ),
}
