#!/usr/bin/env bash
# rankmap probe on a real GPU machine: ONE short script, ~2-4 minutes, outputs under $OUT.
#
#   OUT=/tmp/rankmap-gpu bash benchmarks/gpu_check.sh        (from the repository root)
#
# (a) real NVML inventory:              rankmap doctor --json            -> $OUT/a_doctor.json
# (b) real probe, 2 ranks, NVML + CUDA: torchrun --nproc-per-node 2 -m rankmap probe
#                                                                        -> $OUT/b_probe.{txt,json}
# (c) a real duplicate GPU: CUDA_VISIBLE_DEVICES=0, 2 ranks both on cuda:0, NCCL all_reduce with
#     NCCL_DEBUG=INFO. Each rank first runs rankmap.verify(device=0) (the finding it raises is
#     printed), then does what the job would have done: init_process_group("nccl") + all_reduce,
#     and prints the exception NCCL/PyTorch raise. NCCL's own log goes to c_nccl.log;
#     `rankmap explain` reads that log.          -> $OUT/c_*.{txt,log,json}, $OUT/summary.txt
#
# Written to be correct by reading: it has not been run yet (no GPU was lent while it was
# written). Needs torch with CUDA + NCCL, nvidia-smi/NVML, at least 1 GPU (2 for (b) to be clean).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$(mktemp -d /tmp/rankmap-gpu.XXXXXX)}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
PY="${PYTHON:-python}"
port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
note() { echo "== $*" | tee -a "$OUT/summary.txt"; }
: > "$OUT/summary.txt"

note "host $(hostname), $(date -u +%FT%TZ), torch $("$PY" -c 'import torch;print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())' 2>&1)"
nvidia-smi -L > "$OUT/nvidia-smi-L.txt" 2>&1
NGPU=$(grep -c '^GPU ' "$OUT/nvidia-smi-L.txt" || true)
note "nvidia-smi -L: ${NGPU} GPU(s)"

# (a) ------------------------------------------------------------------------------------------
timeout 60 "$PY" -m rankmap doctor --json > "$OUT/a_doctor.json" 2> "$OUT/a_doctor.err"
note "(a) rankmap doctor --json: exit $?"

# (b) ------------------------------------------------------------------------------------------
for fmt in txt json; do
  flag=(); [ "$fmt" = json ] && flag=(--json)
  timeout 120 "$PY" -m torch.distributed.run --nproc-per-node 2 --master-addr 127.0.0.1 \
    --master-port "$(port)" -m rankmap probe --timeout 60 "${flag[@]}" \
    > "$OUT/b_probe.$fmt" 2> "$OUT/b_probe.$fmt.err"
  note "(b) torchrun --nproc-per-node 2 -m rankmap probe ${flag[*]}: exit $? (expect 0 with >= 2 GPUs)"
done

# (c) ------------------------------------------------------------------------------------------
JOB="$OUT/c_dup_job.py"
cat > "$JOB" <<'EOF'
import os, sys, time, torch, torch.distributed as dist, rankmap
rank = int(os.environ["RANK"])
torch.cuda.set_device(0)  # the bug under test: every rank on cuda:0
try:
    report = rankmap.verify(device=0, timeout=60)
    print(f"[rank {rank}] RANKMAP verdict {report.verdict}", flush=True)
except rankmap.RankMapError as exc:
    print(f"[rank {rank}] RANKMAP {type(exc).__name__}: {exc}", flush=True)
try:
    dist.init_process_group("nccl")
    t = torch.ones(1, device="cuda:0")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    print(f"[rank {rank}] NCCL all_reduce finished: {t.item()} (no error)", flush=True)
except Exception as exc:  # DistBackendError / RuntimeError carrying NCCL's message
    print(f"[rank {rank}] NCCL {type(exc).__name__}: {exc}", flush=True)
finally:
    if dist.is_initialized():
        dist.destroy_process_group()
EOF
CUDA_VISIBLE_DEVICES=0 NCCL_DEBUG=INFO TORCH_NCCL_ASYNC_ERROR_HANDLING=1 timeout 180 \
  "$PY" -m torch.distributed.run --nproc-per-node 2 --master-addr 127.0.0.1 \
  --master-port "$(port)" "$JOB" > "$OUT/c_dup_job.txt" 2> "$OUT/c_nccl.log"
note "(c) 2 ranks on one GPU under NCCL: exit $? (expect non-zero)"
timeout 60 "$PY" -m rankmap explain "$OUT/c_nccl.log" "$OUT/c_dup_job.txt" --json \
  > "$OUT/c_explain.json" 2> "$OUT/c_explain.err"
note "(c) rankmap explain c_nccl.log c_dup_job.txt --json: exit $?"

# summary: NCCL's real error next to rankmap's findings ----------------------------------------
{
  echo "--- NCCL's own words (c_nccl.log / c_dup_job.txt):"
  grep -h -E "Duplicate GPU detected|Multiple Ranks are using the same GPU|NCCL WARN|NCCL error|ncclInvalidUsage" \
    "$OUT/c_nccl.log" "$OUT/c_dup_job.txt" | sort -u | head -20
  echo "--- rankmap.verify(device=0) raised (c_dup_job.txt):"
  grep -h "RANKMAP" "$OUT/c_dup_job.txt" | head -12
  echo "--- rankmap explain findings (c_explain.json):"
  "$PY" - "$OUT/c_explain.json" <<'EOF'
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except Exception as exc:
    print(f"(no report: {exc})"); sys.exit(0)
for f in doc.get("findings", []):
    print(f"{f['code']} {f['severity']}: {f['title']} ranks={f['ranks']} devices={f['devices']}")
EOF
  echo "--- rankmap probe, 2 ranks (b_probe.json):"
  "$PY" - "$OUT/b_probe.json" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
try:
    doc = json.loads(text[text.index("{"): text.rindex("}") + 1])
except Exception as exc:
    print(f"(no report: {exc})"); sys.exit(0)
print("verdict", doc["verdict"])
for p in doc["placements"]:
    print(f"rank {p['rank']} {p['node']} cuda:{p['cuda_index']} nvml {p['nvml_index']} {p['pci_bus_id']} {p['uuid']}")
for f in doc["findings"]:
    print(f"{f['code']} {f['severity']}: {f['title']}")
EOF
} >> "$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
echo "outputs in $OUT"
