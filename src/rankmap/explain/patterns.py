"""Recognisers: one cleaned log line -> typed events.

Every message format comes from the reference files: reference/nccl.md (duplicate-GPU WARN of
every version, Init START/COMPLETE shapes, error strings, socket/bootstrap WARNs, the init.cc line
-> version table), reference/pytorch_nccl.md (DistBackendError wrapper, device-guess warnings),
reference/launchers.md (torchrun, accelerate, DeepSpeed, Slurm, Lightning messages) and
reference/cuda_devices.md (``invalid device ordinal`` forms).

The anchors the reader scans for, and the init.cc line -> NCCL release table, are in
:mod:`rankmap.explain.anchors` (re-exported here).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rankmap.explain.anchors import ANCHORS as ANCHORS  # re-exported
from rankmap.explain.anchors import CORE_ANCHORS as CORE_ANCHORS
from rankmap.explain.anchors import DUPLICATE_LINE_VERSION
from rankmap.explain.anchors import JOIN_ANCHORS as JOIN_ANCHORS
from rankmap.explain.prefix import Prefix, split_messages, strip_prefixes
from rankmap.explain.reader import Line
from rankmap.numbers import int_or_none, saturating_int

# Event kinds a wrapped half cannot produce on its own; a join must produce one of these.
_JOIN_KINDS = frozenset(
    {"duplicate_gpu", "multi_rank_gpu", "init", "nccl_mismatch", "invalid_ordinal"}
    | {"torch_nccl_error"}
)
_QUOTE = re.compile(r"^[>\s]*")


@dataclass(frozen=True)
class Event:
    """One recognised fact of the log. ``kind`` says which fields are meaningful."""

    kind: str
    line: Line
    prefix: Prefix
    ranks: tuple[int, ...] = ()
    bus_id: str | None = None  # NCCL hex form as printed ("4f000") or a PCI spelling
    version: str | None = None
    values: tuple[tuple[str, str], ...] = field(default=())  # kind-specific extra fields

    def get(self, key: str, default: str | None = None) -> str | None:
        """A kind-specific value."""
        for k, v in self.values:
            if k == key:
                return v
        return default

    def geti(self, key: str) -> int | None:
        """A kind-specific integer value (None when absent)."""
        v = self.get(key)
        return int_or_none(v)

    @property
    def host(self) -> str | None:
        """Host from the line's prefix (or a field of the message)."""
        return self.get("host") or self.prefix.host

    @property
    def rank(self) -> int | None:
        """The reporting rank: a message field first, then ``[rankN]:``/mpirun prefixes."""
        r = self.geti("rank")
        return r if r is not None else self.prefix.rank


_R = re.compile  # short alias for the table below

