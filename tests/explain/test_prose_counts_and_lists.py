"""Prose that tells the cause: a visible-devices list the scheduler sets (Slurm, jsrun, flux,
LSF) and the job then gets wrong, and more ranks than GPUs told as a count (shapes written here;
the corpus boundary: benchmarks/corpora/README.md, per_process vs visible_devices_mismatch)."""

from __future__ import annotations

from paste_findings import findings_of


def test_every_task_given_the_same_list_by_the_scheduler_is_per_process() -> None:
    text = (
        "# All tasks share one GPU on our cluster\n\n"
        "The batch system launches 4 tasks per node and sets CUDA_VISIBLE_DEVICES for each of "
        "them.\nEvery task got export CUDA_VISIBLE_DEVICES=0, and as a result all 4 tasks were "
        "running on GPU 0.\n"
    )
    assert findings_of(text)[0].category == "per_process_visible_devices"


def test_the_same_words_without_a_scheduler_are_the_users_list() -> None:
    text = (
        "# All processes share one GPU\n\n"
        "I export CUDA_VISIBLE_DEVICES=0 before the launch, and as a result all 4 processes "
        "were running on GPU 0.\n"
    )
    assert findings_of(text)[0].category == "visible_devices_mismatch"


def test_code_that_overwrites_the_schedulers_list_is_per_process() -> None:
    text = (
        "# Breaks GPU assignment under Slurm\n\n"
        "Slurm assigns GPUs 4,5,6,7 through CUDA_VISIBLE_DEVICES, but the package overwrites "
        "CUDA_VISIBLE_DEVICES with 0,1,2,3 at import, so jobs collide with other users' jobs.\n"
    )
    first = findings_of(text)[0]
    assert first.category == "per_process_visible_devices", first


def test_more_ranks_than_gpus_told_as_a_count_is_oversubscription() -> None:
    for text in (
        "# Deadlock in CI\n\nThe test starts 2 MPI processes but the runner has only 1 GPU, and "
        "both end up on it; the job hangs.\n",
        "# Hang with MPI\n\nOur run breaks the rule that ranks must match the GPUs (ranks != GPUs): "
        "with 4 ranks and 1 GPU the run hangs.\n",
    ):
        assert findings_of(text)[0].category == "oversubscribed", text


def test_one_gpu_used_and_a_gpu_per_process_are_no_count_of_gpus() -> None:
    for text in (
        "# Slow\n\nI launch 4 processes but only 1 GPU is used, the other GPUs stay idle.\n",
        "# Setup\n\nWe run 8 processes and one GPU per process, and it fails at the end.\n",
    ):
        assert findings_of(text)[0].category != "oversubscribed", text


def test_an_lr_scheduler_is_no_job_scheduler() -> None:
    text = (
        "# Crash with many GPUs\n\nThe LR scheduler reads CUDA_VISIBLE_DEVICES=0,1 to scale the "
        "rate, and all 4 processes were running on GPU 0 with an error.\n"
    )
    assert findings_of(text)[0].category != "per_process_visible_devices"
