"""One verdict's evidence bundle, read tolerantly for the reviewer's view.

``verdicts show`` (scorer/_verdicts.py) refuses a bundle with a bad file; a page
instead shows everything it can and names each file it could not read, so one
broken file never hides the rest of the evidence. Extra files and fields (held-out
rows, new checks, batch metadata written by newer scorers) are shown as they are.

Everything served from a bundle comes from :attr:`BundleView.files`, the regular
files found by walking the bundle directory without following symlinks: a URL names
a key of that map, never a path.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchwarden.scorer import deciding_first, normalise_witness

SIDES = ("parent", "patch")
MAX_JSON_BYTES = 32 * 1024 * 1024
"""A decision, scorecard or rows file larger than this is not parsed (a page stays a page)."""
MAX_FILES = 10_000
"""Files listed per bundle; a scorer writes about 25 for three seeds."""
_RUN_STEM = re.compile(r"^(?P<tree>[A-Za-z0-9_]+)-seed(?P<seed>-?\d+)$")


@dataclass(frozen=True)
class Cell:
    """One (side, property, seed) of the grid: the rows found for it."""

    statuses: tuple[str, ...]
    witness: str
    """The normalised witness class of the first failing row ("" when none)."""

    @property
    def status(self) -> str:
        if not self.statuses:
            return "missing"
        return self.statuses[0] if self.statuses[0] in ("pass", "fail") else "invalid"

    @property
    def witness_short(self) -> str:
        """``exception · assertion id``: the property is the grid row already."""
        parts = self.witness.split("|")
        return " · ".join(parts[1:]) if len(parts) >= 3 else self.witness


@dataclass(frozen=True)
class GridRow:
    prop: str
    held_out: bool
    decision: str
    reason: str
    cells: dict[str, tuple[Cell, ...]]
    """Per side, one cell per seed of :attr:`Grid.seeds`."""


@dataclass(frozen=True)
class SideCount:
    rows: int = 0
    passed: int = 0
    failed: int = 0
    other: int = 0
    missing: int = 0


@dataclass(frozen=True)
class Grid:
    seeds: tuple[int | str, ...]
    rows: tuple[GridRow, ...]
    counts: dict[str, SideCount]


@dataclass(frozen=True)
class RunOutput:
    """One sandboxed run's captured output and its record (``runs/<tree>-seed<N>.*``)."""

    stem: str
    tree: str
    seed: str
    record: dict[str, Any]
    files: tuple[str, ...]
    """Bundle-relative names of its files (stdout, stderr, the record)."""


@dataclass
class BundleView:
    verdict_id: str
    path: Path
    files: dict[str, Path]
    """Bundle-relative POSIX name -> file, for every regular file (no symlinks)."""
    decision: dict[str, Any] = field(default_factory=dict)
    scorecard: list[dict[str, Any]] = field(default_factory=list)
    note: list[str] = field(default_factory=list)
    grid: Grid = field(default_factory=lambda: Grid((), (), {}))
    restored: list[str] = field(default_factory=list)
    runs: list[RunOutput] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """One line per file that could not be read, naming it; shown at the top of the page."""


def list_files(root: Path) -> tuple[dict[str, Path], list[str]]:
    """Every regular file under ``root`` (symlinks neither followed nor listed)."""
    found: dict[str, Path] = {}
    problems: list[str] = []
    if root.is_symlink() or not root.is_dir():
        return found, [f"{root}: the bundle directory is missing"]
    for directory, subdirs, names in os.walk(root, followlinks=False):
        subdirs.sort()
        for name in sorted(names):
            path = Path(directory) / name
            try:
                mode = path.lstat().st_mode
            except OSError as exc:
                problems.append(f"{path}: cannot read: {exc.strerror}; not served")
                continue
            if not stat.S_ISREG(mode):
                problems.append(f"{path}: not a regular file; not served")
                continue
            if len(found) >= MAX_FILES:
                problems.append(f"{root}: more than {MAX_FILES} files; the rest are not listed")
                return found, problems
            found[path.relative_to(root).as_posix()] = path
    return found, problems


