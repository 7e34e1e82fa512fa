"""Taint models of device selection, as data: sources, sinks and frameworks (Pysa/CodeQL style).

The analysis in :mod:`rankmap.check.script_flow` knows no library by name; it reads these tables.
Each framework entry names the line of the framework's own source it rests on (the repository,
file and the statement), so a reader can check the model against the code it describes.
"""

from __future__ import annotations

from dataclasses import dataclass

# Environment variables that hold a rank or one node's process count: one table for every
# command (reference/launchers.md §9), re-exported as sources of the analysis.
from rankmap.launch_vars import GLOBAL_RANK_VARS as GLOBAL_RANK_VARS
from rankmap.launch_vars import LOCAL_RANK_VARS as LOCAL_RANK_VARS
from rankmap.launch_vars import LOCAL_SIZE_VARS as LOCAL_SIZE_VARS

# --- sources -------------------------------------------------------------------------------
# Argparse spellings of a local-rank argument (launchers.md §2, §4).
LOCAL_RANK_ARGS = ("local_rank", "local-rank")

# Calls whose result is a rank: dotted-name tail -> (scope, env variable it reads or "").
# ``by_process``: the runtime knows the rank itself (no variable of ours to read).
RANK_CALLS: dict[str, tuple[str, bool]] = {
    "get_rank": ("global", True),  # torch.distributed.get_rank()
    "get_global_rank": ("global", True),
    "get_world_rank": ("global", True),  # ray.train.get_context().get_world_rank()
    "get_local_rank": ("local", True),  # torch.distributed / composer / detectron2 comm helpers
    "get_node_local_rank": ("local", False),  # torch.distributed: LOCAL_RANK env
    "local_rank": ("local", True),  # hvd.local_rank(), smp.local_rank()
    "rank": ("global", True),  # hvd.rank()
}
# Objects of these names hold a rank or device as attributes (accelerate, Fabric, Trainer).
RANK_ATTRS: dict[str, str] = {
    "local_process_index": "local",  # accelerate PartialState / Accelerator
    "process_index": "global",
    "local_rank": "local",  # Fabric / Trainer .local_rank (when the object is a framework's)
    "global_rank": "global",
}

# --- sinks ---------------------------------------------------------------------------------
SET_DEVICE = (
    "set_device",
    "set_device_index",
)  # torch.cuda.set_device, torch.accelerator.set_device_index
PROCESS_GROUP_INIT = ("init_process_group",)
WRAPPERS_DEVICE_IDS = ("DistributedDataParallel", "DDP", "FullyShardedDataParallel", "FSDP")
TENSOR_MOVES = ("to", "cuda")
CVD = "CUDA_VISIBLE_DEVICES"

# Calls that show the script uses CUDA (besides "cuda" strings and the sinks above).
CUDA_USE_ATTRS = ("cuda", "set_device", "current_device")
TORCH_MODULES = (
    "torch",
    "accelerate",
    "transformers",
    "trl",
    "lightning",
    "pytorch_lightning",
    "deepspeed",
    "colossalai",
    "mmengine",
    "mmcv",
    "composer",
    "torchtune",
    "megatron",
    "fairseq",
    "detectron2",
    "horovod",
    "ray",
    "timm",
)


@dataclass(frozen=True)
class FrameworkModel:
    """A framework call that selects the device of each process itself.

    ``scope``/``env_vars``/``modulo`` describe the index it picks in the terms the simulator
    uses (:class:`rankmap.check.script_scan.DeviceSelection`); ``by_process`` means the framework
    derives the index from its own runtime (its launcher or cluster environment), so the index is
    the process's local rank whatever variables the launcher sets.
    """

    name: str
    calls: tuple[str, ...]  # dotted-name tails that trigger the model
    modules: tuple[str, ...]  # the call counts only when one of these is imported
    scope: str  # local | global
    env_vars: tuple[str, ...]
    modulo: bool
    by_process: bool
    source: str  # repository, file and the statement the model rests on
    note: str = ""