_DUPLICATE = _R(
    r"Duplicate GPU detected\s*:\s*rank (?P<a>\d+) and rank (?P<b>\d+) both on CUDA device"
    r"(?: (?P<bus>[0-9a-fA-F]+))?"
)
_WARN_LOC = _R(r"^(?:(?P<file>[\w./-]+):(?P<line>\d+) )?NCCL WARN ")
_MULTI = _R(r"Multiple Ranks are using the same GPU/Partition")
_INIT = _R(
    r"(?:\[Rank (?P<r0>\d+)\] )?(?:(?P<api>nccl\w+) )?comm (?P<comm>0x[0-9a-fA-F]+|\(nil\)) "
    r"rank (?P<rank>\d+) nranks (?P<nranks>\d+) cudaDev (?P<cuda>\d+)"
    r"(?: nvmlDev (?P<nvml>\d+))?(?: busId (?P<bus>[0-9a-fA-F]+))?"
    r"(?P<rest>.*?)\s*- Init (?P<phase>START|COMPLETE)"
)
_COMMID = _R(r"commId (?P<id>0x[0-9a-fA-F]+)")
_PARENT = _R(r"parent (?P<p>0x[0-9a-fA-F]+|\(nil\))")
_VERSION = _R(r"NCCL version:? (?P<v>\d+\.\d+\.\d+)")
_TORCH_NCCL = _R(
    r"NCCL error in: (?P<where>[^,]+), (?P<err>[^,]+?)(?:, NCCL version (?P<v>[\d.]+))?\s*$"
)
_RESULT = _R(
    r"(?P<code>ncclInvalidUsage|ncclInternalError|ncclUnhandledCudaError|ncclSystemError|"
    r"ncclRemoteError|ncclInvalidArgument)\b"
)
# The same results in other stacks' spelling: ncclGetErrorString's text after XLA's "NCCL operation
# ... failed:" and CuPy's NCCL_ERROR_* names (reference/nccl.md (e), error-code strings).
_RESULT_TEXT = _R(
    r"(?i:NCCL operation \S.{0,200}? failed: (?P<text>invalid usage|invalid argument|internal error|"
    r"unhandled cuda error|unhandled system error)|NCCL_ERROR_(?P<name>INVALID_USAGE|"
    r"INVALID_ARGUMENT|INTERNAL_ERROR|UNHANDLED_CUDA_ERROR|SYSTEM_ERROR)\b)"
)
_RESULT_CODES = {
    "invalid usage": "ncclInvalidUsage",
    "invalid argument": "ncclInvalidArgument",
    "internal error": "ncclInternalError",
    "unhandled cuda error": "ncclUnhandledCudaError",
    "unhandled system error": "ncclSystemError",
}
_RESULT_NAMES = {
    "INVALID_USAGE": "ncclInvalidUsage",
    "INVALID_ARGUMENT": "ncclInvalidArgument",
    "INTERNAL_ERROR": "ncclInternalError",
    "UNHANDLED_CUDA_ERROR": "ncclUnhandledCudaError",
    "SYSTEM_ERROR": "ncclSystemError",
}
_MISMATCH = _R(
    r"Mismatched NCCL version detected\s*:\s*rank (?P<a>\d+) version (?P<va>\d+) rank (?P<b>\d+) "
    r"version (?P<vb>\d+)"
)
# Case-insensitive and tolerant of a doubled letter: people retype the message ("ordinnal").
_ORDINAL = _R(r"(?i:invalid device ordi+n+al)|CUDA_ERROR_INVALID_DEVICE|cudaErrorInvalidDevice")
_ASSERT = _R(r"device >= 0 && device < num_gpus INTERNAL ASSERT FAILED")
_GUESS = _R(
    r"(?:Rank (?P<r>\d+)\]?\s+)?using (?:best-guess )?GPU (?P<gpu>\d+) (?:to perform barrier|as device)"
)
_GUESS_NEW = _R(r"Guessing device ID based on global rank")
_ROOT = _R(r"Root Cause \(first observed failure\)")
_FIELD = _R(r"^(?P<key>time|host|rank|exitcode|error_file|traceback)\s*:\s*(?P<val>.*)$")
_RANK_FIELD = _R(r"^(?P<rank>\d+)(?: \(local_rank: (?P<local>\d+)\))?")
_EXIT_FIELD = _R(r"^(?P<code>-?\d+)(?: \(pid: (?P<pid>\d+)\))?")
_TESTS_DEV = _R(
    r"^#?\s*Rank\s+(?P<rank>\d+)\s+(?:Group\s+\d+\s+)?Pid\s+(?P<pid>\d+) on\s+(?P<host>\S+)\s+"
    r"device\s+(?P<dev>\d+)\s+\[(?P<bus>[^\]]+)\]\s*(?P<name>.*)$"
)
# torchrun's agent: "failed (exitcode: 1) local_rank: 7 (pid: 81) of binary: /usr/bin/python"
_ELASTIC_FAIL = _R(
    r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<local>\d+) \(pid: (?P<pid>\d+)\)"
)
_TESTS_FAIL = _R(r"Test CUDA failure (?P<where>\S+) '(?P<err>[^']+)'")
_CUDA_FAIL = _R(r"Cuda failure (?:(?P<num>\d+) )?'(?P<err>[^']+)'")
# (not Ray's memory monitor, ``ray.exceptions.OutOfMemoryError: Task was killed due to the node
# running low on memory``: host RAM, no GPU; review 59)
_OOM = _R(
    r"CUDA out of memory|(?<!ray\.exceptions\.)OutOfMemoryError(?!: Task was killed due to the node)"
)
_OOM_GPU = _R(r"GPU (?P<gpu>\d+) has a total capacity")
_OOM_PROC = _R(r"Process \d+ has [\d.]+ [GMK]i?B memory in use")
_NO_SLOT = _R(r"No slot '?(?P<slot>[^'\s]*)'? specified on host '?(?P<host>[^'\s]*)'?")
_REQ_GPU = _R(r"You requested gpu(?:s)?: \[(?P<req>[^\]]*)\]")
_HAS_GPU = _R(r"[Bb]ut your machine only has: \[(?P<has>[^\]]*)\]")
_LT_WORLD = _R(r"does not match the world size")
_ACC_IDS = _R(r"Less than two GPU ids were configured")
_UNRECOGNIZED = _R(r"unrecognized arguments: .*--local[-_]rank")
_HOSTID = _R(r"NCCL_HOSTID set by environment to (?P<v>\S+)")
_IFNAME_SET = _R(r"NCCL_SOCKET_IFNAME set (?:by environment )?to (?P<v>\S+)")
_NO_IFACE = _R(
    r"Bootstrap : no socket interface found|NET/Socket : no interface found|"
    r"No usable listening interface found|is neither AF_INET|no NCCL_SOCKET_IFNAME interface"
)
_SOCKET = _R(
    r"socketStartConnect|socketPollConnect|exceeded error retry count|Connection closed by remote"
    r"|connect to \S+ failed"
)
# c10d binding its store to an address this machine does not own (errno 99, EADDRNOTAVAIL)
# (not a loopback or wildcard address: that is the host's address family, not another machine's)
_STORE_FOREIGN = _R(
    r"failed to bind to (?!\[?(?:localhost|127\.[\d.]+|::1?|0\.0\.0\.0)\]?:)\S+ "
    r"\(errno: 99 - Cannot assign requested address\)|"
    # the libuv store's wording (torch >= 2.4): "... failed to listen on any local network
    # address. port: 29500, useIpv6: false, code: -99, name: EADDRNOTAVAIL, ..." (review 60)
    r"failed to listen on any local network address\b.{0,80}\bname: EADDRNOTAVAIL\b"
)
_STORE = _R(
    r"failed to listen on any local network address|client socket has timed out|"
    r"EADDRINUSE|Address already in use|waiting for clients|TCP client failed to connect"
)
# c10d's W-level socket lines ("[W socket.cpp:464] [c10d] The server socket has failed to bind to
# [::]:29500 (errno: 98 - Address already in use).") are attempts it retries on another address;
# a store that cannot be bound or reached ends in an error line ("failed to listen on any local
# network address", "client socket has timed out"), not in a warning
_W_LEVEL = _R(r"^\s*(?:\[rank\d+\]:)?\[W[\d :.]*\S*\.cpp:\d+\]")
_RETRIED = frozenset({"store_error"})
_BOOT_DUP = _R(r"Bootstrap Root : rank (?P<r>\d+) of (?P<n>\d+) ranks has already checked in")
# "Bootstrap : Using eth0:10.0.0.1<0>" (NCCL INFO, every rank): the address a process bootstraps
# from; the first interface of "NET/Socket : Using [0]eth0:10.0.0.1<0> ..." and the out-of-band
# one of "NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>" are its machine's addresses too
_BOOT_IP = _R(
    r"(?P<kind>Bootstrap|NET/Socket|NET/IB)(?: ?: Using | : Using \[0\]| : Using "
    r"[^\n]{0,200}?; OOB )(?P<ifname>[\w.-]+):(?P<ip>[^<\s]+)<"
)
# The last line of a Python traceback: the exception a process stopped with
_PY_EXCEPTION = _R(
    r"^\s*(?:\[rank\d+\]:\s*)?(?P<exc>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)):\s(?P<msg>.{1,200})"
)
_NVML_NF = _R(r"nvmlDeviceGetHandleByPciBusId\(\) failed: Not Found")
# the GPUs Slurm allocated on the node (reference/launchers.md §5: SLURM_GPUS_ON_NODE, SLURM_JOB_GPUS)
_SLURM_GPUS = _R(
    r"\bSLURM_(?:GPUS_ON_NODE=(?P<count>\d{1,4})\b(?!,)|JOB_GPUS=(?P<ids>\d{1,4}(?:,\d{1,4})*)\b)"
)
# (commas between entries only: "CUDA_VISIBLE_DEVICES=0, numactl ..." lists one GPU, review 70)
_CVD = _R(
    r"(?:Setting )?(?:CUDA_VISIBLE_DEVICES|VISIBLE GPUS)[=:]\s*\[?(?P<v>[\w:/-]+(?:,[\w:/-]+)*)"
)
# a process printing Python's view of it: os.environ['CUDA_VISIBLE_DEVICES']='1' (ids only: a
# source line assigning a variable is no value)
_CVD_PY = _R(r"CUDA_VISIBLE_DEVICES['\"]\]\s*[=:]\s*['\"](?P<v>\d+(?:,\d+)*)['\"]")
# Lightning: "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1]" / "initializing ddp: GLOBAL_RANK: 2, MEMBER: 3/4"
_PL_LOCAL = _R(r"^LOCAL_RANK: (?P<local>\d+) ?-")
_PL_GLOBAL = _R(r"GLOBAL_RANK: (?P<rank>\d+), MEMBER: \d+/(?P<world>\d+)")
# torchrun's agent after its rendezvous (torch/distributed/elastic/agent/server/api.py, "Rendezvous
# complete for workers. Result:" / "Starting worker group"): the global ranks of its workers and
# its node's rank ("  global_ranks=[0, 1, 2, 3]", "  group_rank=0"), one block per agent
_AGENT_RANKS = _R(
    r"(?:^|\s)(?P<key>global_ranks|group_rank|restart_count)=\[?(?P<list>\d+(?:,\s*\d+)*)\]?\s*$"
)
# torch's store-based barrier of init_process_group (torch/distributed/distributed_c10d.py,
# _store_based_barrier): "Timed out initializing process group in store based barrier on rank:
# 0, for key: store_based_barrier_key:1 (world_size=8, worker_count=16, timeout=0:30:00)"; every
# process that joins adds one to worker_count
_BARRIER = _R(
    r"store based barrier\b.*\(world_size=(?P<world>\d+), (?:worker_count|num_workers_joined)="
    r"(?P<count>\d+)"
)  # torch 1.x says worker_count, torch 2.x num_workers_joined
_DEVICE_BANNER = _R(r"^Device: cuda:(?P<dev>\d+)")
_NUM_PROC = _R(r"^Num processes: (?P<n>\d+)")
_ACC_ENV = _R(r"Distributed environment: (?P<t>\w+)")
_MIG_LINE = _R(r"MIG[- ](?:\d+g\.\d+gb|GPU-|[0-9a-f]{8}-)")
# Context pasted into the log: a GPU row of the default nvidia-smi table
# ("|   0  NVIDIA A100 ...   Off |   00000000:31:00.0 Off |") and the launch command line, after a
# shell prompt ("user@host:~$ ", "(env) ... $ ", "+ " of bash -x, "!" of a notebook) or alone.
_SMI_ROW = _R(
    r"^\|\s*(?P<idx>\d{1,3})\s+\S.*?\|\s*(?P<bus>[0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s"
)
_LAUNCH_ECHO = _R(
    r"(?:^|[$#>]\s+|^\+\s+|^!)(?P<cmd>(?:[A-Z_][A-Z0-9_]*=\S+\s+)*"
    r"(?:\S*/)?(?:torchrun|python[\d.]*\s+-m\s+torch\.distributed\.(?:launch|run)|accelerate\s+launch"
    r"|deepspeed|srun|mpirun|mpiexec)\s+-.*)$"
)


