"""Catalogue signals for the messages that frameworks beyond PyTorch/torchrun *print* when a
process gets the wrong GPU, no GPU, a GPU another rank holds, or a launch that does not fit the
machine (see signal_model for the shape and the weight scale).

Every regex is written from the framework's own format string (its source at a commit, or its
documentation page, in ``fact``), not from the threads of the corpus: the message text is data,
the regex matches the shape the source prints (``{n}`` placeholders become ``\\d+`` and the like).
Messages the catalogue already reads elsewhere are left to their signal (one authority per rule):
TensorFlow's ``Could not satisfy explicit device specification`` and an invalid device id of any
stack (``invalid-device-any``), ``Ignoring visible gpu device … compute capability``
(``no-kernel-image``), DeepSpeed's ``Detected CUDA_VISIBLE_DEVICES=… but ignoring it``
(``ds-cvd-ignored``), Open MPI's slot refusal (``mpi-slots``), Ray's autoscaler refusal
(``ray-resources-unmet``), NCCL results in every spelling (``comm-error-any``).
"""

from __future__ import annotations

from rankmap.explain.signal_model import LAUNCHERS, Signal
from rankmap.explain.signal_model import sig as _s

_GH = "https://github.com"
_LIGHTNING = f"{_GH}/Lightning-AI/pytorch-lightning/blob/7f0c3436cd3f6ad3753125672024fc415cbcb414"
_HOROVOD = f"{_GH}/horovod/horovod/blob/2626dc87a3a8eb8fb7d2216198ce45bce0f9e65a"
_DEEPSPEED = f"{_GH}/deepspeedai/DeepSpeed/blob/edaa7221267243c7be7fb49c5d5f5c4fb97b4641"
_ACCELERATE = f"{_GH}/huggingface/accelerate/blob/16cb6eb80dd9aa8b4df1a63ef57863e455d53b83"
_JAX = f"{_GH}/jax-ml/jax/blob/cec06d116c05f0d52adfceee3d3b730fdbcb0ce5"
_XLA = f"{_GH}/openxla/xla/blob/80c095fc2f5ba8b1e8c8b7df79c0be532416dd69"
_RAY = f"{_GH}/ray-project/ray/blob/a53f00f44305f4e3d8c26013295c999d7f38535b"
_SLURM = f"{_GH}/SchedMD/slurm/blob/46783aa726f659e8d97a229fc13c8c5eb80e9645"
_PADDLE = f"{_GH}/PaddlePaddle/Paddle/blob/28beeea013bd0d625ca1eace918c7fbd28fd0779"
_KERAS = f"{_GH}/keras-team/keras/blob/4fe07fdb95f91ee411336687099499a916f2f4d2"
# Keras's device check, up to the list of the devices the machine has
_KERAS_CHECK = (
    r"To call `multi_gpu_model` with `gpus=\d+`, we expect the following devices to be available: "
    r"[^\]\n]*\]\. However this machine only has: \["
)
_MXNET = f"{_GH}/apache/mxnet/blob/89b2e427143001b6f94b068d2d3fd3793449fca9"
_CUPY = f"{_GH}/cupy/cupy/blob/3a2a047c25230abb38ebaeb72a335a9f4fa937a8"
_DALI = f"{_GH}/NVIDIA/DALI/blob/main"
_FAIRSEQ = f"{_GH}/facebookresearch/fairseq/blob/main"
_ROCBLAS = f"{_GH}/ROCm/rocBLAS/blob/af09a29ff278bbb9f2b37437037937fd978a3676"
_VLLM = f"{_GH}/vllm-project/vllm/blob/main"
_SGLANG = f"{_GH}/sgl-project/sglang/blob/main"

