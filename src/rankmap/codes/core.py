"""Shared causes: one code per cause, whichever command (check, explain, probe, doctor) finds it."""

from __future__ import annotations

from rankmap.codes.registry import define

# --- other / the tool itself (RM001-RM049) -------------------------------------------------
define(
    "RM001",
    "other",
    "warning",
    "NVML is not available: GPU inventory could not be read",
    cause="No NVIDIA driver is loaded (laptop, CI runner, CPU node), libnvidia-ml.so is not on "
    "the library path, or the container was started without the `utility` driver capability.",
    fix="Run on the GPU node (inside the job's container), or simulate with "
    "`--machine PROFILE` / pasted `nvidia-smi` output.",
    example="`rankmap doctor` on a laptop: `NVML is not available (libnvidia-ml.so.1 not found)`.",
)
define(
    "RM002",
    "other",
    "warning",
    "NVML failed for a GPU or a query; part of the inventory is missing",
    cause="NVML answered with an error: NoPermission, GpuIsLost (fell off the bus), "
    "driver/library version mismatch after a driver upgrade without reboot, or NotSupported.",
    fix="Read the reason in the finding: reboot after a driver update (mismatch), reset or "
    "replace a lost GPU (`nvidia-smi -r`, check `dmesg` for Xid 79), run with permission.",
    example="`GPU 3 (0000:9A:00.0): NVML error GpuIsLost` — the rest of the report is intact.",
)
define(
    "RM003",
    "other",
    "info",
    "Nothing in the input was recognised",
    cause="The text holds no NCCL, CUDA, PyTorch or launcher message that rankmap knows.",
    fix="Re-run the job with `NCCL_DEBUG=INFO` (or `rankmap run`) and pass the full output.",
    example="`rankmap explain notes.txt` on an unrelated log.",
)
define(
    "RM004",
    "other",
    "info",
    "The training script could not be parsed; the torchrun convention (cuda:LOCAL_RANK) is assumed",
    cause="The file has a syntax error, is Python 2 (the analysis parses Python 3 only), is not "
    "Python, is a fragment, or nests deeper than the analysis follows. What could not be read is "
    "never an error.",
    fix="Pass the real entry script with `--script`, or check the assumption by hand.",
    example="`train.py:12: invalid syntax — assuming torch.cuda.set_device(LOCAL_RANK)`.",
)
define(
    "RM005",
    "other",
    "info",
    "Assumption: each rank uses cuda:LOCAL_RANK",
    cause="No training script was given or found, so the device each rank selects is taken from "
    "the torchrun convention `torch.cuda.set_device(int(os.environ['LOCAL_RANK']))`. Under a "
    "launcher that does not set LOCAL_RANK (srun, mpirun, a plain `python`), each rank is "
    "assumed to select its local rank, and the note gives the line that reads the launcher's "
    "own variable: what an unread script reads is unknown, so no KeyError (RM903) is predicted.",
    fix="Pass `--script train.py` to check what the script really selects.",
    example="`no script given: assuming each rank calls torch.cuda.set_device(LOCAL_RANK)`.",
)
define(
    "RM010",
    "other",
    "warning",
    "A GPU the job will use already runs other processes",
    cause="A previous job did not exit, another user shares the node, or a zombie process "
    "holds GPU memory.",
    fix="Stop the stale processes (`nvidia-smi --query-compute-apps=pid,gpu_bus_id --format=csv`)"
    " or choose free GPUs with CUDA_VISIBLE_DEVICES.",
    example="`GPU 0 (0000:4F:00.0) already holds 2 processes (pid 4242 python, 14195 MiB)`.",
)
define(
    "RM011",
    "other",
    "error",
    "CUDA out of memory on a GPU that several processes use",
    cause="More than one rank (or a stale process) allocates on the same physical GPU, usually "
    "because device selection puts several ranks on cuda:0.",
    fix="Give every rank its own GPU (`torch.cuda.set_device(LOCAL_RANK)` before any CUDA work) "
    "and stop stale processes.",
    example="`CUDA out of memory. ... GPU 0 has a total capacity of 79.15 GiB ... Process 1234 "
    "has 20.1 GiB memory in use. Process 1235 has 20.1 GiB memory in use.`",
)
define(
    "RM020",
    "other",
    "error",
    "NCCL network interface selection is broken",
    cause="`NCCL_SOCKET_IFNAME` names interfaces that do not exist on a node, or no usable "
    "interface was found (`Bootstrap : no socket interface found`).",
    fix="Set `NCCL_SOCKET_IFNAME` to an interface present on every node (`ip -br link`), "
    "e.g. `NCCL_SOCKET_IFNAME=eth0`, or `^lo,docker` to exclude.",
    example="`NCCL_SOCKET_IFNAME=ib0` on a node whose interfaces are lo, eth0.",
)