def _ev(kind: str, line: Line, pre: Prefix, **kw: object) -> Event:
    values = tuple((k, str(v)) for k, v in kw.pop("values", {}).items() if v is not None)  # type: ignore[attr-defined]
    return Event(kind, line, pre, values=values, **kw)  # type: ignore[arg-type]


def _nccl_events(msg: str, line: Line, pre: Prefix) -> list[Event]:
    out: list[Event] = []
    m = _DUPLICATE.search(msg)
    if m:
        loc = _WARN_LOC.match(msg)
        version = None
        if loc and loc.group("file") and loc.group("file").endswith("init.cc"):
            version = DUPLICATE_LINE_VERSION.get(saturating_int(loc.group("line")))
        out.append(
            _ev(
                "duplicate_gpu",
                line,
                pre,
                ranks=(saturating_int(m.group("a")), saturating_int(m.group("b"))),
                bus_id=(m.group("bus") or "").lower() or None,
                version=version,
                values={"rank": m.group("a"), "init_line": loc.group("line") if loc else None},
            )
        )
        return out
    if _MULTI.search(msg):
        return [_ev("multi_rank_gpu", line, pre, version="2.30+")]
    m = _INIT.search(msg)
    if m:
        rest = m.group("rest")
        cm = _COMMID.search(rest)
        pm = _PARENT.search(rest)
        vals = {
            "rank": m.group("rank"),
            "nranks": m.group("nranks"),
            "cuda": m.group("cuda"),
            "nvml": m.group("nvml"),
            "phase": m.group("phase"),
            "comm": m.group("comm"),
            "commId": cm.group("id") if cm else None,
            "parent": pm.group("p") if pm else None,
            "api": m.group("api"),
        }
        bus = m.group("bus")  # NCCL <= 2.6 printed no busId (cudaDev/nvmlDev only)
        return [_ev("init", line, pre, bus_id=bus.lower() if bus else None, values=vals)]
    m = _MISMATCH.search(msg)
    if m:
        vals = {"va": m.group("va"), "vb": m.group("vb")}
        return [
            _ev(
                "nccl_mismatch",
                line,
                pre,
                ranks=(saturating_int(m.group("a")), saturating_int(m.group("b"))),
                values=vals,
            )
        ]
    m = _CUDA_FAIL.search(msg)
    if m:
        err = m.group("err")
        kind = "invalid_ordinal" if "invalid device ordinal" in err else "cuda_failure"
        if "out of memory" in err:
            kind = "oom"
        return [_ev(kind, line, pre, values={"form": "nccl", "err": err})]
    return out


