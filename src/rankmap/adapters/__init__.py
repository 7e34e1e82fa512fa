"""All I/O lives here: NVML, the local system, files, processes. The core stays pure."""