# --- version_mismatch (RM050-RM099) -----------------------------------------------------------
define(
    "RM050",
    "version_mismatch",
    "error",
    "The NVIDIA driver is too old for the CUDA runtime in use",
    cause="PyTorch/NCCL were built for a newer CUDA than the driver supports "
    "(driver reports CUDA X.Y; the build needs a newer one).",
    fix="Upgrade the driver, or install a PyTorch build for an older CUDA "
    "(e.g. `pip install torch --index-url .../cu121`).",
    example="`driver 470.57 supports CUDA 11.4; torch 2.5.1+cu124 needs CUDA 12.4`.",
)
define(
    "RM051",
    "version_mismatch",
    "error",
    "Ranks load different NCCL versions",
    cause="Nodes have different PyTorch wheels or an `LD_PRELOAD`/`LD_LIBRARY_PATH` system NCCL "
    "on some nodes (`Mismatched NCCL version detected`).",
    fix="Use one environment image on every node; remove stray `LD_PRELOAD` of libnccl.",
    example="`Mismatched NCCL version detected : rank 8 version 21903 rank 0 version 22005`.",
)
define(
    "RM052",
    "version_mismatch",
    "warning",
    "Driver, CUDA or PyTorch versions differ across ranks",
    cause="Nodes were provisioned at different times or run different container images.",
    fix="Pin one image / driver for the whole job.",
    example="`node gpu-01 driver 535.216.01, node gpu-02 driver 550.54.15`.",
)

# --- oversubscribed (RM1xx) ------------------------------------------------------------------
define(
    "RM101",
    "oversubscribed",
    "error",
    "More processes on a node than GPUs they can see; ranks wrap onto the same GPU",
    cause="The launcher starts more processes per node than visible GPUs and the script (or "
    "accelerate >= 0.33) selects `local_rank % device_count`, so two ranks share one GPU and NCCL "
    "stops with `Duplicate GPU detected`.",
    fix="Start one process per visible GPU (`--nproc-per-node` = GPU count) or expose more GPUs.",
    example="`8 processes share 4 GPUs on node gpu-01: ranks 0 and 4 both on GPU 0 (0000:4F:00.0)`.",
)
define(
    "RM102",
    "oversubscribed",
    "error",
    "A rank asks for a CUDA index that does not exist",
    cause="`--nproc-per-node` is larger than the number of visible GPUs and each rank calls "
    "`set_device(LOCAL_RANK)`: ranks with LOCAL_RANK >= device count fail with "
    "`CUDA error: invalid device ordinal`.",
    fix="Start at most as many processes per node as visible GPUs.",
    example="`local ranks 4-7 ask for cuda:4..cuda:7 but only 4 GPUs are visible`.",
)
define(
    "RM103",
    "oversubscribed",
    "error",
    "Two ranks on one host use the same physical GPU",
    cause="Two processes on one NCCL host had the same current CUDA device at NCCL init. The log "
    "alone does not say why: more processes than GPUs, no per-rank device selection, or a "
    "CUDA_VISIBLE_DEVICES that gives every rank the same GPU.",
    fix="Give every rank its own GPU: `torch.cuda.set_device(int(os.environ['LOCAL_RANK']))` "
    "before `init_process_group`, and one process per GPU.",
    example="`Duplicate GPU detected : rank 0 and rank 4 both on CUDA device 4f000`.",
)