def _root_cause_field(msg: str, line: Line, pre: Prefix) -> Event | None:
    m = _FIELD.match(msg)
    if not m:
        return None
    key, val = m.group("key"), m.group("val").strip()
    vals: dict[str, object] = {"key": key, "val": val}
    if key == "rank":
        rm = _RANK_FIELD.match(val)
        if not rm:
            return None
        vals.update(rank=rm.group("rank"), local_rank=rm.group("local"))
    elif key == "exitcode":
        em = _EXIT_FIELD.match(val)
        if not em:
            return None
        vals.update(code=em.group("code"), pid=em.group("pid"))
    elif key == "host":
        vals["host"] = val.split()[0] if val else None
    return _ev("torchrun_field", line, pre, values=vals)


# Lines that carry a fact, each one event whose values are the regex's named groups; in this
# order (the regexes that start with "^" match at the start of the message only).
_FACT_EVENTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (_NO_SLOT, "ds_no_slot"),
    (_LT_WORLD, "lightning_world"),
    (_ACC_IDS, "accelerate_gpu_ids"),
    (_UNRECOGNIZED, "local_rank_arg"),
    (_NO_IFACE, "no_interface"),
    (_BOOT_DUP, "bootstrap_dup_rank"),
    (_BOOT_IP, "bootstrap_ip"),
    (_PY_EXCEPTION, "py_exception"),
    (_NVML_NF, "nvml_not_found"),
    (_STORE, "store_error"),
    (_STORE_FOREIGN, "store_bind_foreign"),
    (_SOCKET, "socket_error"),
    (_REQ_GPU, "lightning_requested"),
    (_HAS_GPU, "lightning_has"),
    (_HOSTID, "env_hostid"),
    (_IFNAME_SET, "env_ifname"),
    (_CVD, "env_cvd"),
    (_CVD_PY, "env_cvd"),
    (_SLURM_GPUS, "slurm_gpus"),
    (_PL_LOCAL, "framework_local_rank"),
    (_PL_GLOBAL, "framework_rank"),
    (_BARRIER, "barrier_count"),
    (_AGENT_RANKS, "agent_ranks"),
    (_DEVICE_BANNER, "device_banner"),
    (_NUM_PROC, "accel_nproc"),
    (_ACC_ENV, "accel_env"),
)