# fmt: off
FRAMEWORK_SIGNALS: tuple[Signal, ...] = (
    # --- TensorFlow / XLA's device-id utilities ----------------------------------------------------
    # TensorFlow eager's placement: a device name the process does not have. GPU:1 and above is
    # an index past the GPUs the process sees (its CUDA_VISIBLE_DEVICES, renumbered from 0);
    # GPU:0 is a process that sees no GPU at all (a CUDA build the installed libraries do not
    # match: https://github.com/kamalkraj/ALBERT-TF2.0/issues/17)
    _s("tf-unknown-device", r"device:GPU:[1-9]\d* unknown device",
       {"visible_devices_mismatch": 2, "oversubscribed": 1, "per_process_visible_devices": 1},
       "TensorFlow numbers the GPUs a process sees from 0 (https://www.tensorflow.org/guide/gpu): "
       "/device:GPU:N past them is unknown (https://github.com/tensorflow/tensorflow/issues/34718)",
       failure=True, framework="tensorflow"),
    _s("tf-unknown-gpu0", r"device:GPU:0 unknown device",
       {"version_mismatch": 2},
       "TensorFlow registered no GPU: its CUDA/cuDNN build does not match the installed "
       "libraries (https://github.com/kamalkraj/ALBERT-TF2.0/issues/17, "
       "https://www.tensorflow.org/install/source#gpu)",
       failure=True, framework="tensorflow"),
    _s("tf-visible-list-invalid",
       r"'visible_device_list' listed an invalid (?:GPU|Device) id '-?\d+' but visible device "
       r"count is \d+",
       {"visible_devices_mismatch": 4, "per_process_visible_devices": 2,
        "global_rank_as_device": 1},
       f"{_XLA}/xla/tsl/framework/device_id_utils.cc (TensorFlow's gpu_device.cc before it): an "
       "entry of visible_device_list is >= the GPUs the process sees, e.g. str(hvd.local_rank()) "
       "in a process whose CUDA_VISIBLE_DEVICES already holds one GPU",
       failure=True, framework="tensorflow"),
    _s("tf-visible-list-duplicate", r"visible_device_list contained a duplicate entry",
       {"visible_devices_mismatch": 4},
       f"{_XLA}/xla/tsl/framework/device_id_utils.cc: the same GPU listed twice",
       failure=True, framework="tensorflow"),
    # MultiWorkerMirroredStrategy without a TF_CONFIG that lists the workers runs as one worker
    # on each machine: separate jobs (https://www.tensorflow.org/guide/distributed_training,
    # "TF_CONFIG"); a launch of its own on every node (review 26)
    _s("tf-single-worker", r"Single-worker MultiWorkerMirroredStrategy", {"launcher_config": 3},
       "https://www.tensorflow.org/guide/distributed_training (TF_CONFIG; tensorflow/python/"
       "distribute/collective_all_reduce_strategy.py): no cluster in TF_CONFIG",
       framework="tensorflow"),
    _s("tf-visible-after-init", r"(?:Visible|Virtual|Physical) devices cannot be modified after "
       r"being initiali[sz]ed",
       {"visible_devices_mismatch": 4},
       "tensorflow/python/eager/context.py (set_visible_devices / set_logical_device_"
       "configuration, https://www.tensorflow.org/api_docs/python/tf/config/set_visible_devices): "
       "the devices are fixed once the runtime initialised, like CUDA_VISIBLE_DEVICES after "
       "CUDA init", failure=True, framework="tensorflow"),
    _s("tf-gpu-libraries-missing", r"Cannot dlopen some GPU libraries|Skipping registering GPU "
       r"devices",
       {"version_mismatch": 4, "container_mapping": 1},
       "tensorflow/core/common_runtime/gpu/gpu_device.cc (https://www.tensorflow.org/install/pip "
       "lists the CUDA/cuDNN a build needs): the CUDA libraries of the build are missing, the "
       "process runs without a GPU", failure=True, framework="tensorflow"),
    _s("tf-arch-not-built", r"TensorFlow was not built with CUDA kernel binaries compatible with "
       r"compute capability",
       {"version_mismatch": 2.5},
       "tensorflow/core/common_runtime/gpu/gpu_device.cc: no binaries for this GPU's "
       "architecture, kernels are JIT-compiled from PTX (https://www.tensorflow.org/install/"
       "source#gpu)", framework="tensorflow"),
    # --- Lightning ---------------------------------------------------------------------------------
    _s("lightning-gpu-unavailable", r"\bBut your machine only has: \[[\d, ]*\]",
       {"visible_devices_mismatch": 3, "oversubscribed": 2},
       f"{_LIGHTNING}/src/lightning/fabric/utilities/device_parser.py: `You requested gpu: "
       "[...] But your machine only has: [...]`: a GPU index the visible devices do not hold",
       failure=True, framework="lightning"),
    _s("lightning-no-gpu", r"GPUs requested but none are available",
       {"visible_devices_mismatch": 2, "container_mapping": 2, "version_mismatch": 1},
       f"{_LIGHTNING}/src/lightning/fabric/utilities/device_parser.py: GPUs asked for, CUDA sees "
       "none (an empty visible list, a container without GPUs, a CPU build)",
       failure=True, framework="lightning"),
    _s("lightning-accelerator-unavailable", r"`?CUDAAccelerator`? can not run on your system since "
       r"the accelerator is not available|No supported gpu backend found!",
       {"visible_devices_mismatch": 2, "container_mapping": 2, "version_mismatch": 1},
       f"{_LIGHTNING}/src/lightning/pytorch/trainer/connectors/accelerator_connector.py: "
       "accelerator='gpu'/'cuda' but CUDA sees no GPU", failure=True, framework="lightning"),
    _s("lightning-duplicate-ids", r"Device ID's \(GPU\) must be unique",
       {"launcher_config": 4},
       f"{_LIGHTNING}/src/lightning/fabric/utilities/device_parser.py: devices=[0, 0]",
       failure=True, framework="lightning"),
    _s("lightning-notebook-one-gpu", r"(?:Trainer|Fabric) will use only 1 of \d+ GPUs because it "
       r"is running inside an interactive / notebook environment",
       {"launcher_config": 3},
       f"{_LIGHTNING}/src/lightning/pytorch/trainer/connectors/accelerator_connector.py: in a "
       "notebook only one GPU is used", framework="lightning"),
    _s("lightning-slurm-mismatch", r"in Lightning, but the number of (?:tasks per node|nodes) "
       r"configured in SLURM|in your SLURM bash script, but this variable is not supported",
       {"launcher_config": 5},
       f"{_LIGHTNING}/src/lightning/fabric/plugins/environments/slurm.py: Trainer devices / "
       "num_nodes must equal --ntasks-per-node / --nodes (and --ntasks alone is refused)",
       failure=True, framework="lightning"),
    _s("lightning-srun-unused", r"The .?srun.? command is available on your system but is not used",
       {"launcher_config": 1.5},
       f"{_LIGHTNING}/src/lightning/fabric/plugins/environments/slurm.py: a SLURM node, but the "
       "script was not started by srun (one process instead of one per task)",
       framework="lightning"),
    _s("lightning-ds-device-indices", r"The selected device indices \[[\d, ]*\] don't match the "
       r"local rank values of processes",
       {"launcher_config": 4, "visible_devices_mismatch": 1},
       f"{_LIGHTNING}/src/lightning/fabric/strategies/deepspeed.py: DeepSpeed needs device i for "
       "local rank i; other GPUs are selected with CUDA_VISIBLE_DEVICES",
       failure=True, framework="lightning"),
    # --- Ray and the engines on it (vLLM, SGLang) --------------------------------------------------
    _s("ray-raylet-visible", r"Attempting to start (?:raylet|local scheduler) with [\d.]+ \w+, "
       r"but \w*VISIBLE_\w+ contains",
       {"visible_devices_mismatch": 4, "per_process_visible_devices": 2},
       f"{_RAY}/python/ray/_private/resource_spec.py: num_gpus above the GPUs CUDA_VISIBLE_DEVICES "
       "leaves the node (a scheduler's per-task binding, a narrowed list)",
       failure=True, framework="ray"),
    _s("ray-task-unschedulable", r"cannot be scheduled right now\. It requires \{[^}\n]*\bGPU\b",
       {"oversubscribed": 2, "launcher_config": 1},
       "Ray's raylet scheduler (https://github.com/ray-project/ray, src/ray/raylet/scheduling/"
       "cluster_task_manager.cc; cluster_lease_manager.cc in newer releases): a task or actor "
       "waits for GPUs the cluster does not have free", failure=True, framework="ray"),
    _s("vllm-node-no-gpu", r"Current node has no GPU available",
       {"oversubscribed": 1.5, "launcher_config": 1.5, "per_process_visible_devices": 1},
       f"{_VLLM}/vllm/v1/executor/ray_utils.py (initialize_ray_cluster): Ray shows no free GPU on "
       "the driver's node (held by another placement group, or a node started without GPUs)",
       failure=True, framework="vllm"),
    _s("vllm-gpus-exceed-pg", r"The number of required GPUs exceeds the total number of available "
       r"GPUs in the (?:placement group|cluster)",
       {"oversubscribed": 3, "launcher_config": 1.5, "container_mapping": 1},
       f"{_VLLM}/vllm/v1/executor/ray_utils.py: tensor x pipeline parallel size above the GPUs Ray "
       "has (a pod's nvidia.com/gpu limit, a local Ray instance instead of the cluster)",
       failure=True, framework="vllm"),
    # nodes registered under one address (containers on a bridge network each 172.17.0.2, a
    # VLLM_HOST_IP copied to every node): the machines are taken for one (review 26)
    _s("vllm-unique-ip", r"Every node should have a unique IP address",
       {"host_identity": 5, "container_mapping": 1},
       f"{_VLLM}/vllm/executor/ray_utils.py: the Ray nodes of a vLLM cluster must have distinct "
       "IP addresses (VLLM_HOST_IP)", failure=True, framework="vllm"),
    _s("vllm-driver-no-gpu", r"Ray does not allocate any GPUs on the driver node",
       {"host_identity": 3, "launcher_config": 2},
       f"{_VLLM}/vllm/v1/executor/ray_distributed_executor.py: no worker of the placement group "
       "has the driver's IP (the driver's node registered under another address: VLLM_HOST_IP, "
       "multi-NIC hosts)", failure=True, framework="vllm"),
    _s("vllm-world-size-gpus", r"World size \(\d+\) is larger than the number of available GPUs "
       r"\(\d+\)",
       {"oversubscribed": 3, "visible_devices_mismatch": 1.5, "launcher_config": 1.5},
       f"{_VLLM}/vllm/config/parallel.py: tensor x pipeline parallel size above the GPUs visible "
       "on this node (multi-node needs the ray backend or --nnodes)",
       failure=True, framework="vllm"),
    _s("vllm-heads-tp", r"Total number of attention heads \(\d+\) must be divisible by tensor "
       r"parallel size \(\d+\)",
       {},
       f"{_VLLM}/vllm/config/model.py (verify_with_parallel_config): the tensor parallel size "
       "must divide the model's heads — a constraint of the model, whose message names its own "
       "fix; the GPUs are mapped as asked (outside the family: dev thread labelled negative)",
       outside=True, framework="vllm"),
    _s("vllm-memory-profiling", r"Error in memory profiling\.[^\n]{0,200}(?:not properly cleaned "
       r"up|Initial free memory)",
       {"oversubscribed": 3, "no_set_device": 1},
       f"{_VLLM}/vllm/v1/worker/gpu_worker.py: free memory of this GPU changed under the profiler: "
       "another process (another rank or instance) uses the same GPU",
       failure=True, framework="vllm"),
    _s("sglang-memory-unbalanced", r"The memory capacity is unbalanced\. Some GPUs may be occupied "
       r"by other processes",
       {"oversubscribed": 4.5},
       f"{_SGLANG}/python/sglang/srt/model_executor/model_runner.py: one tensor-parallel rank's GPU "
       "has much less free memory than the others: another process holds it",
       failure=True, framework="sglang"),
    # --- Horovod -----------------------------------------------------------------------------------
    _s("horovod-slots", r"Requested more processes \(\d+\) than there are available slots \(\d+\)",
       {"launcher_config": 3, "oversubscribed": 2.5},
       f"{_HOROVOD}/horovod/runner/common/util/hosts.py: horovodrun -np above the hosts' slots",
       failure=True, framework="horovod"),
    _s("horovod-stall", r"by subset of ranks and are waiting for remainder of ranks for more than",
       {"other": 2, "launcher_config": 0.5},
       f"{_HOROVOD}/horovod/common/stall_inspector.cc: ranks submit different tensors, or some "
       "never reach the collective: a stall, not a device choice", failure=True,
       framework="horovod"),
    # --- DeepSpeed / accelerate launchers ----------------------------------------------------------
    _s("ds-hostfile-slot", r"No slot '?[^'\s]{1,20}'? specified on host |Hostname '[^'\n]{1,100}' "
       r"not found in hostfile|Num nodes is >1 but no extra nodes available via hostfile",
       {"launcher_config": 4, "oversubscribed": 1},
       f"{_DEEPSPEED}/deepspeed/launcher/runner.py: --include/--exclude/--num_nodes name GPUs or "
       "hosts the hostfile does not have", failure=True, framework="deepspeed"),
    _s("ds-launcher-options", r"Cannot specify num_nodes/gpus with include/exclude|backend does not "
       r"support (?:limiting num nodes/gpus|worker include/exclusion)|requires same number of "
       r"devices per node",
       {"launcher_config": 4},
       f"{_DEEPSPEED}/deepspeed/launcher/runner.py, multinode_runner.py: launcher options that "
       "cannot go together", failure=True, framework="deepspeed"),
    # deepspeed.init_distributed() found no launcher's variables: the script runs as its own world
    # (`python train.py` on each node), unless an MPI launcher set them (review 26)
    _s("ds-no-launcher", r"Not using the DeepSpeed or dist launchers", {"launcher_config": 3},
       f"{_DEEPSPEED}/deepspeed/comm/comm.py (init_distributed): no RANK/LOCAL_RANK in the "
       "environment", framework="deepspeed"),
    # printed by every single-node run without a hostfile: context; with a multi-node job it is
    # the launcher that never reached the other nodes (explain/combinations.py)
    _s("ds-local-only", r"Unable to find hostfile, will proceed with training with local "
       r"resources only",
       {"launcher_config": 0.5},
       f"{LAUNCHERS} §4 and {_DEEPSPEED}/deepspeed/launcher/runner.py (fetch_hostfile): without a "
       "hostfile the runner starts workers on this machine only", framework="deepspeed"),
    _s("ds-no-gpu", r"Unable to proceed, no GPU resources available",
       {"visible_devices_mismatch": 2.5, "container_mapping": 2, "version_mismatch": 1},
       f"{_DEEPSPEED}/deepspeed/launcher/runner.py: the runner detects no GPU on the node",
       failure=True, framework="deepspeed"),
    _s("accelerate-defaults", r"`?--num_processes`? was set to a value of `?\d+|More than one GPU was "
       r"found, enabling multi-GPU training",
       {"launcher_config": 1},
       f"{_ACCELERATE}/src/accelerate/commands/launch.py: accelerate launch without a config "
       "takes one process per visible GPU", framework="accelerate"),
    _s("accelerate-multi-gpu-one-proc", r"You need to use at least 2 processes to use `?--multi_gpu",
       {"launcher_config": 4},
       f"{_ACCELERATE}/src/accelerate/commands/launch.py", failure=True, framework="accelerate"),
    # a model spread over the GPUs by device_map="auto" (one process's model parallelism) inside
    # a launch of one process per GPU: accelerate refuses it (accelerator.py prepare_model)
    _s("accelerate-device-map-distributed", r"can'?t train a model that has been loaded with "
       r"`?device_map='auto'`? in any distributed mode",
       {"launcher_config": 5},
       f"{_ACCELERATE}/src/accelerate/accelerator.py (prepare_model): device_map='auto' spreads one "
       "model over every GPU a process sees, which a launch of one process per GPU cannot train",
       failure=True, framework="accelerate",
       fix="In a launch of one process per GPU, load the model onto each process's own GPU "
       "(`device_map={'': int(os.environ['LOCAL_RANK'])}`, or no device_map), or run a single "
       "process (`python train.py`, `--num_processes=1`) to keep device_map='auto' spreading it"),
    _s("accelerate-quantized-other-device", r"loaded in (?:8-bit or 4-bit|8-bit|4-bit) precision on "
       r"a different device than the one you'?re training on",
       {"no_set_device": 3, "launcher_config": 2},
       f"{_ACCELERATE}/src/accelerate/accelerator.py (prepare_model): a quantized model must sit on "
       "the process's own device; loaded with device_map='auto' or on cuda:0 it is on another "
       "rank's GPU", failure=True, framework="accelerate",
       fix="Load the quantized model onto each process's own GPU: `device_map={'': "
       "Accelerator().local_process_index}` (or `{'': int(os.environ['LOCAL_RANK'])}`)"),
    # DDP of a module whose parameters lie on several GPUs (device_map, a manual split) given one
    # device id per process
    _s("ddp-multi-device-module", r"device_ids and output_device arguments only work with "
       r"single-device(?:/multiple-device)? GPU modules",
       {"launcher_config": 3, "no_set_device": 1},
       "https://github.com/pytorch/pytorch/blob/main/torch/nn/parallel/distributed.py "
       "(_check_device_ids): DDP with device_ids needs a module on one GPU; a model spread over "
       "GPUs (device_map='auto') is one process's model parallelism", failure=True,
       framework="pytorch",
       fix="Keep each process's model on its own GPU (no device_map='auto' under torchrun or "
       "accelerate; `model.to(local_rank)` before DDP), or wrap a multi-GPU module without "
       "device_ids"),
    # CUDA initialised in a parent that then forks its GPU workers (vLLM's multiproc executor,
    # a DataLoader or mp.Process with the fork start method)
    _s("cuda-fork-reinit", r"Cannot re-initialize CUDA in forked subprocess",
       {"launcher_config": 4},
       "https://pytorch.org/docs/stable/notes/multiprocessing.html (CUDA in multiprocessing: "
       "'the spawn or forkserver start method' is required once CUDA is initialised)",
       failure=True, framework="pytorch",
       fix="Start the GPU workers with the spawn method (`multiprocessing.set_start_method('spawn')`"
       "; vLLM: `VLLM_WORKER_MULTIPROC_METHOD=spawn`), or keep the parent from touching CUDA "
       "before it starts them"),
    # --- JAX ---------------------------------------------------------------------------------------
    _s("jax-distributed-order", r"jax\.distributed\.initialize\(\) must be called before any JAX|"
       r"distributed\.initialize should only be called once|process_id and num_processes must "
       r"be nonnegative, with process_id < num_processes",
       {"launcher_config": 4, "per_process_visible_devices": 1},
       f"{_JAX}/jax/_src/distributed.py: initialize() before any JAX call, once, with a process_id "
       "below num_processes; otherwise each process runs alone on all local GPUs",
       failure=True, framework="jax"),
    _s("jax-cpu-jaxlib", r"An NVIDIA GPU may be present on this machine, but a CUDA-enabled "
       r"jaxlib is not installed",
       {"version_mismatch": 3},
       f"{_JAX}/jax/_src/xla_bridge.py: a CPU-only jaxlib: the process gets no GPU",
       failure=True, framework="jax"),
    _s("jax-cuda-outdated", r"Outdated [\w .-]{1,40} installation found|Version JAX was built "
       r"against: \d+|jaxlib version \S+ is newer than and incompatible with|"
       # older jaxlib: "Found cuDNN version 8600, but JAX was built against version 8800, which
       # is newer"
       r"Found [\w.-]{2,20} version \d+, but JAX was built against version \d+",
       {"version_mismatch": 5},
       f"{_JAX}/jax_plugins/cuda/__init__.py (_check_cuda_versions), jax/_src/lib/__init__.py: "
       "the CUDA libraries or jax are older than the build", failure=True, framework="jax"),
    # --- MPI and Slurm -----------------------------------------------------------------------------
    _s("ompi-bind-overload", r"processes than cpus on a resource",
       {"launcher_config": 2.5, "oversubscribed": 1},
       "Open MPI help text (orte/mca/rmaps/base/help-orte-rmaps-base.txt, "
       "https://docs.open-mpi.org/en/v5.0.x/launching-apps/scheduling.html): --bind-to core with "
       "more ranks than cores on a node", failure=True, framework="mpi"),
    # (a step's refusal; the job's own request refused at submission, "Batch job submission
    # failed: ..." / "Unable to allocate resources: ...", is the scheduler's policy: outside)
    _s("slurm-step-refused", r"(?<!submission failed: )(?<!allocate resources: )(?:Requested nodes "
       r"are busy|Invalid generic resource \(gres\) specification|Requested node configuration "
       r"is not available)",
       {"launcher_config": 3, "oversubscribed": 1.5, "per_process_visible_devices": 1},
       f"{_SLURM}/src/common/slurm_errno.c (ESLURM_NODES_BUSY, ESLURM_INVALID_GRES, "
       "ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE): a step asks for GPUs another step of the job "
       "holds, or a --gres the partition cannot give", failure=True, framework="slurm"),
    _s("slurm-ntasks-ignored", r"can't honou?r --ntasks-per-node set to \d+ which doesn't match "
       r"the requested tasks \d+",
       {"launcher_config": 3},
       "Slurm srun option checks (https://github.com/SchedMD/slurm, src/common/proc_args.c / "
       "src/srun/): --nodes, --ntasks and --ntasks-per-node disagree, srun drops "
       "--ntasks-per-node, so tasks per node differ from the GPUs per node",
       framework="slurm"),
    # Keras 2.x keras/utils/multi_gpu_utils.py (and the tf.keras copy): "To call `multi_gpu_model`
    # with `gpus=8`, we expect the following devices to be available: [...]. However this machine
    # only has: [...]" (text read in public copies of that file; b25 dev)
    # ... where the machine's list names its GPUs /device:GPU:N, a newer TensorFlow's spelling
    # that an older Keras does not compare equal to /gpu:N: the versions, not the count (b21 dev)
    _s("keras-multi-gpu-count", _KERAS_CHECK + r"(?![^\]\n]*/device:GPU:)",
       {"oversubscribed": 4, "visible_devices_mismatch": 1},
       f"{_KERAS}/keras/utils/multi_gpu_utils.py: multi_gpu_model(gpus=N) needs /gpu:0../gpu:N-1 "
       "visible in the process", failure=True, framework="tensorflow"),
    _s("keras-multi-gpu-names", _KERAS_CHECK + r"[^\]\n]*/device:GPU:",
       {"version_mismatch": 4},
       f"{_KERAS}/keras/utils/multi_gpu_utils.py compares device names: TensorFlow's "
       "/device:GPU:N against Keras's expected /gpu:N fails on a Keras older than its TensorFlow",
       failure=True, framework="tensorflow"),
    # --- NVIDIA DALI ---------------------------------------------------------------------------------
    # a reader's shard_id (the rank) at or past num_shards (the world size): the reader was told
    # fewer shards than the job has ranks (num_shards left at 1, or set to one node's GPUs)
    _s("dali-shard-past-shards", r"num_shards needs to be greater than shard_id|"
       r"Assert on \"num_shards_? > shard_id_?\" failed",
       {"launcher_config": 4},
       f"{_DALI}/dali/operators/reader/loader/loader.h: DALI_ENFORCE(num_shards_ > shard_id_); "
       "readers take shard_id=rank, num_shards=world size "
       "(https://docs.nvidia.com/deeplearning/dali/user-guide/docs/operations/"
       "nvidia.dali.fn.readers.file.html)",
       failure=True, framework="dali",
       fix="Give every reader `shard_id=` the process's global rank and `num_shards=` the job's "
       "world size (`torch.distributed.get_rank()` / `get_world_size()`, or RANK / WORLD_SIZE)"),
    # --- fairseq ---------------------------------------------------------------------------------
    # its distributed set-up asked for with a world of one process (a script that sets the world
    # size to the GPU count, 1 on a one-GPU node, and calls the distributed path anyway)
    _s("fairseq-world-of-one", r"Cannot initialize distributed with distributed_world_size=1",
       {"launcher_config": 4},
       f"{_FAIRSEQ}/fairseq/distributed/utils.py distributed_init: raise ValueError(\"Cannot "
       "initialize distributed with distributed_world_size=1\")",
       failure=True, framework="fairseq",
       fix="On one GPU run the single-process path (no distributed options, or "
       "--distributed-world-size 1 without the script's distributed launch); on several, start "
       "as many processes as the world size"),
    # --- PaddlePaddle, MXNet, CuPy -----------------------------------------------------------------
    _s("paddle-gpus-not-visible", r"Can't find your (?:selected_gpus|gpus|devices) \S+ in "
       r"CUDA_VISIBLE_DEVICES\[",
       {"visible_devices_mismatch": 5},
       f"{_PADDLE}/python/paddle/distributed/fleet/launch_utils.py: --gpus/--selected_gpus must "
       "name entries of CUDA_VISIBLE_DEVICES", failure=True, framework="paddle"),
    _s("mxnet-cpu-build", r"Compile with USE_CUDA=1 to enable GPU usage",
       {"version_mismatch": 4},
       f"{_MXNET}/src/storage/storage.cc: a CPU-only MXNet build asked for a GPU context",
       failure=True, framework="mxnet"),
    _s("mxnet-no-gpu", r"GPU usage requires at least 1 GPU",
       {"visible_devices_mismatch": 2, "container_mapping": 2},
       f"{_MXNET}/src/storage/storage.cc: a GPU context but no GPU visible",
       failure=True, framework="mxnet"),
    _s("cupy-multiple-packages", r"CuPy may not function correctly because multiple CuPy packages "
       r"are installed",
       {"version_mismatch": 3},
       f"{_CUPY}/cupy/_environment.py: two CuPy wheels built for different CUDA versions",
       framework="cupy"),
    # --- TensorRT / TensorRT-LLM, ROCm, NVSHMEM ----------------------------------------------------
    _s("trt-engine-incompatible", r"engine plan file is generated on an incompatible device, "
       r"expecting compute [\d.]+ got compute [\d.]+|engine plan file is not compatible with this "
       r"version of TensorRT",
       {"version_mismatch": 5},
       "https://docs.nvidia.com/deeplearning/tensorrt/latest/reference/troubleshooting-error-"
       "messages.html: an engine is built for one GPU architecture and TensorRT version",
       failure=True, framework="tensorrt"),
    _s("trtllm-world-size", r"Engine world size \(\d+\) != Runtime world size \(\d+\)",
       {"launcher_config": 5},
       "TensorRT-LLM examples (https://github.com/NVIDIA/TensorRT-LLM/blob/main/examples/run.py, "
       "older releases): the engine's tp x pp must equal the MPI world size (mpirun -n)",
       failure=True, framework="tensorrt-llm"),
    _s("rocblas-arch", r"rocBLAS error: Cannot read [^\n]{0,200}TensileLibrary",
       {"version_mismatch": 4},
       f"{_ROCBLAS}/library/src/tensile_host.cpp: rocBLAS ships no kernels for this gfx "
       "architecture (or HSA_OVERRIDE_GFX_VERSION names another)", failure=True,
       framework="rocm"),
    _s("rocm-smi-no-driver", r"Driver not initiali[sz]ed \(amdgpu not found in modules\)|Unable "
       r"to detect any GPU devices, check amdgpu version and module status",
       {"container_mapping": 2, "visible_devices_mismatch": 0.5},
       "ROCm SMI (https://github.com/ROCm/rocm_smi_lib, python_smi_tools/rocm_smi.py) and amd-smi: "
       "no amdgpu driver seen where the tool runs (a container without /dev/kfd and /dev/dri, a "
       "node without the module)", framework="rocm"),
    _s("nvshmem-init-failed", r"nvshmem detect topo failed|nvshmem initialization failed|Unable to "
       r"initialize any transports",
       {"other": 2, "container_mapping": 1},
       "NVSHMEM host init (https://github.com/NVIDIA/nvshmem, src/host/init/init.cu, "
       "src/host/transport/transport.cpp): no transport between the PEs' GPUs (peer access, "
       "IBGDA/RDMA inside the container)", failure=True, framework="nvshmem"),
)
# fmt: on

