"""``rankmap explain``: from what a failed job printed to the cause, the ranks, the GPU and the fix.

:func:`explain_files` streams each input through the anchor scanner
(:mod:`rankmap.explain.reader`), recognises events (:mod:`rankmap.explain.patterns`), rebuilds the
rank map from NCCL Init lines, combines it with the context the user gave (launch command through
``check``'s simulation, ``--env``, ``--machine``, ``--script``) and returns a :class:`Report`
whose first finding is the best-supported cause.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from rankmap.explain import named
from rankmap.explain.collect import Evidence
from rankmap.explain.context import Context, gpu_for_bus, launch_facts, selection_kind
from rankmap.explain.docfacts import DocFacts
from rankmap.explain.docread import DOC_LIMIT, read_document
from rankmap.explain.findings_map import duplicate_findings, ordinal_findings, quote
from rankmap.explain.framework_fixes import in_framework_words
from rankmap.explain.patterns import Event
from rankmap.explain.reader import Line
from rankmap.explain.renumbering import renumbered_view
from rankmap.explain.rules import RULES, own_failure
from rankmap.explain.scoring import rescore, scores_section, single_process
from rankmap.explain.signals import log_gpu_count, log_launch
from rankmap.findings import Finding, Report, Severity, finding
from rankmap.model import Host, Placement
from rankmap.redact import redact_env, redact_free_text, redact_report
from rankmap.sources import Files, NoFiles


class LogSource(Protocol):
    """Where ``explain`` gets the candidate lines of one input (the real one:
    :class:`rankmap.adapters.logs.LocalLogs`; ``-`` names stdin)."""

    def lines(self, name: str, texts: list[str] | None = None) -> Iterable[Line]: ...

    def source_name(self, name: str) -> str: ...


def read_evidence(
    paths: Sequence[Path | str], *, logs: LogSource, texts: list[str] | None = None
) -> Evidence:
    """Scan every input into one :class:`Evidence`; ``InputError`` for unreadable input.

    ``texts``, when given, receives the decoded text of every input small enough to be read as
    a document (:data:`rankmap.explain.docread.DOC_LIMIT`).
    """
    ev = Evidence()
    for p in paths or ("-",):
        name = str(p)
        ev.sources.append(logs.source_name(name))
        ev.add_lines(logs.lines(name, texts))
    return ev


def build_context(
    launch: str | None,
    env: Mapping[str, str] | None,
    machines: Sequence[Host],
    script: Path | None,
    *,
    log_gpus: int | None = None,
    notes: tuple[str, ...] = (),
    validate: bool = False,
    files: Files | None = None,
) -> tuple[Context, str | None]:
    """The non-log facts, the launch command simulated once by ``check``'s engine; and a note
    when a typed ``--launch`` (``validate``) could not be simulated."""
    files = files or NoFiles()
    env_map = dict(env or {})
    facts, note = None, None
    if launch:
        facts, note = launch_facts(
            launch, machines, env_map, script, validate=validate, files=files
        )
        for k in facts.unset:
            env_map.pop(k, None)  # env -u NAME on the launch line
        for k, v in facts.env:
            env_map.setdefault(k, v)
    selection = None
    if script and facts is not None and facts.plan is not None:
        selection = selection_kind(facts.device_selection)  # check's run read the script
    elif script:
        from rankmap.check.engine import read_selection

        selection = selection_kind(read_selection(script, files).kind)
    return (
        Context(
            launch=facts,
            env=env_map,
            machines=tuple(machines),
            script_selection=selection,
            script_path=str(script) if script else None,
            notes=tuple(n for n in (note, *notes) if n),
            log_gpu_count=log_gpus,
        ),
        note,
    )


def _splittable(launch: str) -> None:
    import shlex

    from rankmap.errors import UsageError

    try:
        shlex.split(launch)
    except ValueError as exc:
        raise UsageError(f"--launch: cannot split the command: {exc}") from None


def explain_files(
    paths: Sequence[Path | str],
    *,
    launch: str | None = None,
    env: Mapping[str, str] | None = None,
    machines: Sequence[Host] = (),
    script: Path | None = None,
    logs: LogSource,
    files: Files | None = None,
) -> Report:
    """Diagnose logs (``-`` = stdin), read through ``logs``; streaming and memory-bounded.

    ``files`` reads ``--script`` and the config files a ``launch`` names. Raises ``InputError``.
    """
    if launch:  # a typed command that cannot be split is a usage error before any reading
        _splittable(launch)
    texts: list[str] = []
    ev = read_evidence(paths, logs=logs, texts=texts)
    # what the options say is read as part of the document too (catalogue signals of a launch)
    flags = ([f"$ {launch}"] if launch else []) + [
        f"export {k}={v}" for k, v in (env or {}).items()
    ]
    # the line the flags start at in the joined document (quotes past it name the option)
    flags_at = len("\n".join(texts).split("\n")) + 1 if texts else 1
    if flags:
        texts.append("\n".join(flags))
    # quotes name the file they come from (review 19: a file's lines were cited as <stdin>); the
    # flags are appended after its lines, so its line numbers hold
    names = [str(p) for p in paths]
    source = names[0] if len(names) == 1 else "<input>"
    source = "<stdin>" if source == "-" else source
    document = "\n".join(texts)  # read once here, and once more for a renumbering question
    doc = read_document(document, source) if texts else None
    notes: list[str] = []
    typed = bool(launch)
    if not launch and doc is not None and doc.launch:
        launch = _with_pasted_values(doc.launch, doc.env)
        notes.append(f"launch command taken from the input: {redact_free_text(launch)[:200]}")
    elif not launch and (pasted := log_launch(ev)):
        launch = pasted
        notes.append(f"launch command taken from the log: {redact_free_text(pasted)[:200]}")
    # a pasted value that names a variable (``CUDA_VISIBLE_DEVICES=$SLURM_LOCALID``) is set when
    # the process runs, not known here: left out (open world; catalogue "cvd-per-rank" reads it)
    pasted_env = {k: v for k, v in (doc.env if doc else {}).items() if "$" not in v}
    # each rank printed its own list ("LOCAL_RANK=2 -> export CUDA_VISIBLE_DEVICES=2", review
    # 70): no list of the job's
    for var, by_rank in (doc.rank_lists if doc else {}).items():
        if len(set(by_rank.values())) > 1:
            pasted_env.pop(var, None)
    merged_env = {**pasted_env, **dict(env or {})}
    gpus = None if machines else (log_gpu_count(ev) or (doc.smi_gpus if doc else None))
    if gpus:
        notes.append(f"{gpus} GPU(s) per host from an nvidia-smi table in the input")
    elif not machines and doc is not None and doc.cvd_whole_machine and doc.stated_gpus:
        # "8x A100" and CUDA_VISIBLE_DEVICES=0,...,7: the list is the whole node (review 40)
        gpus = doc.stated_gpus
        notes.append(
            f"{gpus} GPU(s) per host as the input states ({doc.stated_gpus_at[:80]}); "
            "its CUDA_VISIBLE_DEVICES lists every one of them"
        )
    ctx, _ = build_context(
        launch,
        merged_env,
        machines,
        script,
        log_gpus=gpus,
        notes=tuple(notes),
        validate=typed,
        files=files,
    )
    if (
        script is None
        and doc is not None
        and doc.code_kind in PASTED_SELECTIONS
        and not single_process(doc)  # nn.DataParallel's .cuda() is no rank's choice
        # a fixed device is every rank's only in a job of several processes (a rank map shows one)
        and not (doc.fixed_device_of_one_program() and not ev.rankmap.records)
    ):
        ctx = replace(ctx, script_selection=doc.code_kind, script_path="<pasted code>")
    if doc is not None:  # what the pasted text tells that the log alone may not show
        ctx = replace(
            ctx,
            machines_told=doc.machines_told(),
            several_processes_told=doc.tells_several_processes(),
            mig_told=doc.shows_mig(),
            one_program_told=doc.shows_one_program(),
        )
    report = diagnose(ev, ctx)
    if doc is not None and len(ev.sources) == 1:
        report.findings = [_mentioned(f, doc) for f in report.findings]
    stated = _named(ev, texts, doc, _srun_task_labels(ctx), _srun_tasks_are_ranks(ctx))
    findings, scores = rescore(
        report.findings,
        ctx,
        doc,
        named=stated,
        # (read only for a best guess that names no rank: a scan of up to DOC_LIMIT of text)
        job_ranks=lambda: tuple(sorted(named.stated_ranks(_lines(texts)))[:64]),
    )
    report.findings = _host_identity_ranks(_dedupe(findings), texts)
    named_fixes = frozenset(fix for _, fix in scores.fixes.values())
    report.findings = in_framework_words(report.findings, doc, texts, named_fixes)
    if doc is not None and doc.resolved:
        report.findings = _told_as_solved(report.findings, doc, doc.resolved)
    elif doc is not None and (view := renumbered_view(doc, document)):
        report.findings = _told_renumbered(report.findings, view)
    if flags:
        report.findings = [_flags_quoted(f, source, flags_at) for f in report.findings]
    report.sections["explain"]["scores"] = scores_section(scores)
    if doc is not None:
        report.sections["explain"]["segments"] = dict(sorted(doc.segments.items()))
        report.sections["explain"]["signals"] = sorted(doc.hits)[:64]
    # quoted log lines reach library callers too: credentials never leave rankmap
    return redact_report(report)


_SHELL_VAR = re.compile(r"\$(?:\{(?P<braced>[A-Za-z_]\w*)\}|(?P<bare>[A-Za-z_]\w*))")


def _with_pasted_values(launch: str, env: dict[str, str]) -> str:
    """A pasted launch line with the shell variables the paste assigns a plain value filled in
    (``NNODES=4`` above ``torchrun --nnodes=$NNODES``; review 72); the others stay as written."""

    def value(m: re.Match[str]) -> str:
        v = env.get(m["braced"] or m["bare"])
        return v if v and "$" not in v and " " not in v else m.group(0)

    return _SHELL_VAR.sub(value, launch)


def _told_as_solved(findings: list[Finding], doc: DocFacts, words: str) -> list[Finding]:
    """The findings of a text that tells its failure as over ("[solved]", "closing this: ...
    the run now completes"): the cause it names stays, at info — nothing is left to fix, and no
    alarm (reviews 62, 64). A finding that quotes the job's printed output (a log line, not the
    writer's sentences), or lines past where the writer turns to another failure, is read as
    usual: "the firewall issue is fixed now" says nothing of the ordinal error printed below it
    (review 66) — unless the title tells the post solved, which makes what it quotes part of
    the story (review 71)."""
    said = redact_free_text(words)[:160]
    until = doc.resolved_until
    out = []
    for f in findings:
        lines = _quoted_lines(f)
        # (a title that tells it solved makes the output it quotes part of the story)
        printed = not doc.resolved_in_title and _quotes_printed_output(f, doc, words)
        if printed or (until is not None and any(n >= until for n in lines)):
            out.append(f)
            continue
        out.append(_at_info(f, f"The input tells this failure as solved ({said!r}): "))
    return out


def _told_renumbered(findings: list[Finding], view: str) -> list[Finding]:
    """A question about CUDA's renumbering (:mod:`rankmap.explain.renumbering`): RM241 first,
    the other findings at info (RM003's "nothing recognised" dropped: RM241 recognised it)."""
    lead = finding(
        "RM241",
        "The devices the input names are the listed GPUs, numbered from 0 inside the process",
        detail=f"Nothing failed: {view}.",
    )
    return [lead, *(_at_info(f, "Nothing failed (RM241). ") for f in findings if f.code != "RM003")]


def _at_info(f: Finding, why: str) -> Finding:
    """``f`` at info; ``why`` goes before its detail where it was a warning or an error."""
    told = f.severity is not Severity.INFO and f.code != "RM003"
    return replace(f, severity=Severity.INFO, detail=why + f.detail if told else f.detail)


def _quotes_printed_output(f: Finding, doc: DocFacts, words: str) -> bool:
    """Whether ``f`` quotes a line the job printed: outside the writer's prose, not a sentence
    that quotes a message (``died with "invalid device ordinal"``) nor the solved line itself."""
    for e in f.evidence:
        m = _WHERE.match(e)
        if m is None or doc.in_prose(int(m.group("n"))):
            continue
        text = m.group("text")
        if not _QUOTING.search(text) and text.strip()[:60] not in words:
            return True
    return False


def _quoted_lines(f: Finding) -> list[int]:
    return [int(m.group("n")) for e in f.evidence if (m := _WHERE.match(e))]


def _flags_quoted(f: Finding, source: str, flags_at: int) -> Finding:
    """``f`` with its quotes of the ``--launch`` / ``--env`` options named so: they are read as
    lines after the input's own, and a quote ``job.log:19`` of a 16-line log named a line the
    file does not have (review 60)."""
    prefix = f"{source}:"
    out = []
    for q in f.evidence:
        head, sep, line = q.removeprefix(prefix).partition(": ")
        if q.startswith(prefix) and sep and head.isdecimal() and int(head) >= flags_at:
            # the flag lines are "$ LAUNCH" and "export K=V" (explain_files)
            launch = line.startswith("$ ")
            q = f"--launch: {line[2:]}" if launch else f"--env: {line.removeprefix('export ')}"
        out.append(q)
    return replace(f, evidence=tuple(out))


_WHERE = re.compile(r"^.*?:(?P<n>\d+): (?P<text>.*)$", re.S)
# a heading, or a sentence that quotes: "…", “…”, `…`
_QUOTING = re.compile(r"^\s*#{1,6} |\"[^\"]{4,}\"|“[^”]{4,}”|`[^`]{4,}`")


def _mentioned(f: Finding, doc: DocFacts) -> Finding:
    """An error whose every quoted line is the reporter's prose that names the message — a
    heading, or a sentence quoting it ("the PR fixes the spelling of "invalid device
    ordinal"") — is a mention: a warning, not a decided error, and info in a text that reports
    no failure. An error needs the program's own output (a line of a log that reads like a
    sentence is not a quote)."""
    if f.severity is Severity.INFO or not f.evidence:
        return f
    where = [_WHERE.match(e) for e in f.evidence]
    if doc.hypothetical:  # asked about before it happened: the lines are quotes (review 41)
        return replace(f, severity=Severity.INFO)
    if all(
        m and doc.in_prose(int(m.group("n"))) and _QUOTING.search(m.group("text")) for m in where
    ):
        # in a text that reports no failure at all (a docs question), a mention only (review 36)
        return replace(f, severity=Severity.WARNING if doc.failed else Severity.INFO)
    return f


# Device selections read from pasted code that are positive evidence (a snippet that does not
# show set_device says nothing about the rest of the script).
PASTED_SELECTIONS = ("global_rank", "constant")


def diagnose(ev: Evidence, ctx: Context) -> Report:
    """Findings (best-supported cause first), placements and sections from the evidence."""
    findings: list[Finding] = []
    dup = ev.has("duplicate_gpu", "multi_rank_gpu") or bool(ev.rankmap.collisions())
    specific = ev.has(
        "nccl_mismatch", "bootstrap_dup_rank", "no_interface", "store_error", "socket_error"
    )
    bare = not dup and not specific and _bare_invalid_usage(ev)
    if dup:
        findings += duplicate_findings(ctx, ev)
    elif bare:
        findings += [_probable(f) for f in duplicate_findings(ctx, ev)]
    if ev.has("invalid_ordinal"):
        ordinal = ordinal_findings(ctx, ev)
        findings = ordinal + findings if not dup else findings + ordinal
    for rule in RULES:
        findings += rule(ev, ctx)
    if ev.rankmap.records:
        findings.append(_rankmap_finding(ev, with_own_failure=not findings))
    if not findings:
        findings.append(_nothing_recognised(ev))
    return Report(
        command="explain",
        findings=_dedupe(findings),
        placements=_placements(ev, ctx),
        sections={"explain": _section(ev, ctx)},
    )


def _nothing_recognised(ev: Evidence) -> Finding:
    """RM003, saying what the workers stopped with where the log shows it: an exception of their
    own (a missing file, a data-loader crash) is the failure to fix, not something to re-run with
    NCCL_DEBUG for (review 60: "without an error message" beside a FileNotFoundError)."""
    own = own_failure(ev) if ev.failures else None
    if own is not None:
        why = f" The workers stopped with an error outside the GPU mapping: {_said(own)}."
        fix = "Fix the error the workers stopped with (quoted); nothing points at the GPU mapping."
        evidence = [quote(own)]
    else:
        why = " Workers failed without an error message in the input." if ev.failures else ""
        fix = ""  # the code's own fix
        evidence = [f.evidence for f in ev.failures[:3] if f.evidence]
    return finding(
        "RM003",
        "Nothing in the input was recognised"
        if not ev.counts
        else "No GPU-mapping problem recognised in the input",
        detail=f"Read {', '.join(ev.sources) or 'no input'}: {ev.lines_seen} candidate line(s), "
        f"no NCCL/CUDA/PyTorch/launcher failure rankmap knows.{why}",
        fix=fix,
        evidence=evidence,
    )


def _said(own: Event) -> str:
    """``Exception: message`` of the exception the workers stopped with (rules.own_failure)."""
    return f"{own.get('exc')}: {str(own.get('msg') or '')[:160]}".rstrip(": ")


_FAILING = ("invalid_ordinal", "duplicate_gpu", "torch_nccl_error", "cuda_failure", "oom")


def _named(
    ev: Evidence,
    texts: list[str],
    doc: DocFacts | None,
    task_labels: bool = False,
    task_ranks: bool = False,
) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Ranks the input names as failing and the GPUs it names (see :mod:`.named`): events,
    torchrun summaries and failure lines first (those of the failure itself over the other
    ranks' reaction to it); else the ranks the Init lines put on cudaDev 0 of one host; else
    the ranks the prose names; "both processes" of a job whose
    named ranks are 0 and 1 at most adds both."""
    first, after = named.failure_ranks(
        _lines(texts), task_labels=task_labels, task_ranks=task_ranks
    )
    for e in ev.of(*_FAILING):
        if e.rank is not None:
            (after if named.is_aftermath(e.line.text) else first).add(e.rank)
    first |= set(ev.failed_ranks())
    ranks = first or after  # the failure itself, else the others' reaction to it
    if not ranks:  # every rank of a host on cudaDev 0 nvmlDev 0 (Init lines): those ranks
        cuda0 = set(ev.rankmap.all_cuda0())
        ranks = {r.rank for r in ev.rankmap.main_comm() if (r.host or "?") in cuda0}
    if doc is not None:
        if not ranks:
            ranks = set(doc.prose_ranks)
        if doc.pair_named and ranks <= {0, 1}:
            ranks |= {0, 1}
    return tuple(sorted(ranks)[:64]), named.devices_in(text[:DOC_LIMIT] for text in texts)


def _srun_task_labels(ctx: Context) -> bool:
    """Whether srun labels each line with its task, one task per rank: srun itself starts the
    program (not a launcher that starts the ranks) with ``--label`` (the srun simulation's
    reading of its options, launchers/slurm.py)."""
    plan = ctx.launch.plan if ctx.launch is not None else None
    return _srun_tasks_are_ranks(ctx) and plan is not None and plan.task_labels


def _srun_tasks_are_ranks(ctx: Context) -> bool:
    """Whether srun itself starts the program, one task per rank (no launcher inside it): the
    task ids srun's own summary names are ranks."""
    launch = ctx.launch
    return launch is not None and launch.launcher == "srun" and launch.plan is not None


def _lines(texts: list[str]) -> Iterable[str]:
    return (ln for text in texts for ln in text[:DOC_LIMIT].splitlines())


def _host_identity_ranks(findings: list[Finding], texts: list[str]) -> list[Finding]:
    """A host-identity cause that names no ranks takes those NCCL connected inside one host
    (P2P/SHM lines: the ranks it took for one host)."""
    if not findings or findings[0].category != "host_identity" or findings[0].ranks:
        return findings
    ranks = named.intra_host_ranks(_lines(texts))
    if not ranks:
        return findings
    return [replace(findings[0], ranks=tuple(sorted(ranks))), *findings[1:]]


def _bare_invalid_usage(ev: Evidence) -> bool:
    """NCCL's duplicate-GPU check returns ncclInvalidUsage (reference/nccl.md (a)); an internal
    error (a failed proxy connection, an IB error, ...) is no sign of a shared GPU. Nor is it
    bare when the Init lines show every rank of the communicator on a GPU of its own: the rank
    map rules the shared GPU out (a wrong argument or a misuse returned it)."""
    if _each_rank_own_gpu(ev):
        return False
    for e in ev.of("torch_nccl_error"):
        if (e.get("err") or "").startswith("invalid usage"):
            return True
    return any(e.get("code") == "ncclInvalidUsage" for e in ev.of("nccl_result"))


def _each_rank_own_gpu(ev: Evidence) -> bool:
    """Whether the main communicator's Init lines name every rank, each with a bus id, and no
    two ranks of a communicator share one GPU of one host."""
    main = ev.rankmap.main_comm()
    nranks = max((r.nranks or 0 for r in main), default=0)
    complete = bool(main) and len(main) == nranks and all(r.bus_id for r in main)
    return complete and not ev.rankmap.collisions()


BARE_NOTE = (
    "NCCL returned invalid usage without its reason (no `Duplicate GPU detected` line): at "
    "init this is most often two ranks on one GPU, but a wrong argument or communicator misuse "
    "returns it too; `NCCL_DEBUG=WARN` prints the reason. "
)


def _probable(f: Finding) -> Finding:
    """A shared-GPU finding inferred from a bare ncclInvalidUsage: a warning, not an error — the
    result code alone is no positive evidence of a shared GPU."""
    if f.severity is not Severity.ERROR:
        return f
    probable = f"Probably: {f.title}"
    return replace(f, severity=Severity.WARNING, title=probable, detail=BARE_NOTE + f.detail)


def _dedupe(findings: list[Finding]) -> list[Finding]:
    out: list[Finding] = []
    seen: set[str] = set()
    for f in findings:
        if f.code in seen:
            continue
        seen.add(f.code)
        out.append(f)
    return out


def _rankmap_finding(ev: Evidence, *, with_own_failure: bool = False) -> Finding:
    """RM042; where it is all the log explains (``with_own_failure``), it names the exception the
    workers stopped with: the map is clean, that error is the one to fix (review 65: a data error
    on rank 0 whose peers then timed out)."""
    recs = ev.rankmap.main_comm()
    hosts = ev.rankmap.hosts()
    comms = len(ev.rankmap.communicators())
    shared = len(ev.rankmap.collisions())
    title = (
        f"Rank map rebuilt from the log: {len(recs)} rank(s) on {len(hosts) or '?'} host(s), "
        f"{comms} communicator(s), "
        + (f"{shared} GPU(s) shared by several ranks" if shared else "no GPU shared")
    )
    mig = ev.rankmap.all_cuda0()
    detail = (
        f"Every rank on {', '.join(mig)} is cudaDev 0 nvmlDev 0: no set_device, or one MIG "
        "instance / one GPU per process."
        if mig
        else ""
    )
    own = own_failure(ev) if with_own_failure else None
    fix = ""  # the code's own fix ("Nothing to fix")
    if own is not None:
        detail = (
            f"{detail} The workers stopped with an error outside the GPU mapping: {_said(own)}."
        ).lstrip()
        fix = "Fix the error the workers stopped with (quoted); the rank map shows no GPU problem."
    small = len(recs) <= 64  # a small map names its ranks and GPUs (a big one: the JSON map)
    ranks = tuple(r.rank for r in recs) if small else ()
    devices = tuple(dict.fromkeys(r.bus_id for r in recs if r.bus_id)) if small else ()
    return finding(
        "RM042",
        title,
        detail=detail,
        fix=fix,
        hosts=hosts[:16],
        ranks=ranks,
        devices=devices,
        evidence=[quote(own)] if own is not None else [],
    )


def _warn_placements(ev: Evidence, placed: set[int]) -> list[Placement]:
    """Ranks named only by a duplicate-GPU WARN: the host of the line and the shared GPU."""
    from rankmap.pci import try_normalize_bus_id

    out: list[Placement] = []
    for e in ev.of("duplicate_gpu"):
        for r in e.ranks:
            if r in placed:
                continue
            placed.add(r)
            bus = try_normalize_bus_id(e.bus_id)
            out.append(Placement(rank=r, node=e.host, pci_bus_id=bus, source="nccl-warn"))
    return out


def _placements(ev: Evidence, ctx: Context) -> list[Placement]:
    out = []
    for p in ev.rankmap.placements():
        if p.pci_bus_id and ctx.machines:
            found = gpu_for_bus(ctx.machines, p.pci_bus_id, p.node)
            if found:
                h, g = found
                p = replace(
                    p,
                    uuid=g.uuid,
                    nvml_index=p.nvml_index if p.nvml_index is not None else g.nvml_index,
                )
        out.append(p)
    return out + _warn_placements(ev, {p.rank for p in out})


def _section(ev: Evidence, ctx: Context) -> dict[str, Any]:
    versions = ev.nccl_versions()
    fp = ev.fingerprint()
    out: dict[str, Any] = {
        "inputs": ev.sources,
        "lines_matched": ev.lines_seen,
        "events": dict(sorted(ev.counts.items())),
        "nccl_version": next(iter(versions), None) or fp,
        "nccl_version_source": "log" if versions else ("init.cc line" if fp else None),
        "communicators": [
            {"comm": c, "ranks": len(rs), "hosts": sorted({r.host for r in rs if r.host})[:32]}
            for c, rs in list(ev.rankmap.communicators().items())[:32]
        ],
        "failures": [
            {
                "rank": f.rank,
                "local_rank": f.local_rank,
                "host": f.host,
                "exitcode": f.exitcode,
                "root_cause": f.root,
            }
            for f in ev.failures[:64]
        ],
    }
    if ctx.launch:
        out["launch"] = {
            "command": redact_free_text(ctx.launch.command),
            "launcher": ctx.launch.launcher,
            "nproc_per_node": ctx.launch.nproc_per_node,
            "nnodes": ctx.launch.nnodes,
            "device_selection": ctx.selection(),
        }
    if ctx.env:
        out["env"] = redact_env(ctx.env)
    if ctx.notes:
        out["context_from_log"] = list(ctx.notes)
    return out