# --- visible_devices_mismatch (RM2xx) ------------------------------------------------------
define(
    "RM201",
    "visible_devices_mismatch",
    "error",
    "CUDA_VISIBLE_DEVICES exposes fewer GPUs than the launcher starts processes",
    cause="CUDA_VISIBLE_DEVICES was narrowed (by hand, an sbatch script, accelerate `gpu_ids`) "
    "but the process count was not.",
    fix="Make the two agree: as many processes per node as CUDA_VISIBLE_DEVICES has entries "
    "(`--nproc-per-node`, `-npernode`, `--ntasks-per-node`), or widen/unset "
    "CUDA_VISIBLE_DEVICES; under mpirun, pass it to the ranks of every node "
    "(`-x CUDA_VISIBLE_DEVICES`).",
    example="`CUDA_VISIBLE_DEVICES=0,1,2,3` with `torchrun --nproc-per-node 8`.",
)
define(
    "RM202",
    "visible_devices_mismatch",
    "warning",
    "CUDA_VISIBLE_DEVICES entries are dropped",
    cause="CUDA stops reading the list at the first invalid entry (not a number or UUID, "
    "negative, out of range, an ambiguous UUID prefix); everything after it is ignored.",
    fix="List only existing GPUs, by index or by UUID (`nvidia-smi -L`).",
    example="`CUDA_VISIBLE_DEVICES=3,GPU-8932,0,9,1` on an 8-GPU machine: 9 and 1 are dropped.",
)
define(
    "RM203",
    "visible_devices_mismatch",
    "error",
    "CUDA_VISIBLE_DEVICES hides every GPU",
    cause="It is empty, `-1`, `NoDevFiles` (Slurm without GPUs), starts with an invalid entry, "
    "or repeats a GPU (a repeated entry makes the whole set empty).",
    fix="Set it to the GPUs the job should use, without repeats, or unset it.",
    example="`CUDA_VISIBLE_DEVICES=0,0` -> no CUDA device is visible.",
)
define(
    "RM204",
    "visible_devices_mismatch",
    "warning",
    "CUDA order and nvidia-smi order differ on this machine",
    cause="CUDA_DEVICE_ORDER defaults to FASTEST_FIRST; on machines with mixed GPU models cuda:0 "
    "is not nvidia-smi GPU 0, and integer CUDA_VISIBLE_DEVICES entries follow CUDA's order. "
    "`check` says it at info when CUDA_VISIBLE_DEVICES is unset (every rank still gets its own "
    "GPU; only reading nvidia-smi against cuda:N misleads).",
    fix="`export CUDA_DEVICE_ORDER=PCI_BUS_ID`, or use GPU UUIDs in CUDA_VISIBLE_DEVICES.",
    example="`cuda:0 is nvidia-smi GPU 1 (RTX 4090); nvidia-smi GPU 0 is a T400`.",
)

# --- no_set_device (RM3xx) -----------------------------------------------------------------
define(
    "RM301",
    "no_set_device",
    "error",
    "The script never selects a device per rank: every rank uses cuda:0",
    cause="Without `torch.cuda.set_device(...)` (or `device_id=` in `init_process_group`) every "
    "process's current device is its visible GPU 0, so all ranks of a node share one GPU.",
    fix="Add `torch.cuda.set_device(int(os.environ['LOCAL_RANK']))` before "
    "`init_process_group`, or pass `device_id=torch.device('cuda', local_rank)`.",
    example="`ranks 0-7 on node gpu-01 all use cuda:0 = GPU 0 (0000:4F:00.0)`.",
)
define(
    "RM302",
    "no_set_device",
    "error",
    "The script hard-codes one GPU for every rank",
    cause="A constant device (`cuda:0`, `set_device(0)`, `.cuda(1)`) is used in every process.",
    fix="Derive the device from LOCAL_RANK: `torch.device('cuda', int(os.environ['LOCAL_RANK']))`.",
    example="`train.py:14 model.to('cuda:0')` with 4 processes per node.",
)

# --- global_rank_as_device (RM4xx) ---------------------------------------------------------
define(
    "RM401",
    "global_rank_as_device",
    "error",
    "The global RANK is used as the CUDA device index",
    cause="`set_device(RANK)` / `dist.get_rank()` / `SLURM_PROCID` works on one node but asks for "
    "cuda:8.. on the second node (`invalid device ordinal`), or with `% device_count` puts ranks "
    "of different nodes' layouts onto the wrong GPUs; also a later sink (DDP `device_ids=[rank]`, "
    "`device_id=`, `.to(f'cuda:{rank}')`) given the global rank while set_device is local.",
    fix="Use LOCAL_RANK (`int(os.environ['LOCAL_RANK'])`, `SLURM_LOCALID`, "
    "`OMPI_COMM_WORLD_LOCAL_RANK`) as the device index.",
    example="`rank 8 on node 1 calls set_device(8); node 1 has 8 GPUs (cuda:0-7)`.",
)
define(
    "RM402",
    "global_rank_as_device",
    "warning",
    "PyTorch guessed each rank's GPU from its global rank",
    cause="No device was bound to the process group, so `barrier()`/object collectives guess "
    "`cuda:(global_rank % local_device_count)`; when that differs from the device the rank "
    "really uses, the job may hang or hit a duplicate GPU.",
    fix="`torch.cuda.set_device(local_rank)` before `init_process_group`, or pass "
    "`device_id=torch.device('cuda', local_rank)`.",
    example="`using GPU 6 to perform barrier as devices used by this process are currently unknown`.",
)

