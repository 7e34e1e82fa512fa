"""Fuzz targets: every parser of untrusted input, each with a hypothesis strategy of its input.

Shared by the suite (tests/fuzz/test_fuzz_parsers.py: a small profile) and the benchmark
(benchmarks/fuzz_parsers.py: 2,000 examples per parser, crashes counted). Inputs are mutations
of seeds - tool output and logs kept as test data, records rankmap writes itself, shapes written
for these tests - plus fragments known to hurt parsers (huge numbers, deep nesting, control and
non-ASCII characters). A target passes when it returns or raises :class:`rankmap.RankMapError`
(one line for the user, exit 2/3); anything else is a crash.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

DATA = Path(__file__).parents[1] / "data"
PROFILES = Path(__file__).parents[2] / "src" / "rankmap" / "profiles"

HURTFUL = [
    "9" * 5000,  # beyond Python's 4,300-digit int() limit
    "99999999999999999999",
    "-1",
    "0",
    "1e309",
    "nan",
    "inf",
    "0x1f",
    "１２",  # full-width digits: str.isdigit() is True, int() accepts them
    "٣",
    "\x00",
    "\x1b[31m",
    "\ufeff",
    "\u202e",
    "'",
    '"',
    "$((1<<62))",
    "${X:-",
    "{0..3}",
    "[" * 50,
    "{" * 50,
    ",,,",
    "GPU-",
    "MIG-",
    "0000:zz:00.0",
    " ",
    "\t",
    "\n",
]
hurtful = st.sampled_from(HURTFUL)
short_text = st.text(max_size=12)
json_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    short_text,
    hurtful,
)
json_value = st.recursive(
    json_scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(short_text, inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def mutated_text(draw: st.DrawFn, seeds: list[str], max_edits: int = 4) -> str:
    """A seed with a few edits: splice in hurtful fragments, cut, duplicate, swap digit runs."""
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(0, max_edits))):
        if not text:
            text = draw(hurtful)
            continue
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 40)))
        edit = draw(st.sampled_from(["insert", "replace", "cut", "dup", "text"]))
        if edit == "insert":
            text = text[:i] + draw(hurtful) + text[i:]
        elif edit == "replace":
            text = text[:i] + draw(hurtful) + text[j:]
        elif edit == "cut":
            text = text[:i] + text[j:]
        elif edit == "dup":
            text = text[:j] + text[i:j] * draw(st.integers(2, 5)) + text[j:]
        else:
            text = text[:i] + draw(st.text(max_size=8)) + text[j:]
    return text


@st.composite
def mutated_json(draw: st.DrawFn, seeds: list[Any], max_edits: int = 3) -> Any:
    """A JSON document with values at random places replaced (or keys dropped)."""
    doc = json.loads(json.dumps(draw(st.sampled_from(seeds))))
    for _ in range(draw(st.integers(1, max_edits))):
        node, parent, key = doc, None, None
        for _depth in range(draw(st.integers(0, 6))):
            if isinstance(node, dict) and node:
                key = draw(st.sampled_from(sorted(node)))
            elif isinstance(node, list) and node:
                key = draw(st.integers(0, len(node) - 1))
            else:
                break
            parent, node = node, node[key]
        value = draw(json_value)
        if parent is None:
            doc = value
        elif isinstance(parent, dict) and draw(st.booleans()) and draw(st.booleans()):
            del parent[key]
        else:
            parent[key] = value
    return doc


def _lines_of(paths: list[Path], limit: int = 400) -> list[str]:
    out: list[str] = []
    for p in paths:
        out += p.read_text(errors="replace").splitlines()[:limit]
    return [x for x in out if x.strip()]


def _chunks(lines: list[str], size: int = 12) -> list[str]:
    return ["\n".join(lines[i : i + size]) for i in range(0, len(lines), size)]


@dataclass(frozen=True)
class Target:
    """One parser: its input strategy and how to feed it one example."""

    name: str
    strategy: st.SearchStrategy[Any]
    run: Callable[[Any], object]


# -- launchers ---------------------------------------------------------------------------------

LAUNCH_FLAGS = {
    "torchrun": ["--nproc-per-node", "--nproc_per_node", "--nnodes", "--node-rank",
                 "--master-port", "--master-addr", "--standalone", "--rdzv-endpoint",
                 "--local-ranks-filter", "--max-restarts", "-m", "--no-python"],
    "accelerate": ["launch", "--num_processes", "--num_machines", "--machine_rank",
                   "--multi_gpu", "--gpu_ids", "--main_process_port", "--config_file", "-m"],
    "deepspeed": ["--num_gpus", "--num_nodes", "--include", "--exclude", "--master_port",
                  "--hostfile", "--localhost", "--force_multi", "--launcher"],
    "srun": ["-n", "-N", "--ntasks", "--ntasks-per-node", "--gpus-per-task", "--gres",
             "--gpus", "--gpus-per-node", "--gpu-bind", "--export", "--cpus-per-task", "-l"],
    "mpirun": ["-np", "-n", "-H", "--host", "-x", "--map-by", "-ppn", "--npernode", "-N",
               "--oversubscribe", "--bind-to", "mpirun"],
    "horovodrun": ["-np", "--num-proc", "-H", "--hosts", "--hostfile", "--gloo", "--mpi",
                   "--start-timeout", "--verbose", "--network-interface", "-p", "--mpi-args"],
}  # fmt: skip
SMALL_INT = st.integers(-2, 64).map(str)
VALUES = st.one_of(SMALL_INT, hurtful, short_text, st.sampled_from(["gpu:8", "0,1", "all"]))


def _launch_argv(launcher: str) -> st.SearchStrategy[list[str]]:
    flags = [f for f in LAUNCH_FLAGS[launcher] if f != "launch"]
    pair = st.tuples(st.sampled_from(flags), VALUES, st.booleans()).map(
        lambda t: [f"{t[0]}={t[1]}"] if t[2] else [t[0], t[1]]
    )
    options = st.lists(st.one_of(pair, pair, st.sampled_from(flags).map(lambda f: [f])), max_size=6)
    head = ["accelerate", "launch"] if launcher == "accelerate" else [launcher]
    tail = st.sampled_from(
        [
            ["train.py"],
            ["python", "train.py"],
            ["-m", "pkg"],
            [],
            # a shell per task (launchers/task_shell.py)
            ["bash", "-c", "LOCAL_RANK=$SLURM_LOCALID python train.py --r ${PMI_RANK:-0}"],
            [
                "sh",
                "-lc",
                "export CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK; exec python t.py",
            ],
            ["bash", "-c"],
            ["./wrap.sh"],
            ["./wrap.sh", "python", "train.py"],
            [
                "docker",
                "run",
                "--gpus",
                '"device=4,5"',
                "-e",
                "CUDA_VISIBLE_DEVICES=4",
                "img",
                "torchrun",
                "--nproc_per_node",
                "2",
                "t.py",
            ],  # fmt: skip
            ["docker", "run", "--gpus", "9" * 40, "img", "python", "t.py"],
        ]
    )
    return st.tuples(options, tail).map(lambda t: [*head, *sum(t[0], []), *t[1]])


def _check(argv: list[str]) -> object:
    from rankmap.check.engine import check_launch
    from rankmap.inventory import load_machine

    return check_launch(argv, machines=load_machine("dgx-h100"), env={}, cwd=Path("/nonexistent"))


SHELL_SEEDS = [
    p.read_text() for p in sorted((DATA / "check").glob("*.s*")) if p.suffix in (".sh", ".sbatch")
] + [
    "for i in 0 1 2 3; do\n  CUDA_VISIBLE_DEVICES=$i torchrun --nproc-per-node 1 t.py &\ndone\n",
    "N=4\nfor ((i=0; i<N; i++)); do\n  RANK=$i python t.py &\ndone\nwait\n",
    "export X=$((2*3))\nsrun -n $X python t.py\n",
    "python prep.py > p.log 2>&1\ntorchrun --nnodes 2 --node_rank 1 t.py &> t.log &\nwait\n",
    "for i in 0 1; do RANK=$i horovodrun -np 2 python t.py 2>&1 | tee l$i & done\n",
    "srun -n 4 bash -lc 'export LOCAL_RANK=${SLURM_LOCALID:-0}; exec python t.py' &> l.log\n",
    "CUDA_VISIBLE_DEVICES=0,1 torchrun --nnodes 2 --node_rank 0 --nproc_per_node 2 t.py &\n"
    "torchrun --nnodes 2 --node_rank 1 --nproc_per_node 2 t.py &\nwait\n",
    # session 15's shapes: seq over variables and arithmetic, count-downs, host names in quotes
    "G=(0 1 2 3)\nfor i in $(seq 0 $((${#G[@]}-1))); do\n  python t.py --rank $i --world_size 4 &\n"
    "done\nfor j in $(seq 3 -1 0); do echo $j; done\nwait\n",
    "srun bash -c 'torchrun --master_addr=$(hostname) --node_rank=$SLURM_NODEID t.py'\n"
    'srun bash -c "torchrun --master_addr=`hostname -s` t.py"\n',
]


def _shell(text: str) -> object:
    from rankmap.launchers.shell import parse_shell

    return parse_shell(text, "fuzz.sh", {})


# -- visibility, envspec ---------------------------------------------------------------------------

CVD = st.lists(
    st.one_of(SMALL_INT, hurtful, st.sampled_from(["GPU-5d09", "MIG-1", "GPU-", " 1", "-1"])),
    max_size=6,
).map(",".join)


def _visible(args: tuple[str, str | None]) -> object:
    from rankmap.inventory import load_machine
    from rankmap.visibility import resolve_visible

    cvd, order = args
    env = {"CUDA_VISIBLE_DEVICES": cvd}
    if order is not None:
        env["CUDA_DEVICE_ORDER"] = order
    return resolve_visible(load_machine("a100-mig")[0], env)


def _envspec(items: list[str]) -> object:
    from rankmap.envspec import parse_env_assignments

    return parse_env_assignments(items)


# -- explain --------------------------------------------------------------------------------------

LOG_SEEDS = _chunks(_lines_of(sorted((DATA / "explain" / "cases").glob("*.log"))[:40], 120))


def _explain(text: str) -> object:
    from rankmap.adapters.local import explain_files

    return explain_files([Path("-")], stdin=io.BytesIO(text.encode("utf-8", "surrogatepass")))


_FENCE = "`" * 3
PASTE_SEEDS = [
    "Job hangs at init_process_group, not using docker\n\nno MIG on these GPUs\n",
    f"{_FENCE}yaml\nspec:\n  containers:\n  - env:\n    - name: NVIDIA_VISIBLE_DEVICES\n"
    f"      value: '0,1'\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n{_FENCE}\n",
    "- distributed_type: MULTI_GPU\n- num_processes: 8\n- gpu_ids: 0,1\nworker-1 slots=8\n",
    "Driver Version: 470.82.01 CUDA Version: 11.4\ntorch 2.1.0+cu121\nNCCL version 2.18.1\n"
    "NCCL version 2.14.3\nCUDA_VISIBLE_DEVICES set after import torch\n",
    "RuntimeError: CUDA error: invalid device ordinal\nhipErrorInvalidDevice\n"
    "Detected CUDA_VISIBLE_DEVICES=1 but ignoring it\n--gpus-per-task=1 cuIpcOpenMemHandle\n",
    "# All pods get rank 0\n\n2. If your question is about docker, did you read the doc?\nThe batch "
    "system sets CUDA_VISIBLE_DEVICES per task\nbut 2 MPI processes but only 1 GPU, ranks != GPUs\n",
    "KeyError: 'SLURM_PROCID'\n>> MPI run (myId=0, numprocs=1)\nAssertion failed: mpiSize == tp * pp\n"
    "OSError: [Errno 30] Read-only file system\nThe device index is out of range. It must be in "
    "[0, 6), but got 11.\nNCCL error: unhandled cuda error\n",
    # session 16: a command block under a line that names its machine, an assignment that a
    # full-width sentence follows, DeepSpeed's MPI discovery, a title that starts with a launcher
    "Node A (10.0.0.1):\n    torchrun --nnodes=2 --node_rank=0 t.py\nNode B (10.0.0.2):\n"
    "    torchrun --nnodes=2 --node_rank=0 t.py\n",
    "export CUDA_VISIBLE_DEVICE=5，设置了5号卡，但还是跑在0号卡上，2号卡是空的\n"
    "Discovered MPI settings of world_rank=9, local_rank=9, world_size=16, master_addr=a\n",
    "torchrun in docker: ranks 1-3 crash\nDuplicate GPU detected : rank 0 and rank 1 both on "
    "CUDA device 1a000\nonly GPU=0 is filled, nothing on GPU 3\n",
    # session 18: a renumbering question, words after a script, a CSV query table, horovodrun
    # and repeated-host prefixes, a pod's MIG request
    'export CUDA_VISIBLE_DEVICES="5,6"\nit only uses GPU:0 and GPU:1, cuda:0\n**_gpu_ids: 3,4_**\n'
    "torchrun --nproc_per_node=2 t.py on one box -- it hangs (procs on GPU 0)\n",
    "index, name, pci.bus_id\n0, NVIDIA L4, 00000000:01:00.0\n[2]<stderr>:box:1:2 [0] NCCL WARN "
    "x\nnodeA: nodeA:3:4 [0] NCCL INFO comm 0x1 rank 0\nnvidia.com/mig-3g.20gb: 2\n",
    # session 19: a dotted call on its own line, a Windows site-packages frame, a Linux host, a
    # vLLM server without a parallel size, DALI's shard assert, PyTorch's device-count assert
    "jax.distributed.initialize(num_processes=8, process_id=int(os.environ['SLURM_LOCALID']))\n"
    '  File "C:\\\\a\\\\b\\\\site-packages\\\\torch\\\\x.py", line 1\nUbuntu 22.04\n'
    "RuntimeError: Distributed package doesn't have NCCL built in\n",
    "CUDA_VISIBLE_DEVICES=0,1,2,3 python -m vllm.entrypoints.openai.api_server --model m\n"
    'Assert on "num_shards_ > shard_id_" failed: num_shards needs to be greater than shard_id\n'
    "device >= 0 && device < num_gpus INTERNAL ASSERT FAILED device=1, num_gpus=\n"
    "INFO: Added key: store_based_barrier_key:1 to store for rank: 3\n",
    # the read of the session's diff: a Windows path run, a Linux home path, a guard in code,
    # an Ascend list, a JAX process id
    "C:\\a-C:\\a-C:\\a- /home/u/x/site-packages/t.py if hvd.size() == 1:\n"
    "export ASCEND_RT_VISIBLE_DEVICES=0,1\nprocess_id=local_rank)\nonly one of the cards is used\n",
]


def _document(text: str) -> object:
    from rankmap.explain.docread import read_document

    return read_document(text)


def _prefilter(text: str) -> object:
    """The pure-Python multi-literal matcher, twice (the second time on remembered lines)."""
    from rankmap.explain.prefilter import LineSetMatcher

    data = text.encode("utf-8", "surrogatepass")
    m = LineSetMatcher()
    first = m.hits(data)
    if m.hits(data)[0] != first[0]:
        raise AssertionError("remembered lines changed the hits")
    return first


def _named(text: str) -> object:
    from rankmap.explain import named

    lines = text.splitlines()
    return (
        named.devices_in([text]),
        named.failure_ranks(lines),
        named.stated_ranks(lines),
        named.pair_named(lines),
        named.intra_host_ranks(lines),
    )


# -- inventory, profiles, topology --------------------------------------------------------------------

SMI_SEEDS = [p.read_text(errors="replace") for p in sorted((DATA / "smi").iterdir()) if p.is_file()]
PROFILE_SEEDS = [json.loads(p.read_text()) for p in sorted(PROFILES.glob("*.json"))]
TOPO_SEEDS = [
    h["topology"] for d in PROFILE_SEEDS for h in d.get("hosts", []) if isinstance(h, dict) and h.get("topology")
]  # fmt: skip
TOPO_MATRIX = [s for s in SMI_SEEDS if "GPU0" in s and "Legend" in s] or [
    "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV4\t0-7\t0\nGPU1\tNV4\t X \t0-7\t0\n"
]


# what ranks print of themselves, and how versions and launch lines are told (session 15)
PRINTED_SEEDS = [
    "[rank0] HIP_VISIBLE_DEVICES=0 CUDA_VISIBLE_DEVICES=0,1 device_count=1\n"
    "[rank1] HIP_VISIBLE_DEVICES=0 CUDA_VISIBLE_DEVICES=0,1 device_count=1\n",
    "0 using device 0\n1 using device 0\nnode1: nccl=(2, 18, 1)\nvLLM is using nccl==2.20.5\n",
    "(TrainWorker pid=81423) rank=1\nRayTaskError (pid=81423, ip=1.2.3.4) invalid device ordinal\n"
    "srun: error: n1: tasks 1-3: Exited with exit code 1\nsrun: error: n1: task 0: Terminated\n",
    "node A (10.0.0.1): torchrun --nnodes=2 --node_rank=0 t.py\n"
    "horovodrun -np 4 python t.py on a box. I left out the GPU pinning block.\n"
    'resources: limits: nvidia.com/gpu: 1\nCUDA_VISIBLE_DEVICES: "3"\n',
]


def _printed(text: str) -> object:
    from rankmap.explain.printed_lists import (
        printed_device_points,
        printed_list_points,
        rank_devices,
        rank_lists,
    )
    from rankmap.explain.versions import versions_in

    return (
        printed_list_points(rank_lists(text)),
        printed_device_points(rank_devices(text)),
        versions_in(text).nccl,
    )


def _container(options: list[str]) -> object:
    from rankmap.launchers.command import container_env

    return container_env(options)


def _machine_text(text: str) -> object:
    from rankmap.inventory import parse_machine_text

    return parse_machine_text(text, source="fuzz")


def _smi_in_big_log(text: str) -> object:
    """An nvidia-smi printout inside a log big enough to be read in windows."""
    from rankmap.inventory import read_pastes

    noise = "\n".join(f"step {i} on 00000000:{i % 99:02d}:00.0 loss 2.{i}" for i in range(2500))
    return read_pastes(f"{noise}\n{text}\n{noise}")


def _profile(doc: Any) -> object:
    from rankmap.inventory.profile import parse_profile_json

    return parse_profile_json(json.dumps(doc), source="fuzz.json")


def _topology(doc: Any) -> object:
    from rankmap.topology import parse_topology

    return parse_topology(doc)


def _topo_matrix(text: str) -> object:
    from rankmap.inventory.topo_smi import parse_topo_matrix

    return parse_topo_matrix(text)


# -- probe wire ------------------------------------------------------------------------------------


def _probe_parts() -> list[tuple[bytes, bytes, str]]:
    from rankmap.adapters.rank_record import collect_record
    from rankmap.probe.wire import encode

    out = []
    for r in range(4):
        env = {"RANK": str(r), "WORLD_SIZE": "4", "LOCAL_RANK": str(r), "LOCAL_WORLD_SIZE": "4"}
        out.append(encode(collect_record(env, machine="workstation-4gpu")))
    return out


@st.composite
def probe_exchange(draw: st.DrawFn) -> tuple[list[bytes], dict[str, bytes]]:
    """The four records of a healthy job, one or two of them mangled (JSON-level or bytes)."""
    parts = _PARTS or _PARTS.extend(_probe_parts()) or _PARTS
    owns = [own for own, _, _ in parts]
    shared = {digest: blob for _, blob, digest in parts}
    for _ in range(draw(st.integers(1, 2))):
        i = draw(st.integers(0, len(owns) - 1))
        kind = draw(st.sampled_from(["json", "json", "bytes", "shared"]))
        if kind == "json":
            owns[i] = json.dumps(draw(mutated_json([json.loads(parts[i][0])]))).encode()
        elif kind == "bytes":
            raw = parts[i][0].decode()
            owns[i] = draw(mutated_text([raw])).encode("utf-8", "surrogatepass")
            if draw(st.booleans()):
                owns[i] = owns[i][: draw(st.integers(0, len(owns[i])))] + b"\xff\xfe"
        else:
            digest = draw(st.sampled_from(sorted(shared)))
            shared[digest] = json.dumps(draw(mutated_json([json.loads(shared[digest])]))).encode()
    return owns, shared


_PARTS: list[tuple[bytes, bytes, str]] = []


def _probe(args: tuple[list[bytes], dict[str, bytes]]) -> object:
    from rankmap.probe.collate import collate_raw

    owns, shared = args
    report = collate_raw(owns, shared, list(range(len(owns))), world_size=len(owns))
    json.dumps(report.to_dict(), allow_nan=False)  # the rankmap/1 document stays valid JSON
    return report


def _verdict(blob: bytes) -> object:
    from rankmap.probe import _verdict_report

    return _verdict_report(blob, "fuzz")


def _verdict_seed() -> list[str]:
    from rankmap.probe import verdict_payload
    from rankmap.probe.collate import collate_raw

    parts = _probe_parts()
    report = collate_raw([o for o, _, _ in parts], {d: b for _, b, d in parts}, world_size=4)
    return [verdict_payload(report).decode()]


# Byte streams for rankmap's own store server (probe:store-frames): frames of every op with
# keys, counters and values around the limits, a greeting or none, then cut, flipped or padded.
_STORE_ARGS = [b"k", b"rankmap/r/0/call1/rec/1", b"x" * 600, b"\x00" * 8, b"", b"\xff" * 9]


@st.composite
def store_stream(draw: st.DrawFn) -> bytes:
    from rankmap.adapters import store_frames as sf

    arg = st.one_of(st.sampled_from(_STORE_ARGS), st.binary(max_size=24),
                    st.just(b"v" * (sf.VALUE_BYTES + 7)))  # fmt: skip
    frames = [
        sf.frame(
            draw(st.sampled_from([sf.SET, sf.GET, sf.ADD, sf.CHECK, sf.MULTI_GET, 0, 200])),
            draw(st.lists(arg, max_size=4)),
        )  # fmt: skip
        for _ in range(draw(st.integers(1, 6)))
    ]
    head = sf.MAGIC if draw(st.integers(0, 3)) else draw(st.binary(max_size=20))
    stream = bytearray(head + b"".join(frames))
    if draw(st.booleans()):  # the peer goes away in the middle of a frame
        del stream[draw(st.integers(len(head), len(stream))) :]
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(stream)))
        edit = draw(st.sampled_from(["cut", "flip", "insert"]))
        if edit == "cut":
            del stream[at:]
        elif edit == "flip" and at < len(stream):
            stream[at] ^= draw(st.integers(1, 255))
        else:
            stream[at:at] = draw(st.binary(min_size=1, max_size=8))
    return bytes(stream)


_STORE_SERVER: list[Any] = []


def _store_frames(stream: bytes) -> object:
    """Send ``stream`` to a real server, read what it answers, then check it still serves and
    that its budget counts exactly the entries it holds (nothing reserved is left behind)."""
    import socket
    import time

    from rankmap.adapters import store_client
    from rankmap.adapters.store_data import StoreData
    from rankmap.adapters.store_server import StoreServer

    if not _STORE_SERVER:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        _STORE_SERVER.append(StoreServer(port, max_connections=16))
        _STORE_SERVER[0].start()
    server = _STORE_SERVER[0]
    server.data = StoreData(budget=4 * 2**20)
    with socket.create_connection(("127.0.0.1", server.port), timeout=2) as sock:
        try:
            sock.sendall(stream)
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(1 << 16):
                pass
        except OSError:
            pass  # reset by the server: a protocol error closes the connection
    end = time.monotonic() + 5
    while server.connections and time.monotonic() < end:
        time.sleep(0.005)
    data = server.data
    assert not server.connections, "the server never closed the connection"
    assert data.used == sum(data.cost(k, v) for k, v in data.values.items()), data.used
    now = time.monotonic()
    client = store_client.connect("127.0.0.1", server.port, now + 5, now + 5)
    try:
        assert client.add("fuzz/alive", 1) >= 1  # the server's loop survived the stream
    finally:
        client.close()
    return data.used


# Python for the script analysis (check's ast data flow): statements the analysis follows -
# env reads, guards of a name by itself, attributes, helpers with defaults, sinks, rendezvous
# writes, spawn hand-ons - over a few shared names, so cycles (`x = f(x)`, `if x is not None:
# x = ...`, mutual recursion) arise by chance. Shapes written for these tests.
_NAMES = ["x", "y", "local_rank", "args.gpu", "args.local_rank", "device"]
_EXPRS = [
    "int(os.environ['LOCAL_RANK'])",
    "int(os.environ.get('RANK', 0))",
    "None",
    "-1",
    "0",
    "dist.get_rank()",
    "{a} % torch.cuda.device_count()",
    "f'cuda:{{{a}}}'",
    "{a}",
    "f({a})",
    "g({a}, {b})",
    "[{a}, {b}]",
    "{a} if {b} else 0",
    "torch.device('cuda', {a})",
    "os.environ['CUDA_VISIBLE_DEVICES'].split(',')[{a}]",
    "parser.parse_args()",
]
_STMTS = [
    "{a} = {e}",
    "if {a} is not None:\n    {b} = {e}",
    "if 'LOCAL_RANK' in os.environ:\n    {a} = {e}",
    "torch.cuda.set_device({a})",
    "model = DDP(model, device_ids=[{a}])",
    "{a}.to({b})",
    "dist.init_process_group('nccl', rank={a}, world_size={b})",
    "dist.init_process_group('gloo')",
    "os.environ['MASTER_PORT'] = '12345'",
    "os.environ['CUDA_VISIBLE_DEVICES'] = str({a})",
    "mp.spawn(main, nprocs=2)",
    "return {a}",
    "for {a} in range(2):\n    {b} = {e}",
    "try:\n    {a} = {e}\nexcept Exception:\n    {b} = {e}",
    "main()",
    "f({a})",
]


def _filled(draw: st.DrawFn, template: str) -> str:
    a, b = draw(st.sampled_from(_NAMES)), draw(st.sampled_from(_NAMES))
    e = draw(st.sampled_from(_EXPRS)).format(a=a, b=b) if "{e}" in template else ""
    return template.format(a=a, b=b, e=e)


@st.composite
def python_script(draw: st.DrawFn) -> str:
    """A syntactically valid script of the statements above inside a few functions."""
    head = (
        "import os\nimport argparse\nimport torch\nimport torch.distributed as dist\n"
        "import torch.multiprocessing as mp\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--local_rank', type=int, default=-1)\n"
        "args = parser.parse_args()\n"
    )
    blocks = []
    for fn in draw(st.lists(st.sampled_from(["main", "f", "g", "setup"]), min_size=1, max_size=4)):
        params = {"main": "", "f": "a=None", "g": "a, b=0", "setup": "rank=0"}[fn]
        body = [
            _filled(draw, draw(st.sampled_from(_STMTS))) for _ in range(draw(st.integers(1, 6)))
        ]
        indented = "\n".join("    " + line for stmt in body for line in stmt.splitlines())
        blocks.append(f"def {fn}({params}):\n{indented}\n")
    tail = [
        _filled(draw, draw(st.sampled_from(_STMTS[:12]))) for _ in range(draw(st.integers(0, 3)))
    ]
    main = "if __name__ == '__main__':\n    main()\n" if draw(st.booleans()) else ""
    return head + "\n".join(blocks) + "\n".join(tail) + "\n" + main


def _script(source: str) -> object:
    import ast as _ast

    from rankmap.check.script_scan import scan_script

    try:
        _ast.parse(source)
    except SyntaxError:
        return None  # the generator's own slip: not the analysis under test
    sel = scan_script(source, path="train.py")
    assert sel.parse_error is None or "nested" not in sel.parse_error, sel.parse_error
    return sel


def targets() -> list[Target]:
    """Every fuzzed parser, named as the benchmark prints them."""
    launch = [Target(f"launch:{name}", _launch_argv(name), _check) for name in LAUNCH_FLAGS]
    return [
        *launch,
        Target("launch:shell", mutated_text(SHELL_SEEDS), _shell),
        Target("check:script", python_script(), _script),
        Target("visibility:cvd", st.tuples(CVD, st.sampled_from([None, "PCI_BUS_ID", "x"])), _visible),
        Target("envspec", st.lists(st.one_of(short_text, hurtful, mutated_text(["A=1", "HF_TOKEN=x"])), max_size=4), _envspec),
        Target("explain:log", mutated_text(LOG_SEEDS, max_edits=6), _explain),
        Target("explain:document", mutated_text(PASTE_SEEDS, max_edits=6), _document),
        Target("explain:paste", mutated_text(PASTE_SEEDS, max_edits=6), _explain),
        Target("explain:prefilter", mutated_text(LOG_SEEDS, max_edits=6), _prefilter),
        Target("explain:named", mutated_text(LOG_SEEDS + SMI_SEEDS[:4], max_edits=6), _named),
        Target("explain:printed-lists", mutated_text(PRINTED_SEEDS, max_edits=6), _printed),
        Target("launch:container-options", st.lists(st.one_of(VALUES, st.sampled_from(["-e", "--env", "--gpus", "--gpus=all"])), max_size=8), _container),
        Target("inventory:smi", mutated_text(SMI_SEEDS, max_edits=6), _machine_text),
        Target("inventory:smi-window", mutated_text(SMI_SEEDS, max_edits=6), _smi_in_big_log),
        Target("inventory:profile", mutated_json(PROFILE_SEEDS), _profile),
        Target("topology:json", mutated_json(TOPO_SEEDS), _topology),
        Target("topology:smi-matrix", mutated_text(TOPO_MATRIX, max_edits=6), _topo_matrix),
        Target("probe:records", probe_exchange(), _probe),
        Target("probe:store-frames", store_stream(), _store_frames),
        Target("probe:verdict", mutated_text(_verdict_seed()).map(lambda t: t.encode("utf-8", "surrogatepass")), _verdict),
    ]  # fmt: skip


def allowed(exc: BaseException) -> bool:
    """rankmap's own errors are answers; everything else is a crash."""
    from rankmap.errors import RankMapError

    return isinstance(exc, RankMapError)
