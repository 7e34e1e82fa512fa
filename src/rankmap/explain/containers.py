"""Containers and the GPUs they were given, against what the paste shows
(reference/cuda_devices.md §3-4): a container that sees more GPUs than it asked for, one started
without any GPU request next to "no CUDA GPUs are available". Scored with the other combinations
(:mod:`rankmap.explain.combinations`)."""

from __future__ import annotations

import re

from rankmap.explain.docfacts import DocFacts
from rankmap.explain.docread_devices import gpu_request
from rankmap.explain.score_model import Scores
from rankmap.explain.visible_lists import writers_list
from rankmap.launchers.command import CONTAINER_VALUE_OPTIONS


def _requested(doc: DocFacts) -> int | None:
    """The GPUs the container asked for: a run's request, else a pod spec's limit."""
    return doc.gpus_requested or doc.configs.pod_gpus


def container_sees_more(doc: DocFacts, s: Scores) -> None:
    """A container that sees more GPUs than it was given (``--gpus 1``, ``NV_GPU=1``, a pod's
    ``nvidia.com/gpu: 1``, yet two GPU UUIDs or rows in its nvidia-smi)."""
    requested = _requested(doc)
    seen = max(doc.gpu_uuids, doc.smi_gpus or 0)
    if requested and seen > requested:
        s.add(
            "container_mapping",
            4.0,
            f"the container was given {requested} GPU(s) but its output shows {seen}: the runtime "
            "(privileged mode, a runtime ignoring NVIDIA_VISIBLE_DEVICES) exposes more "
            "(reference/cuda_devices.md §3-4)",
        )


_ALL_GIVEN = re.compile(r"--gpus[= ]['\"]?all\b|NVIDIA_VISIBLE_DEVICES=['\"]?all\b", re.I)


def container_given_all(doc: DocFacts, s: Scores) -> None:
    """A container started with every GPU (``--gpus all``, ``NVIDIA_VISIBLE_DEVICES=all``) that
    shows every GPU does what it was asked: "nvidia-smi shows all 8 GPUs inside" is no runtime
    ignoring a narrower request (review 61: a Duplicate GPU inside an NGC container was filed
    under containers at error)."""
    hit = doc.hits.get("nvd-ignored")
    given = [h for sid in ("docker-gpus", "nvd-ignored") if (h := doc.hits.get(sid))]
    if hit is not None and _as_many_as_requested(hit.excerpt, doc):
        weight = dict(hit.signal.supports).get("container_mapping", 0.0)
        s.add(
            "container_mapping",
            -weight,
            "the container shows as many GPUs as it requested: it sees what it was given",
        )
        return
    if hit is None or not any(_ALL_GIVEN.search(h.excerpt) for h in given):
        return
    if "NVIDIA_VISIBLE_DEVICES" in hit.excerpt and not _ALL_GIVEN.search(hit.excerpt):
        return  # the writer names a narrower NVIDIA_VISIBLE_DEVICES that was not honoured
    weight = dict(hit.signal.supports).get("container_mapping", 0.0)
    s.add(
        "container_mapping",
        -weight,
        "the container was given every GPU (--gpus all): it shows every GPU as asked",
    )


_SHOWS_N = re.compile(r"\b(?:shows?|showing|sees?|seeing|lists?|listing|exposes?) (\d{1,3}) ", re.I)


def _as_many_as_requested(excerpt: str, doc: DocFacts) -> bool:
    """Whether "the pod shows 8 GPUs" names the count the container requested (a pod's
    ``nvidia.com/gpu: 8``, ``--gpus 8``): no runtime ignoring a request then (review 66)."""
    requested = _requested(doc)
    m = _SHOWS_N.search(excerpt)
    return bool(requested and m and int(m.group(1)) == requested)


# What gives a container GPUs (reference/cuda_devices.md §3): Docker's --gpus, the NVIDIA runtime,
# NVIDIA_VISIBLE_DEVICES, device nodes, privileged mode, CDI devices.
_GPU_REQUEST = re.compile(
    r"^(?:--gpus\b|--runtime[ =]nvidia|(?:-e|--env)[ =]NVIDIA_VISIBLE_DEVICES|--device[ =]\S*"
    r"(?:nvidia|kfd|dri)|--privileged|--cdi|--device[ =]nvidia\.com/gpu)",
    re.I,
)


