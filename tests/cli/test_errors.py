"""The CLI's error paths: every spec or usage error exits 2 before anything is charged or
written, every budget refusal is judged for the whole run first, and every message about what
was charged and written is true, on every path (docs/cli.md, exit codes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import dpframe as dpf
from dpframe.core.accounting import PrivacyCost
from tests.cli._support import SPEC_HEAD, cli, entries, inproc, write_visits

SECRET = "SECRET-VALUE-8731"  # must never be echoed


@pytest.fixture(scope="module")
def visits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_visits(tmp_path_factory.mktemp("visits"), 2, 2000)


GOOD = SPEC_HEAD + """
[[query]]
name = "{third}"
aggregate = "mean"
column = "cost"
epsilon = 0.2
{third_extra}
"""


def spec_text(data: Path, *, epsilon: float = 5.0, out: str = "out", input_extra: str = "",
              third: str = "mean_cost", third_extra: str = "") -> str:
    return GOOD.format(epsilon=epsilon, data=data.as_posix(), out=out, column="cost",
                       input_extra=input_extra,
                       third=third, third_extra=third_extra)


def nothing_happened(folder: Path) -> None:
    """No ledger, no output folder: nothing charged, nothing written."""
    assert not (folder / "budget.sqlite").exists()
    assert not (folder / "out").exists()


# -- 1. every spec / usage error exits 2, before anything, with a clear message ----------------

def _bad_specs(tmp: Path, data: Path) -> dict[str, tuple[Path, str]]:
    """name -> (spec path, a fragment of the expected message)."""
    tmp.mkdir(parents=True, exist_ok=True)
    cases: dict[str, tuple[Path, str]] = {}

    def put(name: str, content: str | bytes, expect: str) -> None:
        p = tmp / f"{name}.toml"
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")
        cases[name] = (p, expect)

    folder = tmp / "folder.toml"
    folder.mkdir()
    cases["spec_is_a_folder"] = (folder, "is a folder")
    put("not_utf8", spec_text(data).encode() + f"# {SECRET} caf\xe9\n".encode("latin-1"),
        "not UTF-8")
    put("empty", "", "is empty")
    put("only_comments", f"# {SECRET}\n\n# nothing here\n", "is empty")
    cases["missing"] = (tmp / "nope.toml", "no spec file")
    put("toml_syntax", f'[release\nepsilon = 1\nname = "{SECRET}"', "not valid TOML")
    put("unknown_top", spec_text(data) + "\n[outputs]\ndir = 'x'\n", "unknown field 'outputs'")
    put("unknown_release_key", spec_text(data).replace("epsilon = 5.0", "epsilom = 5.0"),
        "[release]: unknown field 'epsilom'")
    put("missing_epsilon", spec_text(data).replace("epsilon = 5.0\n", ""),
        "[release] needs epsilon")
    put("output_dir_template", spec_text(data, out="{date.year}"),
        "[output] dir may only use {date}, {time} and {name}")
    put("batch_size_overflow", spec_text(data, input_extra="batch_size = 100000000000000"),
        "[input] batch_size")
    put("name_not_a_file_name", spec_text(data, third="bad\\u0001name"),
        "usable as a file name")
    put("name_too_long", spec_text(data, third="n" * 260), "usable as a file name")
    put("ci_out_of_range", spec_text(data, third_extra="ci = 1.5"), "ci must be")
    put("path_and_generate", spec_text(data, input_extra='generate = {dataset = "visits"}'),
        "not both")
    return cases


BAD_NAMES = ["spec_is_a_folder", "not_utf8", "empty", "only_comments", "missing", "toml_syntax",
             "unknown_top", "unknown_release_key", "missing_epsilon", "output_dir_template",
             "batch_size_overflow", "name_not_a_file_name", "name_too_long", "ci_out_of_range",
             "path_and_generate"]


@pytest.mark.parametrize("case", BAD_NAMES)
def test_spec_errors_exit_2_before_anything(visits: Path, tmp_path: Path, case: str) -> None:
    spec, expect = _bad_specs(tmp_path / "specs", visits)[case]
    for args in (("run", spec), ("run", spec, "--dry-run"),
                 ("run", spec, "--ledger", tmp_path / "budget.sqlite")):
        code, out = inproc(*args)
        assert code == 2, (case, out)
        assert expect in out, (case, out)
        assert "Traceback" not in out and SECRET not in out
        assert "nothing was charged" in out, out
    nothing_happened(tmp_path)
    nothing_happened(tmp_path / "specs")


def test_spec_errors_in_a_subprocess(visits: Path, tmp_path: Path) -> None:
    """The reported cases, as a user meets them: exit 2, a clear message, no traceback."""
    cases = _bad_specs(tmp_path / "specs", visits)
    for case in ("spec_is_a_folder", "not_utf8", "empty"):
        spec, expect = cases[case]
        r = cli("run", spec)
        assert r.returncode == 2, (case, r.stderr)
        assert expect in r.stderr and "Traceback" not in r.stderr and SECRET not in r.stderr
    nothing_happened(tmp_path / "specs")


@pytest.mark.parametrize("where", ["out_is_a_file", "out_under_a_file", "target_is_a_folder"])
def test_output_folder_errors_exit_2_before_any_charge(visits: Path, tmp_path: Path,
                                                       where: str) -> None:
    (tmp_path / "afile").write_text("not a folder")
    out = {"out_is_a_file": "afile", "out_under_a_file": "afile/sub",
           "target_is_a_folder": "out"}[where]
    if where == "target_is_a_folder":
        (tmp_path / "out" / "visits.parquet").mkdir(parents=True)
    spec = tmp_path / "release.toml"
    spec.write_text(spec_text(visits, out=out))
    for args in (("run", spec, "--dry-run"), ("run", spec)):
        code, msg = inproc(*args)
        assert code == 2, msg
        assert "[output] dir" in msg and "nothing was charged" in msg
    assert not (tmp_path / "budget.sqlite").exists()
    r = cli("run", spec)  # as a user meets it
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert entries(tmp_path / "budget.sqlite") == []


def test_a_bad_spec_leaves_no_ledger_behind(visits: Path, tmp_path: Path) -> None:
    """A real run that fails validation creates no ledger (its budget would be fixed by a
    typo'd spec), and a dry run names a ledger folder that does not exist like a real run."""
    spec = tmp_path / "release.toml"
    spec.write_text(spec_text(visits, third_extra="").replace('column = "cost"\nby',
                                                              'column = "nope"\nby'))
    code, out = inproc("run", spec)
    assert code == 2 and "unknown column 'nope'" in out
    assert not (tmp_path / "budget.sqlite").exists()
    spec.write_text(spec_text(visits))
    missing = tmp_path / "no-such-folder" / "budget.sqlite"
    for args in (("run", spec, "--ledger", missing, "--dry-run"),
                 ("run", spec, "--ledger", missing)):
        code, out = inproc(*args)
        assert code == 4 and "does not exist" in out, out
    assert not (tmp_path / "out").exists()


def test_demo_and_generate_usage_errors(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    for out in (afile, afile / "sub"):
        r = cli("demo", "--rows", "1000", "--out", out)
        assert r.returncode == 2 and "--out" in r.stderr and "Traceback" not in r.stderr
        assert "nothing was charged" in r.stderr
    (tmp_path / "demo" / "people.parquet").mkdir(parents=True)
    r = cli("demo", "--rows", "1000", "--out", tmp_path / "demo")
    assert r.returncode == 2 and "is a folder" in r.stderr, r.stderr
    assert list((tmp_path / "demo").iterdir()) == [tmp_path / "demo" / "people.parquet"]
    for args in (("visits", afile, "--files", "2"), ("visits", afile / "x.parquet"),
                 ("nobody", tmp_path / "x.parquet")):
        r = cli("generate", *args, "--rows", "10")
        assert r.returncode == 2 and "Traceback" not in r.stderr, (args, r.stderr)
    assert afile.read_text() == "x"


# -- 2. budget judged for the whole run first; true messages on every path --------------------

def test_demo_twice_on_one_ledger(tmp_path: Path) -> None:
    ledger = tmp_path / "demo.sqlite"
    first = cli("demo", "--rows", "2000", "--ledger", ledger, "--out", tmp_path / "one")
    assert first.returncode == 0, first.stderr
    assert len(list((tmp_path / "one").glob("*.parquet"))) == 8
    before = entries(ledger)
    assert len(before) == 8 and {s for _, s, _ in before} == {"released"}

    second = cli("demo", "--rows", "2000", "--ledger", ledger, "--out", tmp_path / "two")
    assert second.returncode == 3, second.stderr
    assert entries(ledger) == before  # nothing charged
    assert not (tmp_path / "two").exists()  # nothing written
    assert "budget exceeded" in second.stderr and "nothing was charged" in second.stderr
    assert "another --ledger" in second.stderr
    assert "this demo charged epsilon 0.85" in first.stdout


def test_demo_over_budget_spends_and_writes_nothing(tmp_path: Path) -> None:
    code, out = inproc("demo", "--rows", "1000", "--epsilon", "0.5", "--out", tmp_path / "d")
    assert code == 3, out
    assert not (tmp_path / "d").exists()
    assert "needs epsilon=0.85" in out and "nothing was charged" in out, out


def _real_run_failing_at(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, visits: Path,
                         fail: Any, at: str = "compute_exact", call: int = 2
                         ) -> tuple[int, str, Path]:
    """Run a 3-query spec whose ``call``-th call of the runner's ``at`` step (``compute_exact``:
    before any charge; ``add_noise``: after the run's reservation) meets ``fail(session)``
    just before it runs."""
    import dpframe.cli.runner as runner_mod

    original = getattr(runner_mod, at)
    calls = {"n": 0}

    def step(session: Any, *args: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == call:
            fail(session)
        return original(session, *args)

    monkeypatch.setattr(runner_mod, at, step)
    spec = tmp_path / "release.toml"
    spec.write_text(spec_text(visits, epsilon=1.0))
    code, out = inproc("run", spec, "--no-progress")
    return code, out, tmp_path / "budget.sqlite"


def test_budget_spent_by_another_process_mid_run(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path, visits: Path) -> None:
    """The whole run fits when checked; another process spends the rest while the run reads
    its input: the run's reservation of its whole cost is refused, exit 3 with nothing charged
    and nothing written (it used to release its first query, then run out)."""
    def spend_the_rest(session: Any) -> None:
        other = dpf.Session(1.0, 1e-5, name="other", ledger=str(tmp_path / "budget.sqlite"))
        other.charge(PrivacyCost(other.remaining_exact[0], 0), query="x", columns=[],
                     mechanism="test", privacy_unit="person_id")
        other.close()

    code, out, ledger = _real_run_failing_at(monkeypatch, tmp_path, visits, spend_the_rest)
    assert code == 3, out
    assert "budget exceeded" in out and "nothing was charged" in out
    assert "1 release file" not in out
    got = entries(ledger)
    assert [(i, s) for i, s, _ in got] == [(1, "charged")]  # #1: the other process's
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_defect_of_an_exact_half_is_charged_and_reported_truly(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, visits: Path) -> None:
    """A backend failure that is not an operational fault (a defect: it might depend on the
    data) is charged like any other query and recorded failed, so that whether a query is
    answered never depends on the data: exit 1, the other queries released, and the message
    lists what was charged and written without the exception's text."""
    import dpframe.backends.arrow as arrow

    def break_the_backend(session: Any) -> None:
        original = arrow.ArrowBackend.exact

        def boom(*args: Any, **kwargs: Any) -> Any:
            monkeypatch.setattr(arrow.ArrowBackend, "exact", original)
            raise RuntimeError(SECRET)

        monkeypatch.setattr(arrow.ArrowBackend, "exact", boom)

    code, out, ledger = _real_run_failing_at(monkeypatch, tmp_path, visits, break_the_backend)
    assert code == 1, out
    assert "query 'cost_by_region': unexpected RuntimeError" in out and SECRET not in out
    assert "this run charged 3 ledger entries (#1, #2, #3)" in out
    assert "#1, #3 released; #2 failed" in out and "a failed entry's charge stands" in out
    assert "2 release files written" in out
    assert [s for _, s, _ in entries(ledger)] == ["released", "failed", "released"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["mean_cost.parquet",
                                                                    "visits.parquet"]


def test_interrupt_before_the_reservation_charges_nothing(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, visits: Path) -> None:
    """Ctrl-C while the run reads its input (before its reservation): exit 130, nothing
    charged, nothing written."""
    import dpframe.backends.arrow as arrow

    def interrupt(session: Any) -> None:
        def ctrl_c(*args: Any, **kwargs: Any) -> Any:
            raise KeyboardInterrupt

        monkeypatch.setattr(arrow.ArrowBackend, "exact", ctrl_c)

    code, out, ledger = _real_run_failing_at(monkeypatch, tmp_path, visits, interrupt)
    assert code == 130, out
    assert "interrupted during query 'cost_by_region'" in out
    assert "nothing was charged and no release file was written" in out
    assert entries(ledger) == []


def test_interrupt_after_the_reservation_gives_every_entry_an_outcome(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, visits: Path) -> None:
    """Ctrl-C after the run reserved its cost, before its second query's noise: exit 130, the
    first query released and written, the others recorded failed (their charge stands), no
    entry left ``charged``."""
    def interrupt(session: Any) -> None:
        raise KeyboardInterrupt

    code, out, ledger = _real_run_failing_at(monkeypatch, tmp_path, visits, interrupt,
                                             at="add_noise")
    assert code == 130, out
    assert "interrupted during query 'cost_by_region'" in out
    assert "#1 released; #2, #3 failed" in out and "1 release file written" in out
    assert [s for _, s, _ in entries(ledger)] == ["released", "failed", "failed"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["visits.parquet"]


def test_run_messages_are_true_on_success(tmp_path: Path, visits: Path) -> None:
    spec = tmp_path / "release.toml"
    spec.write_text(spec_text(visits, epsilon=1.0))
    code, out = inproc("run", spec, "--no-progress")
    assert code == 0, out
    assert "Wrote 3 files" in out and "Charged epsilon 0.7," in out and "left epsilon 0.3" in out
    code, out = inproc("run", spec, "--no-progress")  # 0.7 more does not fit: nothing happens
    assert code == 3 and "needs epsilon=0.7" in out and "nothing was charged" in out, out
    assert len(entries(tmp_path / "budget.sqlite")) == 3