# Lowercase substrings every match contains (rankmap.explain.catalogue.KEYS): long phrases of the
# messages, none of which occurs in routine NCCL INFO or Init lines.
FRAMEWORK_KEYS: dict[str, tuple[str, ...]] = {
    "accelerate-device-map-distributed": ("in any distributed mode",),
    "accelerate-quantized-other-device": ("on a different device than",),
    "ddp-multi-device-module": ("output_device arguments only work",),
    "cuda-fork-reinit": ("re-initialize cuda in forked",),
    "tf-unknown-device": ("unknown device",),
    "tf-unknown-gpu0": ("unknown device",),
    "tf-visible-list-invalid": ("listed an invalid",),
    "tf-visible-list-duplicate": ("contained a duplicate entry",),
    "tf-visible-after-init": ("devices cannot be modified after",),
    "tf-gpu-libraries-missing": ("cannot dlopen some gpu", "skipping registering gpu"),
    "tf-arch-not-built": ("not built with cuda kernel binaries",),
    "lightning-gpu-unavailable": ("but your machine only has",),
    "lightning-no-gpu": ("gpus requested but none",),
    "lightning-accelerator-unavailable": ("can not run on your system", "no supported gpu backend"),
    "lightning-duplicate-ids": ("must be unique",),
    "lightning-notebook-one-gpu": ("notebook environment",),
    "lightning-slurm-mismatch": ("configured in slurm", "in your slurm bash script"),
    "lightning-srun-unused": ("command is available on your system",),
    "lightning-ds-device-indices": ("selected device indices",),
    "ray-raylet-visible": ("attempting to start",),
    "ray-task-unschedulable": ("cannot be scheduled right now",),
    "vllm-node-no-gpu": ("current node has no gpu",),
    "vllm-gpus-exceed-pg": ("number of required gpus exceeds",),
    "vllm-driver-no-gpu": ("does not allocate any gpus",),
    "vllm-unique-ip": ("unique ip address",),
    "tf-single-worker": ("single-worker multiworkermirroredstrategy",),
    "ds-no-launcher": ("not using the deepspeed or dist launchers",),
    "ds-local-only": ("unable to find hostfile",),
    "vllm-world-size-gpus": ("is larger than the number of available gpus",),
    "vllm-heads-tp": ("must be divisible by tensor parallel size",),
    "vllm-memory-profiling": ("error in memory profiling",),
    "sglang-memory-unbalanced": ("memory capacity is unbalanced",),
    "horovod-slots": ("than there are available slots",),
    "horovod-stall": ("waiting for remainder of ranks",),
    "ds-hostfile-slot": ("specified on host", "not found in hostfile", "no extra nodes available"),
    "ds-launcher-options": (
        "cannot specify num_nodes",
        "backend does not support",
        "same number of devices per node",
    ),
    "ds-no-gpu": ("no gpu resources available",),
    "accelerate-defaults": ("was set to a value of", "enabling multi-gpu training"),
    "accelerate-multi-gpu-one-proc": ("at least 2 processes",),
    "jax-distributed-order": (
        "must be called before any jax",
        "should only be called once",
        "process_id < num_processes",
    ),
    "jax-cpu-jaxlib": ("cuda-enabled jaxlib",),
    "jax-cuda-outdated": (
        "installation found",
        "version jax was built against",
        "jaxlib version",
        "but jax was built against",
    ),
    "ompi-bind-overload": ("processes than cpus on a resource",),
    "slurm-step-refused": (
        "requested nodes are busy",
        "invalid generic resource",
        "requested node configuration",
    ),
    "slurm-ntasks-ignored": ("--ntasks-per-node set to",),
    "dali-shard-past-shards": ("shard_id",),
    "fairseq-world-of-one": ("distributed_world_size=1",),
    "paddle-gpus-not-visible": ("in cuda_visible_devices[",),
    "mxnet-cpu-build": ("use_cuda=1",),
    "mxnet-no-gpu": ("requires at least 1 gpu",),
    "keras-multi-gpu-count": ("multi_gpu_model",),
    "keras-multi-gpu-names": ("multi_gpu_model",),
    "cupy-multiple-packages": ("multiple cupy packages",),
    "trt-engine-incompatible": ("engine plan file",),
    "trtllm-world-size": ("runtime world size",),
    "rocblas-arch": ("rocblas error",),
    "rocm-smi-no-driver": ("amdgpu not found in modules", "check amdgpu version"),
    "nvshmem-init-failed": (
        "nvshmem detect topo failed",
        "nvshmem initialization failed",
        "unable to initialize any transports",
    ),
}