def _run_options(cmd: str) -> list[str]:
    """The options of a ``docker/podman run`` command, up to its image (``--gpus`` after the
    image is an argument of the container's command, not a GPU request)."""
    words = cmd.split()
    start = next((i + 1 for i, w in enumerate(words) if w == "run"), len(words))
    out: list[str] = []
    i = start
    while i < len(words) and words[i].startswith("-"):
        word = words[i]
        if word in CONTAINER_VALUE_OPTIONS and i + 1 < len(words):
            out.append(f"{word} {words[i + 1]}")
            i += 2
        else:
            out.append(word)
            i += 1
    return out


def container_without_gpus(doc: DocFacts, s: Scores) -> None:
    """Containers started without any GPU request next to "no CUDA GPUs are available": the
    container was given no GPU (reference/cuda_devices.md §3: without ``--gpus`` or the NVIDIA
    runtime it runs like runc)."""
    if "no-cuda-device" not in doc.hits:
        return
    _apptainer_without_nv(doc, s)
    if not doc.container_runs:
        return
    if any(_GPU_REQUEST.match(opt) for cmd in doc.container_runs for opt in _run_options(cmd)):
        return
    if any(cmd.endswith("\\") for cmd in doc.container_runs):
        return  # a command that continues where the paste does not show it: options unknown
    s.add(
        "container_mapping",
        3.0,
        "the container was started without a GPU request (no --gpus, NVIDIA runtime, "
        "NVIDIA_VISIBLE_DEVICES or device) and then finds no GPU (reference/cuda_devices.md §3): "
        f"{doc.container_runs[0][:120]}",
    )


# A Singularity/Apptainer container started: exec, run, shell (instance start too).
_APPTAINER_RUN = re.compile(
    r"\b(?:singularity|apptainer)\s+(?:exec|run|shell|instance\s+start)(?![\w-])"
)
# What binds the host's GPU driver and devices into it (apptainer.org/docs/user/main/gpu.html).
_APPTAINER_GPU = re.compile(r"(?<![\w-])--(?:nv|nvccli|rocm)\b")
_APPTAINER_GPU_ENV = re.compile(r"(?:APPTAINER|SINGULARITY)_(?:NV|NVCCLI|ROCM)$")


def _apptainer_without_nv(doc: DocFacts, s: Scores) -> None:
    """A Singularity/Apptainer container started without ``--nv`` (``--nvccli``, ``--rocm``)
    next to "no NVIDIA driver / no CUDA GPUs": without it the host's driver libraries and GPU
    devices are not bound into the container, so CUDA finds no GPU inside
    (https://apptainer.org/docs/user/main/gpu.html, "--nv")."""
    if any(_APPTAINER_GPU_ENV.match(k) and v not in ("", "0") for k, v in doc.env.items()):
        return  # APPTAINER_NV=1 / SINGULARITY_NV=1: --nv set by the environment
    for cmd in doc.commands:
        if _APPTAINER_RUN.search(cmd) and not _APPTAINER_GPU.search(cmd):
            if cmd.rstrip().endswith("\\"):
                return  # the options go on where the paste does not show them
            s.add(
                "container_mapping",
                6.0,
                "the Singularity/Apptainer container was started without --nv, so the host's "
                "NVIDIA driver and GPUs are not bound into it and CUDA finds none "
                f"(apptainer.org/docs/user/main/gpu.html): {cmd[:120]}",
            )
            s.name_fix(
                "container_mapping",
                6.0,
                "Start the container with `--nv` (`singularity exec --nv ...`, `apptainer exec "
                "--nv ...`; `--rocm` for AMD GPUs) so the host's driver and GPUs are bound in.",
            )
            return


# CUDA_VISIBLE_DEVICES passed into a container: -e CUDA_VISIBLE_DEVICES=4,5 / -e "CUDA_...=4,5"
_CVD_OPTION = re.compile(
    r"(?:-e|--env)[ =][\"']?CUDA_VISIBLE_DEVICES=[\"']?(\d{1,4}(?:,\d{1,4})*)(?![\d,])"
)