def read_text(path: Path, limit: int = MAX_JSON_BYTES) -> str:
    with path.open("rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"larger than {limit} bytes")
    return data.decode("utf-8", errors="replace")


def _read_json(view: BundleView, name: str, kind: type) -> Any:
    path = view.files.get(name)
    if path is None:
        view.problems.append(f"{view.path / name}: missing from the bundle")
        return None
    try:
        value = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        view.problems.append(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})")
        return None
    except (OSError, ValueError) as exc:
        view.problems.append(f"{path}: cannot read: {exc}")
        return None
    if not isinstance(value, kind):
        view.problems.append(f"{path}: not a JSON {kind.__name__}")
        return None
    return value


def _rows_files(files: dict[str, Path]) -> list[str]:
    """The bundle's row files: ``parent.jsonl``, ``patch.jsonl`` and any other ``*.jsonl``
    (held-out rows may come in files of their own)."""
    names = [n for n in files if n.endswith(".jsonl") and not n.startswith("runs/")]
    return sorted(names, key=lambda n: (n not in ("parent.jsonl", "patch.jsonl"), n))


def _is_held_out(row: dict[str, Any], name: str) -> bool:
    return row.get("held_out") is True or "held-out" in name.replace("_", "-").lower()


def _side_of(row: dict[str, Any], name: str) -> str | None:
    tree = row.get("tree")
    if tree in SIDES:
        return str(tree)
    base = name.rsplit("/", 1)[-1]
    for side in SIDES:
        if base.startswith(side):
            return side
    return None


@dataclass
class _Rows:
    seeds: list[int | str] = field(default_factory=list)
    props: list[str] = field(default_factory=list)
    held_out: set[str] = field(default_factory=set)
    found: dict[tuple[str, str, int | str], list[dict[str, Any]]] = field(default_factory=dict)

    def add(self, side: str, row: dict[str, Any], held_out: bool) -> None:
        prop, seed = str(row["prop"]), row["seed"]
        if prop not in self.props:
            self.props.append(prop)
        if seed not in self.seeds:
            self.seeds.append(seed)
        if held_out:
            self.held_out.add(prop)
        self.found.setdefault((side, prop, seed), []).append(row)


def _read_rows(view: BundleView, rows: _Rows) -> None:
    for name in _rows_files(view.files):
        path = view.files[name]
        try:
            text = read_text(path)
        except (OSError, ValueError) as exc:
            view.problems.append(f"{path}: cannot read: {exc}")
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                view.problems.append(f"{path}:{number}: not a JSON object; row not shown")
                continue
            if not isinstance(row, dict) or "prop" not in row or "seed" not in row:
                view.problems.append(f"{path}:{number}: a row without prop or seed; not shown")
                continue
            if not isinstance(row["seed"], int | str) or isinstance(row["seed"], bool):
                view.problems.append(f"{path}:{number}: seed is not a number; row not shown")
                continue
            side = _side_of(row, name)
            if side is None:
                view.problems.append(f"{path}:{number}: neither parent nor patch; not shown")
                continue
            rows.add(side, row, _is_held_out(row, name))