# --- per_process_visible_devices (RM5xx) ---------------------------------------------------
define(
    "RM501",
    "per_process_visible_devices",
    "error",
    "Each process sees only its own GPU but the script indexes cuda:LOCAL_RANK",
    cause="The launcher/scheduler (Slurm `--gpus-per-task`, `--gpu-bind`, Ray, a per-process "
    "CUDA_VISIBLE_DEVICES loop, torchrun `--virtual-local-rank`) already narrowed each process to "
    "one GPU, which is cuda:0 inside it; `set_device(LOCAL_RANK)` fails for LOCAL_RANK >= 1.",
    fix="Inside a process that sees one GPU use `cuda:0` (or `set_device(LOCAL_RANK % "
    "torch.cuda.device_count())`), or drop the per-task binding (`--gpus-per-node` instead of "
    "`--gpus-per-task`).",
    example="`srun --gpus-per-task=1` + `set_device(SLURM_LOCALID)` -> local ranks 1-3 fail.",
)
define(
    "RM502",
    "per_process_visible_devices",
    "warning",
    "Processes of one node cannot see each other's GPUs",
    cause="Per-process device isolation (cgroups, per-task CUDA_VISIBLE_DEVICES) hides peers' "
    "GPUs; NCCL cannot use P2P/NVLink and may fail with `nvmlDeviceGetHandleByPciBusId() failed`.",
    fix="Bind GPUs per node, not per task (Slurm `--gpus-per-node`, Ray's shared "
    "CUDA_VISIBLE_DEVICES), and select with LOCAL_RANK.",
    example="`4 ranks on node gpu-01 each see 1 GPU`.",
)
define(
    "RM503",
    "per_process_visible_devices",
    "error",
    "Per-process CUDA_VISIBLE_DEVICES gives several ranks the same GPU",
    cause="Each process was narrowed to one GPU, but the same GPU was given to several of them "
    "(a launcher script bug, a copied environment).",
    fix="Give each local rank a different entry, e.g. `CUDA_VISIBLE_DEVICES=$LOCAL_RANK`.",
    example="`ranks 0-3 all have CUDA_VISIBLE_DEVICES=0`.",
)

# --- mig (RM6xx) ------------------------------------------------------------------------------
define(
    "RM601",
    "mig",
    "error",
    "Several ranks use MIG instances of one physical GPU",
    cause="NCCL <= 2.29 treats one PCI device as one GPU: MIG slices share the parent's bus id, so "
    "ranks on slices of one GPU are `Duplicate GPU detected`; NCCL 2.30+ needs "
    "`NCCL_MULTI_RANK_GPU_ENABLE=1` and still has no P2P between slices.",
    fix="Use one MIG instance per physical GPU for NCCL jobs, or whole GPUs; on NCCL >= 2.30 "
    "(experimental) set `NCCL_MULTI_RANK_GPU_ENABLE=1`.",
    example="`ranks 0-6 on 7 MIG 1g.10gb instances of GPU 0 (0000:07:00.0)`.",
)
define(
    "RM602",
    "mig",
    "warning",
    "More than one MIG instance is expected in one process",
    cause="CUDA enumerates only one MIG instance per process; further MIG entries in "
    "CUDA_VISIBLE_DEVICES (and the other GPUs) are not visible.",
    fix="One process per MIG instance: give each process exactly one `MIG-` UUID.",
    example="`CUDA_VISIBLE_DEVICES=MIG-a,MIG-b` -> only MIG-a is visible.",
)
define(
    "RM603",
    "mig",
    "info",
    "MIG mode is enabled on a GPU",
    cause="The GPU is partitioned; processes see MIG instances, not the whole GPU.",
    fix="Expect one MIG instance per process; disable MIG (`nvidia-smi -mig 0`) for multi-GPU NCCL "
    "training.",
    example="`GPU 0 (A100-SXM4-40GB) has MIG enabled with 7 instances`.",
)