def container_host_ids(doc: DocFacts, s: Scores) -> None:
    """A container given named devices and a CUDA_VISIBLE_DEVICES of host ids beyond them:
    inside, the container's GPUs start from 0 (reference/cuda_devices.md §3), so
    `--gpus device=2,3` with `-e CUDA_VISIBLE_DEVICES=2,3` names GPUs the container does not have
    (review 31). A count (`--gpus 2`) names no ids: nothing to compare."""
    for cmd in doc.container_runs:
        opts = " ".join(_run_options(cmd))
        request, cvd = gpu_request(opts), _CVD_OPTION.search(opts)
        if request is None or request[1] is None or cvd is None:
            continue
        given = request[0]
        if max(int(x) for x in cvd.group(1).split(",")) >= given:
            s.mapping_failure = True
            # (6: it decides, also against check's simulation of the same launch, whose
            # "ranks see no GPU" files the list under visible devices; review 60)
            s.add(
                "container_mapping",
                6.0,
                f"the container is given {given} GPU(s), numbered 0..{given - 1} inside, and "
                f"CUDA_VISIBLE_DEVICES={cvd.group(1)} names host ids beyond them "
                "(reference/cuda_devices.md §3)",
                cmd[:160],
            )
            return


def container_host_numbered_list(doc: DocFacts, s: Scores) -> None:
    """A container given N GPUs (``--gpus N``, a pod's ``nvidia.com/gpu: N``) sees them as
    0..N-1; a CUDA_VISIBLE_DEVICES that names an index from N on is the host's numbering, kept
    from a bare-metal launch (reference/cuda_devices.md §3: the runtime renumbers from 0); the
    list set in the paste, or the one a sentence says was set (review 69: "the deployment sets
    CUDA_VISIBLE_DEVICES="6,7"")."""
    requested = _requested(doc)
    entries = writers_list(doc)
    if not requested or not entries or not all(e.isdecimal() for e in entries):
        return
    if max(int(e) for e in entries) >= requested:
        s.add(
            "container_mapping",
            6.0,  # as container_host_ids: it decides (review 71)
            f"the container was given {requested} GPU(s), numbered from 0 inside, and "
            f"CUDA_VISIBLE_DEVICES={','.join(entries)} names the host's numbering "
            "(reference/cuda_devices.md §3)",
        )
        # the same list read as an index chosen after narrowing (RM240) is this renumbering:
        # inside the container the host's ids name no GPU at all (review 71)
        s.add(
            "visible_devices_mismatch",
            -4.0,
            "the list's ids are the host's, outside what the container was given",
        )


def cleanenv_drops_the_binding(doc: DocFacts, s: Scores) -> None:
    """A container started with a clean environment (Apptainer/Singularity ``--cleanenv``,
    ``--containall``) under a per-task GPU binding: the CUDA_VISIBLE_DEVICES the scheduler set
    for each task stays outside, so every task sees all of the node's GPUs and uses the first
    (review 67: "without --cleanenv it works")."""
    if "container-cleanenv" not in doc.hits or not {
        "gpus-per-task",
        "jsrun-gpu-per-set",
        "scheduler-sets-cvd",
    } & set(doc.hits):
        return
    s.add(
        "container_mapping",
        5.0,
        "the container starts with a clean environment, so the per-task CUDA_VISIBLE_DEVICES the "
        "scheduler set never reaches it: every task sees all of the node's GPUs "
        "(apptainer run --cleanenv / --containall)",
        doc.quoted("container-cleanenv"),
    )
    s.add(
        "per_process_visible_devices",
        -3.0,
        "the per-task lists stay outside the container: inside, no process has its own list",
    )
    s.add(
        "no_set_device",
        -4.0,
        "under a per-task binding cuda:0 is each task's own GPU: device 0 is the right choice "
        "wherever the binding reaches the process",
    )
    s.name_fix(
        "container_mapping",
        5.0,
        "Pass the task's list into the container — drop --cleanenv/--containall, or add "
        "`--env CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES` (Singularity: "
        "`SINGULARITYENV_CUDA_VISIBLE_DEVICES`)",
    )
