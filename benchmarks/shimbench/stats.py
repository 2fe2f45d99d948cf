"""Order statistics for small, noisy samples."""


def percentile(values, p):
    """Linear interpolation between closest ranks (numpy's default); p in [0, 100]."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = (len(ordered) - 1) * p / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summary(values):
    return {
        "n": len(values),
        "p50": percentile(values, 50),
        "p90": percentile(values, 90),
        "p25": percentile(values, 25),
        "p75": percentile(values, 75),
        "min": min(values) if values else float("nan"),
        "max": max(values) if values else float("nan"),
    }


def ratio(ours, go):
    return ours / go if go else float("nan")
