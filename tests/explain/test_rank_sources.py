"""The job-wide rank used as a device index, read from every launcher's and framework's
spelling (reference/launchers.md §1, §5, §6), in pasted code; a node-local rank, or a rank taken
modulo the GPU count, is no such use. Every line is a shape written for these tests."""

from __future__ import annotations

import pytest

from rankmap.explain.docread import read_document

SID = "rank-as-device-code"


def _in_code(line: str) -> bool:
    return SID in read_document("```python\nimport os\n" + line + "\n```\n").hits


@pytest.mark.parametrize(
    "line",
    [
        "torch.cuda.set_device(hvd.rank())",
        "config.gpu_options.visible_device_list = str(hvd.rank())",
        "torch.cuda.set_device(comm.Get_rank())",
        "cp.cuda.Device(MPI.COMM_WORLD.rank).use()",
        "torch.cuda.set_device(int(os.environ['OMPI_COMM_WORLD_RANK']))",
        "torch.cuda.set_device(int(os.environ.get('RANK', 0)))",
        "torch.cuda.set_device(int(os.getenv('PMI_RANK')))",
        "dev = f'cuda:{dist.get_rank()}'",
        "dev = Device(jax.process_index())",
    ],
)
def test_a_job_wide_rank_as_the_device_is_read_in_every_spelling(line: str) -> None:
    assert _in_code(line), line


@pytest.mark.parametrize(
    "line",
    [
        "torch.cuda.set_device(hvd.local_rank())",
        "config.gpu_options.visible_device_list = str(hvd.local_rank())",
        "torch.cuda.set_device(int(os.environ['OMPI_COMM_WORLD_LOCAL_RANK']))",
        "torch.cuda.set_device(dist.get_rank() % torch.cuda.device_count())",
        "torch.cuda.set_device(int(os.environ['RANK']) % 8)",
    ],
)
def test_a_local_rank_or_a_rank_modulo_the_gpus_is_not(line: str) -> None:
    assert not _in_code(line), line
