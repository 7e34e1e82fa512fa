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
