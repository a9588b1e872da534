"""The report the answer-latency benchmarks share: our path beside a bare handler, measured in the same run."""

from __future__ import annotations

import statistics


def percentiles(samples: list[float]) -> tuple[float, float]:
    """p50 and p99 of `samples` (seconds), in milliseconds."""
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000


def print_overhead(answers: int, bare: str, ours: str, bare_samples: list[float], our_samples: list[float]) -> None:
    """Both paths' p50/p99 and their difference: handraise's own overhead, whatever the machine's speed."""
    ours_p50, ours_p99 = percentiles(our_samples)
    bare_p50, bare_p99 = percentiles(bare_samples)
    overhead = "handraise's own overhead"
    width = max(len(bare), len(ours), len(overhead)) + 2
    print(f"{answers} answers, one process, loopback")
    print(f"{bare:<{width}} p50 {bare_p50:6.2f} ms   p99 {bare_p99:6.2f} ms")
    print(f"{ours:<{width}} p50 {ours_p50:6.2f} ms   p99 {ours_p99:6.2f} ms")
    print(f"{overhead:<{width}} p50 {ours_p50 - bare_p50:6.2f} ms   p99 {ours_p99 - bare_p99:6.2f} ms")
