"""Catalogue signals about the software stack: launchers and frameworks, CUDA/driver/NCCL/arch
versions, GPU peer access / IPC / NVSHMEM, framework identification (see signal_model)."""

from __future__ import annotations

from rankmap.explain.signal_model import (
    CUDA_DEV,
    LAUNCHERS,
    NCCL,
    NOT_LOG,
    NOT_PROSE,
    PROSE,
    TEXT,
    Signal,
)
from rankmap.explain.signal_model import sig as _s

# a GPU list of the process indexed by a variable: TensorFlow's list_physical_devices('GPU'),
# JAX's local_devices(), a `gpus` / `devices` list
DEVICE_LIST_INDEX = (
    r"\b(?:gpus|gpu_list|gpu_devices|devices|physical_devices|visible_devices|"
    r"local_devices\(\)|devices\(\)|list_physical_devices\([^)]*\))\s*\[\s*(?P<idx>[A-Za-z_][\w.()\[\]'\"]*)\s*\]"
)

_NOT_AVOIDED = r"(?<!instead of )(?<!rather than )(?<!not )(?<!never )"

# fmt: off
# A sentence that says two versions of the GPU stack do not fit (the stack named in it).
_STACK = r"\b(?:nccl|rccl|cuda|cudnn|driver|torch|pytorch|jax|jaxlib|tensorflow|rocm|hip|toolkit)\b"
_UNFIT = r"(?:incompatib\w*|mismatch\w*|do(?:es)? ?n[o']?t match)"

