"""Issue templates: a checklist item that asks on a condition ("If your question is about
docker, did you read ...") names what might apply to any report, not what happened (shapes
written here)."""

from __future__ import annotations

from paste_findings import findings_of

CHECKLIST = (
    "**Checklist:**\n"
    "1. Did you search issues to find if somebody asked this question before?\n"
    "2. If your question is about hang, did you read [this doc](https://example.org/running)?\n"
    "3. If your question is about docker, did you read [this doc](https://example.org/docker)?\n"
)


def test_conditional_checklist_items_are_no_evidence() -> None:
    text = "# Question about memory\n\n" + CHECKLIST + "\n**Your question:**\nIs 13G free normal?\n"
    assert all(f.category != "container_mapping" for f in findings_of(text))
    assert not any("hang" in f.detail and f.severity.value != "info" for f in findings_of(text))


def test_the_report_after_the_checklist_is_still_read() -> None:
    text = (
        "# Extra processes and extra gpu memory on rank=0\n\n"
        + CHECKLIST
        + "\n**Your question:**\nWith horovodrun -np 8 there are several processes on the gpu 0 "
        "and they take a lot of its memory.\n"
    )
    assert findings_of(text)[0].category == "no_set_device"


def test_the_reporters_own_conditional_question_is_read() -> None:
    text = (
        "# OOM on GPU 0\n\nWhen you launch with 4 processes, did you notice that all processes "
        "use GPU 0? They all run on GPU 0 for me and the job fails with an error.\n"
    )
    assert findings_of(text)[0].category == "no_set_device"
