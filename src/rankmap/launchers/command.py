"""A launch command line as a shell would run it: variables, env prefixes and wrappers.

``parse_command(argv, env)`` is the one reader of the command ``check``, ``explain --launch``, ``run``'s
preflight and every launch line of a ``--shell`` script go through:

* ``$VAR`` / ``${VAR}`` / ``${VAR:-default}`` / ``${VAR-default}`` / ``${VAR:=default}`` /
  ``${VAR:+alt}`` are expanded from the assumed environment (``--env``); a variable that is not
  known stays as written (open world: the launcher's own reader then says what it cannot use);
* ``VAR=value cmd`` and ``env [-i] [-u NAME] [VAR=value] cmd`` set and unset variables for the
  launcher (POSIX: assignments before a command are in its environment; coreutils env);
* wrappers that run the next command are stepped over (:data:`WRAPPERS`): ``uv run``,
  ``conda run -n E``, ``poetry run``, ``nohup``, ``time``, ``stdbuf``, ``numactl``, ``taskset`` ...

The hand-written reader is kept instead of bashlex (GPL-3.0-or-later, which an Apache-2.0 tool
cannot take as a runtime dependency; and it parses but does not expand, which is the part needed
here): docs/check.md.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

# parameters by name, and the positional ones $1..$9 (a shell function's arguments)
_PARAM = re.compile(
    r"\$\{(?P<name>[A-Za-z_]\w*|[1-9@*#])(?:(?P<op>:-|-|:=|=|:\+|\+)(?P<word>[^}]*))?\}"
    r"|\$(?P<bare>[A-Za-z_]\w*|[1-9@*#])"
)
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def expand_word(token: str, env: Mapping[str, str]) -> str:
    """``token`` with the shell parameter expansions rankmap follows replaced from ``env``."""
    if "$" not in token:
        return token

    def one(m: re.Match[str]) -> str:
        name = m.group("name") or m.group("bare")
        value = env.get(name)
        op = m.group("op")
        word = m.group("word") or ""
        if op in (":-", ":="):
            return value if value else expand_word(word, env)
        if op in ("-", "="):
            return value if value is not None else expand_word(word, env)
        if op == ":+":
            return expand_word(word, env) if value else ""
        if op == "+":
            return expand_word(word, env) if value is not None else ""
        return value if value is not None else m.group(0)

    return _PARAM.sub(one, token)


@dataclass(frozen=True)
class Wrapper:
    """A program that runs the command after its own options (``nohup CMD``, ``uv run CMD``)."""

    name: str  # how it is shown: "uv run"
    words: int = 1  # words of the wrapper itself ("uv run" = 2)
    takes_value: frozenset[str] = frozenset()  # its options followed by a separate value
    positionals: int = 0  # operands before the command (taskset MASK)
    module_flags: frozenset[str] = frozenset()  # options whose value is a Python module to run


def _w(
    name: str,
    words: int = 1,
    values: str = "",
    *,
    positionals: int = 0,
    module_flags: frozenset[str] = frozenset(),
) -> Wrapper:
    return Wrapper(name, words, frozenset(values.split()), positionals, module_flags)


# `docker run` / `podman run` options followed by a separate value (docker run --help, Docker
# 27): the command's own parser and explain's reader of container runs use this one list
CONTAINER_VALUE_OPTIONS = frozenset(
    {
        "-a", "--attach", "--add-host", "--blkio-weight", "--cap-add", "--cap-drop",
        "--cgroup-parent", "--cgroupns", "--cidfile", "-c", "--cpu-shares", "--cpus", "--cpuset-cpus",
        "--cpuset-mems", "--cpu-period", "--cpu-quota", "--device", "--device-cgroup-rule", "--dns",
        "--dns-option", "--dns-search", "--entrypoint", "-e", "--env", "--env-file", "--expose",
        "--gpus", "--group-add", "-h", "--hostname", "--health-cmd", "--health-interval",
        "--health-retries", "--ip", "--ip6", "--ipc", "--isolation", "-l", "--label", "--label-file",
        "--link", "--log-driver", "--log-opt", "-m", "--memory", "--memory-reservation",
        "--memory-swap", "--mount", "--name", "--network", "--net", "--network-alias", "--pid",
        "--pids-limit", "--platform", "-p", "--publish", "--pull", "--restart", "--runtime",
        "--security-opt", "--shm-size", "--stop-signal", "--stop-timeout", "--storage-opt",
        "--sysctl", "--tmpfs", "-u", "--user", "--ulimit", "--userns", "--uts", "-v", "--volume",
        "--volume-driver", "--volumes-from", "-w", "--workdir",
    }
)  # fmt: skip
# Options with a separate value, from each tool's --help (uv 0.x, conda 24, coreutils 9,
# numactl 2.0, util-linux taskset). An option missing here is read as a flag; ``--opt=value``
# always is one word.
WRAPPERS: dict[tuple[str, ...], Wrapper] = {
    ("uv", "run"): _w(
        "uv run",
        2,
        "--with --with-editable --with-requirements --python -p --project --directory --package "
        "--extra --group --only-group --no-group --env-file --index --default-index --index-url "
        "--extra-index-url --find-links -f --config-file --cache-dir --prerelease "
        "--resolution --exclude-newer --link-mode --refresh-package --reinstall-package "
        "--upgrade-package --no-binary-package --no-build-package --python-platform",
        module_flags=frozenset({"-m", "--module"}),
    ),
    ("conda", "run"): _w("conda run", 2, "-n --name -p --prefix --cwd"),
    ("mamba", "run"): _w("mamba run", 2, "-n --name -p --prefix --cwd"),
    ("micromamba", "run"): _w("micromamba run", 2, "-n --name -p --prefix --cwd"),
    ("poetry", "run"): _w("poetry run", 2, "-C --directory -P --project"),
    ("pipenv", "run"): _w("pipenv run", 2),
    ("pdm", "run"): _w("pdm run", 2, "-p --project"),
    ("nohup",): _w("nohup"),
    # `eval $cmd`: the words are read again as a command (the common `cmd="torchrun ..."; eval $cmd`)
    ("eval",): _w("eval"),
    ("exec",): _w("exec", 1, "-a"),
    ("time",): _w("time", 1, "-f --format -o --output"),
    ("stdbuf",): _w("stdbuf", 1, "-i -o -e --input --output --error"),
    ("nice",): _w("nice", 1, "-n --adjustment"),
    ("ionice",): _w("ionice", 1, "-c --class -n --classdata"),
    ("numactl",): _w(
        "numactl",
        1,
        "-i --interleave -p --preferred -m --membind -N --cpunodebind -C --physcpubind "
        "-P --preferred-many -w --weighted-interleave",
    ),
    ("taskset",): _w("taskset", 1, positionals=1),
    # Nsight Systems runs the command after its options (`nsys profile --help`, 2024.x: nearly
    # every option takes a value; review 30: `nsys profile ... torchrun` was no launch)
    ("nsys", "profile"): _w(
        "nsys profile",
        2,
        "-o --output -t --trace -s --sample -b --backtrace -c --capture-range "
        "--capture-range-end -d --duration -y --delay -f --force-overwrite -e --env-var --stats "
        "-w --show-output -x --stop-on-exit -n --inherit-environment -p --nvtx-capture "
        "--cuda-memory-usage --gpu-metrics-devices --gpu-metrics-frequency --cudabacktrace "
        "--python-sampling --python-backtrace --export --session-new --trace-fork-before-exec "
        "--cpuctxsw --osrt-threshold --mpi-impl --nic-metrics",
    ),
    # a container runs the command after its image (docker run --help, Docker 27): the GPUs it
    # passes through are not modelled here (explain reads --gpus / --device itself)
    ("docker", "run"): _w("docker run", 2, " ".join(CONTAINER_VALUE_OPTIONS), positionals=1),
    ("podman", "run"): _w("podman run", 2, " ".join(CONTAINER_VALUE_OPTIONS), positionals=1),
    ("docker", "exec"): _w(
        "docker exec", 2, "-e --env --env-file -u --user -w --workdir", positionals=1
    ),
    ("podman", "exec"): _w(
        "podman exec", 2, "-e --env --env-file -u --user -w --workdir", positionals=1
    ),
    # Apptainer / Singularity run the command after the image (`apptainer exec --help`,
    # Apptainer 1.3; --nv / --rocm bind the host's GPUs and keep its CUDA_VISIBLE_DEVICES), and
    # enroot after the container's name (`enroot start --help`, enroot 3.4; review 28)
    **{
        (tool, verb): _w(
            f"{tool} {verb}",
            2,
            "-B --bind --mount --env --env-file --pwd -H --home --overlay -o --network "
            "--network-args --security -W --workdir --apply-cgroups --hostname --fusemount "
            "--scratch -S --app",
            positionals=1,
        )
        for tool in ("apptainer", "singularity")
        for verb in ("exec", "run")
    },
    ("enroot", "start"): _w("enroot start", 2, "-e --env -m --mount -c --conf", positionals=1),
}


@dataclass(frozen=True)
class Command:
    """The launcher command inside a command line, and the environment it starts in."""

    argv: tuple[str, ...]  # the launcher's command (variables expanded, prefix/wrappers removed)
    env: Mapping[str, str]  # the environment the launcher runs in
    assigned: Mapping[str, str] = field(default_factory=dict)  # VAR=value of the command line
    unset: frozenset[str] = frozenset()  # env -u NAME (and env -i: everything)
    cleared: bool = False  # env -i: the launcher starts with an empty environment
    wrappers: tuple[str, ...] = ()  # "uv run", "nohup", ... in order

    @property
    def prefix_argv(self) -> list[str]:
        """``env -u X A=1`` words that give a child this command's environment changes."""
        words = [f"-u{name}" for name in sorted(self.unset)] + [
            f"{k}={v}" for k, v in self.assigned.items()
        ]
        if self.cleared:
            words.insert(0, "-i")
        return ["env", *words] if words else []


