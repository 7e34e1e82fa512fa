"""explain v2: the paste read as a document, the signal catalogue, scoring over all evidence.

The pastes below are shapes written for these tests (no reporter's text): a title line, prose,
fenced code/shell/config blocks, env dumps and an nvidia-smi table around a log.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rankmap.adapters.local import explain_files
from rankmap.categories import CATEGORIES
from rankmap.explain.catalogue import SIGNALS
from rankmap.explain.docread import read_document
from rankmap.explain.document import split_document
from rankmap.findings import Severity

FENCE = "`" * 3
SMI = """\
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
|===============================+======================+======================|
|   0  NVIDIA A100-SXM4-40GB  On   | 00000000:07:00.0 Off |                    0 |
|   1  NVIDIA A100-SXM4-40GB  On   | 00000000:0F:00.0 Off |                    0 |
+-------------------------------+----------------------+----------------------+
"""
PASTE = f"""Training crashes with invalid device ordinal on the second node

I run on two nodes with 2 GPUs each.
{FENCE}bash
$ torchrun --nnodes 2 --nproc-per-node 2 train.py
{FENCE}
{FENCE}python
import os, torch
rank = int(os.environ["RANK"])
torch.cuda.set_device(rank)
{FENCE}
export NCCL_DEBUG=INFO
{FENCE}
[rank2]: RuntimeError: CUDA error: invalid device ordinal
{FENCE}
{SMI}"""


def _first(text: str, **kw: object):  # type: ignore[no-untyped-def]
    report = explain_files([Path("-")], stdin=io.StringIO(text), **kw)  # type: ignore[arg-type]
    return report, report.ordered_findings()[0]


def test_segments_of_a_paste_get_their_kinds() -> None:
    kinds = [s.kind for s in split_document(PASTE)]
    assert kinds[0] == "prose"
    for kind in ("shell", "code", "env", "log", "smi"):
        assert kind in kinds, kinds


def test_each_segment_is_read_by_its_engine() -> None:
    doc = read_document(PASTE)
    assert doc.launch == "torchrun --nnodes 2 --nproc-per-node 2 train.py"
    assert doc.code_kind == "global_rank"  # check's script analysis of the pasted code
    assert doc.env["NCCL_DEBUG"] == "INFO"
    assert doc.smi_gpus == 2  # rankmap.inventory read the table
    assert doc.hosts_in_launch == 2
    assert doc.failed


def test_pasted_code_and_launch_decide_global_rank() -> None:
    report, first = _first(PASTE)
    assert first.category == "global_rank_as_device", [f.code for f in report.findings]
    assert first.severity is Severity.ERROR
    assert report.sections["explain"]["launch"]["nnodes"] == 2


def test_options_win_over_the_paste() -> None:
    report, _ = _first(PASTE, launch="torchrun --nproc-per-node 1 train.py")
    assert report.sections["explain"]["launch"]["nproc_per_node"] == 1


def test_prose_only_mig_gets_a_warning_best_guess_with_the_deciding_question() -> None:
    text = "Job fails on our A100 with MIG enabled\n\nTwo ranks cannot start, NCCL error.\n"
    report, first = _first(text)
    assert first.code == "RM645" and first.category == "mig"
    assert first.severity in (Severity.WARNING, Severity.ERROR)
    assert "nvidia-smi -L" in first.detail
    assert report.sections["explain"]["scores"]["mig"] >= 4


def test_uuid_where_an_integer_index_was_expected() -> None:
    log = "ValueError: invalid literal for int() with base 10: 'GPU-52a3a85d-3c55-ca3a-a955-82c69ed360fc'\n"
    _, first = _first(log)
    assert first.category == "visible_devices_mismatch"


def test_framework_spellings_of_the_family() -> None:
    cases = {
        "hipErrorInvalidDevice: HIP_VISIBLE_DEVICES=0,1 and 4 workers\n": (
            "visible_devices_mismatch",
            "oversubscribed",
            "per_process_visible_devices",
        ),
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n": (
            "version_mismatch",
        ),
        "docker: Error response from daemon: could not select device driver with capabilities\n": (
            "container_mapping",
        ),
        "Failed to initialize NVML: Unknown Error\n": ("container_mapping",),
    }
    for text, want in cases.items():
        _, first = _first(text)
        assert first.category in want, (text, first.code)


def test_unrelated_failure_is_not_a_mapping_alarm() -> None:
    text = "DataLoader worker (pid 123) is killed by signal: Killed.\nKeyError: 'label'\n"
    report, first = _first(text)
    alarms = [
        f for f in report.findings if f.category != "other" and f.severity is not Severity.INFO
    ]
    assert not alarms, [f.code for f in alarms]
    assert first.code == "RM003"


def test_nothing_of_the_family_is_nothing_recognised() -> None:
    _, first = _first("hello world\nall good\n")
    assert first.code == "RM003"


def test_catalogue_is_data_with_facts() -> None:
    ids = [s.id for s in SIGNALS]
    assert len(ids) == len(set(ids))
    for sig in SIGNALS:
        assert sig.fact, sig.id
        assert "reference/" in sig.fact or "https://" in sig.fact or sig.framework, sig.id
        for cat, weight in sig.supports:
            assert cat in CATEGORIES, (sig.id, cat)
            assert -10 <= weight <= 10
        assert sig.where <= {"log", "prose", "code", "shell", "config", "env"}


def test_nccl_24_init_lines_without_bus_id_map_ranks(tmp_path: Path) -> None:
    log = tmp_path / "old.log"
    log.write_text(
        "n1:1:2 [0] NCCL INFO comm 0x7f01 rank 0 nranks 2 cudaDev 0 nvmlDev 0 - Init COMPLETE\n"
        "n1:1:3 [1] NCCL INFO comm 0x7f02 rank 1 nranks 2 cudaDev 1 nvmlDev 1 - Init COMPLETE\n"
    )
    report = explain_files([log])
    got = [(p.rank, p.node, p.cuda_index, p.nvml_index) for p in report.placements]
    assert got == [(0, "n1", 0, 0), (1, "n1", 1, 1)]


def test_ranks_only_in_a_warn_get_a_placement_and_the_html_map(tmp_path: Path) -> None:
    log = tmp_path / "dup.log"
    log.write_text(
        "ws-01:1:2 [0] init.cc:904 NCCL WARN Duplicate GPU detected : rank 4 and rank 0 both on "
        "CUDA device 4f000\n"
    )
    report = explain_files([log])
    assert sorted((p.rank, p.node, p.pci_bus_id) for p in report.placements) == [
        (0, "ws-01", "0000:4F:00.0"),
        (4, "ws-01", "0000:4F:00.0"),
    ]
    html = tmp_path / "map.html"
    run = subprocess.run(
        [sys.executable, "-m", "rankmap", "explain", str(log), "--html", str(html), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 1, run.stderr
    assert json.loads(run.stdout)["schema"] == "rankmap/1"
    assert "0000:4F:00.0" in html.read_text()


def test_whole_paste_on_stdin_keeps_the_contract() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "rankmap", "explain", "-", "--json"],
        input=PASTE,
        capture_output=True,
        text=True,
        check=False,
    )
    doc = json.loads(run.stdout)
    assert doc["schema"] == "rankmap/1" and doc["command"] == "explain"
    assert run.returncode == (1 if doc["verdict"] == "error" else 0)
    assert "scores" in doc["explain"] and "segments" in doc["explain"]


_TEXT = st.lists(
    st.sampled_from(
        list("abc XYZ_=$#>`|-:.,()[]{}'\"\n\t0123456789") + ["```", "$ ", "GPU", "MIG"]
    ),
    max_size=200,
).map("".join)


@settings(max_examples=150, deadline=None)
@given(_TEXT)
def test_document_readers_never_crash(text: str) -> None:
    start = time.monotonic()
    segs = split_document(text)
    assert all(s.kind for s in segs)
    read_document(text)
    assert time.monotonic() - start < 2.0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "```python\n",
                "```\n",
                "$ torchrun --nproc-per-node 8 x.py\n",
                "export CUDA_VISIBLE_DEVICES=0,1\n",
                "RuntimeError: CUDA error: invalid device ordinal\n",
                "MIG enabled on the node\n",
                "torch.cuda.set_device(rank)\n",
                "num_processes: 4\n",
                SMI,
                "random words here\n",
            ]
        ),
        max_size=12,
    )
)
def test_explain_on_pasted_mixtures_never_crashes(parts: list[str]) -> None:
    start = time.monotonic()
    report, first = _first("".join(parts))
    assert first.category in CATEGORIES
    assert time.monotonic() - start < 10.0


# One line (written for this test) per signal that the signal must recognise; the prefilter
# keys must let every one through.
EXAMPLES = {
    "fabric-manager-not-ready": "RuntimeError: CUDA error: system not yet initialized",
    "hip-invalid-device": "hipErrorInvalidDevice",
    "xla-invalid-device": "CUDA_ERROR_INVALID_DEVICE: invalid device ordinal",
    "uuid-as-int": "ValueError: invalid literal for int() with base 10: 'MIG-1234abcd-1'",
    "no-cuda-device": "RuntimeError: No CUDA GPUs are available",
    "cvd-ignored": "CUDA_VISIBLE_DEVICES=1 is ignored, it still runs on GPU 0",
    "device-count-wrong": "torch.cuda.device_count() returns 1",
    "hip-visible": "ROCR_VISIBLE_DEVICES=0,1",
    "tf-visible-list": "gpu_options.visible_device_list = '1'",
    "device-order": "export CUDA_DEVICE_ORDER=PCI_BUS_ID",
    "mig-profile": "nvidia.com/mig-1g.10gb: 1",
    "mig-mode": "MIG mode is enabled on GPU 0",
    "k8s-gpu-resource": "nvidia.com/gpu: 2",
    "docker-daemon": "docker: Error response from daemon: could not select device driver",
    "docker-gpus": "docker run --gpus all image",
    "privileged": "securityContext: privileged: true",
    "nvml-unknown": "Failed to initialize NVML: Unknown Error",
    "same-hostname": "both pods have the same hostname",
    "boot-id": "NCCL_HOSTID=abc",
    "two-pods-one-node": "two pods on the same node",
    "p2p-ipc": "NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P/IPC",
    "gpus-per-task": "srun --gpus-per-task=1 python x.py",
    "ray": "(RayWorkerWrapper pid=1) ERROR",
    "dask-cuda": "cluster = LocalCUDACluster()",
    "jax-distributed": "jax.distributed.initialize(local_device_ids=[0])",
    "rank-as-device-code": "torch.cuda.set_device(args.rank)",
    "rank-not-local": "it uses the global rank instead of the local rank",
    "multi-node": "training on two nodes",
    "all-on-gpu0": "all processes allocate memory on GPU 0",
    "cuda-no-index-code": "x = x.to('cuda')",
    "torch-load-no-map": "state = torch.load(path)",
    "same-gpu": "both processes use the same GPU",
    "same-local-rank": "local_rank is 0 on both processes",
    "more-procs-than-gpus": "more processes than GPUs",
    "unrecognized-args": "train.py: error: unrecognized arguments: --local_rank=0",
    "no-kernel-image": "CUDA error: no kernel image is available for execution on the device",
    "driver-too-old": "The NVIDIA driver on your system is too old (found version 10010)",
    "cudnn": "Loaded runtime CuDNN library: 8.0.4 but source was compiled with: 8.1.0",
    "upgraded-driver": "it broke after upgrading the driver",
    "peer-access": "cudaErrorPeerAccessUnsupported: peer access is not supported",
    "custom-allreduce": "disable_custom_all_reduce=True",
    "iommu": "add iommu=pt to the kernel command line",
    "cuda-ipc": "cudaIpcOpenMemHandle failed: invalid resource handle",
    "nvshmem": "nvshmem init failed",
    "hang-first-collective": "the job hangs at the first all_reduce",
    "nccl-generic-error": "NCCL WARN Cuda failure 'invalid argument'",
    # signals of session 6
    "nvml-vs-cuda-index": "the NVML vs PyTorch indexing of visible devices",
    "cvd-before-import": "set CUDA_VISIBLE_DEVICES before importing torch",
    "host-network": "docker run --network host image",
    "bare-rank-as-device": "torch.cuda.set_device(rank)",
    "undefined-gpu-symbol": "libtorch_cuda.so: undefined symbol: ncclCommRegister",
    "nccl-config-undef": "Invalid config blocking attribute value -2147483648",
    "p2p-path-broken": "copies from one GPU to another GPU return corrupted data",
    "outside-network-words": "the ssh connection fails between the nodes",
    # session 8
    "named-symbol-not-found": "RuntimeError: CUDA error: named symbol not found",
}


def test_every_signal_has_prefilter_keys_that_let_its_matches_through() -> None:
    from rankmap.explain.catalogue import KEYS
    from rankmap.explain.docread import _search

    assert set(KEYS) == {s.id for s in SIGNALS}
    by_id = {s.id: s for s in SIGNALS}
    for sid, line in EXAMPLES.items():
        sig = by_id[sid]
        assert sig.pattern.search(line), sid
        assert any(k in line.lower() for k in sig.keys), sid
        text = "noise line\n" * 50 + line + "\n" + "more noise\n" * 50
        assert _search(sig, text, text.lower()), sid


def test_a_mention_is_prose_and_a_decorator_is_code() -> None:
    from rankmap.explain.document import split_document

    mention = "@maintainer I checked, and two processes run on each GPU of the box\n"
    assert [s.kind for s in split_document(mention)] == ["prose"]
    decorator = "@ray.remote(num_gpus=1)\ndef work():\n    return 1\n"
    assert [s.kind for s in split_document(decorator)] == ["code"]