# --- container_mapping (RM7xx) ---------------------------------------------------------------
define(
    "RM701",
    "container_mapping",
    "error",
    "Several containers/pods were given the same physical GPU",
    cause="Device passthrough (Docker `--gpus`, NVIDIA_VISIBLE_DEVICES, k8s device-plugin "
    "time-slicing replicas) handed one GPU to several containers; each sees it as GPU 0.",
    fix="Give each container its own GPU (`--gpus '\"device=N\"'`, one `nvidia.com/gpu` per pod "
    "without time-slicing), and compare by UUID.",
    example="`pods worker-0 and worker-1 both see GPU-7fdaf0a5 as cuda:0`.",
)
define(
    "RM702",
    "container_mapping",
    "warning",
    "NVIDIA_VISIBLE_DEVICES disagrees with the GPUs seen",
    cause="The container runtime did not inject what NVIDIA_VISIBLE_DEVICES asks for (device-list "
    "strategy, CDI, `--gpus 0` leaving `all`), or indices were meant as host indices.",
    fix="Pass UUIDs (`--gpus device=GPU-...`) and check `nvidia-smi -L` inside the container.",
    example="`NVIDIA_VISIBLE_DEVICES=2,3 but the container sees 8 GPUs`.",
)
define(
    "RM703",
    "container_mapping",
    "info",
    "Running in a container: GPU indices are renumbered from 0",
    cause="Inside a container nvidia-smi and CUDA number the injected GPUs from 0; host indices do "
    "not apply. PCI bus ids and UUIDs stay the host's.",
    fix="Compare GPUs across containers by UUID or bus id, never by index.",
    example="`host GPU 5 (0000:9A:00.0) is GPU 0 in this container`.",
)

# --- host_identity (RM8xx) -------------------------------------------------------------------
define(
    "RM801",
    "host_identity",
    "error",
    "Different machines share one NCCL host identity",
    cause="The same `NCCL_HOSTID` on several machines (or identical hostname and boot_id, e.g. "
    "cloned VMs) makes NCCL treat them as one host: GPUs with equal bus ids on different "
    "machines become `Duplicate GPU detected`, local ranks are miscounted.",
    fix="Unset `NCCL_HOSTID` (or make it unique per machine); regenerate boot_id / machine-id on "
    "cloned images.",
    example="`nodes gpu-01 and gpu-02 both NCCL_HOSTID=cluster: rank 0 and rank 8 both on 18000`.",
)
define(
    "RM802",
    "host_identity",
    "warning",
    "Two machines share one hostname",
    cause="Containers or VMs created from one template keep the same hostname. NCCL >= 2.5 tells "
    "them apart by boot_id, but launchers, tools and scripts that group by hostname merge them.",
    fix="Give every node a unique hostname.",
    example="`ranks 0-7 and 8-15 report hostname 'localhost' with different boot_ids`.",
)
define(
    "RM803",
    "host_identity",
    "warning",
    "One machine appears as several NCCL hosts",
    cause="Processes on one machine have different hostnames (separate containers/pods with "
    "their own UTS namespace) or different NCCL_HOSTID; NCCL then uses the network instead of "
    "NVLink/shared memory between them and cannot detect GPU sharing.",
    fix="Run the ranks of one machine in one container (or with `hostNetwork`/shared UTS), or set "
    "the same `NCCL_HOSTID` only for processes of the same machine.",
    example="`boot_id 6c1e... is shared by hosts pod-a and pod-b`.",
)
define(
    "RM804",
    "host_identity",
    "error",
    "Two nodes claim the same node rank",
    cause="A copied config (accelerate `machine_rank`, torchrun `--node-rank`) gives two machines "
    "the same node rank: ranks collide and the rendezvous hangs or assigns duplicate ranks.",
    fix="Give every node a distinct node rank (0..nnodes-1), or use the c10d rendezvous.",
    example="`gpu-01 and gpu-02 both --node-rank 0`.",
)

