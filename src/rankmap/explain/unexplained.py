"""What the input shows that no cause of the mapping explains, said as such: a failure outside
the family beside "nothing recognised" or beside a clean rank map (its own fix), and a failure
reported on GPUs that no rule reads (a weak ``other`` guess with the checks that show the
mapping, instead of "nothing recognised")."""

from __future__ import annotations

from dataclasses import replace

from rankmap.explain.docfacts import DocFacts, Hit
from rankmap.findings import Finding, Severity, finding


def outside_named(base: list[Finding], doc: DocFacts | None) -> list[Finding]:
    """A lone "nothing recognised" beside a failure the input shows outside the mapping (a
    firewall, a security group, an OOM told in prose) says which: that failure is the one to fix,
    not a reason to re-run with NCCL_DEBUG (review 64)."""
    if doc is None or len(base) != 1 or base[0].code != "RM003" or base[0].evidence:
        return base
    if not (doc.failed or any(h.signal.failure for h in doc.hits.values())):
        return base  # a question about a setting ("the security group allows all"): no failure
    hit = outside_hit(doc)
    if hit is None:
        return base
    return [
        replace(
            base[0],
            title="No GPU-mapping problem recognised in the input",
            detail=f"{base[0].detail} The input shows a failure outside the GPU mapping: "
            f"`{hit.excerpt}` ({hit.signal.fact}).",
            fix=hit.signal.fix
            or "Fix the failure quoted; nothing in the input points at the GPU mapping.",
            evidence=(f"{hit.where}: {hit.excerpt}",),
        )
    ]


def outside_hit(doc: DocFacts, *, printed: bool = False) -> Hit | None:
    """The first failure outside the mapping the input shows (``printed``: not in the writer's
    sentences); a model "too big" is a setting told, not a failure shown."""
    hits = doc.outside_hits(printed=printed)
    return next((h for h in hits if h.signal.id != "outside-model-size"), None)


def outside_beside_map(base: list[Finding], doc: DocFacts) -> list[Finding]:
    """The rank map (RM042, nothing to fix) beside a failure outside the mapping the job printed
    and the map does not already name (an IB memlock limit; the workers' own exception is named
    by engine._rankmap_finding): the map names it and its fix, as for the workers' exception
    (review 75)."""
    lead = base[0]
    if lead.evidence or any(f.severity is not Severity.INFO for f in base):
        return base
    hit = outside_hit(doc, printed=True)
    if hit is None:
        return base
    named = replace(
        lead,
        detail=f"{lead.detail} The job failed outside the GPU mapping: `{hit.excerpt}` "
        f"({hit.signal.fact}).".lstrip(),
        fix=hit.signal.fix or "Fix the failure quoted; the rank map shows no GPU problem.",
        evidence=(f"{hit.where}: {hit.excerpt}",),
    )
    return [named, *base[1:]]


def gpu_failure_unplaced(out: list[Finding], doc: DocFacts | None) -> list[Finding]:
    """A lone "nothing recognised" beside a failure the writer reports on GPUs (a traceback, an
    error line, "it does not work", and GPUs, CUDA or NCCL named) and no failure outside the
    family: the input is a report of this family whose cause no rule reads. What the corpora's
    unread reports most often turned out to be is a cause outside the mapping categories (b21-b29
    dev: 14 of 41), so that is the guess, at info, with the checks that would show a mapping
    cause instead."""
    if len(out) != 1 or out[0].code != "RM003" or out[0].evidence or doc is None:
        return out
    if not (doc.failed and doc.names_gpus) or doc.shows_outside():
        return out
    failures = [h for h in doc.hits.values() if h.signal.failure]
    evidence = (f"{failures[0].where}: {failures[0].excerpt}",) if failures else ()
    return [
        finding(
            "RM045",
            "A GPU failure with no sign of a GPU-mapping cause: nothing in the input ties it to "
            "which process uses which GPU",
            detail="Weak evidence: the input reports a failure on GPUs, and no launcher, "
            "visible-devices list, device selection, container, MIG or host setting in it points "
            "at a mapping cause; a cause outside the mapping categories is the likeliest then, "
            f"not a certain one. What would decide: {GPU_MAP_CHECKS}.",
            evidence=evidence,
            fix="Run the checks named and give their output, the launch command (--launch) and the "
            "script (--script) to `rankmap explain` again; if every process is on its own GPU, "
            "the failure lies outside the GPU mapping.",
            severity=Severity.INFO,
        )
    ]


# The checks that show the mapping of a job whose failure names no cause.
GPU_MAP_CHECKS = (
    "`nvidia-smi` while the job runs (which processes hold memory on which GPU), and in every "
    "process `print(os.environ.get('LOCAL_RANK'), os.environ.get('CUDA_VISIBLE_DEVICES'), "
    "torch.cuda.device_count(), torch.cuda.current_device())`; `dmesg | grep -i xid` for a GPU "
    "fault the driver logged"
)
