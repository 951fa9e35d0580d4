"""Sweep files: a base scenario plus axes, expanded into runs and checked
before any run starts.

A sweep file is YAML (every key is described in docs/sweeps.md)::

    name: cc-vs-load
    base: dumbbell-dcqcn.yaml          # a scenario file, or an inline mapping
    set: {duration: 3ms}               # fixed overrides, applied to every run
    grid:                              # cartesian product over these axes
      workload.poisson.load: [0.1, 0.3]
      cc:                              # a mapping gives each value a label
        dcqcn: {algorithm: dcqcn}
        none: {algorithm: none}
    zip:                               # groups of lists that vary together
      - {switch.buffer: [1MB, 4MB], topology.host_link.rate: [25Gbps, 100Gbps]}
    seeds: [1, 2, 3]                   # or {first: 1, count: 3}

Keys are dotted paths into the scenario (`workload.flows[0].size` indexes a
list); a value of `null` removes the key so the core's default applies.
Expansion order: grid axes in file order (the first varies slowest), then
zip groups, then seeds (fastest). Every expanded scenario is validated by the
core, so a typo in an axis key is refused with the core's message and the
axis it came from, before anything runs.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rdmalab import yamlio

from rdmalab._core import ScenarioError
from rdmalab.runner import late_starts_warning, validate
from rdmalab.scenario import (LoadedScenario, ScenarioWarning, cdf_is_a_file, class_is_in_a_file, plain, read_input,
                              scenario_from_dict)

#: Runs one sweep may expand to: each is a directory and a scenario in memory.
MAX_RUNS = 100_000

SWEEP_KEYS = ("name", "description", "base", "set", "grid", "zip", "seeds", "figures")

# How many lines of core errors a refusal shows before summarising the rest.
_MAX_PROBLEMS = 20


class SweepError(ValueError):
    """A sweep file was refused before any run started; the message names the problem."""


@dataclass(frozen=True)
class Run:
    """One expanded point of a sweep."""

    index: int
    run_id: str
    params: dict  # column name -> value (the label, the scalar, or compact JSON for lists/mappings)
    scenario: LoadedScenario


@dataclass
class Axis:
    """One dimension of the sweep: keys that change together, and the settings along it."""

    where: str  # how a message names it: "grid `cc`", "zip[0]", "seeds"
    keys: tuple[str, ...]
    # each point: (column values per key, scenario values per key)
    points: list[tuple[tuple[Any, ...], tuple[Any, ...]]] = field(default_factory=list)


@dataclass
class Sweep:
    name: str
    description: str
    source: str
    spec: dict  # the sweep file as read
    param_names: list[str]
    runs: list[Run]
    axis_lengths: list[int]
    #: Case-study figures to draw when the sweep is done (the `figures:` key).
    figures: list = field(default_factory=list)

    def shape(self) -> str:
        """Like `3 × 2 × 3`: the length of every axis."""
        return " × ".join(str(n) for n in self.axis_lengths) or "1"


# ---------------------------------------------------------------- key paths

_SEGMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])*)")


def parse_key(key: str, where: str) -> list:
    """`workload.flows[0].size` -> ["workload", "flows", 0, "size"]."""
    if not isinstance(key, str) or not key:
        raise SweepError(f"{where}: `{key}` is not a scenario key; write a dotted path like `cc.algorithm`")
    path: list = []
    for part in key.split("."):
        m = _SEGMENT.fullmatch(part)
        if not m:
            raise SweepError(
                f"{where}: `{key}` is not a scenario key; write a dotted path like `cc.algorithm` "
                f"or `workload.flows[0].size`"
            )
        path.append(m.group(1))
        path.extend(int(i) for i in re.findall(r"\[(\d+)\]", m.group(2)))
    return path


def _show(path: list) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else ("." if out else "") + p
    return out


def _value_at(data: Any, path: list) -> Any:
    """The value at `path` in a scenario, or a marker no value equals if absent."""
    node = data
    for seg in path:
        try:
            node = node[seg]
        except (KeyError, IndexError, TypeError):
            return _ABSENT
    return node


_ABSENT = object()


def set_key(data: dict, path: list, value: Any, where: str) -> None:
    """Set (or with None, remove) the value at `path`, creating missing mappings."""
    node: Any = data
    created = False  # `node` is a mapping made here for a key the scenario lacks
    for i, seg in enumerate(path):
        last = i == len(path) - 1
        here = _show(path[:i]) or "(scenario)"
        if isinstance(seg, int):
            if created:
                raise SweepError(f"{where}: `{_show(path)}` indexes `{here}`, which the scenario does not have; "
                                 f"set the whole list instead (`{here}: [...]`)")
            if not isinstance(node, list):
                raise SweepError(f"{where}: `{_show(path)}` indexes `{here}`, which is not a list")
            if seg >= len(node):
                raise SweepError(f"{where}: `{_show(path)}` — `{here}` has {len(node)} items (indices 0 to {len(node) - 1})")
        elif not isinstance(node, dict):
            raise SweepError(f"{where}: `{_show(path)}` — `{here}` is `{node}`, not a mapping")
        if last:
            if value is None:
                if isinstance(seg, int):
                    raise SweepError(f"{where}: `{_show(path)}` — `null` cannot remove a list item")
                node.pop(seg, None)
            else:
                # A NumPy integer as the int it stands for: a list read
                # from YAML (`workload.flows`) is used as it is, not copied.
                node[seg] = plain(value)
        else:
            created = isinstance(seg, str) and seg not in node
            if created:
                node[seg] = {}
            node = node[seg]


# ---------------------------------------------------------------- axes

def _column_value(v: Any) -> Any:
    """What the parameter column holds for an unlabelled value."""
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def param_kind(values: list) -> str:
    """The type of a parameter's column in the results: `bool`, `int` or
    `float` when all its values are (ints among floats read as floats), else
    `str` (the store's tables and the manifest use it)."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return "bool"
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return "int"
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return "float"
    return "str"


def shown_value(v: Any, kind: str) -> Any:
    """A parameter value as its column of kind `kind` holds it."""
    if v is None:
        return None
    if kind == "float":
        return float(v)
    if kind == "str" and not isinstance(v, str):
        return json.dumps(v)
    return v


def _check_columns(axes: list[Axis]) -> None:
    """Two settings of an axis must read apart in the results, or every table
    and plot pools their runs as one setting: the values 1 and 1.0 are both
    1.0 in a float column, 0.5 and "0.5" both "0.5" in a text one, and the
    labels 1 and "1" (or null and "None") are one label."""
    for ax in axes:
        kinds = [param_kind([cols[i] for cols, _ in ax.points]) for i in range(len(ax.keys))]
        seen: dict[tuple, tuple] = {}
        for cols, _ in ax.points:
            shown = tuple(shown_value(c, k) for c, k in zip(cols, kinds))
            if shown in seen:
                first = ", ".join(f"`{json.dumps(c)}`" for c in seen[shown])
                second = ", ".join(f"`{json.dumps(c)}`" for c in cols)
                read = ", ".join(f"`{s}`" for s in shown)
                raise SweepError(
                    f"{ax.where}: {first} and {second} read the same in the results ({read}), so tables and "
                    f"plots would pool their runs as one setting; write the value once, or give every value a "
                    f"label of its own (a mapping from labels to values)"
                )
            seen[shown] = cols


def _has_text(v: Any) -> bool:
    if isinstance(v, str):
        return True
    if isinstance(v, dict):
        return any(_has_text(x) for x in v.values())
    if isinstance(v, list):
        return any(_has_text(x) for x in v)
    return False


def _read_point(values: tuple, quantities: list, key_paths: list[list]) -> tuple[str, dict]:
    """A point's values as the core reads them: every quantity written with
    a unit under the axis' keys replaced by its kind and its value in the base
    unit (as canonical JSON), and those quantities, key -> (written, kind, value)."""
    read_values = copy.deepcopy(list(values))
    read: dict[str, tuple[str, str, int]] = {}
    for key, kind, value in quantities:
        try:
            path = parse_key(key, "")
        except SweepError:
            continue  # a key the sweep could not have written
        for i, kp in enumerate(key_paths):
            if path[: len(kp)] != kp:
                continue
            container: Any = read_values
            at: Any = i
            for seg in path[len(kp):]:
                cur = container[at]
                if isinstance(seg, int) and isinstance(cur, list) and seg < len(cur) or (
                    isinstance(seg, str) and isinstance(cur, dict) and seg in cur
                ):
                    container, at = cur, seg
                else:
                    container = None
                    break
            if container is not None and isinstance(container[at], str):
                read[key] = (container[at], kind, value)
                container[at] = {"\0quantity": [kind, value]}
            break
    return json.dumps(read_values, sort_keys=True), read


def _meaning(kind: str, value: int) -> str:
    """What a quantity is, for a message: `10 µs (10000000 ps)`."""
    from rdmalab.units import fmt_size, fmt_time

    if kind == "duration":
        return f"{fmt_time(value)} ({value} ps)"
    if kind == "size":
        return f"{fmt_size(value)} ({value} B)"
    unit, per = next(((u, p) for u, p in (("Tbit/s", 10**12), ("Gbit/s", 10**9), ("Mbit/s", 10**6),
                                          ("Kbit/s", 10**3)) if value >= p), ("bit/s", 1))
    return f"{value / per:.3g} {unit} ({value} bit/s)"


def _show_point(ax: Axis, cols: tuple, values: tuple) -> str:
    def one(c: Any, v: Any) -> str:
        shown = c if isinstance(c, str) else json.dumps(c)
        return f"`{shown}`" if c == v else f"labelled `{shown}`"

    if len(ax.keys) == 1:
        return one(cols[0], values[0])
    return "(" + ", ".join(f"{k}={one(c, v)}" for k, c, v in zip(ax.keys, cols, values)) + ")"


def _check_spellings(axes: list[Axis], readings: list[dict[int, tuple[str, dict]]]) -> None:
    """Two settings of an axis must differ as the core reads them: `10us` and
    `10000ns` (or `1KiB` and `1024B`, `100Gbps` and `100000Mbps`) are one
    setting, which the sweep would run twice, as two settings."""
    for ax, read in zip(axes, readings):
        seen: dict[str, int] = {}
        for pi in sorted(read):
            canon, quantities = read[pi]
            if canon not in seen:
                seen[canon] = pi
                continue
            pj = seen[canon]
            other = read[pj][1]
            same = "; ".join(
                f"for `{key}`, `{other[key][0]}` and `{written}` both mean {_meaning(kind, value)}"
                for key, (written, kind, value) in quantities.items()
                if key in other and other[key][0] != written
            )
            (cols_a, vals_a), (cols_b, vals_b) = ax.points[pj], ax.points[pi]
            raise SweepError(
                f"{ax.where}: {_show_point(ax, cols_a, vals_a)} and {_show_point(ax, cols_b, vals_b)} are one "
                f"setting written two ways — {same} — so the sweep would run it twice, as two settings; "
                f"write it once"
            )


def _values(where: str, spec: Any, unique: bool = True) -> list[tuple[Any, Any]]:
    """An axis' values as (column value, scenario value): a list, or a mapping of label -> value."""
    if isinstance(spec, dict):
        pts = [(str(label), v) for label, v in spec.items()]
        labels: dict[str, Any] = {}
        for label in spec:
            if str(label) in labels:
                raise SweepError(
                    f"{where}: the labels `{json.dumps(labels[str(label)])}` and `{json.dumps(label)}` are both "
                    f"`{label}` in the results, so tables and plots would pool their runs as one setting; "
                    f"give every value a label of its own"
                )
            labels[str(label)] = label
    elif isinstance(spec, list):
        pts = [(_column_value(v), v) for v in spec]
    else:
        raise SweepError(
            f"{where}: `{spec}` — an axis is a list of values, or a mapping from labels to values"
        )
    if not pts:
        raise SweepError(f"{where}: empty axis — give at least one value")
    seen: dict[str, Any] = {}
    for _, v in pts if unique else []:
        canon = json.dumps(v, sort_keys=True)
        if canon in seen:
            raise SweepError(f"{where}: the value `{_column_value(v)}` appears twice; every run would be done twice")
        seen[canon] = v
    return pts


#: The largest seed the core takes (a u64); past it the core would see a float.
MAX_SEED = 2**64 - 1


def _seeds_axis(spec: Any) -> Axis:
    if isinstance(spec, dict):
        extra = set(spec) - {"first", "count"}
        if extra:
            raise SweepError(f"seeds.{sorted(extra)[0]}: unknown key; allowed here: first, count")
        first, count = spec.get("first", 1), spec.get("count")
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise SweepError(f"seeds.count: `{count}` — allowed: a whole number ≥ 1")
        if count > MAX_RUNS:
            raise SweepError(f"seeds.count: `{count}` — allowed: at most {MAX_RUNS} (a sweep's runs)")
        if not isinstance(first, int) or isinstance(first, bool) or first < 0:
            raise SweepError(f"seeds.first: `{first}` — allowed: a whole number ≥ 0")
        if first + count - 1 > MAX_SEED:
            raise SweepError(f"seeds.first: `{first}` — allowed: at most {MAX_SEED - count + 1}, so that the last "
                             f"of {count} seeds is at most {MAX_SEED}")
        seeds = list(range(first, first + count))
    elif isinstance(spec, list):
        if not spec:
            raise SweepError("seeds: empty axis — give at least one seed")
        for s in spec:
            if not isinstance(s, int) or isinstance(s, bool) or not 0 <= s <= MAX_SEED:
                raise SweepError(f"seeds: `{s}` — allowed: whole numbers from 0 to {MAX_SEED}")
        dup = next((s for i, s in enumerate(spec) if s in spec[:i]), None)
        if dup is not None:
            raise SweepError(f"seeds: the seed `{dup}` appears twice; every run would be done twice")
        seeds = list(spec)
    else:
        raise SweepError(f"seeds: `{spec}` — allowed: a list of seeds like [1, 2, 3], or {{first: 1, count: 3}}")
    return Axis("seeds", ("seed",), [((s,), (s,)) for s in seeds])


def _axes(spec: dict) -> list[Axis]:
    axes: list[Axis] = []
    grid = spec.get("grid")
    if grid is not None:
        if not isinstance(grid, dict) or not grid:
            raise SweepError("grid: must be a mapping from scenario keys to lists of values")
        for key, values in grid.items():
            where = f"grid `{key}`"
            parse_key(key, where)
            axes.append(Axis(where, (key,), [((c,), (v,)) for c, v in _values(where, values)]))
    groups = spec.get("zip")
    if groups is not None:
        if isinstance(groups, dict):
            groups = [groups]
        if not isinstance(groups, list) or not groups:
            raise SweepError("zip: must be a list of groups, each a mapping from scenario keys to equally long lists")
        for gi, group in enumerate(groups):
            where = f"zip[{gi}]"
            if not isinstance(group, dict) or not group:
                raise SweepError(f"{where}: must be a mapping from scenario keys to equally long lists")
            cols = {}
            for key, values in group.items():
                parse_key(key, f"{where} `{key}`")
                # A value may repeat within a zip list; the zipped tuples must not.
                cols[key] = _values(f"{where} `{key}`", values, unique=False)
            lengths = {k: len(v) for k, v in cols.items()}
            if len(set(lengths.values())) > 1:
                listed = ", ".join(f"`{k}` has {n}" for k, n in lengths.items())
                raise SweepError(f"{where}: the lists of a zip group must be equally long; {listed}")
            n = next(iter(lengths.values()))
            points = [
                (tuple(cols[k][i][0] for k in cols), tuple(cols[k][i][1] for k in cols)) for i in range(n)
            ]
            seen_points = set()
            for _, vs in points:
                canon = json.dumps(vs, sort_keys=True)
                if canon in seen_points:
                    shown = ", ".join(f"{k}={_column_value(v)}" for k, v in zip(cols, vs))
                    raise SweepError(f"{where}: the combination ({shown}) appears twice; every run would be done twice")
                seen_points.add(canon)
            axes.append(Axis(where, tuple(cols), points))
    if "seeds" in spec:
        axes.append(_seeds_axis(spec["seeds"]))
    return axes


def _check_conflicts(fixed: dict, axes: list[Axis], cli: dict | None = None) -> None:
    """No key may be set twice, and no key may lie inside another that is set.
    `cli`: the command line's `--set` keys, which replace a `set:` key of the
    same name but may not meet an axis or lie inside another key."""
    cli = cli or {}
    owners: list[tuple[str, list, str]] = [(k, parse_key(k, f"set `{k}`"), f"set `{k}`") for k in fixed
                                           if k not in cli]
    owners += [(k, parse_key(k, f"--set {k}"), f"--set {k}") for k in cli]
    for ax in axes:
        owners += [(k, parse_key(k, ax.where), ax.where) for k in ax.keys]
    for (ka, pa_, wa), (kb, pb, wb) in itertools.combinations(owners, 2):
        if pa_ == pb:
            raise SweepError(f"`{_show(pa_)}` is given conflicting values by both {wa} and {wb}; set it in one place")
        short, long_ = (pa_, pb) if len(pa_) < len(pb) else (pb, pa_)
        if long_[: len(short)] == short:
            wshort, wlong = (wa, wb) if short is pa_ else (wb, wa)
            raise SweepError(
                f"`{_show(short)}` ({wshort}) and `{_show(long_)}` ({wlong}) conflict: "
                f"the first replaces the whole of `{_show(short)}`, so the second would be lost or "
                f"overwritten; put the difference into the values of `{_show(short)}`"
            )


# ---------------------------------------------------------------- loading

def run_id_of(scenario: LoadedScenario) -> str:
    """The key of a run in the results store: a hash of the fully expanded
    scenario, with its controller's code ([`LoadedScenario.identity`])."""
    return hashlib.sha256(scenario.identity().encode()).hexdigest()[:16]


#: Scenario keys whose value names a file (list indexes left out), and
#: whether a value is such a name: a `poisson.cdf` may be a built-in CDF's
#: name, a `cc.class` a module's.
_FILE_KEYS = {
    ("topology", "path"): lambda v: True,
    ("workload", "flow_file"): lambda v: True,
    ("workload", "poisson", "cdf"): cdf_is_a_file,
    ("cc", "class"): class_is_in_a_file,
    ("cc", "source"): lambda v: True,
    ("cc", "library"): lambda v: True,
}


def _from_sweep_dir(path: list, value: Any, sweep_dir: Path, base_dir: Path) -> Any:
    """`value`, set at `path` by the sweep file, with every relative file
    name in it made absolute from the sweep file's folder. The scenario
    reads file names from the base's folder: a controller or flow file
    beside the sweep file was looked for beside the base."""
    if sweep_dir.resolve() == base_dir.resolve():
        return value

    def fix(keys: tuple, v: Any) -> Any:
        if isinstance(v, dict):
            return {k: fix(keys + (k,), x) for k, x in v.items()}
        if isinstance(v, list):
            return [fix(keys, x) for x in v]
        is_file = _FILE_KEYS.get(keys)
        if isinstance(v, str) and is_file is not None and is_file(v):
            name, cls = v.rsplit(":", 1) if keys == ("cc", "class") else (v, None)
            if not Path(name).is_absolute():
                name = os.path.abspath(sweep_dir / name)
            return name if cls is None else f"{name}:{cls}"
        return v

    return fix(tuple(k for k in path if isinstance(k, str)), value)


def _base(spec: dict, sweep_dir: Path) -> tuple[dict, Path]:
    if "base" not in spec:
        raise SweepError("base: missing — give a scenario file (relative to the sweep file) or an inline scenario")
    base = spec["base"]
    if isinstance(base, str):
        path = sweep_dir / base
        try:
            data = yamlio.load(read_input(path, "base"))
        except ScenarioError as e:
            raise SweepError(str(e)) from None
        except OSError as e:
            raise SweepError(f"base: `{path}` cannot be read ({e.strerror})") from None
        except yaml.YAMLError as e:
            raise SweepError(f"base: `{path}` is not valid YAML: {e}") from None
        if not isinstance(data, dict):
            raise SweepError(f"base: `{path}` is not a scenario (a mapping of keys to values)")
        if is_sweep_file(data):
            # Else the core lists `base`, `grid`, ... as unknown scenario keys, and no topology.
            raise SweepError(f"base: `{path}` is a sweep file (it has `base`); allowed: a scenario file, "
                             f"or an inline scenario")
        return data, path.parent
    if isinstance(base, dict):
        return base, sweep_dir
    raise SweepError(f"base: `{base}` — allowed: a scenario file name, or an inline scenario mapping")


def _core_problems(message: str) -> list[str]:
    lines = [ln.strip()[2:] for ln in message.splitlines() if ln.strip().startswith("- ")]
    return lines or [message.strip()]


def _attribute(problem: str, axes: list[Axis], fixed: dict) -> str:
    """Which part of the sweep file a core problem comes from, judged by its key."""
    key = problem.split(":", 1)[0].strip()
    try:
        path = parse_key(key, "")
    except SweepError:
        return ""
    for ax in axes:
        for k in ax.keys:
            pk = parse_key(k, ax.where)
            n = min(len(pk), len(path))
            if pk[:n] == path[:n]:
                return ax.where
    for k in fixed:
        pk = parse_key(k, "set")
        n = min(len(pk), len(path))
        if pk[:n] == path[:n]:
            return f"set `{k}`"
    return "the base scenario"


def describe_params(params: dict) -> str:
    """`cc=dcqcn, seed=1`: how messages and listings name a run, values
    spelt as YAML writes them (`true`, not Python's `True`)."""
    def yaml_like(v: Any) -> str:
        return json.dumps(v) if isinstance(v, bool) or v is None else str(v)

    return ", ".join(f"{k}={yaml_like(v)}" for k, v in params.items()) or "(no axes)"


def sweep_from_dict(spec: Any, sweep_dir: str | Path = ".", source: str = "<dict>", check: bool = True,
                    overrides: dict | None = None) -> Sweep:
    """Expand a sweep specification into runs; with `check`, validate every run with the core,
    which also tells two spellings of one quantity apart from two settings (`10us` and
    `10000ns` on one axis are refused only then: only the core knows a key's unit).
    `overrides`: dotted keys and values set on the base after the file's `set:`
    (the command line's `--set`; file names in them are relative to the working
    directory)."""
    if not isinstance(spec, dict):
        raise SweepError("(sweep): must be a mapping with a `base` scenario and axes (`grid`, `zip`, `seeds`)")
    unknown = [k for k in spec if k not in SWEEP_KEYS]
    if unknown:
        raise SweepError(f"{unknown[0]}: unknown sweep key; allowed: {', '.join(SWEEP_KEYS)}")
    # NumPy integers (a sweep built in Python) as the ints they stand for:
    # the axes' values name columns, and the sweep is written as JSON.
    spec = plain(spec)
    sweep_dir = Path(sweep_dir)
    from rdmalab.casestudies import check_names

    try:
        figures = check_names(spec.get("figures"), "figures")
    except ValueError as e:
        raise SweepError(str(e)) from None
    base, base_dir = _base(spec, sweep_dir)
    # Only a missing or null `set` is no overrides: `set: 0` or `set: []` is a mistake, not an empty mapping.
    fixed = spec.get("set")
    fixed = {} if fixed is None else fixed
    if not isinstance(fixed, dict):
        raise SweepError(f"set: `{fixed}` — allowed: a mapping from scenario keys to values")
    for key in ("name", "description"):
        if isinstance(spec.get(key), (list, dict)):
            # str() would make a list or a mapping into Python's repr, in the report's title.
            raise SweepError(f"{key}: `{spec[key]}` — allowed: text")
    name = spec.get("name")
    if name is not None and any(not c.isprintable() for c in str(name)):
        # It goes into one line of the SLURM script (a line break there ran
        # the rest as a command and cut off the #SBATCH lines after it),
        # the report's title and the log lines.
        raise SweepError(f"name: {str(name)!r} holds a line break or another control character — "
                         f"allowed: text on one line")
    axes = _axes(spec)
    cli = overrides or {}
    _check_conflicts(fixed, axes, cli)
    _check_columns(axes)

    base = copy.deepcopy(base)
    for k, v in fixed.items():
        if k in cli:
            continue
        key = parse_key(k, f"set `{k}`")
        set_key(base, key, _from_sweep_dir(key, v, sweep_dir, base_dir), f"set `{k}`")
    for k, v in cli.items():
        key = parse_key(k, f"--set {k}")
        set_key(base, key, _from_sweep_dir(key, v, Path.cwd(), base_dir), f"--set {k}")

    param_names = [k for ax in axes for k in ax.keys]
    total = 1
    for ax in axes:
        total *= len(ax.points)
    if total > MAX_RUNS:
        sizes = " × ".join(str(len(ax.points)) for ax in axes)
        raise SweepError(f"(sweep): {total} runs ({sizes}) — allowed: at most {MAX_RUNS}; split it into several sweeps")
    runs: list[Run] = []
    by_id: dict[str, Run] = {}
    problems: dict[str, list[dict]] = {}
    late: list[tuple[int, dict, str]] = []  # runs whose flows start too late: index, params, what
    # Settings that do nothing in some runs: each text, with its key and
    # the runs it holds in (index, params, scenario data); and per run, the
    # keys of its inert settings.
    inert: dict[str, tuple[str, list[tuple[int, dict, dict]]]] = {}
    inert_keys: dict[int, set[str]] = {}
    # Each axis' points as the core reads them (`_check_spellings`), from the
    # first run that has the point; only axes with text among their values.
    key_paths = [[parse_key(k, ax.where) for k in ax.keys] for ax in axes]
    readings: list[dict[int, tuple[str, dict]]] = [{} for _ in axes]
    to_read = [any(_has_text(v) for _, vs in ax.points for v in vs) for ax in axes]
    for index, picks in enumerate(itertools.product(*(range(len(ax.points)) for ax in axes))):
        combo = [ax.points[i] for ax, i in zip(axes, picks)]
        data = copy.deepcopy(base)
        params: dict = {}
        for ax, (cols, values) in zip(axes, combo):
            for k, c, v in zip(ax.keys, cols, values):
                key = parse_key(k, ax.where)
                set_key(data, key, _from_sweep_dir(key, v, sweep_dir, base_dir), ax.where)
                params[k] = c
        try:
            scenario = scenario_from_dict(data, base_dir=base_dir, source=f"{source} run {index}")
        except ScenarioError as e:
            for p in _core_problems(str(e)):
                problems.setdefault(p, []).append(params)
            continue
        run = Run(index, run_id_of(scenario), params, scenario)
        if run.run_id in by_id:
            other = by_id[run.run_id]
            raise SweepError(
                f"runs {other.index} ({describe_params(other.params)}) and {index} ({describe_params(params)}) "
                f"are the same scenario: the axes give conflicting values that cancel out"
            )
        by_id[run.run_id] = run
        runs.append(run)
        if check:
            need = [a for a, i in enumerate(picks) if to_read[a] and i not in readings[a]]
            try:
                info = validate(scenario, quantities=bool(need))
            except ScenarioError as e:
                for p in _core_problems(str(e)):
                    problems.setdefault(p, []).append(params)
            else:
                for a in need:
                    readings[a][picks[a]] = _read_point(axes[a].points[picks[a]][1], info["quantities"],
                                                        key_paths[a])
                what = late_starts_warning(info["late_flows"], info["late_apps"], info["duration_ps"])
                if what:
                    late.append((index, params, what))
                for key, text in zip(info["warning_keys"], info["warnings"]):
                    inert.setdefault(text, (key, []))[1].append((index, params, scenario.data))
                inert_keys[index] = set(info["warning_keys"])

    total = 1
    for ax in axes:
        total *= len(ax.points)
    if problems:
        bad = {json.dumps(p, sort_keys=True) for ps in problems.values() for p in ps}
        lines = [f"the sweep has {len(problems)} problem{'s' if len(problems) != 1 else ''} "
                 f"({len(bad)} of {total} runs refused by the scenario check):"]
        for p, where in list(problems.items())[:_MAX_PROBLEMS]:
            origin = _attribute(p, axes, fixed)
            lines.append(
                f"  - {p}\n      from {origin}; in {len(where)} run{'s' if len(where) != 1 else ''}, "
                f"first: {describe_params(where[0])}"
            )
        if len(problems) > _MAX_PROBLEMS:
            lines.append(f"  ... and {len(problems) - _MAX_PROBLEMS} more")
        raise SweepError("\n".join(lines))
    _check_spellings(axes, readings)

    if late:
        # Once for the sweep, before it runs (its workers keep quiet): a
        # sweep over `duration` may mean it, a typo may not.
        index, params, what = late[0]
        warnings.warn(
            f"{len(late)} of {total} runs cannot complete all they start; first: run {index} "
            f"({describe_params(params)}): {what}",
            ScenarioWarning,
            stacklevel=2,
        )
    for text, (key, where) in inert.items():
        # A sweep that gives the setting effect in other runs (it toggles the
        # key the setting needs, as a grid over cc × nic.cc_scope does) means
        # it; one where it takes effect in no run is told, once.
        path = parse_key(key, "warning")
        value = _value_at(where[0][2], path)
        if any(_value_at(r.scenario.data, path) == value and key not in inert_keys.get(r.index, ())
               for r in runs):
            continue
        index, params, _ = where[0]
        warnings.warn(
            f"{len(where)} of {total} runs: {text}; first: run {index} ({describe_params(params)})",
            ScenarioWarning,
            stacklevel=2,
        )

    name = spec.get("name") or (Path(source).stem if source != "<dict>" else "sweep")
    return Sweep(
        name=str(name),
        description=str(spec.get("description", "")),
        source=source,
        spec=spec,
        param_names=param_names,
        runs=runs,
        axis_lengths=[len(ax.points) for ax in axes],
        figures=figures,
    )


def is_sweep_file(data: Any) -> bool:
    """A sweep file has a `base`; a scenario never does."""
    return isinstance(data, dict) and "base" in data


def load_sweep(path: str | Path, check: bool = True, overrides: dict | None = None) -> Sweep:
    """Read a sweep YAML file and expand it (see the module docstring);
    `overrides` as [`sweep_from_dict`]'s."""
    p = Path(path)
    try:
        spec = yamlio.load(read_input(p, "(sweep)"))
    except ScenarioError as e:
        raise SweepError(str(e)) from None
    except OSError as e:
        raise SweepError(f"(sweep): `{p}` cannot be read ({e.strerror})") from None
    except yaml.YAMLError as e:
        raise SweepError(f"(sweep): `{p}` is not valid YAML: {e}") from None
    if spec is None:
        raise SweepError(f"(sweep): `{p}` is empty")
    return sweep_from_dict(spec, sweep_dir=p.parent, source=str(p), check=check, overrides=overrides)
