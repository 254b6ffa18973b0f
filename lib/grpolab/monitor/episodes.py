"""The episode machinery every health alert rule shares (grpolab.monitor.alerts): a rule flags its bad steps, and
these turn flags into episodes, quiet on noise.

    finite_points(view, name) -> (steps, values)        where a metric was logged with a finite value
    find_episodes(flags, min_count, of_last, rearm)     episodes of a flag series (persistence, then re-arming)
    persistent(flags, rule)                             the same with a rule's min_count / of_last / rearm_steps
    baseline_flags(values, rule, bad, bad_vec)          flags against a robust rolling baseline (median and MAD of
                                                        the previous normal steps; flagged steps stay out of it)
    median_at(medians, index)                           the baseline median at a step, None in warm-up

numpy does the windowed work (a 20,000-step run in milliseconds); it is imported lazily so that importing the
monitor stays light.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import deque
from dataclasses import dataclass

from grpolab.monitor.metrics import MetricsView


def finite_points(view: MetricsView, name: str) -> tuple[list[int], list[float]]:
    """(steps, values) where `name` was logged with a finite value (numpy: a 20,000-step run in milliseconds)."""
    # lazy: numpy (only the windowed checks need it; importing the monitor stays light)
    import numpy as np

    if name not in view:  # never logged, or logged only as null
        return [], []
    values = np.array(view.column(name), dtype=float)  # None (not logged) becomes NaN, dropped with NaN/inf
    keep = np.isfinite(values)
    return np.asarray(view.steps)[keep].tolist(), values[keep].tolist()


@dataclass
class Episode:
    first: int  # index of the first bad step
    confirmed: int  # index where persistence was reached
    last: int  # index of the last bad step so far
    count: int
    closed: bool


def find_episodes(flags: list[bool], min_count: int, of_last: int, rearm: int) -> list[Episode]:
    """Episodes of a flag series: one opens when `min_count` of the last `of_last` flags are set (it starts at
    the first set flag of that window) and closes after `rearm` unset flags in a row."""
    out: list[Episode] = []
    if not any(flags):
        return out
    recent: deque[int] = deque()  # indices of set flags within the last of_last
    current: Episode | None = None
    clear = 0
    for index, flag in enumerate(flags):
        while recent and recent[0] <= index - of_last:
            recent.popleft()
        if flag:
            recent.append(index)
            clear = 0
            if current is not None:
                current.last, current.count = index, current.count + 1
            elif len(recent) >= min_count:
                current = Episode(recent[0], index, index, len(recent), False)
                out.append(current)
        else:
            clear += 1
            if current is not None and clear >= rearm:
                current.closed = True
                current = None
                recent.clear()
    return out


class Baseline:
    """Median and MAD of the last `window` values pushed (steps inside an episode are not pushed)."""

    def __init__(self, window: int):
        self.window = window
        self.order: deque[float] = deque()
        self.sorted: list[float] = []

    def __len__(self) -> int:
        return len(self.sorted)

    def push(self, value: float) -> None:
        self.order.append(value)
        insort(self.sorted, value)
        if len(self.order) > self.window:
            del self.sorted[bisect_left(self.sorted, self.order.popleft())]

    def median(self) -> float:
        return _middle(self.sorted)

    def sigma(self, median: float) -> float:
        """1.4826 x MAD: the standard deviation of normal noise, unmoved by a few outliers."""
        return 1.4826 * _middle(sorted(abs(v - median) for v in self.sorted))


def _middle(s: list[float]) -> float:
    """The median of a sorted list (statistics.median would sort it again)."""
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def _previous_medians(values, window: int, need: int, warmup: int):
    """numpy arrays (median, sigma) of the previous `window` values at each index (NaN where fewer than
    `need` exist or before `warmup`): the baseline as it is until the first flag (nothing is excluded yet)."""
    # lazy: numpy (only the windowed checks need it; importing the monitor stays light)
    import numpy as np
    from numpy.lib.stride_tricks import sliding_window_view

    arr = np.asarray(values, dtype=float)
    n = len(arr)
    med = np.full(n, np.nan)
    sig = np.full(n, np.nan)
    for index in range(max(need, warmup), min(window, n)):  # the first steps: fewer than `window` before them
        chunk = arr[:index]
        med[index] = np.median(chunk)
        sig[index] = 1.4826 * np.median(np.abs(chunk - med[index]))
    if n > window:
        windows = sliding_window_view(arr, window)[:-1]  # windows[i] = arr[i:i+window], the values before i+window
        m = np.median(windows, axis=1)
        first = max(window, warmup)
        med[first:] = m[first - window :]
        sig[first:] = 1.4826 * np.median(np.abs(windows - m[:, None]), axis=1)[first - window :]
    return med, sig


def baseline_flags(values: list[float], rule, bad, bad_vec) -> tuple[list[bool], list[float | None]]:
    """Flags of `bad(value, baseline)` against a robust rolling baseline; the baseline median at each index
    (None in warm-up). A flagged value stays out of the baseline, so a long drop does not become the norm.

    Until the first flag the baseline is a plain rolling window, so numpy finds that first flag over the whole
    series at once (`bad_vec(values, medians, sigmas)`); a healthy run stops there. From the first flag on, the
    exact step-by-step pass takes over, starting from the same baseline."""
    # lazy: numpy (only the windowed checks need it; importing the monitor stays light)
    import numpy as np

    need = max(1, min(rule.window, rule.warmup))
    med, sig = _previous_medians(values, rule.window, need, rule.warmup)
    with np.errstate(invalid="ignore"):
        hits = np.flatnonzero(bad_vec(np.asarray(values, dtype=float), med, sig) & ~np.isnan(med))
    medians = med.tolist()  # NaN in warm-up: median_at turns it into None where a message needs it
    flags = [False] * len(values)
    if not len(hits):
        return flags, medians
    first = int(hits[0])
    base = Baseline(rule.window)
    for value in values[max(0, first - rule.window) : first]:
        base.push(value)
    for index in range(first, len(values)):
        value = values[index]
        ready = index >= rule.warmup and len(base) >= need
        flag = bool(ready and bad(value, base))
        flags[index] = flag
        medians[index] = base.median() if ready else None
        if not flag:
            base.push(value)
    return flags, medians


def median_at(medians: list, index: int) -> float | None:
    value = medians[index]
    return None if value is None or value != value else value  # NaN: still in warm-up


def persistent(flags: list[bool], rule) -> list[Episode]:
    return find_episodes(flags, rule.min_count, rule.of_last, rule.rearm_steps)
