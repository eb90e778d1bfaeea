"""Iterations of the primitive exec stream: the repeating period, warm-up, per-pass times.

No user markers are needed: per input, the exec rows' ``record`` ids form an integer
stream; the period ``p`` is the smallest shift under which the stream's long tail repeats
itself (a few mismatches and single inserted or missing rows tolerated, see
:func:`find_period`), the stream is cut into iterations wherever the opening records of one
period occur, and the *template* is the most common full-length iteration.

Definitions (these are the contract of :class:`Iterations`):

* **iteration** = one pass of the program (an inference batch, a training step). ``count``
  counts *every* pass, warm-up passes included, so it equals the number of passes the
  script ran. Exec rows before the first full period that are not template records (one-time
  weight reorders, a first call's extra work) are part of the first iteration; a stretch of
  rows as long as ``k`` periods that was not cut is counted as ``k`` iterations.
* **warmup_structural** = the number of *leading* iterations whose *structure* is not yet
  steady (the run's warm-up is :attr:`dnnlens.analysis.steady.SteadyState.warmup`, which
  adds the passes that are only slow; it is the one every report and command says): they create
  more primitives than the run's median pass (``create:cache_miss``: a run whose every pass
  creates its primitives, the cache off or shapes that change, has no such pass) or run
  other primitives than the template (sizes and order aside). Never more than the passes
  left steady (:func:`max_warmup`). It is a count of iterations (passes), not of rows, and
  it is part of ``count``.
  Without create lines (``ONEDNN_VERBOSE=1``) a warm-up pass that executes the same
  primitives as the others cannot be told apart and is not counted as warm-up.
* ``iteration`` (array aligned to the events rows) holds the 0-based global iteration index
  of every row, warm-up iterations included; ``-1`` marks rows outside every iteration (a
  trailing piece shorter than half a period, inputs without exec rows). Create rows belong
  to the iteration of the next exec row of their input. Which rows are steady state is
  :mod:`dnnlens.analysis.steady`'s answer (structural and slow warm-up), not this module's.
* Several inputs are handled one by one; their iterations are numbered one after the other
  and ``count``/``warmup_structural`` are sums. ``period_exec`` and ``template`` are those of the
  *main* input (the one with the most exec rows).

A user regex for the program's own marker lines can replace the detection: the reader
keeps the lines it matches (``read(..., marker=...)``, ``InputScan.marker_line``), given
here as the ``marker_lines`` argument of :func:`find_iterations`; each marker line then
separates two iterations (segments without exec rows are dropped).

Everything works on integer arrays: a million events take about a second.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dnnlens.analysis.columns import category_mask, str_values, with_dtypes
from dnnlens.analysis.step_lines import find_step_lines
from dnnlens.parsers.program_lines import ProgramLines

__all__ = [
    "InputIterations",
    "Iterations",
    "category_mask",
    "find_iterations",
    "find_period",
]

#: Share of mismatching comparisons tolerated in the steady region.
MISMATCH_TOLERANCE = 0.05
#: Candidate periods kept per gap order (1st, 2nd, 3rd next occurrence).
_CANDIDATES_PER_ORDER = 12
#: Longest template prefix used to find iteration starts.
_MAX_SIGNATURE = 64
#: Columns of :attr:`Iterations.times`.
TIME_COLUMNS = (
    "iteration", "input", "structural_warmup", "regular", "exec_count", "time_ms", "reorder_ms",
    "first_line", "last_line",
)  # fmt: skip


@dataclass
class InputIterations:
    """The iterations found in one input.

    ``first_iteration`` is the global index of its first iteration; ``template`` the record
    ids of one steady iteration; ``method`` is ``period`` (detected), ``steps`` (the
    program's own step lines, :mod:`dnnlens.analysis.step_lines`), ``markers`` (user
    regex), ``single`` (no repetition found: the whole stream is one iteration) or ``none``
    (no exec rows). ``irregular`` counts iterations whose exec sequence is not the
    template; ``outside_exec`` exec rows that belong to no iteration.
    """

    input: str
    count: int
    warmup_structural: int
    period_exec: int
    exec_rows: int
    first_iteration: int
    method: str
    irregular: int = 0
    outside_exec: int = 0
    #: with ``method == "steps"``: the shape of the program's step line (numbers as ``#``)
    step_line: str = ""
    #: whether regular passes run the template's primitives at other sizes (a batch or
    #: sequence length that changes from pass to pass)
    sizes_vary: bool = False
    template: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))


@dataclass
class Iterations:
    """Iterations of a whole event table (see the module docstring for the definitions).

    ``times`` has one row per iteration with the columns of :data:`TIME_COLUMNS`:
    ``iteration`` (global index), ``input``, ``structural_warmup`` (bool), ``regular`` (its exec
    sequence is the template), ``exec_count``, ``time_ms`` (sum of its exec times),
    ``reorder_ms`` (the reorder part of it), ``first_line``/``last_line`` (physical lines).
    """

    count: int
    warmup_structural: int
    period_exec: int
    iteration: np.ndarray
    times: pd.DataFrame
    inputs: list[InputIterations]
    template: np.ndarray
    main_input: str = ""

    @property
    def main(self) -> InputIterations | None:
        """The iterations of the main input (the one with the most exec rows)."""
        return next((i for i in self.inputs if i.input == self.main_input), None)

    @property
    def method(self) -> str:
        """How the main input's passes were cut (``InputIterations.method``)."""
        main = self.main
        return main.method if main is not None else "none"

    @property
    def sizes_vary(self) -> bool:
        """Whether the main input's passes run their primitives at sizes that change."""
        main = self.main
        return main.sizes_vary if main is not None else False

    @property
    def step_line(self) -> str:
        """The main input's step line shape, when its passes were cut at step lines."""
        main = self.main
        return main.step_line if main is not None else ""

    def as_dict(self) -> dict[str, int]:
        """The passes found, their structural warm-up and period (the run's warm-up is the
        steady state's)."""
        return {
            "count": self.count,
            "warmup_structural": self.warmup_structural,
            "period_exec": self.period_exec,
        }