def _other_events(msg: str, line: Line, pre: Prefix) -> list[Event]:
    """Every event of one message other than NCCL's own lines: failures, then facts."""
    return _failure_events(msg, line, pre) + _fact_events(msg, line, pre)


def _failure_events(msg: str, line: Line, pre: Prefix) -> list[Event]:
    """PyTorch's NCCL errors, NCCL result codes, invalid ordinals, guessed devices, torchrun's
    failure summary, nccl-tests' device lines and out-of-memory errors."""
    ev: list[Event] = []
    m = _TORCH_NCCL.search(msg)
    if m:
        values = {"err": m.group("err").strip(), "where": m.group("where")}
        ev.append(_ev("torch_nccl_error", line, pre, version=m.group("v"), values=values))
    elif (m := _VERSION.search(msg)) is not None:
        ev.append(_ev("nccl_version", line, pre, version=m.group("v")))
    if (code := _result_code(msg)) is not None:
        ev.append(_ev("nccl_result", line, pre, values={"code": code}))
    ev += _ordinal_events(msg, line, pre)
    if (m := _GUESS.search(msg)) is not None:
        ev.append(
            _ev("device_guess", line, pre, values={"rank": m.group("r"), "gpu": m.group("gpu")})
        )
    elif _GUESS_NEW.search(msg):
        ev.append(_ev("device_guess", line, pre))
    if (m := _ELASTIC_FAIL.search(msg)) is not None:
        ev.append(_ev("torchrun_failed", line, pre, values=m.groupdict()))
    if _ROOT.search(msg):
        ev.append(_ev("torchrun_root", line, pre))
    elif (f := _root_cause_field(msg, line, pre)) is not None:
        ev.append(f)
    if (m := _TESTS_DEV.match(msg)) is not None:
        vals = {"rank": m.group("rank"), "host": m.group("host"), "dev": m.group("dev")}
        vals["name"] = m.group("name").strip() or None
        ev.append(_ev("tests_device", line, pre, bus_id=m.group("bus"), values=vals))
    if _OOM.search(msg):
        gm = _OOM_GPU.search(msg)
        procs = len(_OOM_PROC.findall(msg))
        ev.append(
            _ev("oom", line, pre, values={"gpu": gm.group("gpu") if gm else None, "procs": procs})
        )
    return ev


