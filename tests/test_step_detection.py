"""How passes are found: the program's step lines, the period that the whole pass repeats,
sizes that change between passes, cache misses in every pass, and how much warm-up a run
can spare. Real recordings of each case are tested in ``test_iteration_logs.py``; these
are the rules themselves on small streams."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dnnlens.analysis.iterations import _extra_misses, find_period, max_warmup
from dnnlens.analysis.step_lines import find_step_lines
from dnnlens.parsers.program_lines import MAX_SHAPES, ProgramLines, line_shape


def test_line_shape_replaces_numbers_and_keeps_words() -> None:
    assert line_shape("step 3/13 loss 2.3012 time 4.21 ms\n") == "step #/# loss # time # ms"
    assert line_shape("  Epoch 1/3\r\n") == "Epoch #/#"
    # a progress bar redrawn with carriage returns: its last state
    assert line_shape("1/4 [===>   ]\r2/4 [======>]\r\n") == "#/# [======>]"
    assert line_shape("\x1b[1mstep 2\x1b[0m") == "step #"
    assert line_shape("   \n") == ""


def test_program_lines_stay_bounded_and_keep_repeated_shapes() -> None:
    lines = ProgramLines()
    for i in range(5):
        lines.add(f"step {i} loss 0.{i}", 10 * i)
    for i in range(10 * MAX_SHAPES):  # one-off lines, each of its own shape
        lines.add(f"warning {'x' * (i % 97)} {'y' * (i // 97)}", 100 + i)
    assert len(lines.lines) <= MAX_SHAPES
    assert list(lines.lines["step # loss #"]) == [0, 10, 20, 30, 40]


def test_program_lines_merge_with_line_offsets() -> None:
    first, second = ProgramLines(), ProgramLines()
    first.add("step 1", 5)
    second.add("step 2", 3)
    first.merge(second, 100)
    assert list(first.lines["step #"]) == [5, 103]


def test_step_lines_cut_passes_and_a_one_off_line_does_not() -> None:
    # exec rows on lines 1-3, 5-7, 9-11, 13-15 (kinds 1, 2, 3 each); step lines 4, 8, 12, 16
    exec_lines = np.array([1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15])
    kinds = np.array([1, 2, 3] * 4)
    program = ProgramLines()
    for n in (4, 8, 12, 16):
        program.add(f"step {n // 4} loss 1.0", n)
    program.add("UserWarning: something", 6)
    found = find_step_lines(program, exec_lines, kinds)
    assert found is not None
    assert found.shape == "step # loss #"
    assert found.lines.tolist() == [4, 8, 12]  # the last one follows the last exec row


def test_step_lines_that_do_not_repeat_passes_are_not_steps() -> None:
    exec_lines = np.arange(1, 13)
    kinds = np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])  # nothing repeats
    program = ProgramLines()
    for n in (3.5, 6.5, 9.5):
        program.add("tick", int(n * 2))
    assert find_step_lines(program, exec_lines * 2, kinds) is None


def test_step_lines_inside_profiler_tables_are_excluded() -> None:
    exec_lines = np.array([1, 2, 3, 5, 6, 7, 9, 10, 11])
    kinds = np.array([1, 2, 3] * 3)
    program = ProgramLines()
    for n in (4, 8):
        program.add("aten::add_  1.0%  2.0us", n)
    assert find_step_lines(program, exec_lines, kinds, [(4, 4), (8, 8)]) is None


def test_the_whole_pass_is_the_period_not_its_repeated_layer() -> None:
    """Four identical layers (rows 1, 2, 3) and a head row (9) per pass: the layer repeats
    with period 3 except at the head; only 13 repeats exactly."""
    one_pass = [1, 2, 3] * 4 + [9]
    assert find_period(np.array(one_pass * 6)) == (13, 0)
    # a pass of nothing but the repeated block cannot be told from its layers
    assert find_period(np.array([1, 2, 3] * 8)) == (3, 0)


def test_an_extra_row_in_some_passes_keeps_the_pass_period() -> None:
    one_pass = [1, 2, 3, 4, 5, 6]
    stream = one_pass * 3 + [1, 2, 7, 3, 4, 5, 6] + one_pass * 6
    assert find_period(np.array(stream))[0] == 6


def test_misses_in_every_pass_are_no_warm_up() -> None:
    segments = np.array([[0, 3], [3, 6], [6, 9], [9, 12]])
    every_pass = np.repeat([0, 3, 6, 9], 3)  # three misses in each
    assert not _extra_misses(segments, every_pass).any()
    first_only = np.array([0, 0, 1])
    assert _extra_misses(segments, first_only).tolist() == [True, False, False, False]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10_000))
def test_warm_up_never_outnumbers_the_steady_passes(passes: int) -> None:
    warm = max_warmup(passes)
    assert 0 <= warm and (passes == 0 or passes - warm > warm)