# ---------------------------------------------------------------------------------------
# period detection


def _candidates(s: np.ndarray) -> list[int]:
    """Likely periods: the most frequent distances to the 1st/2nd/3rd next equal record."""
    n = len(s)
    order = np.argsort(s, kind="stable")
    ss = s[order]
    out: set[int] = set()
    for k in (1, 2, 3):
        if n <= k:
            break
        gaps = (order[k:] - order[:-k])[ss[k:] == ss[:-k]]
        gaps = gaps[gaps <= n // 2]
        if not gaps.size:
            continue
        counts = np.bincount(gaps)
        top = np.argsort(counts, kind="stable")[::-1][:_CANDIDATES_PER_ORDER]
        out.update(int(g) for g in top if counts[g] > 0 and g > 0)
    return sorted(out)


def _steady_start(match: np.ndarray, p: int) -> int | None:
    """First index where a full clean period starts and the rest mismatches rarely."""
    m = len(match)
    if m < p:
        return None
    bad = ~match
    suffix_bad = np.cumsum(bad[::-1])[::-1]
    suffix_len = np.arange(m, 0, -1)
    ok_rate = suffix_bad <= MISMATCH_TOLERANCE * suffix_len
    # next_false[i]: first mismatch at or after i (m if none)
    idx = np.where(bad, np.arange(m), m)
    next_false = np.minimum.accumulate(idx[::-1])[::-1]
    clean = (next_false - np.arange(m)) >= p
    good = np.flatnonzero(ok_rate & clean)
    return int(good[0]) if good.size else None


def _shift_matches(s: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray]:
    """``(exact, fuzzy)``: ``s[i] == s[i + p]``, and the same allowing ``p - 1``/``p + 1``.

    The fuzzy form absorbs one inserted or missing row between ``i`` and ``i + p`` (an extra
    reorder in one pass), which the exact form would count as ``p`` mismatches.
    """
    n = len(s)
    exact = s[: n - p] == s[p:]
    fuzzy = exact.copy()
    fuzzy[: n - p - 1] |= s[: n - p - 1] == s[p + 1 :]
    if p > 1:
        fuzzy |= s[: n - p] == s[p - 1 : n - 1]
    return exact, fuzzy


def period_score(s: np.ndarray, p: int) -> tuple[int, int, int, float] | None:
    """``(p, steady start, rows covered, exact mismatch rate)`` when period ``p`` holds over
    a steady region of ``s`` (see :func:`find_period`), else None."""
    n = len(s)
    exact, fuzzy = _shift_matches(s, p)
    start = _steady_start(fuzzy, p)
    if start is None or n - start < max(2 * p, 3) or 2 * (n - start) < n:
        return None
    rate = float(exact[start:].mean())
    if rate < 0.5:
        return None
    return p, start, n - start, 1.0 - rate


def find_period(s: np.ndarray) -> tuple[int, int] | None:
    """``(period, steady_start)`` of an integer stream, or ``None`` if it does not repeat.

    For each candidate ``p`` the steady region is the suffix that starts with a clean period
    and where ``s[i] == s[i + p]`` (or ``s[i + p +- 1]``, one row inserted or missing) fails
    for at most :data:`MISMATCH_TOLERANCE` of positions; at least half of its positions must
    match exactly. Candidates whose region covers 90 % of the best coverage, two periods
    (three rows at least) and half of the stream qualify; of those, the smallest wins unless
    a longer one repeats markedly better (:func:`_choose`): four identical layers inside
    a pass repeat with the layer's period too, but only the whole pass repeats exactly.
    """
    s = np.asarray(s)
    n = len(s)
    if n < 2:
        return None
    scored: list[tuple[int, int, int, float]] = []
    for p in _candidates(s):
        score = period_score(s, p)
        if score is None:
            continue
        scored.append(score)
        if score[3] == 0.0 and score[2] >= 0.9 * n:
            break  # repeats exactly over nearly all of it: no longer period can beat it
    if not scored:
        return None
    return _choose(scored)


#: A longer period replaces a shorter one when it mismatches less than this share of the
#: shorter one's mismatch rate: a sub-period (a layer repeated inside the pass) fails at the
#: rows that are not part of the repeated block in every pass, while the true period and
#: its multiples fail alike, at the same irregular passes.
BETTER_RATE_FACTOR = 0.5
#: A mismatch rate at or below this is as clean as a stream gets (one extra reorder in a
#: thousand comparisons): no longer period is looked for.
CLEAN_RATE = 0.001


def _choose(scored: list[tuple[int, int, int, float]]) -> tuple[int, int]:
    """The period among qualifying candidates (see :func:`find_period`)."""
    best = max(c for _, _, c, _ in scored)
    eligible = sorted((sc for sc in scored if sc[2] >= 0.9 * best), key=lambda sc: sc[0])
    chosen = eligible[0]
    for sc in eligible[1:]:
        if chosen[3] <= CLEAN_RATE:
            break
        if sc[3] < BETTER_RATE_FACTOR * chosen[3]:
            chosen = sc
    return chosen[0], chosen[1]


def _signature_length(t: np.ndarray) -> int:
    """Shortest prefix of the template that occurs once among its cyclic rotations."""
    p = len(t)
    tt = np.concatenate([t, t])
    eq = np.ones(p, dtype=bool)
    for k in range(min(p, _MAX_SIGNATURE)):
        eq &= tt[k : k + p] == t[k]
        if eq.sum() == 1:
            return k + 1
    return 0


def _template_begins(s: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Where iterations of template ``t`` may begin in ``s``: where its opening records
    (its signature) occur, or every period from the first opening record without one."""
    n, p = len(s), len(t)
    sig = _signature_length(t)
    if sig == 0:
        hits = np.flatnonzero(s[: n - p + 1] == t[0]) if n >= p else np.zeros(0, np.int64)
        return np.arange(hits[0], n, p) if hits.size else hits
    m = n - sig + 1
    eq = np.ones(m, dtype=bool)
    for k in range(sig):
        eq &= s[k : k + m] == t[k]
    return np.flatnonzero(eq)


def _segments_by_period(s: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Cut the stream into iterations ``[begin, end)`` (rows of indices into ``s``) of ``t``.

    Cuts are made where the template's opening records occur. A piece holding ``k``
    periods' worth of template records counts as ``k`` iterations; a piece with less than
    half a period joins the iteration before it (or, at the start, the one after it); such
    a piece at the very end is left outside.
    """
    n, p = len(s), len(t)
    begins = _template_begins(s, t)
    whole = np.array([[0, n]], dtype=np.int64)
    if not begins.size:
        return whole
    csum = np.concatenate([[0], np.cumsum(np.isin(s, t))])
    # pieces between cuts (cuts strictly increase, so every piece holds rows)
    edges = np.concatenate([[0], begins[begins > 0], [n]]).astype(np.int64)
    b, e = edges[:-1], edges[1:]
    k = np.rint((csum[e] - csum[b]) / p).astype(np.int64)  # round half to even, as round()
    emit = np.flatnonzero(k > 0)
    if not emit.size:
        return whole
    # an emitted piece starts where the piece before it ends (the first one at 0: pieces
    # before it join it); its last iteration runs on to the next emitted piece (pieces with
    # k == 0 join it), the trailing piece excepted: left outside when k == 0
    starts = b[emit]
    starts[0] = 0
    last = len(k) - 1
    ends = np.append(b[emit[1:]], n if emit[-1] == last else b[last])
    segments = np.column_stack([starts, ends])
    multi = np.flatnonzero(k[emit] > 1)
    if not multi.size:
        return segments
    out, prev = [], 0
    for i in multi.tolist():
        cuts = np.linspace(starts[i], e[emit[i]], k[emit[i]] + 1).round().astype(np.int64)
        parts = np.column_stack([cuts[:-1], cuts[1:]])
        parts[-1, 1] = ends[i]
        out += [segments[prev:i], parts]
        prev = i + 1
    out.append(segments[prev:])
    return np.concatenate(out)


def _segments_by_markers(ex_lines: np.ndarray, markers: np.ndarray) -> np.ndarray:
    seg = np.searchsorted(np.sort(markers), ex_lines, side="right")
    if not len(seg):
        return np.zeros((0, 2), dtype=np.int64)
    change = np.flatnonzero(np.diff(seg)) + 1
    edges = np.concatenate([[0], change, [len(seg)]]).astype(np.int64)
    return np.column_stack([edges[:-1], edges[1:]])


def _modal_sequence(
    s: np.ndarray, segments: np.ndarray, guess: np.ndarray | None = None
) -> np.ndarray:
    """The most common sequence of the segments (the first seen of equally common ones).

    ``guess`` (a sequence as long as every segment) is the answer, found without counting,
    when more than half of the segments hold it.
    """
    if guess is not None:
        same = (s[segments[:, :1] + np.arange(len(guess))] == guess).all(axis=1)
        if 2 * int(same.sum()) > len(segments):
            return guess.copy()
    counts = Counter(s[b:e].tobytes() for b, e in segments.tolist())
    key, _ = counts.most_common(1)[0]
    return np.frombuffer(key, dtype=s.dtype).copy()


# ---------------------------------------------------------------------------------------
# the event table


@dataclass
class _InputResult:
    info: InputIterations
    segments: np.ndarray  # (iterations, 2): [begin, end) in the input's exec rows
    exec_pos: np.ndarray
    regular: np.ndarray
    warm: np.ndarray


def _extra_misses(segments: np.ndarray, miss_iter_hint: np.ndarray) -> np.ndarray:
    """Iterations that create more primitives (cache misses) than the run's median pass.

    ``miss_iter_hint`` holds the exec index after each miss. A pass that creates what later
    passes find in the cache is warming up; a run whose every pass creates its primitives
    (the cache off, shapes that keep changing) has no such pass: creating is its steady
    state, and the cache-miss finding says what it costs.
    """
    misses = np.zeros(len(segments), dtype=np.int64)
    begins = segments[:, 0]
    if miss_iter_hint.size and begins.size:
        seg_of = np.searchsorted(begins, miss_iter_hint, side="right") - 1
        misses = np.bincount(seg_of[seg_of >= 0], minlength=len(segments))
    return misses > np.median(misses) if len(misses) else misses.astype(bool)


_DIGITS = re.compile(r"\d+")
#: A number of a problem descriptor and the field name before it (``mb4`` -> ``mb``, ``4``;
#: in ``4x16x64x64`` the names are ``""`` and ``x``).
_FIELD = re.compile(r"([a-z]*)(\d+)")
#: Fields that may change from pass to pass of one program: the batch (``mb``, a dims
#: string's numbers), time steps (``t``) and image sizes (``ih``, ``iw`` ...). Channels,
#: kernels, strides and layer counts change from layer to layer of a network instead.
_PASS_FIELDS = frozenset({"", "x", "mb", "n", "t", "ih", "oh", "iw", "ow", "id", "od"})
#: Columns that, with the problem's numbers taken out, say which primitive a row runs.
_SHAPELESS_COLUMNS = ("kind", "impl", "prop_kind", "mds", "attrs", "aux")


def _shapeless_ids(
    events: pd.DataFrame, exec_rows: np.ndarray
) -> tuple[np.ndarray, dict[int, tuple[tuple[str, str], ...]]]:
    """Per exec row, an id of its primitive without its sizes; and each record's sizes.

    Two rows get the same id when they run the same kind, implementation, prop_kind,
    layouts and attributes on a problem that differs only in its numbers (batch 4 and
    batch 7 of one convolution). Computed once per distinct record.
    """
    rec = events["record"].to_numpy(dtype=np.int64)[exec_rows]
    if not len(rec):
        return np.zeros(0, dtype=np.int64), {}
    uniq, first, inverse = np.unique(rec, return_index=True, return_inverse=True)
    at = exec_rows[first]
    cols = [str_values(events[c].iloc[at]) for c in _SHAPELESS_COLUMNS]
    problems = str_values(events["problem"].iloc[at])
    keys: dict[tuple[str, ...], int] = {}
    ids = np.empty(len(uniq), dtype=np.int64)
    numbers: dict[int, tuple[tuple[str, str], ...]] = {}
    for i, r in enumerate(uniq.tolist()):
        problem = problems[i]
        key = (*(c[i] for c in cols), _DIGITS.sub("#", problem))
        ids[i] = keys.setdefault(key, len(keys))
        numbers[r] = tuple(_FIELD.findall(problem))
    return ids[inverse], numbers


def _period_key(
    s: np.ndarray, shapeless: np.ndarray, numbers: Mapping[int, tuple[tuple[str, str], ...]]
) -> tuple[np.ndarray, tuple[int, int] | None]:
    """The stream whose period is the pass, and that period (:func:`find_period`): the
    records, or the records without sizes.

    Without sizes when the passes change their sizes (a batch or sequence length that
    varies): then the records repeat over less of the run than the sizeless stream, or
    their period is a cycle of sizes (batch 2, 3, ... 9, again), several sizeless periods
    that differ from each other only in the sizes that change (:func:`_size_cycle`).
    """
    if len(np.unique(s)) == len(np.unique(shapeless)):
        return s, find_period(s)  # no two records differ in their sizes only
    loose = find_period(shapeless)
    exact = find_period(s)
    if loose is None:
        return s, exact
    if exact is None:
        return shapeless, loose
    n = len(s)
    (pe, se), (pl, sl) = exact, loose
    if n - se < 0.9 * (n - sl):
        return shapeless, loose
    if pe > pl and pe % pl == 0 and _size_cycle(s[se : se + pe], pl, numbers):
        return shapeless, loose
    return s, exact


def _size_cycle(
    template: np.ndarray, p: int, numbers: Mapping[int, tuple[tuple[str, str], ...]]
) -> bool:
    """Whether ``template`` is ``len / p`` passes of one primitive sequence at other sizes.

    Chunk ``j`` of length ``p`` is a pass. At each position, the chunks' records are either
    all the same (a weight reorder that does not depend on the batch) or all different,
    and then they differ in the same numbers of the problem, which hold one value per
    chunk (the batch, or a sequence length printed twice) and are fields that change
    between passes (:data:`_PASS_FIELDS`). Layers of a network that differ in their
    channels (two LSTM layers, 32 and 64 inputs) fail it.
    """
    k = len(template) // p
    chunks = template.reshape(k, p)
    differs = False
    for i in range(p):
        col = chunks[:, i].tolist()
        if len(set(col)) == 1:
            continue
        if len(set(col)) != k:
            return False
        fields = [numbers.get(r, ()) for r in col]
        if len({tuple(n for n, _ in f) for f in fields}) != 1 or not fields[0]:
            return False
        arr = np.asarray([[int(v) for _, v in f] for f in fields])
        where = (arr != arr[0]).any(axis=0)
        if any(fields[0][j][0] not in _PASS_FIELDS for j in np.flatnonzero(where).tolist()):
            return False
        if any(len(set(row[where].tolist())) != 1 for row in arr):
            return False
        differs = True
    return differs


def _sizes_vary(s: np.ndarray, segments: np.ndarray) -> bool:
    """Whether some of these (regular) passes run other records than the first one."""
    if len(segments) < 2:
        return False
    b, e = segments[0]
    first = s[b:e]
    return any(not np.array_equal(s[x:y], first) for x, y in segments[1:].tolist())


def max_warmup(passes: int) -> int:
    """The most warm-up passes a run of ``passes`` can spare: fewer than it keeps steady.

    Warm-up is the transient before a run settles; when more than half of its passes look
    unsettled, the criterion is wrong for this run (threads that order a step's ops
    differently each time, a pass that varies on purpose), not the run, and most of it is
    what the user measures.
    """
    return max(passes - 1, 0) // 2


def _same_content(
    shapeless: np.ndarray, segments: np.ndarray, template: np.ndarray, regular: np.ndarray
) -> np.ndarray:
    """Passes that run the template's primitives, in its order or another (a threadpool may
    run a step's independent ops in any order): they are settled, whatever their order."""
    same = regular.copy()
    p = len(template)
    lengths = segments[:, 1] - segments[:, 0]
    other = np.flatnonzero(~regular & (lengths == p))
    if len(other) and p:
        want = np.sort(template)
        rows = np.sort(shapeless[segments[other, 0][:, None] + np.arange(p)], axis=1)
        same[other] = (rows == want).all(axis=1)
    return same


def _one_input(
    name: str,
    exec_pos: np.ndarray,
    s: np.ndarray,
    shapeless: np.ndarray,
    numbers: Mapping[int, tuple[tuple[str, str], ...]],
    lines: np.ndarray,
    markers: np.ndarray | None,
    miss_iter_hint: np.ndarray,
) -> _InputResult:
    n = len(s)
    if n == 0:
        info = InputIterations(name, 0, 0, 0, 0, 0, "none")
        no_segments = np.zeros((0, 2), dtype=np.int64)
        return _InputResult(info, no_segments, exec_pos, np.zeros(0, bool), np.zeros(0, bool))
    if markers is not None:
        segments = _segments_by_markers(lines[exec_pos], markers)
        shape_template = _modal_sequence(shapeless, segments)
        method = "markers"
    else:
        key, found = _period_key(s, shapeless, numbers)
        if found is None:
            segments = np.array([[0, n]], dtype=np.int64)
            shape_template, method = shapeless.copy(), "single"
        else:
            p, start = found
            template = key[start : start + p].copy()
            segments = _segments_by_period(key, template)
            # the most common full-length iteration is the template (the first clean one
            # may hold a tolerated irregularity)
            full = segments[segments[:, 1] - segments[:, 0] == p]
            modal = _modal_sequence(key, full, template) if len(full) else template
            if not np.array_equal(modal, template):
                segments = _segments_by_period(key, modal)
            method = "period"
            starts = segments[segments[:, 1] - segments[:, 0] == p, 0]
            first = int(starts[0]) if len(starts) else start
            shape_template = shapeless[first : first + p].copy()
    # a pass is regular when it runs the template's primitives in order, whatever its shapes
    p = len(shape_template)
    lengths = segments[:, 1] - segments[:, 0]
    regular = lengths == p
    if regular.any() and p:
        starts = segments[regular, 0]
        same = (shapeless[starts[:, None] + np.arange(p)] == shape_template).all(axis=1)
        regular[np.flatnonzero(regular)] = same
    if regular.any():
        template = _modal_sequence(s, segments[regular])
    else:
        template = s[segments[0, 0] : segments[0, 1]].copy()
    not_steady = _extra_misses(segments, miss_iter_hint) | ~_same_content(
        shapeless, segments, shape_template, regular
    )
    # leading non-steady iterations, but never more than the passes left steady
    leading = int(np.argmin(not_steady)) if not not_steady.all() else len(segments)
    warmup = min(leading, max_warmup(len(segments)))
    if method == "single":
        warmup = 0
    warm = np.zeros(len(segments), dtype=bool)
    warm[:warmup] = True
    outside = n - int(lengths.sum())
    info = InputIterations(
        input=name,
        count=len(segments),
        warmup_structural=warmup,
        period_exec=p,
        exec_rows=n,
        first_iteration=0,
        method=method,
        irregular=int((~regular).sum()),
        outside_exec=int(outside),
        template=template,
        sizes_vary=_sizes_vary(s, segments[regular]),
    )
    return _InputResult(info, segments, exec_pos, regular, warm)


def _row_iterations(segments: np.ndarray, n: int, first: int) -> np.ndarray:
    """Iteration of each of ``n`` rows: ``first + k`` in segment ``k``, -1 outside them.

    Segments are disjoint (consecutive pieces of one stream).
    """
    out = np.full(n, -1, dtype=np.int64)
    lengths = segments[:, 1] - segments[:, 0]
    offsets = np.repeat(segments[:, 0] - (np.cumsum(lengths) - lengths), lengths)
    out[np.arange(int(lengths.sum())) + offsets] = np.repeat(
        np.arange(first, first + len(segments)), lengths
    )
    return out


def _markers_for(
    marker: Mapping[str, np.ndarray] | np.ndarray | None, name: str, n_inputs: int
) -> np.ndarray | None:
    if marker is None:
        return None
    if isinstance(marker, Mapping):
        found = marker.get(name)
        return None if found is None else np.asarray(found, dtype=np.int64)
    if n_inputs != 1:
        raise ValueError("marker lines as one array need exactly one input; pass a dict")
    return np.asarray(marker, dtype=np.int64)


def find_iterations(
    events: pd.DataFrame,
    marker_lines: Mapping[str, np.ndarray] | np.ndarray | None = None,
    program_lines: Mapping[str, ProgramLines] | None = None,
    excluded_lines: Mapping[str, list[tuple[int, int]]] | None = None,
) -> Iterations:
    """Find the iterations of every input of an event table (see the module docstring).

    ``marker_lines`` overrides the detection: a mapping from input path to the sorted line
    numbers of the program's marker lines (see :func:`marker_lines`), or one array when the
    table has a single input. For the other inputs, ``program_lines`` (input path to the
    shapes of its foreign lines) are searched for the program's own step lines
    (:mod:`dnnlens.analysis.step_lines`; ``excluded_lines``: spans that never hold one,
    profiler tables); without any, the period of the exec stream is found.
    """
    total = len(events)
    iteration = np.full(total, -1, dtype=np.int64)
    is_exec = category_mask(events["operation"], lambda v: v == "exec")
    is_miss = category_mask(events["operation"], lambda v: v.startswith("create")) & category_mask(
        events["cache"], lambda v: "miss" in v
    )
    is_reorder = category_mask(events["kind"], lambda v: v == "reorder")
    record = events["record"].to_numpy(dtype=np.int64)
    lines = events["line"].to_numpy(dtype=np.int64)
    times_ms = events["time_ms"].to_numpy(dtype=np.float64)
    inputs = events["input"].astype("category")
    input_codes = inputs.cat.codes.to_numpy()
    input_names = [str(c) for c in inputs.cat.categories]

    results: list[_InputResult] = []
    rows_of: list[np.ndarray] = []
    for code, name in enumerate(input_names):
        rows = np.flatnonzero(input_codes == code)
        rows_of.append(rows)
        exec_pos = rows[is_exec[rows]]
        miss_rows = rows[is_miss[rows]]
        miss_next_exec = np.searchsorted(exec_pos, miss_rows)
        miss_next_exec = np.minimum(miss_next_exec, max(len(exec_pos) - 1, 0))
        shapeless, numbers = _shapeless_ids(events, exec_pos)
        markers = _markers_for(marker_lines, name, len(input_names))
        steps = None
        if markers is None and program_lines is not None and name in program_lines:
            spans = (excluded_lines or {}).get(name, [])
            steps = find_step_lines(program_lines[name], lines[exec_pos], shapeless, spans)
            markers = steps.lines if steps is not None else None
        result = _one_input(
            name,
            exec_pos,
            record[exec_pos],
            shapeless,
            numbers,
            lines,
            markers,
            miss_next_exec if exec_pos.size else np.zeros(0, np.int64),
        )
        if steps is not None:
            result.info.method = "steps"
            result.info.step_line = steps.shape
        results.append(result)

    table: dict[str, list] = {c: [] for c in TIME_COLUMNS}  # per input: arrays (names: strs)
    next_index = 0
    for res, rows in zip(results, rows_of, strict=True):
        res.info.first_iteration = next_index
        exec_pos = res.exec_pos
        if not len(res.segments):
            continue
        ex_iter = _row_iterations(res.segments, len(exec_pos), next_index)
        iteration[exec_pos] = ex_iter
        # non-exec rows: iteration of the next exec row of the input (or the last one)
        other = rows[~is_exec[rows]]
        nxt = np.minimum(np.searchsorted(exec_pos, other), len(exec_pos) - 1)
        iteration[other] = ex_iter[nxt]
        inside = ex_iter >= 0
        idx = ex_iter[inside] - next_index
        nseg = len(res.segments)
        t = np.nan_to_num(times_ms[exec_pos][inside])
        table["iteration"].append(np.arange(next_index, next_index + nseg))
        table["input"].extend([res.info.input] * nseg)
        table["structural_warmup"].append(res.warm)
        table["regular"].append(res.regular)
        table["exec_count"].append(np.bincount(idx, minlength=nseg))
        table["time_ms"].append(np.bincount(idx, weights=t, minlength=nseg))
        r = np.where(is_reorder[exec_pos][inside], t, 0.0)
        table["reorder_ms"].append(np.bincount(idx, weights=r, minlength=nseg))
        ln = lines[exec_pos]
        table["first_line"].append(ln[res.segments[:, 0]])
        table["last_line"].append(ln[res.segments[:, 1] - 1])
        next_index += nseg

    columns = {c: v if c == "input" else np.concatenate(v) if v else [] for c, v in table.items()}
    times = pd.DataFrame(columns, columns=list(TIME_COLUMNS))
    times = with_dtypes(times, {
        "iteration": "int64", "structural_warmup": "bool", "regular": "bool",
        "exec_count": "int64",
        "time_ms": "float64", "reorder_ms": "float64", "first_line": "int64", "last_line": "int64",
    })  # fmt: skip
    infos = [r.info for r in results]
    main = max(infos, key=lambda i: i.exec_rows, default=None)
    return Iterations(
        count=next_index,
        warmup_structural=sum(i.warmup_structural for i in infos),
        period_exec=main.period_exec if main else 0,
        iteration=iteration,
        times=times,
        inputs=infos,
        template=main.template if main else np.zeros(0, dtype=np.int32),
        main_input=main.input if main else "",
    )