def _ordinal_events(msg: str, line: Line, pre: Prefix) -> list[Event]:
    """An invalid device ordinal in PyTorch's, XLA's or nccl-tests' wording, or the MIG assert."""
    if _ASSERT.search(msg):
        return [_ev("invalid_ordinal", line, pre, values={"form": "mig_assert"})]
    if (m := _TESTS_FAIL.search(msg)) is not None:
        kind = "invalid_ordinal" if "ordinal" in m.group("err") else "cuda_failure"
        return [_ev(kind, line, pre, values={"form": "nccl-tests", "err": m.group("err")})]
    if _ORDINAL.search(msg) and not msg.lstrip().startswith(("File ", "raise ", "#")):
        form = "xla" if "CUDA_ERROR_INVALID_DEVICE" in msg else "pytorch"
        return [_ev("invalid_ordinal", line, pre, values={"form": form})]
    return []


def _fact_events(msg: str, line: Line, pre: Prefix) -> list[Event]:
    """Launcher and framework messages, settings echoed into the log, pasted context."""
    warning = _W_LEVEL.match(msg) is not None
    ev = [
        _ev(kind, line, pre, values=m.groupdict())
        for regex, kind in _FACT_EVENTS
        if (m := regex.search(msg)) is not None and not (warning and kind in _RETRIED)
    ]
    if (m := _SMI_ROW.match(msg)) is not None:
        ev.append(_ev("smi_gpu", line, pre, values=m.groupdict()))
    elif (m := _LAUNCH_ECHO.search(msg)) is not None and not msg.lstrip().startswith("File "):
        ev.append(_ev("launch_echo", line, pre, values={"cmd": m.group("cmd").strip()}))
    if _MIG_LINE.search(msg):
        ev.append(_ev("mig_seen", line, pre))
    return ev


