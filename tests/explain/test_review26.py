"""Review 26 (a black-box review of frameworks other than plain PyTorch, 61 cases written by a
helper): the shapes it found, restated here."""

from __future__ import annotations

from paste_findings import findings_of


def test_a_jax_paste_gets_jax_s_fix_not_torch_s() -> None:
    text = (
        "8 JAX processes on one node, local_device_ids=[process_id]\n"
        "RuntimeError: Unable to initialize backend 'cuda': INVALID_ARGUMENT: Invalid device "
        "ordinal value (5). Valid range is [0, 3].\n"
    )
    fix = findings_of(text)[0].fix
    assert "jax.distributed.initialize" in fix and "torch" not in fix


def test_a_cupy_paste_gets_cupy_s_fix() -> None:
    text = (
        "mpirun -np 4 python allreduce.py\n"
        "  nc = cupy.cuda.nccl.NcclCommunicator(comm.size, uid, comm.rank)\n"
        "n1:8813:8813 [0] init.cc:871 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both "
        "on CUDA device 1a000\n"
    )
    assert "cupy.cuda.Device(local_rank).use()" in findings_of(text)[0].fix


def test_a_pytorch_paste_keeps_pytorch_s_fix() -> None:
    text = (
        "torchrun --nproc_per_node 4 train.py  (uses jax for data loading)\n"
        "NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1a000\n"
    )
    assert "jax.distributed" not in findings_of(text)[0].fix


def test_nccl_tests_on_two_nodes_is_no_global_rank_and_one_hostname_decides() -> None:
    text = (
        "mpirun -np 8 -H 10.0.0.21:4,10.0.0.22:4 ./build/all_reduce_perf -g 1   (both nodes have "
        'hostname "dgx")\n'
        "dgx: Test CUDA failure common.cu:892 'invalid device ordinal'\n"
    )
    assert findings_of(text)[0].category == "host_identity"


def test_a_gpu_list_indexed_by_the_task_index_and_an_index_error_is_the_global_index() -> None:
    text = (
        "TF_CONFIG workers: 8 (n1 x4, n2 x4), task index 0-7\n"
        'gpus = tf.config.list_physical_devices("GPU")\n'
        'tf.config.set_visible_devices(gpus[task_index], "GPU")\n'
        "worker 5:\nIndexError: list index out of range\n"
    )
    first = findings_of(text)[0]
    assert first.category == "global_rank_as_device"
    assert "tf.config.set_visible_devices" in first.fix
    local = text.replace("gpus[task_index]", "gpus[local_rank]")
    assert findings_of(local)[0].category != "global_rank_as_device"


def test_framework_messages_of_separate_or_merged_nodes() -> None:
    vllm = (
        "RuntimeError: Every node should have a unique IP address. Got 2 nodes with node ids "
        "['3f1e', 'c07b'] and 1 unique IP addresses {'172.17.0.2'}.\n"
    )
    assert findings_of(vllm)[0].category == "host_identity"
    tf = (
        "Same script on node-a and node-b, TF_CONFIG not set\n"
        "INFO:tensorflow:Single-worker MultiWorkerMirroredStrategy with local_devices = "
        "('/device:GPU:0', '/device:GPU:1')\n"
    )
    assert findings_of(tf)[0].category == "launcher_config"
    ds = (
        "python train.py --deepspeed ds.json   (run on node1 and node2)\n"
        "[INFO] [comm.py:652:init_distributed] Not using the DeepSpeed or dist launchers, "
        "attempting to detect MPI environment...\nworld_size=1 on both nodes\n"
    )
    assert findings_of(ds)[0].category == "launcher_config"
