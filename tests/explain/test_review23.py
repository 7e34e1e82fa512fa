"""Review 23 (a black-box review of long whole-issue pastes, 50 written by a helper): the
shapes it found, restated here."""

from __future__ import annotations

from paste_findings import findings_of

_ONE_PID_ON_FOUR = "".join(
    f"|    {g}   N/A  N/A     44120      C   python                                   "
    f"{14200 if g == 0 else 10100}MiB |\n"
    for g in range(4)
)


def test_one_process_driving_four_gpus_with_dataparallel_is_no_pile_up_on_gpu_0() -> None:
    text = (
        "# nn.DataParallel: GPU 0 uses more memory than the others, is that normal?\n"
        "Single process, `model = nn.DataParallel(model).cuda()` on 4 GPUs. Training works, no "
        "errors. GPU 0 has ~4 GB more memory than GPUs 1-3.\n```\n" + _ONE_PID_ON_FOUR + "```\n"
    )
    assert findings_of(text)[0].severity.value == "info"


def test_device_map_auto_next_to_an_oom_is_no_rank_on_the_wrong_gpu() -> None:
    text = (
        '```python\nmodel = AutoModelForCausalLM.from_pretrained(name, device_map="auto")\n'
        'inputs = tok(prompt, return_tensors="pt").to("cuda:0")\n```\n```\n'
        + _ONE_PID_ON_FOUR
        + "```\n"
    )
    assert "no_set_device" not in [
        f.category for f in findings_of(text) if f.severity.value != "info"
    ]


def test_ranks_that_each_hold_gpu_0_and_their_own_gpu_still_point_at_set_device() -> None:
    # the no-set_device signature the process table shows: several PIDs, each on GPU 0 and on
    # its own GPU (torchrun job)
    rows = "".join(
        f"|    {g}   N/A  N/A     {5000 + p}      C   python        {500 if g == 0 else 9000}MiB |\n"
        for p in range(1, 4)
        for g in (0, p)
    )
    text = "torchrun --nproc_per_node 4 train.py\nextra memory on GPU 0\n```\n" + rows + "```\n"
    assert findings_of(text)[0].category == "no_set_device"


def test_xla_s_parallel_compilation_notice_is_no_version_failure() -> None:
    text = (
        "2024-05-12 10:21:01.441201: W external/xla/xla/service/gpu/nvptx_compiler.cc:760] The "
        "NVIDIA driver's CUDA version is 12.2 which is older than the ptxas CUDA version "
        "(12.4.131). Because the driver is older than the ptxas version, XLA is disabling "
        "parallel compilation, which may slow down compilation. You should update your NVIDIA "
        "driver or use the NVIDIA-provided CUDA forward compatibility packages.\n"
    )
    assert findings_of(text)[0].severity.value == "info"
    error = "CUDA error: forward compatibility was attempted on non supported HW\n"
    assert findings_of(error)[0].category == "version_mismatch"


def test_node_ranks_the_shell_fills_in_are_no_duplicated_node_rank() -> None:
    line = "torchrun --nnodes=2 --node_rank=$NODE_RANK --nproc_per_node=8 --master_addr=10.0.0.1 train.py"
    text = f"node1$ {line}\nnode2$ {line}\nhangs at init\n"
    assert findings_of(text)[0].category != "host_identity"


def test_code_that_selects_the_local_rank_is_no_global_rank_on_two_nodes() -> None:
    text = (
        "horovodrun -np 16 -H node01:8,node02:8 python train_hvd.py\n"
        "[1,4]<stderr>:RuntimeError: CUDA error: invalid device ordinal\n"
        "torch.cuda.set_device(hvd.local_rank())\n"
    )
    assert findings_of(text)[0].category != "global_rank_as_device"
    text = text.replace("hvd.local_rank()", "hvd.rank()")
    assert findings_of(text)[0].category == "global_rank_as_device"