# --- launcher_config (RM9xx) ---------------------------------------------------------------
define(
    "RM901",
    "launcher_config",
    "error",
    "The script's --local_rank / --local-rank argument does not match what the launcher passes",
    cause="`python -m torch.distributed.launch` appends `--local-rank=N` (PyTorch >= 2.0; "
    "`--local_rank` before), `deepspeed` appends `--local_rank=N`; a script that declares only "
    "the other spelling, none under a strict `parse_args()`, or whose entry is `@hydra.main` "
    "(Hydra 1.x parses sys.argv itself) fails with `unrecognized arguments`.",
    fix="Use torchrun and read `os.environ['LOCAL_RANK']`, or declare both: "
    "`parser.add_argument('--local-rank', '--local_rank', type=int)`.",
    example="`error: unrecognized arguments: --local-rank=0`.",
)
define(
    "RM902",
    "launcher_config",
    "error",
    "Several single-process launches were meant as one job",
    cause="A loop of `CUDA_VISIBLE_DEVICES=$i torchrun --nproc-per-node 1 ... &` starts N "
    "independent worlds of size 1 (often on different master ports): no rank ever talks to another. "
    "Only launches that run at once (`&`) of a launcher whose processes form a process group, with "
    "no rank or node rank of their own per line, count: lines run one after another, a sweep of "
    "plain `python` runs, a world started line by line (`--node_rank`, `RANK=`), lines that each "
    "start a multi-process job, and lines that run different experiments (`--fold $i`: arguments "
    "that differ beyond the rendezvous options) are none.",
    fix="Start one launcher with `--nproc-per-node N` and let each rank select cuda:LOCAL_RANK.",
    example="`8 worlds of size 1 instead of one job of 8 ranks`.",
)
define(
    "RM903",
    "launcher_config",
    "error",
    "The launcher does not set the variables the script reads",
    cause="mpirun/srun set OMPI_*/PMI_*/SLURM_* variables, not RANK/LOCAL_RANK/WORLD_SIZE; a "
    "script reading LOCAL_RANK then defaults to 0 on every process, or stops with KeyError. The "
    "same under torchrun for a script that reads SLURM_LOCALID or OMPI_COMM_WORLD_LOCAL_RANK, and "
    "for a value the script cannot parse as an index (ValueError).",
    fix="Map them before init: `LOCAL_RANK=$OMPI_COMM_WORLD_LOCAL_RANK` (or `SLURM_LOCALID`), "
    "or launch with torchrun.",
    example="`mpirun -np 8 python train.py` where train.py reads os.environ.get('LOCAL_RANK', 0)`.",
)
define(
    "RM904",
    "launcher_config",
    "error",
    "Launchers are nested: processes multiply",
    cause="`srun --ntasks-per-node=K torchrun --nproc-per-node=G` starts K agents per node, each "
    "starting G workers: K*G processes for G GPUs.",
    fix="Use one task per node for torchrun (`srun --ntasks-per-node=1 torchrun ...`), or drop "
    "torchrun and map SLURM_* variables.",
    example="`4 tasks x 4 workers = 16 processes on 4 GPUs per node`.",
)
define(
    "RM905",
    "launcher_config",
    "error",
    "Two processes claim the same global rank, or disagree on the world size",
    cause="Independent launches with the same RANK, a copied environment, or different "
    "WORLD_SIZE values (`Bootstrap Root : rank N of M ranks has already checked in`); also "
    "`init_process_group(rank=LOCAL_RANK, world_size=torch.cuda.device_count())` on more than "
    "one node (every node claims ranks 0..n-1).",
    fix="Let one launcher assign ranks; check RANK/WORLD_SIZE are not exported globally.",
    example="`Bootstrap Root : rank 0 of 8 ranks has already checked in`.",
)
define(
    "RM906",
    "launcher_config",
    "error",
    "The rendezvous / store could not be reached or bound",
    cause="MASTER_ADDR/MASTER_PORT wrong or blocked, the port already in use (a previous job, a "
    "probe server), or workers time out waiting for peers. `check` predicts it where the script "
    "writes `os.environ['MASTER_PORT']` (or a loopback `MASTER_ADDR` on > 1 node) before an "
    "`env://` init, or names a constant `tcp://` init_method, under torchrun, whose workers are "
    "all clients of the store torchrun serves.",
    fix="Choose a free `--master-port`, check MASTER_ADDR is reachable from every node.",
    example="`The server socket has failed to listen on any local network address. port: 29500`.",
)
define(
    "RM907",
    "launcher_config",
    "error",
    "A second machine started as node rank 0: it bound the store at an address it does not own",
    cause="In a job of several machines only node rank 0 (accelerate's machine_rank 0) hosts the "
    "c10d store, at MASTER_ADDR. A machine that fails to bind there with errno 99 (`Cannot assign "
    "requested address`) believes it is node rank 0 although MASTER_ADDR names another machine: "
    "a copied command or accelerate config with the same --node_rank / machine_rank on every "
    "machine, or a MASTER_ADDR that names the wrong host. The other machines then wait for "
    "processes that never join (`8/16 clients joined`).",
    fix="Give every machine its own node rank (--node_rank / machine_rank: 0 only on the machine "
    "MASTER_ADDR names) and set MASTER_ADDR to that machine's address.",
    example="`The server socket has failed to bind to 10.60.0.11:29500 (errno: 99 - Cannot assign "
    "requested address)` on the second machine.",
)