STACK_SIGNALS: tuple[Signal, ...] = (
    # --- launcher / framework configuration -----------------------------------------------------
    # a keyword a launcher or framework passes (local_rank, world_size, ...); any other
    # "unexpected keyword argument" is a library API break (outside-python)
    # ... and only an option a launcher passes: "unrecognized arguments: --lr_schedule" is the
    # user's own typo (review 46)
    _s("unrecognized-args", r"(?:unrecognized arguments?:|error: unrecognized|no such option:?)"
       r"[^\n]{0,200}?(?<![\w-])--?(?:local[-_ ]?rank|deepspeed\w*|rank|world[-_]size|nproc\w*|"
       # (paddle.distributed.launch's --gpus / --selected_gpus, DeepSpeed's --num_gpus,
       # accelerate's --num_machines / --machine_rank: a launcher option put after the script)
       r"nnodes|node[-_]rank|master[-_](?:addr|port)|num[-_]processes|dist[-_]url|gpus?|"
       r"selected[-_]gpus|num[-_](?:gpus|nodes|machines)|machine[-_]rank)\b|"
       r"unexpected keyword argument ['\"]?(?:local[-_]rank|rank|world[-_]size|device_ids?|"
       r"nproc\w*|num_processes|master_(?:addr|port)|backend|init_method)\b",
       {"launcher_config": 4},
       f"{LAUNCHERS} §1-4: launchers add or forward options the program must accept",
       failure=True,
       fix="Give the launcher's options before the script (`torchrun --nproc_per_node 4 "
       "train.py …`, `python -m paddle.distributed.launch --gpus 0,1 train.py …`): whatever "
       "follows the script is the script's; and let the script accept what its launcher passes "
       "(`--local_rank`, or read LOCAL_RANK from the environment)"),
    # several GPUs given where one device is taken ("cuda:0,1" to torch.device): a framework's
    # single-device option asked to do multi-GPU work, which it does by another option
    _s("device-string-list", r"Invalid device string: ['\"]?(?:cuda|gpu|xpu):\d+\s*,\s*\d",
       {"launcher_config": 3},
       "torch.device takes one device: 'cuda:0,1' raises \"Invalid device string\" "
       "(https://pytorch.org/docs/stable/tensor_attributes.html#torch.device)", failure=True),
    _s("rank-out-of-range", r"Invalid rank \d+, rank should be in the interval|rank \d+ is out of "
       r"range|rank should be (?:in|less than)", {"launcher_config": 5, "oversubscribed": 1},
       f"{LAUNCHERS} §5, §7: more tasks were started than the framework's world size",
       failure=True),
    _s("ds-cvd-ignored", r"Detected CUDA_VISIBLE_DEVICES=\S* but ignoring it|If you want to use "
       r"CUDA_VISIBLE_DEVICES,? don'?t pass", {"launcher_config": 6},
       f"{LAUNCHERS} §4: the DeepSpeed runner ignores CVD when --num_gpus/--include/--exclude/"
       "a hostfile is given, and sets its own", failure=True, framework="deepspeed"),
    # a launch line or code that passes/declares it; not a launcher's own log echoing the argv it
    # started (DeepSpeed's sigkill_handler prints ['python', '-u', 'train.py', '--local_rank=3'])
    _s("local-rank-arg", r"--local[-_]rank", {"launcher_config": 3},
       f"{LAUNCHERS} §2: torch.distributed.launch passes --local-rank (torchrun sets LOCAL_RANK)",
       where=NOT_LOG),
    # the rename told in words: "accepting an unexpected argument `local-rank` in PyTorch 2.0"
    _s("local-rank-renamed", r"(?:unexpected|unrecogni[sz]ed|unknown) (?:argument|arg|option|"
       r"parameter)s?\W{0,4}(?:--)?local[-_]rank\b", {"launcher_config": 4},
       f"{LAUNCHERS} §2: torch.distributed.launch passes --local-rank (PyTorch >= 2.0) or "
       "--local_rank (before) to the script; a script that does not declare that spelling "
       "rejects it", failure=True),
    _s("dist-launch", r"torch\.distributed\.launch|use_env", {"launcher_config": 2},
       f"{LAUNCHERS} §2"),
    # not the lines of an environment dump (`accelerate env`'s "- distributed_type: MULTI_GPU",
    # `transformers-cli env`'s "- Accelerate config: not found"): they describe every setup (review 31)
    _s("accelerate-config", r"accelerate config(?!`?\s*:\s*(?:not found|none))|(?<![-*] )(?<![-*]  )(?:distributed_type|"
       # (a keyword argument of code, `initialize(num_processes=8)`, `cfg.gpu_ids = [0]`, is no
       # accelerate config: its YAML says `num_processes: 8`, its CLI `--num_processes 8`)
       r"(?<![\w-])num_processes(?!\s*=)|(?<![\w-])gpu_ids(?!\s*=))|default_config\.yaml",
       {"launcher_config": 3}, f"{LAUNCHERS} §3"),
    # DeepSpeed's own GPU options: on a deepspeed line (mpirun takes a --hostfile with slots= too)
    _s("deepspeed-include", r"\bdeepspeed\b[^\n]{0,300}?(?:--include|--exclude|--hostfile|"
       r"\s-[ieH]\s|--num_accelerators)|--num_gpus",
       {"launcher_config": 2}, f"{LAUNCHERS} §4"),
    _s("lightning", r"ddp_spawn|strategy\s*=\s*['\"]ddp|Trainer\([^)]*(?:gpus|devices)\s*=|"
       r"num_nodes\s*=|--gpus[ =]\d+,|initializing ddp|initializing distributed:",
       {"launcher_config": 2}, f"{LAUNCHERS} §7: Lightning's gpus/devices/strategy settings",
       framework="lightning"),
    _s("horovod", r"horovodrun|hvd\.local_rank|hvd\.init|horovod", {"launcher_config": 1},
       "Horovod: pin each process with hvd.local_rank() "
       "(https://horovod.readthedocs.io/en/stable/pytorch.html)", framework="horovod"),
    _s("tf-cluster-config", r"\bTF_CONFIG\b|MultiWorkerMirroredStrategy|ParameterServerStrategy",
       {"launcher_config": 3},
       "TensorFlow multi-worker training: TF_CONFIG names the cluster and each process's task, "
       "and every worker it lists must be started with its own task index "
       "(https://www.tensorflow.org/guide/distributed_training#setting_up_the_tf_config_"
       "environment_variable)", framework="tensorflow"),
    # not advice that names them as what to avoid ("one job instead of two separate MPI runs")
    _s("mpi-singletons", _NOT_AVOIDED + r"(?:\d+|two|three|four|several|multiple) separate[^.\n]{0,30}"
       r"\bMPI\b|\bMPI\b[^.\n]{0,60}" + _NOT_AVOIDED + r"(?:\d+|two|three|four|several|multiple) "
       r"separate (?:jobs|runs|instances|"
       r"processes|copies)|(?:every|each|all) (?:mpi )?(?:process|rank|task)(?:es|s)?[^.\n]{0,40}"
       r"(?:is |are |reports? |thinks? (?:it is |they are )?)(?:rank 0 of 1|rank 0\b[^.\n]{0,20}"
       r"(?:size|world size) (?:of )?1\b)|"
       # "prints rank 0 of 1 eight times" (review 67: MPICH's mpiexec, Open MPI's mpi4py)
       r"\brank 0 of 1\b[^.\n]{0,20}\b(?:\d+|two|three|four|eight|several|many|multiple) times\b|"
       # every rank said to be 0, or the size said to be 1 ("all the ranks are 0", "it always
       # returns rank 0", "hvd.size() is always 1"; b28 dev: Horovod built against another MPI)
       # — said, not tested in code (`if hvd.size() == 1:` is a guard)
       r"\ball (?:the )?(?:local_)?ranks?(?: or (?:local_)?ranks?)? (?:are|were) (?:all )?0\b(?![.,]\d)|"
       r"\balways (?:gets?|got|returns?|reports?|prints?) (?:the )?(?:local_)?ranks? (?:being |as |of )?"
       r"0\b(?![.,]\d)|\b(?:hvd|horovod|comm|MPI\.COMM_WORLD)\.(?:size|Get_size)\(\) (?:is always|"
       r"always (?:is|returns)|returns(?: always)?) 1\b(?![.,]\d)",
       {"version_mismatch": 3, "launcher_config": 1.5},
       f"{LAUNCHERS} §6: an MPI program started by another MPI's mpirun (or without one) finds no "
       "job of its own: every process is rank 0 of a world of size 1, N separate jobs "
       "(https://docs.open-mpi.org/en/v5.0.x/launching-apps/quickstart.html)", failure=True,
       framework="mpi"),
    # a program that reports a world of one process ("numprocs=1", "Num processes: 1"): context
    # alone; next to a launch of several processes it is the mpi-singletons fact (combinations)
    _s("world-of-one", r"(?<!with )(?<!using )(?<!set )(?<!setting )(?<!for )(?<!when )(?<!if )"
       r"\b(?:numprocs|num_?procs|nprocs|num(?:ber of)? (?:mpi )?process(?:es)?|"
       r"(?<!parallel )(?<!parallel_)world[_ ]?size|comm(?:unicator)? size)\s*[=:]\s*1\b(?![.,]\d)",
       {}, f"{LAUNCHERS} §6: every process of N separate jobs is rank 0 of a world of size 1",
       where=TEXT),
    # Python's modulo by zero and a call of torch.cuda.device_count(): context each; together
    # (combinations._no_gpu_modulo) `local_rank % torch.cuda.device_count()` with no GPU visible
    _s("modulo-by-zero", r"ZeroDivisionError: integer (?:division or )?modulo by zero", {},
       "Python raises ZeroDivisionError for x % 0 "
       "(https://docs.python.org/3/library/exceptions.html#ZeroDivisionError)", where=NOT_PROSE),
    _s("device-count-call", r"\bdevice_count\(\)\s*\)*\s*$|%\s*(?:torch\.)?(?:cuda\.)?"
       r"device_count\(\)", {}, f"{CUDA_DEV} §1: the number of devices the process sees",
       where=NOT_PROSE),
    # the processes launched against the model parallelism asked for: Megatron's "world size (8)
    # is not divisible by tensor model parallel size (3) ...", TensorRT-LLM's "mpiSize == tp * pp"
    _s("world-size-vs-parallelism", r"(?:world[_ ]?size|mpiSize|mpi size)\b[^\n]{0,60}(?:!=|not "
       r"equal|does ?n.t match|not divisible)[^\n]{0,40}(?:\btp\b|tensor[_ -](?:model[_ -])?"
       r"parallel)|assert\w*(?: failed)?:?[^\n]{0,40}(?:world[_ ]?size|mpiSize)\b[^\n]{0,20}==[^\n]"
       r"{0,40}(?:\btp\b|tensor[_ -](?:model[_ -])?parallel)",
       {"launcher_config": 4},
       "the number of processes launched does not fit the model parallelism asked for: "
       "Megatron-LM (https://github.com/NVIDIA/Megatron-LM, megatron/core/parallel_state.py: "
       "world size divisible by tensor x pipeline parallel size), TensorRT-LLM "
       "(https://github.com/NVIDIA/TensorRT-LLM, cpp/tensorrt_llm/runtime/worldConfig.cpp: "
       "mpiSize == tp * pp)",
       failure=True, where=TEXT),
    _s("opennmt-gpu-ranks", r"\bgpu_ranks\b", {"launcher_config": 3},
       "OpenNMT-py: world_size is the number of processes and gpu_ranks the GPUs of this node "
       "they run on, one each (https://opennmt.net/OpenNMT-py/options/train.html, distributed)"),
    # the writer blames the command that started the processes ("stuck because of a wrong launch
    # command", "the launcher config was broken"): the launcher's settings, whatever it is
    _s("launch-command-blamed", r"\b(?:wrong|incorrect|bad|broken|mis-?configured|improper|faulty) "
       r"(?:launch(?:er|ing)?|start-?up) (?:command|script|config(?:uration)?|arguments|args|"
       r"options|parameters|cmd)s?\b|\blaunch(?:er)? (?:command|script|config(?:uration)?|cmd)s? "
       r"(?:is|was|are|were) (?:wrong|incorrect|broken|mis-?configured)\b",
       {"launcher_config": 2.5}, f"{LAUNCHERS} §1: the launcher's options decide the processes",
       where=PROSE),
    # a node of the job that was never started: the rendezvous waits for it ("forgot to start the
    # second node", "started only on node A, it waits forever"; review 27)
    _s("node-not-started", r"\b(?:forg[oe]t(?:ting)?|never|didn't|did not|not) (?:to )?"
       r"(?:start|launch|run)(?:ed)? (?:it |torchrun |the job |the command )?(?:on )?(?:the )?"
       r"(?:second|other|2nd|remaining|second and third) (?:node|machine|host)s?\b|"
       r"\b(?:started|launched|ran|run) (?:it )?only on (?:node\s?\w+|one (?:node|machine)|the "
       r"(?:first|master|head) (?:node|machine))\b",
       {"launcher_config": 3}, f"{LAUNCHERS} §1: the rendezvous waits for --nnodes nodes",
       where=TEXT),
    _s("master-addr", r"MASTER_ADDR|MASTER_PORT|init_method|env://|rdzv", {"launcher_config": 1},
       f"{LAUNCHERS} §1"),
    _s("spawn-independent", r"mp\.spawn|multiprocessing\.spawn|torch\.multiprocessing",
       {"launcher_config": 1, "no_set_device": 1}, f"{LAUNCHERS} §1"),
    # --- versions: CUDA / driver / NCCL / arch --------------------------------------------------
    _s("no-kernel-image", r"no kernel image is available|not compatible with the current PyTorch "
       r"installation|CUDA capability sm_\d+ is not compatible|sm_\d+ is not compatible|"
       r"no binary for gpu|hipErrorNoBinaryForGpu|invalid device function|"
       r"cudaErrorNoKernelImageForDevice|minimum (?:required )?cuda capability|no longer supports "
       r"this GPU because it is too old|Ignoring visible gpu device[^\n]{0,200}compute capability",
       {"version_mismatch": 6}, f"{NCCL} (g): binaries carry code for a list of architectures",
       failure=True),
    # a kernel looked up by name in a binary built without the GPU's sm_XX: CUDA says the symbol
    # is not found (NVIDIA/nccl#1372, #112; NVIDIA/stdexec#888). Inside NCCL that decides the
    # cause (rules.NO_CODE_FOR_ARCH, RM053); elsewhere the same words also come from a misspelt
    # kernel name or a dlsym loader, so they only rank the causes of a failure of this family
    # (context, printed output only: a question quoting the words is no evidence)
    _s("named-symbol-not-found", r"named symbol not found|cudaErrorSymbolNotFound",
       {"version_mismatch": 2},
       f"{NCCL} (g): a build carries kernels for its gencode list only (NVIDIA/nccl#1372)",
       where=NOT_PROSE),
    _s("driver-too-old", r"driver version is insufficient|CUDA driver version is insufficient|"
       r"NVIDIA driver on your system is too old|CUDA_ERROR_SYSTEM_DRIVER_MISMATCH|"
       # CUDA's error string, not XLA's notice that names the forward-compatibility packages
       # ("XLA is disabling parallel compilation ... or use the ... forward compatibility
       # packages": a slower compile, no failure; review 23)
       r"cudaErrorInsufficientDriver|unsupported toolchain|forward compatibility was attempted|"
       r"Driver/library version mismatch|CUDA_ERROR_UNSUPPORTED_PTX_VERSION|ptxas[^\n]{0,80}"
       r"(?:too old|unsupported|newer)|driver[^\n]{0,40}too old|"
       r"unsupported display driver / cuda driver combination|cudaErrorSystemDriverMismatch",
       {"version_mismatch": 6}, f"{NCCL} (g): CUDA runtime and driver requirements", failure=True),
    # NCCL's own refusal to capture a collective in a CUDA graph: the library was built against
    # a CUDA runtime older than 11.3 or the driver is older than R465 (NCCL user guide, "Using
    # NCCL with CUDA Graphs": graph capture needs CUDA 11.3; vllm-project/vllm#3069, a torch
    # wheel's NCCL 2.19.3+cuda11.0)
    _s("nccl-graph-capture-build", r"NCCL cannot be captured in a graph",
       {"version_mismatch": 6}, f"{NCCL} (g): NCCL user guide, CUDA Graphs need CUDA >= 11.3 in "
       "NCCL's build and a driver >= R465", failure=True),
    # the NVIDIA Container Toolkit refuses an image whose CUDA the host driver cannot run: it
    # checks the image's NVIDIA_REQUIRE_CUDA against the driver before the container starts,
    # so the daemon's error around it names no passthrough problem
    _s("container-cuda-requirement", r"requirement error: unsatisfied condition: cuda\s*>=|"
       r"please update your driver to a newer version, or use an earlier cuda container",
       {"version_mismatch": 9},
       f"{NCCL} (g) and the NVIDIA Container Toolkit (nvidia-container-cli: an image's "
       "NVIDIA_REQUIRE_CUDA above what the host driver supports)", failure=True),
    # a PyTorch build without NCCL (Windows and macOS wheels, CPU-only builds): the backend the
    # job asks for does not exist in that build. Most often the platform (every dev thread of
    # b21-b27 that shows it ran on Windows, a negative of the family): ``other`` first, the build
    # next; the Windows rule (combinations_platform.py) and a CPU-only build's own signal decide
    _s("nccl-not-built", r"Distributed package doesn'?t have NCCL(?: built in)?",
       {"other": 4, "version_mismatch": 3, "launcher_config": 1},
       "https://github.com/pytorch/pytorch/blob/main/torch/distributed/distributed_c10d.py "
       "_new_process_group_helper: "
       "`raise RuntimeError(\"Distributed package doesn't have NCCL built in\")` when "
       "is_nccl_available() is false (builds without NCCL: Windows, macOS, CPU-only)",
       failure=True,
       fix="On Windows or macOS use the gloo backend (`init_process_group(backend='gloo')`): "
       "PyTorch's wheels there carry no NCCL; on Linux install a CUDA build of PyTorch, whose "
       "wheels include NCCL"),
    # the machine runs Windows: PyTorch's Windows wheels have no NCCL (context only; the
    # combination with nccl-not-built is in rankmap.explain.combinations_platform)
    # (case-sensitive: the OS's name, not "sliding windows"; lower case only where it is the OS)
    _s("windows-host", r"(?<![A-Za-z])Windows(?![a-z]| [Ss]ubsystem)|(?<![A-Za-z])WINDOWS(?![A-Z])|"
       r"(?<![a-z])windows(?=[\u4e00-\u9fff]|\s?(?:10|11|server|machine|pc|laptop|os|host|system|"
       r"computer|box|build|wheel)\b)|\b[Oo]n windows\b|(?<![a-z])[Ww]in(?:10|11)\b|"
       r"\b[Pp]ower[Ss]hell\b|"
       r"\b[C-F]:\\(?:Users|ProgramData|Program Files|Anaconda\d?|Miniconda\d?|Python\d+)\\|"
       # a drive-letter path into a Python installation (a traceback's frames, escaped or not)
       r"\b[C-F]:\\{1,2}[^\s\"']{0,200}?\\{1,2}site-packages\b",
       {},
       "https://pytorch.org/docs/stable/distributed.html (Backends: NCCL is supported on Linux "
       "only; Windows builds carry gloo)", case=True),
    # the machine runs Linux, where PyTorch's CUDA wheels ship NCCL: a build without it there is
    # the build (context only; the combination with nccl-not-built is in combinations_platform.py)
    _s("linux-host", r"\b(?:Ubuntu|CentOS|Debian|RHEL|Rocky Linux|Fedora|Linux)\b|"
       # a Python installation under a Linux home or a container's conda (a traceback's frames;
       # a Mac's are under /Users)
       r"(?<![\w/])/(?:home|root|opt/conda)/[^\s\"']{0,200}?/site-packages/", {},
       "https://pytorch.org/docs/stable/distributed.html (Backends: NCCL is supported on Linux, "
       "and the CUDA builds include it)", case=True),
    # a PyTorch build without CUDA (the CPU wheel): every CUDA call fails, a device choice with
    # it (review 36: set_device in the traceback was read as the missing set_device)
    _s("torch-cpu-build", r"Torch not compiled with CUDA enabled|has no attribute '_cuda_\w+'|"
       r"PyTorch was compiled without CUDA support",
       {"version_mismatch": 7},
       "https://github.com/pytorch/pytorch/blob/main/torch/cuda/__init__.py _lazy_init: "
       "`raise AssertionError(\"Torch not compiled with CUDA enabled\")` when the build has no "
       "CUDA (torch._C then lacks its _cuda_* functions)",
       failure=True),
    _s("gfx-arch", r"\bgfx\d{3,4}", {"version_mismatch": 1},
       "ROCm GPU architecture names (https://rocm.docs.amd.com/en/latest/reference/gpu-arch-specs.html)"),
    _s("gfx-override", r"HSA_OVERRIDE_GFX_VERSION", {"version_mismatch": 4},
       "ROCm: the code objects of a wheel are built per gfx architecture "
       "(https://rocm.docs.amd.com/en/latest/reference/gpu-arch-specs.html)", framework="rocm"),
    _s("cudnn", r"CuDNN library[^\n]{0,80}(?:but|compiled)|cudnn[^\n]{0,40}(?:mismatch|not found|"
       r"incompatib\w*|compiled with|cannot open)|"
       r"Loaded runtime CuDNN|libcudart\.so\.\d+[^\n]{0,40}(?:not found|cannot open)|"
       r"Could not load dynamic library 'lib(?:cudart|cublas|cudnn)",
       {"version_mismatch": 4}, "TensorFlow/PyTorch builds pin CUDA/cuDNN versions "
       "(https://www.tensorflow.org/install/source#gpu)", failure=True),
    _s("upgraded-driver", r"after (?:upgrading|updating|installing) (?:the |my |nvidia )*driver|"
       r"(?:driver|cuda|nccl) (?:upgrade|update)d?|(?:downgrad|upgrad)(?:e|ed|ing) "
       r"(?:to )?(?:the )?(?:driver|cuda|nccl|torch|pytorch)",
       {"version_mismatch": 3}, f"{NCCL} (g)", where=TEXT),
    # the reporter states the cause class: two versions of the stack that do not fit together
    _s("versions-incompatible", rf"{_STACK}[^\n.]{{0,60}}\bversions?\b[^\n.]{{0,50}}{_UNFIT}|"
       rf"\bversions?\b[^\n.]{{0,50}}{_UNFIT}[^\n.]{{0,60}}{_STACK}|"
       rf"{_UNFIT} (?:between|of|in) [^\n.]{{0,60}}{_STACK}[^\n.]{{0,40}}\bversions?\b",
       {"version_mismatch": 3}, f"{NCCL} (g)", where=TEXT),
    _s("cuda-versions", r"torch\.version\.cuda|nvcc --version|cu1\d{2}\b|\+cu\d{3}|CUDA Version: "
       r"\d+\.\d|cuda[- ]?toolkit", {"version_mismatch": 1}, f"{NCCL} (g)"),
    _s("ofed", r"MLNX_OFED|HPC-X|hpcx|OFED version", {"version_mismatch": 2}, f"{NCCL} (g)"),
    # a GPU library loaded at another version than the caller was built against (an older
    # libnccl/libcudart first on the library path) lacks a symbol the caller needs
    _s("undefined-gpu-symbol", r"undefined symbol: _?_?(?:nccl|cuda|cu|cublas\w*|cudnn|nvrtc|hip|rccl)"
       r"[A-Z_]\w*|(?<!\bno )(?<!\bnot an )(?<!\bnot a )undefined symbol (?:nccl|rccl)[A-Z]\w*",
       {"version_mismatch": 5},
       f"{NCCL} (e): ranks or libraries that load different NCCL/CUDA builds; a dynamic symbol "
       "missing at import is the older library found first (ld.so(8))", failure=True),
    # newer nccl.h initialises ncclConfig_t attributes to NCCL_CONFIG_UNDEF_INT (INT_MIN), which
    # an older libnccl rejects: the caller was built against a newer NCCL than the one loaded
    _s("nccl-config-undef", r"Invalid config \w+ attribute value -2147483648",
       {"version_mismatch": 5},
       "https://github.com/NVIDIA/nccl/blob/master/src/init.cc ('Invalid config blocking "
       "attribute value %d'): releases that know "
       "NCCL_CONFIG_UNDEF_INT (INT_MIN, set by NCCL_CONFIG_INITIALIZER of newer headers) skip it, "
       "older ones reject it", failure=True),
    _s("nccl-version-mismatch", r"NCCL version mismatch|different NCCL versions?|libnccl[^\n]{0,30}"
       r"(?:mismatch|conflict)", {"version_mismatch": 5}, f"{NCCL} (e)", failure=True),
    # --- GPU peer access / IPC / NVSHMEM (category other unless identity is wrong) ---------------
    _s("peer-access", r"peer access (?:is )?not (?:supported|enabled)|cudaErrorPeerAccess|"
       r"peer mapping resources exhausted|canAccessPeer|can_device_access_peer|"
       r"p2p (?:access )?(?:is )?not supported",
       {"other": 4}, "CUDA peer access between GPUs depends on topology/IOMMU "
       "(https://docs.nvidia.com/cuda/cuda-c-programming-guide/#peer-to-peer-memory-access)",
       failure=True),
    # (not the engine's own config dump, "disable_custom_all_reduce=False", of every vLLM start)
    _s("custom-allreduce", r"custom[ _-]?all[ _-]?reduce(?!\s*[=:]\s*False)", {"other": 4},
       "vLLM/TensorRT-LLM custom all-reduce needs GPU peer access "
       "(https://docs.vllm.ai/en/latest/serving/distributed_serving.html)"),
    # the kernel's IOMMU fault lines name it too: AMD-Vi's "Event logged [IO_PAGE_FAULT ...]",
    # Intel VT-d's "DMAR: [DMA Read] Request device [52:00.0] ... fault" (Linux drivers/iommu)
    _s("iommu", r"\biommu\b|ACS (?:enabled|override)|pci=noats|IO_PAGE_FAULT|"
       r"DMAR: \[DMA (?:Read|Write)\]|DMAR: DRHD: handling fault", {"other": 4},
       "NCCL troubleshooting: IOMMU/ACS block GPU peer traffic "
       "(https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html)"),
    _s("p2p-disable", r"NCCL_P2P_DISABLE|NCCL_P2P_LEVEL|NCCL_SHM_DISABLE", {"other": 2},
       f"{NCCL} (f)"),
    # a CUDA call failing inside NCCL: no cause on its own (a marker for the combinations: under
    # per-process visibility it is NCCL reaching a peer GPU it cannot see)
    _s("nccl-cuda-failure", r"(?:unhandled cuda error|ncclUnhandledCudaError|NCCL WARN Cuda "
       r"failure)(?![^\n]{0,60}(?:out of memory|illegal memory|misaligned|launch failure|"
       r"device-side assert|named symbol not found))",
       {}, f"{NCCL} (e): ncclUnhandledCudaError, a CUDA call inside NCCL failed"),
    # ... and one whose CUDA message names another cause: no visibility problem then
    _s("nccl-cuda-failure-named", r"Cuda failure:? '?(?:out of memory|an illegal memory access|"
       r"misaligned address|unspecified launch failure|device-side assert|named symbol not found)",
       {},
       f"{NCCL} (e): the CUDA error NCCL passes on names its own cause"),
    _s("cuda-ipc", r"cu(?:da)?Ipc\w*|IPC handle|invalid resource handle|CUDA IPC",
       {"other": 3, "container_mapping": 1, "host_identity": 1},
       f"{NCCL} (b): P2P/IPC is chosen for ranks NCCL takes for one host", failure=True),
    _s("nvshmem", r"nvshmem|DeepEP|IBGDA|gdrcopy", {"other": 3, "container_mapping": 1},
       "NVSHMEM needs peer/RDMA access inside the container "
       "(https://docs.nvidia.com/nvshmem/api/faq.html)", framework="nvshmem"),
    # "can potentially cause a hang" (PyTorch's device-guess warning) is no hang
    # (a pod "stuck Pending" or a job stuck in the queue waits for resources; it never ran)
    _s("hang-first-collective", r"(?<!cause a )(?<!may )(?<!can )(?<!could )"
       r"\b(?:hangs?|hung|hanging|stuck|freez(?:e|es|ing))\b"
       r"(?! (?:in |at |on )?(?:the )?(?:pending|containercreating|queued?|scheduling|"
       r"waiting for (?:resources|a node|gpus?))\b)",
       {"other": 1, "host_identity": 1}, f"{NCCL} (d): a hang at the first collective",
       failure=True, where=TEXT),
    _s("nccl-generic-error", r"NCCL (?:error|WARN)|ncclUnhandledCudaError|ncclSystemError|"
       r"unhandled cuda error|unhandled system error",
       {"other": 1}, f"{NCCL} (e)", failure=True),
    # a stack frame inside NCCL / RCCL ("libnccl.so.2(ncclTopoCompute+0x312)", the glibc
    # backtrace a crashing process prints): the library itself crashed, a bug of its version
    # or of its input (NCCL's release notes list such fixes)
    # (gdb's "#3 0x.. in ncclProxyService () from libnccl.so" is a stack of a process that may
    # only hang: not this signal; review 25)
    _s("nccl-crash-frame", r"\blib[nr]ccl\.so(?:\.[\d.]+)?\((?:\w+)?\+0x[0-9a-fA-F]+\)",
       {"other": 3, "version_mismatch": 1},
       "a backtrace frame inside libnccl / librccl: the crash is in NCCL's own code "
       "(https://github.com/NVIDIA/nccl/releases: fixed crashes per release)", failure=True),
    # a list of the GPUs a process sees, indexed by a rank ("gpus[task_index]",
    # "jax.local_devices()[local_rank]"), and Python's IndexError: the frameworks' own invalid
    # device ordinal (combinations._device_list_index), context each on its own
    _s("device-list-indexed", DEVICE_LIST_INDEX, {},
       f"{CUDA_DEV} §1: a process sees its visible GPUs only; an index past them fails"),
    _s("index-error", r"\bIndexError: (?:list )?index \d* ?out of range", {},
       "https://docs.python.org/3/library/exceptions.html#IndexError", where=TEXT),
    # one process driving several GPUs by design (nn.DataParallel gathers on device_ids[0];
    # device_map="auto" spreads one model): more memory on GPU 0 is what it does, not ranks that
    # never selected their device (https://pytorch.org/docs/stable/generated/torch.nn.DataParallel
    # .html; scoring._single_process drops the GPU-0 signals when no multi-process job shows)
    _s("single-process-multi-gpu", r"(?<!Distributed)\bDataParallel\b|device_map\s*=\s*['\"]"
       r"(?:auto|balanced|sequential)['\"]|\bMirroredStrategy\b(?!\w)", {},
       "torch.nn.DataParallel: one process replicates the module on every device and gathers on "
       "device_ids[0] (https://pytorch.org/docs/stable/generated/torch.nn.DataParallel.html); "
       "TensorFlow's MirroredStrategy drives every GPU of the machine from one process "
       "(https://www.tensorflow.org/guide/distributed_training#mirroredstrategy)"),
    _s("multi-process-job", r"DistributedDataParallel|init_process_group|\btorchrun\b|\bDDP\b|"
       r"strategy\s*=\s*['\"](?:ddp|deepspeed|fsdp)|"
       r"torch\.distributed\.(?:launch|run)|accelerate launch|\bdeepspeed\b|\bsrun\b|\bmpirun\b|"
       r"paddle\.distributed\.launch|\bfleetrun\b|\bjsrun\b|"
       r"\bmpiexec\b|\bhorovod|LOCAL_RANK|nproc[_-]per[_-]node|\bmp\.spawn|"
       # sharded data parallelism and Megatron's model parallelism run a process per GPU
       r"\bFSDP\b|FullyShardedDataParallel|\bMegatron|"
       # Python's multiprocessing names a child whose run() raised ("Process SpawnProcess-2:"
       # above its traceback: Lib/multiprocessing/process.py, _bootstrap); two processes that
       # print one exception at once glue its name twice ("RuntimeErrorRuntimeError: ...")
       r"\bProcess (?:Spawn|Fork|ForkServer)?Process-\d+:|\bRuntimeErrorRuntimeError\b|"
       # torch.multiprocessing.spawn's report of a failed child (torch/multiprocessing/spawn.py)
       r"-- Process \d+ terminated with the following error", {},
       f"{LAUNCHERS} §1: a job of several processes"),
    # the job starts from a shell script the input does not show (`bash train.sh`, `./run.sh`):
    # how many processes it starts is unknown, not one
    _s("shell-script-launch", r"(?:\b(?:sh|bash|zsh)\s+|(?<![\w./-])\./)[\w./-]*\.sh\b", {},
       # (anywhere: a sentence that quotes the error beside it reads as a log line)
       f"{LAUNCHERS} §1: the launcher and its process count are in the script"),
    # --- frameworks (identify only) --------------------------------------------------------------
    # naming the benchmark or the library is context, not a failure (a healthy run names them too)
    _s("nccl-tests", r"\b[rn]ccl-tests\b|\b[a-z_]+_perf\b", {},
       "nccl-tests / rccl-tests binaries (https://github.com/NVIDIA/nccl-tests)",
       framework="nccl-tests"),
    _s("rccl", r"\bRCCL\b", {}, "RCCL, ROCm's NCCL (https://github.com/ROCm/rccl)",
       framework="rocm"),
    # Huawei Ascend NPUs (torch_npu, CANN, HCCL): another device stack than CUDA/ROCm, whose own
    # names the mapping rules take (combinations_platform.npu_stack)
    _s("ascend-npu", r"\btorch_npu\b|ASCEND_RT_VISIBLE_DEVICES|\bHCCL\b|\baclrt\w+|\bAscend\b|"
       r"昇腾|\bnpu-smi\b|\bMindSpore\b|vllm-ascend|\bCANN\b", {},
       "Ascend NPUs: torch_npu / CANN, ASCEND_RT_VISIBLE_DEVICES, HCCL "
       "(https://www.hiascend.com/document)", framework="ascend", case=True),
    _s("vllm", r"\bvllm\b|VllmWorker|EngineCore|tensor[-_]parallel[-_]size", {},
       "vLLM", framework="vllm"),
    _s("sglang", r"\bsglang\b|sgl_kernel", {}, "SGLang", framework="sglang"),
    _s("cupy", r"\bcupy\b|cupy_backends", {"version_mismatch": 1}, "CuPy", framework="cupy"),
    _s("tensorflow", r"\btensorflow\b|tf\.config|tf\.distribute", {}, "TensorFlow",
       framework="tensorflow"),
)
# fmt: on
