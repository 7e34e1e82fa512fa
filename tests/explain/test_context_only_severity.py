"""Failure words next to a setting that NCCL supports (a container, a launcher option, a
visible-devices list), with no failure of this family in the input: the best guess is a possible
cause at info — an alarm needs positive evidence. Settings NCCL does not support (MIG slices
shared by ranks, one host identity) and a failure of the family keep their warning. Shapes
written here."""

from __future__ import annotations

from paste_findings import findings_of


def test_a_question_about_a_container_with_failure_words_is_info() -> None:
    text = (
        "# nvidia-smi inside the container shows nothing\n\n"
        "I start the container with docker run --gpus all. Inside it nvidia-smi lists no "
        "processes, but on the host it shows my python process. How can I see them? "
        "Is this an issue of the image?\n"
    )
    first = findings_of(text)[0]
    assert first.category == "container_mapping"
    assert first.severity.value == "info"


def test_the_same_container_with_a_failure_of_the_family_is_a_warning() -> None:
    text = (
        "# training fails inside the container\n\n"
        "I start the container with docker run --gpus all and torchrun in it; the job fails:\n\n"
        "```\nRuntimeError: CUDA error: invalid device ordinal\n```\n"
    )
    first = findings_of(text)[0]
    assert first.category != "other"
    assert first.severity.value in ("warning", "error")


def test_one_program_in_a_container_failing_so_is_an_error_of_its_own_index() -> None:
    # no launcher, no ranks: one program's index past the GPUs it sees (RM046), an error
    text = (
        "# training fails inside the container\n\n"
        "I start the container with docker run --gpus all and the job fails:\n\n"
        "```\nRuntimeError: CUDA error: invalid device ordinal\n```\n"
    )
    first = findings_of(text)[0]
    assert (first.code, first.severity.value) == ("RM046", "error")


def test_mig_next_to_failure_words_keeps_its_warning() -> None:
    text = (
        "# job does not work on our A100s\n\n"
        "We split each A100 into MIG 3g.40gb slices and gave two ranks two slices of one GPU; "
        "the job does not work.\n"
    )
    first = findings_of(text)[0]
    assert first.category == "mig"
    assert first.severity.value in ("warning", "error")