SHELLS = ("bash", "sh", "dash", "zsh", "ksh")
# shell options followed by a separate value (bash(1): -o/+o option, -O/+O shopt option)
SHELL_VALUE_OPTS = ("-o", "+o", "-O", "+O")


def shell_body_index(words: Sequence[str]) -> int | None:
    """Index of the command string of ``bash -c 'BODY'`` in ``words`` (anywhere: ``srun ...
    bash -lc BODY``): that shell expands BODY when it runs, in its own environment, so BODY is
    not expanded now."""
    for i, word in enumerate(words):
        if os.path.basename(word) not in SHELLS:
            continue
        j = i + 1
        while j < len(words):
            option = words[j]
            if option.startswith("--") and option != "--":  # --login, --norc, --noprofile
                j += 1
                continue
            if not option.startswith(("-", "+")) or option in ("-", "--"):
                break
            if option in SHELL_VALUE_OPTS:  # -o pipefail, +O extglob
                j += 2
                continue
            if option.startswith("-") and "c" in option[1:]:  # -c, -lc, -ec
                return j + 1 if j + 1 < len(words) else None
            j += 1
        return None
    return None


def expand_words(words: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """Every word expanded from ``env``, but a shell's ``-c`` command string."""
    body = shell_body_index(words)
    return [w if i == body else expand_word(w, env) for i, w in enumerate(words)]


def parse_command(argv: Sequence[str], env: Mapping[str, str]) -> Command:
    """Read ``argv`` the way a shell and the wrappers would before the launcher starts."""
    words = expand_words(argv, env)
    assigned: dict[str, str] = {}
    unset: set[str] = set()
    cleared = False
    wrappers: list[str] = []
    while words:
        if _ASSIGN.match(words[0]):
            name, _, value = words.pop(0).partition("=")
            assigned[name] = value
            unset.discard(name)
            continue
        if os.path.basename(words[0]) == "env":
            words, gone, clear = _env_options(words[1:])
            cleared = cleared or clear
            if clear:
                assigned.clear()
            unset |= gone
            for name in gone:
                assigned.pop(name, None)
            wrappers.append("env")
            continue
        stripped = _strip_wrapper(words)
        if stripped is None:
            break
        name, options, words = stripped
        wrappers.append(name)
        if name in _CONTAINER_RUNS:
            # a container starts with the image's environment, not the caller's: only what
            # -e/--env passes and the GPUs --gpus exposes (docker run --help; NVIDIA Container
            # Toolkit: --gpus sets NVIDIA_VISIBLE_DEVICES, renumbered from 0 inside)
            cleared, assigned = True, container_env(options)
            unset.clear()
    base = {} if cleared else {k: v for k, v in env.items() if k not in unset}
    return Command(
        argv=tuple(words),
        env={**base, **assigned},
        assigned=assigned,
        unset=frozenset(unset),
        cleared=cleared,
        wrappers=tuple(wrappers),
    )


def env_words(argv: Sequence[str], launched: Sequence[str]) -> tuple[str, ...]:
    """The words before ``launched`` in ``argv`` when they only set the environment (``K=V``,
    ``env [-u NAME] K=V``); () when anything else stands there (a wrapper, a shell)."""
    cut = len(argv) - len(launched)
    if cut <= 0 or list(argv[cut:]) != list(launched):
        return ()
    words = list(argv[:cut])
    rest = words[1:] if words and words[0] == "env" else words
    i = 0
    while i < len(rest):
        if rest[i] == "-u" and i + 1 < len(rest):
            i += 2
        elif rest[i].startswith("-u") or _ASSIGN.match(rest[i]):
            i += 1
        else:
            return ()
    return tuple(words)


def _env_options(words: list[str]) -> tuple[list[str], set[str], bool]:
    """coreutils ``env`` options: ``-u NAME``/``-uNAME``/``--unset=NAME``, ``-i``/``-``."""
    gone: set[str] = set()
    clear = False
    i = 0
    while i < len(words):
        w = words[i]
        if w in ("-i", "--ignore-environment", "-"):
            clear = True
        elif w in ("-u", "--unset") and i + 1 < len(words):
            gone.add(words[i + 1])
            i += 1
        elif w.startswith("--unset="):
            gone.add(w.split("=", 1)[1])
        elif w.startswith("-u") and len(w) > 2:
            gone.add(w[2:])
        elif w in ("-C", "--chdir", "-S", "--split-string") and i + 1 < len(words):
            i += 1
        elif w == "--":
            i += 1
            break
        elif not w.startswith("-"):
            break
        i += 1
    return words[i:], gone, clear


def _strip_wrapper(words: list[str]) -> tuple[str, list[str], list[str]] | None:
    """(wrapper name, its option words, the command it runs) when ``words`` starts with a
    known wrapper."""
    head = os.path.basename(words[0])
    for key, wrapper in WRAPPERS.items():
        if (head, *words[1 : len(key)]) != key:
            continue
        rest = words[wrapper.words :]
        i = 0
        while i < len(rest) and rest[i].startswith("-") and rest[i] != "-":
            opt = rest[i]
            if opt == "--":
                i += 1
                break
            if opt in wrapper.module_flags and i + 1 < len(rest):
                return wrapper.name, rest[:i], ["python", "-m", *rest[i + 1 :]]
            i += 2 if opt in wrapper.takes_value else 1
        options = rest[:i]
        i += wrapper.positionals
        return wrapper.name, options, rest[i:]
    return None


_CONTAINER_RUNS = ("docker run", "podman run")


def container_env(options: Sequence[str]) -> dict[str, str]:
    """The variables ``docker run`` / ``podman run`` options give the container: ``-e K=V`` /
    ``--env K=V`` / ``--env=K=V`` (``-e K`` alone copies the caller's value: not known here),
    and ``NVIDIA_VISIBLE_DEVICES`` from ``--gpus`` (``all``; a count ``N``: the first N GPUs;
    ``device=0,2`` or ``"device=0,2"``: those)."""
    out: dict[str, str] = {}
    words = list(options)
    for i, word in enumerate(words):
        name, eq, inline = word.partition("=")
        value = inline if eq else (words[i + 1] if i + 1 < len(words) else "")
        if name in ("-e", "--env") and "=" in value:
            key, _, val = value.partition("=")
            out[key] = val
        elif name == "--gpus" and value:
            gpus = _gpus_option(value)
            if gpus is not None:
                out["NVIDIA_VISIBLE_DEVICES"] = gpus
    return out


def _gpus_option(value: str) -> str | None:
    """NVIDIA_VISIBLE_DEVICES for a ``--gpus`` value, or None where it is not read."""
    value = value.strip().strip("'\"")
    if value == "all":
        return "all"
    # a count (ASCII digits; one no machine has is not read: bounded work, review 57)
    if value.isascii() and value.isdecimal():
        if len(value) > 4 or int(value) > 1024:
            return None
        return ",".join(str(i) for i in range(int(value)))
    for part in value.split(","):
        if part.startswith("device="):
            return value.split("device=", 1)[1].strip("'\"")
    return None


# what the shell reader leaves for a command's output it does not run (shell_lex._marked)
ELIDED = "$(…)"


def shell_join(words: Sequence[str]) -> str:
    """``shlex.join`` for a command shown to the user, where a word holding a value the script
    computes (:data:`ELIDED`) stays unquoted: ``--rdzv_endpoint $(…):29500`` reads as "your
    value here", while ``'$(…):29500'`` would pass the characters themselves."""
    import shlex

    return " ".join(
        w if ELIDED in w and not any(c.isspace() for c in w) else shlex.quote(w) for w in words
    )