FRAMEWORKS: tuple[FrameworkModel, ...] = (
    FrameworkModel(
        "accelerate",
        ("Accelerator", "PartialState", "AcceleratorState"),
        ("accelerate",),
        "local",
        ("LOCAL_RANK",),
        True,
        False,
        "huggingface/accelerate src/accelerate/state.py PartialState.set_device: "
        "`self.device = torch.device(device, self.local_process_index % device_count)` "
        "(PR #2916, v0.33.0; reference/launchers.md §3)",
        "accelerate >= 0.33 assumed (older versions: cuda:local_process_index).",
    ),
    FrameworkModel(
        "transformers Trainer",
        (
            "Trainer",
            "TrainingArguments",
            "Seq2SeqTrainer",
            "SFTTrainer",
            "DPOTrainer",
            "GRPOTrainer",
            "PPOTrainer",
            "RewardTrainer",
            "KTOTrainer",
            "ORPOTrainer",
            "SFTConfig",
            "DPOConfig",
            "GRPOConfig",
            "Seq2SeqTrainingArguments",
        ),
        ("transformers", "trl"),
        "local",
        ("LOCAL_RANK",),
        True,
        False,
        "huggingface/transformers src/transformers/training_args.py _setup_devices: "
        "`self.distributed_state = PartialState(**accelerator_state_kwargs)` "
        "(the device is accelerate's, see the accelerate entry)",
        "transformers >= 4.29 (device from accelerate's PartialState) assumed.",
    ),
    FrameworkModel(
        "Lightning",
        ("Trainer", "Fabric", "LightningLite", "LightningCLI"),
        ("lightning", "pytorch_lightning", "lightning_fabric"),
        "local",
        ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"),
        False,
        True,
        "Lightning-AI/pytorch-lightning src/lightning/fabric/accelerators/cuda.py "
        "CUDAAccelerator.setup_device: `torch.cuda.set_device(device)` with "
        "`root_device = parallel_devices[local_rank]` (reference/launchers.md §7)",
    ),
    FrameworkModel(
        "DeepSpeed",
        ("initialize", "init_distributed"),
        ("deepspeed",),
        "local",
        ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"),
        False,
        True,
        "microsoft/DeepSpeed deepspeed/runtime/engine.py DeepSpeedEngine._set_distributed_vars: "
        "`get_accelerator().set_device(device_rank)` with the LOCAL_RANK of the launcher; "
        "init_distributed, without RANK/WORLD_SIZE/MASTER_*/LOCAL_RANK, runs mpi_discovery "
        "(deepspeed/comm/comm.py: rank and size from mpi4py's COMM_WORLD, the local rank counted "
        "among the processes of one host, exported as LOCAL_RANK; reference/launchers.md §4), so "
        "under any MPI launcher the index is the process's local rank (review 30: srun)",
    ),
    FrameworkModel(
        "Ray Train",
        ("prepare_model", "get_device", "TorchTrainer"),
        ("ray",),
        "local",
        (),
        False,
        True,
        "ray-project/ray python/ray/train/torch/train_loop_utils.py get_device / prepare_model: "
        "the device is the worker's own GPU from `ray.get_gpu_ids()` inside its "
        "CUDA_VISIBLE_DEVICES (reference/launchers.md §8)",
    ),
    FrameworkModel(
        "DeviceMesh",
        ("init_device_mesh",),
        ("torch",),
        "local",
        ("LOCAL_RANK",),
        True,
        False,
        "pytorch/pytorch torch/distributed/device_mesh.py _setup_world_group_and_device: "
        '`if "LOCAL_RANK" in os.environ: ... device_handle.set_device(local_rank)`, else '
        "`get_rank() % num_devices_per_host`",
    ),
    FrameworkModel(
        "ColossalAI",
        ("launch_from_torch", "launch_from_slurm", "launch_from_openmpi"),
        ("colossalai",),
        "local",
        ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"),
        False,
        False,
        "hpcaitech/ColossalAI colossalai/initialize.py launch_from_torch: "
        '`local_rank = int(os.environ["LOCAL_RANK"])` passed to `launch(...)`, which sets '
        "the device of local_rank (unverified line)",
    ),
    FrameworkModel(
        "mmengine/mmcv",
        ("init_dist", "Runner"),
        ("mmengine", "mmcv"),
        "local",
        ("LOCAL_RANK",),
        False,
        False,
        "open-mmlab/mmengine mmengine/dist/utils.py _init_dist_pytorch: "
        "`local_rank = int(os.environ['LOCAL_RANK'])` then `torch.cuda.set_device(local_rank)` "
        "(old mmcv: `torch.cuda.set_device(rank % num_gpus)`); mmengine/runner/runner.py "
        "Runner.setup_env calls `init_dist(self.launcher, ...)` unless launcher is 'none' "
        "(unverified line)",
    ),
    FrameworkModel(
        "composer",
        ("Trainer", "DeviceGPU"),
        ("composer",),
        "local",
        ("LOCAL_RANK",),
        False,
        True,
        "mosaicml/composer composer/devices/device_gpu.py DeviceGPU.__init__: "
        "`torch.cuda.set_device(self._device)` with `cuda:{dist.get_local_rank()}` "
        "(unverified line)",
    ),
    FrameworkModel(
        "torchtune",
        ("get_device", "init_distributed"),
        ("torchtune",),
        "local",
        ("LOCAL_RANK",),
        False,
        False,
        "pytorch/torchtune torchtune/utils/_device.py get_device: "
        '`device = torch.device(f"{device_type}:{local_rank}")` with LOCAL_RANK, then '
        "`torch.cuda.set_device(device)` (unverified line)",
    ),
    FrameworkModel(
        "Megatron",
        ("initialize_megatron", "_initialize_distributed"),
        ("megatron",),
        "global",
        ("RANK",),
        True,
        False,
        "NVIDIA/Megatron-LM megatron/training/initialize.py _initialize_distributed: "
        "`device = args.rank % device_count` ... `torch.cuda.set_device(device)`",
    ),
    FrameworkModel(
        "fairseq",
        ("call_main", "distributed_main", "distributed_init"),
        ("fairseq", "fairseq_cli"),
        "local",
        ("LOCAL_RANK", "SLURM_LOCALID"),
        False,
        True,
        "facebookresearch/fairseq fairseq_cli/train.py main: "
        "`torch.cuda.set_device(cfg.distributed_training.device_id)` (device_id = LOCAL_RANK "
        "or rank % device_count in fairseq/distributed/utils.py)",
    ),
    FrameworkModel(
        "detectron2",
        ("launch",),
        ("detectron2",),
        "local",
        (),
        False,
        True,
        "facebookresearch/detectron2 detectron2/engine/launch.py _distributed_worker: "
        "`torch.cuda.set_device(local_rank)` for the mp.start_processes index",
    ),
)


def framework_for(call_tail: str, imported: frozenset[str]) -> FrameworkModel | None:
    """The framework model a call of ``call_tail`` triggers given the imported top modules."""
    for model in FRAMEWORKS:
        if call_tail in model.calls and any(m in imported for m in model.modules):
            return model
    return None
