"""srun's and sbatch's options (``SPEC``) and the ``#SBATCH`` lines of a script: read by the
srun simulation, by shell scripts and by explain's paste reader (reference/launchers.md §5).
"""

from __future__ import annotations

from rankmap.launchers.options import OptSpec, parse_options

_VALUE = {
    "nodes": True,
    "ntasks": True,
    "ntasks_per_node": True,
    "gpus_per_task": True,
    "gres": True,
    "gpus_per_node": True,
    "gpus": True,
    "gpu_bind": True,
    "tres_bind": True,
    "cpus_per_task": True,
    "mpi": True,
    "partition": True,
    "time": True,
    "job_name": True,
    "account": True,
    "export": True,
    "output": True,
    "error": True,
    "mem": True,
    "nodelist": True,
    "cpu_bind": True,
    "container_image": True,
    "container_mounts": True,
    "qos": True,
    "constraint": True,
    "exclusive": False,
    "label": False,
    "unbuffered": False,
    "overlap": False,
}
SPEC = OptSpec(
    "srun",
    _VALUE,
    {
        "-N": "nodes",
        "-n": "ntasks",
        "-G": "gpus",
        "-c": "cpus_per_task",
        "-p": "partition",
        "-t": "time",
        "-J": "job_name",
        "-A": "account",
        "-o": "output",
        "-e": "error",
        "-w": "nodelist",
        "-l": "label",
        "-u": "unbuffered",
        "-C": "constraint",
        "-q": "qos",
    },
    strict=False,
    guess_values=True,
)


def parse_sbatch_lines(text: str) -> dict[str, str]:
    """``#SBATCH --opt=value`` / ``#SBATCH -N 2`` lines -> {long option name: value}."""
    argv: list[str] = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#SBATCH"):
            argv += s[len("#SBATCH") :].split("#", 1)[0].split()
    p = parse_options([*argv, "prog"], SPEC)
    return {k: (v if isinstance(v, str) else "1") for k, v in p.values.items()}
