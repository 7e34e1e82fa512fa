"""Two "nodes" on one kernel: separate network + UTS namespaces joined by a veth pair, one
``torchrun --nnodes 2 --rdzv-backend c10d`` agent in each. Needs root and ``ip``; skips otherwise.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from probe_helpers import base_env, job_timeout

from rankmap.inventory import builtin_profiles  # noqa: F401 - package data is importable

pytestmark = [pytest.mark.torch, pytest.mark.netns, pytest.mark.usefixtures("need_torch")]

PROFILE = Path(__file__).resolve().parents[2] / "src/rankmap/profiles/workstation-4gpu.json"


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


@dataclass
class Pair:
    """Two network namespaces ``a``/``b`` with addresses ``addr_a``/``addr_b``."""

    a: str
    b: str
    addr_a: str
    addr_b: str


@pytest.fixture
def netns_pair() -> Iterator[Pair]:
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    if not shutil.which("ip") or not shutil.which("unshare"):
        pytest.skip("`ip` (iproute2) and `unshare` are needed")
    tag = f"{os.getpid() % 10000}{random.randint(0, 99)}"
    net = random.randint(1, 250)
    pair = Pair(f"rmA{tag}", f"rmB{tag}", f"10.233.{net}.1", f"10.233.{net}.2")
    created: list[str] = []
    try:
        for ns in (pair.a, pair.b):
            _ip("netns", "add", ns)
            created.append(ns)
            _ip("-n", ns, "link", "set", "lo", "up")
        _ip("link", "add", f"va{tag}", "netns", pair.a, "type", "veth", "peer", "name",
            f"vb{tag}", "netns", pair.b)  # fmt: skip
        for ns, dev, addr in ((pair.a, f"va{tag}", pair.addr_a), (pair.b, f"vb{tag}", pair.addr_b)):
            _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
    except (subprocess.CalledProcessError, OSError) as exc:
        for ns in created:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        pytest.skip(f"cannot create network namespaces here: {exc}")
    try:
        yield pair
    finally:
        for ns in created:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
            shutil.rmtree(Path("/etc/netns") / ns, ignore_errors=True)


def _hosts_file(ns: str, addr: str, hostname: str) -> None:
    # `ip netns exec` bind-mounts /etc/netns/<ns>/* over /etc: the node resolves its own name
    # (torchrun's c10d rendezvous calls getaddrinfo(gethostname())).
    folder = Path("/etc/netns") / ns
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hosts").write_text(f"127.0.0.1 localhost\n{addr} {hostname}\n")


def _profile(tmp: Path, name: str, hostname: str, boot_id: str | None) -> Path:
    doc: dict[str, Any] = json.loads(PROFILE.read_text())
    host = doc["hosts"][0]
    host["hostname"] = hostname
    host["identity"] = {"hostname": hostname, "boot_id": boot_id} if boot_id else {}
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(doc))
    return path


def _node(pair: Pair, ns: str, addr: str, hostname: str, env: Mapping[str, str], port: int):
    launch = [
        sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "2",
        "--rdzv-backend", "c10d", "--rdzv-endpoint", f"{pair.addr_a}:{port}", "--rdzv-id",
        "rmtest", "--local-addr", addr, "-m", "rankmap", "probe", "--timeout", "60", "--json",
    ]  # fmt: skip
    inner = f"hostname {hostname} && exec " + " ".join(launch)
    argv = ["ip", "netns", "exec", ns, "unshare", "--uts", "sh", "-c", inner]
    return subprocess.Popen(
        argv,
        env=dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _two_nodes(
    pair: Pair, tmp: Path, hostnames: tuple[str, str], boot_ids: tuple[str | None, str | None],
    extra: Mapping[str, str] | None = None,
) -> tuple[dict[str, Any], list[int]]:  # fmt: skip
    port = random.randint(20000, 30000)
    procs = []
    for i, (ns, addr) in enumerate(((pair.a, pair.addr_a), (pair.b, pair.addr_b))):
        profile = _profile(tmp, f"node{i}", hostnames[i], boot_ids[i])
        env = base_env(RANKMAP_MACHINE=str(profile), **(extra or {}))
        _hosts_file(ns, addr, hostnames[i])
        procs.append(_node(pair, ns, addr, hostnames[i], env, port))
    outs = []
    # two agents and four workers load torch; the rendezvous and the probe itself are quick
    budget = job_timeout(6, work=90.0)
    for p in procs:
        try:
            out, err = p.communicate(timeout=budget)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
        outs.append((p.returncode, out, err))
    docs = [o[1] for o in outs if '"schema"' in o[1]]
    assert len(docs) == 1, [o[2][-1500:] for o in outs]
    text = docs[0]
    return json.loads(text[text.index("{") : text.rindex("}") + 1]), [o[0] for o in outs]


def test_distinct_hostnames_are_two_nodes(netns_pair: Pair, tmp_path: Path) -> None:
    doc, statuses = _two_nodes(netns_pair, tmp_path, ("node-a", "node-b"), (None, None))
    assert {n["hostname"] for n in doc["nodes"]} == {"node-a", "node-b"}
    assert sorted(n["count"] for n in doc["nodes"]) == [2, 2]
    codes = {f["code"] for f in doc["findings"]}
    assert doc["verdict"] != "error", doc["findings"]
    assert "RM103" not in codes  # same profile GPUs, but two NCCL hosts
    assert "RM803" in codes  # one kernel (one boot_id) shown as two NCCL hosts: true here
    assert statuses == [0, 0]


def test_same_hostname_different_boot_ids(netns_pair: Pair, tmp_path: Path) -> None:
    boots = ("0b0b0b0b-1111-4111-8111-111111111111", "0c0c0c0c-2222-4222-8222-222222222222")
    doc, _ = _two_nodes(netns_pair, tmp_path, ("twin", "twin"), boots)
    assert {n["hostname"] for n in doc["nodes"]} == {"twin"}
    assert len(doc["nodes"]) == 2
    assert {n["node"] for n in doc["nodes"]} == {"twin#0b0b0b0b", "twin#0c0c0c0c"}
    codes = {f["code"] for f in doc["findings"]}
    assert "RM802" in codes
    assert "RM103" not in codes


def test_same_nccl_hostid_merges_two_machines(netns_pair: Pair, tmp_path: Path) -> None:
    doc, statuses = _two_nodes(
        netns_pair, tmp_path, ("node-a", "node-b"), (None, None), {"NCCL_HOSTID": "cluster"}
    )
    rm801 = [f for f in doc["findings"] if f["code"] == "RM801"]
    assert rm801 and rm801[0]["severity"] == "error"
    assert sorted(rm801[0]["hosts"]) == ["node-a", "node-b"]
    assert rm801[0]["ranks"] == [0, 1, 2, 3]
    assert doc["verdict"] == "error"
    assert 0 not in statuses
