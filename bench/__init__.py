"""The benchmark harness: `python -m bench` measures what issue 11 targets."""