def _results(decision: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """Per property, its result; and the properties that decision.json marks held-out
    (a ``held_out`` flag on a result, or results under a ``held_out`` section)."""
    found: dict[str, dict[str, Any]] = {}
    held: set[str] = set()
    section = decision.get("held_out")
    sources: list[tuple[Any, bool]] = [(decision.get("results"), False)]
    if isinstance(section, dict):
        sources.append((section.get("results"), True))
    elif isinstance(section, list):
        sources.append((section, True))
    for results, held_out in sources:
        if not isinstance(results, list):
            continue
        for result in results:
            if isinstance(result, dict) and isinstance(result.get("prop"), str):
                found.setdefault(result["prop"], result)
                if held_out or result.get("held_out") is True:
                    held.add(result["prop"])
    return found, held


def _cell(rows: list[dict[str, Any]]) -> Cell:
    statuses = tuple(str(r.get("status", "?")) for r in rows)
    witness = next((str(r.get("witness") or "") for r in rows if r.get("status") != "pass"), "")
    return Cell(statuses=statuses, witness=normalise_witness(witness) if witness else "")


def build_grid(view: BundleView, contract: dict[str, Any] | None) -> Grid:
    rows = _Rows()
    if contract is not None:
        rows.seeds.extend(s for s in contract.get("seeds", []) if isinstance(s, int | str))
        for prop in contract.get("properties", []):
            if isinstance(prop, dict) and isinstance(prop.get("id"), str):
                rows.props.append(prop["id"])
    results, held = _results(view.decision)
    for prop in results:
        if prop not in rows.props:
            rows.props.append(prop)
    _read_rows(view, rows)
    seeds = tuple(rows.seeds)
    grid_rows = []
    counts = {side: [0, 0, 0, 0, 0] for side in SIDES}
    for prop in rows.props:
        result = results.get(prop, {})
        cells: dict[str, tuple[Cell, ...]] = {}
        for side in SIDES:
            side_cells = tuple(_cell(rows.found.get((side, prop, seed), [])) for seed in seeds)
            cells[side] = side_cells
            tally = counts[side]
            for cell in side_cells:
                tally[0] += len(cell.statuses)
                tally[1] += cell.statuses.count("pass")
                tally[2] += cell.statuses.count("fail")
                tally[3] += sum(1 for s in cell.statuses if s not in ("pass", "fail"))
                tally[4] += 0 if cell.statuses else 1
        grid_rows.append(
            GridRow(
                prop=prop,
                held_out=prop in rows.held_out or prop in held,
                decision=str(result.get("decision", "")),
                reason=str(result.get("reason", "")),
                cells=cells,
            )
        )
    return Grid(
        seeds=seeds,
        # The rows that decided lead, as in ``verdicts show`` (a row without a result last).
        rows=tuple(deciding_first(grid_rows, lambda r: r.decision or "accept")),
        counts={side: SideCount(*counts[side]) for side in SIDES},
    )


def _runs(view: BundleView) -> list[RunOutput]:
    stems: dict[str, list[str]] = {}
    for name in view.files:
        if name.startswith("runs/"):
            stem = name.removeprefix("runs/").split(".", 1)[0]
            stems.setdefault(stem, []).append(name)
    runs = []
    for stem, names in stems.items():
        record: dict[str, Any] = {}
        record_name = f"runs/{stem}.json"
        if record_name in view.files:
            record = _read_json(view, record_name, dict) or {}
        match = _RUN_STEM.match(stem)
        tree = str(record.get("tree", match["tree"] if match else stem))
        seed = str(record.get("seed", match["seed"] if match else ""))
        runs.append(RunOutput(stem=stem, tree=tree, seed=seed, record=record, files=tuple(names)))
    order = {side: i for i, side in enumerate(SIDES)}
    return sorted(
        runs, key=lambda r: (order.get(r.tree, len(SIDES)), r.tree, _seed_key(r.seed), r.stem)
    )


def _seed_key(seed: str) -> tuple[int, int | str]:
    try:
        return (0, int(seed))
    except ValueError:
        return (1, seed)


def read_bundle(verdict_id: str, path: Path) -> BundleView:
    files, problems = list_files(path)
    view = BundleView(verdict_id=verdict_id, path=path, files=files, problems=problems)
    if not files:
        return view
    view.decision = _read_json(view, "decision.json", dict) or {}
    scorecard = _read_json(view, "scorecard.json", list) or []
    view.scorecard = [c for c in scorecard if isinstance(c, dict)]
    if "review-note.txt" in files:
        try:
            view.note = read_text(files["review-note.txt"]).splitlines()
        except (OSError, ValueError) as exc:
            view.problems.append(f"{files['review-note.txt']}: cannot read: {exc}")
    else:
        view.problems.append(f"{path / 'review-note.txt'}: missing from the bundle")
    contract = (
        _read_json(view, "contract.resolved.json", dict)
        if "contract.resolved.json" in files
        else None
    )
    view.grid = build_grid(view, contract)
    if "restored.json" in files:
        restored = _read_json(view, "restored.json", list) or []
        view.restored = [str(r) for r in restored]
    view.runs = _runs(view)
    return view


def read_summary(path: Path) -> dict[str, Any] | None:
    """``decision.json`` of a bundle for the list page (counts, findings); None if unusable."""
    file = path / "decision.json"
    try:
        if file.is_symlink():
            return None
        value = json.loads(read_text(file))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None
