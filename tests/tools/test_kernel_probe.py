"""python -m enzh.tools.kernel_probe: one markdown row per probe and thread count, a time per row count."""

from enzh.tools.kernel_probe import ROWS, THREADS, probe


def test_probe_table_has_every_probe_and_thread_count():
    lines = probe(16, 2, 32, 1)
    assert lines[0] == "| probe | threads | 1 rows | 16 rows | 64 rows |"
    rows = [line.strip("|").split("|") for line in lines[2:]]
    assert len(rows) == 6 * len(THREADS)
    assert [r[1].strip() for r in rows] == [str(t) for t in THREADS] * 6
    assert rows[-1][0].strip() == "the step's 6 linear layers (Gemm chain)"
    assert all(len(r) == 2 + len(ROWS) and all(float(v) > 0 for v in r[2:]) for r in rows)
