"""The benchmark harness: `python -m bench` measures throughput, latency and fan-out against
their targets (bench.report says what each section measures)."""