def recognise(line: Line) -> list[Event]:
    """Every event in one line (several when pasted text lost its newlines). Never raises.

    A :class:`Line` holding several physical lines (a hit with its neighbours) is recognised
    line by line; two adjacent lines are rejoined when neither is recognised alone and the
    joined text is (a message wrapped by a terminal).
    """
    try:
        return _recognise_lines(line)
    except ValueError:  # NOTE(issue 11): a number of over 4,300 digits: not a line we know
        return []


def _recognise_lines(line: Line) -> list[Event]:
    if "\n" not in line.text:
        return _recognise_one(line)
    parts = [
        Line(t, line.source, line.lineno + i if line.lineno else None)
        for i, t in enumerate(line.text.split("\n"))
    ]
    events: list[Event] = []
    i = 0
    while i < len(parts):
        here = _recognise_one(parts[i]) if parts[i].text.strip() else []
        if i + 1 < len(parts) and not _key(here) and parts[i].text.strip():
            joined = _try_join(parts[i], parts[i + 1])
            if joined:
                events.extend(joined)
                i += 2
                continue
        events.extend(here)
        i += 1
    return events


def _key(events: list[Event]) -> bool:
    return any(e.kind in _JOIN_KINDS for e in events)


def _try_join(head: Line, tail: Line) -> list[Event]:
    """Events of ``head`` + ``tail`` when only the joined text holds a key message."""
    rest = _QUOTE.sub("", tail.text)
    if not rest or _key(_recognise_one(tail)):
        return []
    for glue in ("", " "):
        joined = Line(head.text.rstrip("\\") + glue + rest, head.source, head.lineno)
        found = _recognise_one(joined)
        if _key(found):
            return found
    return []


def _recognise_one(line: Line) -> list[Event]:
    events: list[Event] = []
    for part in split_messages(line.text):
        pre, msg = strip_prefixes(part)
        if pre.ray:
            events.append(Event("ray_prefix", line, pre))
        if not msg:
            continue
        if "NCCL" in msg or "Duplicate GPU" in msg or "- Init " in msg:
            found = _nccl_events(msg, line, pre)
            if found:
                events.extend(found)
                continue
        events.extend(_other_events(msg, line, pre))
    return events


def _result_code(msg: str) -> str | None:
    """The NCCL result a line outside torch's "NCCL error in:" message names, in any spelling."""
    if "NCCL error in" in msg:
        return None
    if (m := _RESULT.search(msg)) is not None:
        return m.group("code")
    if (m := _RESULT_TEXT.search(msg)) is None:
        return None
    if m.group("name"):
        return _RESULT_NAMES[m.group("name").upper()]
    return _RESULT_CODES[m.group("text").lower()]
