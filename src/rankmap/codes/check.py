"""Finding codes owned by `rankmap check` (sub-range x20-x39 of each category).

Shared causes live in :mod:`rankmap.codes.core`; use those first.
"""

from __future__ import annotations

from rankmap.codes.registry import define

define(
    "RM920",
    "launcher_config",
    "error",
    "The launcher waits for a different number of nodes than the job has",
    cause="`--nnodes` (torchrun), `num_machines` (accelerate) or `--num_nodes` (DeepSpeed) does "
    "not match the number of nodes that start the command: the rendezvous never completes.",
    fix="Make the node count of the launcher equal to the nodes of the allocation.",
    example="`torchrun --nnodes 4 ...` started on 2 nodes.",
)
define(
    "RM921",
    "launcher_config",
    "error",
    "DeepSpeed rejects the resource selection",
    cause="`--include`/`--exclude` or CUDA_VISIBLE_DEVICES (translated to `--include`) names a "
    "host or slot the hostfile does not have, or include/exclude are combined with "
    "`--num_gpus`/`--num_nodes`.",
    fix="Name only slots that exist (`--include localhost:0,1`), or drop the conflicting option.",
    example="`ValueError: No slot '7' specified on host 'localhost'`.",
)
define(
    "RM922",
    "launcher_config",
    "warning",
    "The launcher ignores CUDA_VISIBLE_DEVICES",
    cause="DeepSpeed translates CUDA_VISIBLE_DEVICES into `--include` only when no hostfile, "
    "`--include`/`--exclude`, `--num_gpus` or `--num_nodes` is given; otherwise it uses its own "
    "selection and the GPUs you meant are not the ones used.",
    fix="Select GPUs with `--include localhost:0,1` instead, or drop `--num_gpus`.",
    example="`CUDA_VISIBLE_DEVICES=2,3 deepspeed --num_gpus 2 train.py` uses GPUs 0 and 1.",
)
define(
    "RM923",
    "launcher_config",
    "error",
    "accelerate refuses the configuration",
    cause="accelerate's own validation stops the launch, e.g. fewer than two `gpu_ids` for a "
    "multi-GPU run.",
    fix="Follow accelerate's message: list at least two `gpu_ids` or use `gpu_ids: all`.",
    example="`Less than two GPU ids were configured and tried to run on multiple GPUs.`",
)
define(
    "RM030",
    "other",
    "info",
    "Part of the device selection could not be followed",
    cause="The value that reaches `set_device`/`torch.device`/DDP comes from code the static "
    "analysis does not follow (a call into an installed package, a config file, a loop, a "
    "module outside the script's directory), or no branch of the selection applies under this "
    "launcher. The placement of those ranks is then not simulated, or the torchrun convention "
    "(cuda:LOCAL_RANK) is assumed; no error is raised on it.",
    fix="Check the named lines by hand, or run the job under `rankmap run` to see the real map.",
    example="`train.py:40: `get_gpu(cfg)` not followed`.",
)
define(
    "RM031",
    "other",
    "info",
    "No GPU use found: no GPU placement is checked",
    cause="The files read neither use CUDA nor initialise NCCL (a CPU-only `gloo` job), or the "
    "script is not a PyTorch program; no two ranks can collide on a GPU.",
    fix="Nothing to do; pass `--script` if the real entry script is another file.",
    example="`train.py: init_process_group('gloo') and no CUDA use`.",
)
define(
    "RM032",
    "other",
    "info",
    "A launch value is computed when the job runs: a stand-in is assumed",
    cause="torchrun's `--nproc-per-node`, `--node-rank` or `--nnodes` holds a value the launch "
    "script computes when it runs (`$(nvidia-smi -L | wc -l)`, a function's argument, a sourced "
    "file, a pod's `${RANK}`), which a check without running it cannot know. The map assumes one "
    "process per visible GPU (torchrun's `gpu`), a node rank of its own for every node and the "
    "nodes given with `--nodes`; nothing is flagged on the assumption alone.",
    fix="Pass the real values to check them: `--env NGPU=8`.",
    example="`torchrun --nproc_per_node $NGPU train.py` with `NGPU=$(nvidia-smi -L | wc -l)`.",
)
define(
    "RM330",
    "no_set_device",
    "warning",
    "Each rank reaches its own GPU only through tensors: the current device stays cuda:0",
    cause="The script moves its model to `cuda:{local_rank}` (`.to(...)`, DDP `device_ids=[...]`, "
    "`init_process_group(device_id=...)`) but never calls `torch.cuda.set_device`, so every "
    "process's current device is still its GPU 0: `barrier()`, object collectives, `.cuda()` "
    "without an index and CUDA-aware libraries create an extra context (~500 MiB) on GPU 0 of each "
    "rank, and NCCL may guess the wrong GPU for a barrier (reference/pytorch_nccl.md §1-2).",
    fix="Add `torch.cuda.set_device(local_rank)` before `init_process_group`.",
    example="`model.to(f'cuda:{local_rank}')` and `DDP(model, device_ids=[local_rank])`, no set_device.",
)
