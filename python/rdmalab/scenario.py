"""Loading scenarios: YAML in, the JSON the core validates out.

The front end only resolves what needs the file system (a topology file or a
flow-size CDF given by path, relative to the scenario file); every other
check happens in the core, so Python and Rust users get the same messages.
"""

from __future__ import annotations

import hashlib
import json
import math
import operator
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rdmalab import yamlio

from rdmalab._core import ScenarioError


class ScenarioWarning(UserWarning):
    """A scenario that runs, but not as its author probably meant: flows
    that start after the run ends, for example. The command line prints it
    as `rdmalab: warning: ...`, `--quiet` or not; from Python it is a
    warning like any other (`warnings.simplefilter("error", ScenarioWarning)`
    makes it an error)."""


@dataclass
class LoadedScenario:
    """A scenario ready for the core: its resolved form and where it came from."""

    data: dict
    source: str
    #: For `cc: {algorithm: python}`: (a callable making one controller per QP, its name).
    controller: tuple | None = None
    #: Case-study figures to draw when the run is done (the `figures:` key).
    figures: list | None = None
    #: For `cc: {algorithm: python}`: the SHA-256 of the file that defines the
    #: class and of the user's modules it imports (`_code_hash`).
    controller_code: str | None = None

    @property
    def name(self) -> str:
        return str(self.data.get("name", "scenario"))

    def to_json(self) -> str:
        data = self.data
        if self.controller is not None:
            # The core runs the Python controller through the factory; it sees no CC of its own.
            data = dict(data, cc={"algorithm": "none"})
        return json.dumps(data, sort_keys=True)

    def identity(self) -> str:
        """What the run's results follow from, as text (a sweep's run id is
        its hash): the scenario as the core sees it, but a controller named
        by what it is rather than by where it lies. The core sees a Python
        controller as no CC at all, so its class's name, its parameters and
        the hash of its code (its file and the user's modules it imports)
        stand in; a C controller is named by the
        paths of its source and library on this machine, so the hash of
        the library stands in. Equal to `to_json()` for any other scenario."""
        data = self.data
        cc = data.get("cc")
        if self.controller is not None:
            cls_name = str(cc.get("class")).rsplit(":", 1)[-1]
            data = dict(data, cc=dict(cc, code=self.controller_code, **{"class": cls_name}))
        elif isinstance(cc, dict) and cc.get("algorithm") == "c" and isinstance(cc.get("library"), str):
            try:
                code = hashlib.sha256(Path(cc["library"]).read_bytes()).hexdigest()
            except OSError as e:
                raise ScenarioError(f"cc.library: `{cc['library']}` cannot be read ({e.strerror})") from None
            same = {k: v for k, v in cc.items() if k not in ("source", "library")}
            data = dict(data, cc=dict(same, code=code))
        return json.dumps(data, sort_keys=True)


def cdf_is_a_file(cdf: str) -> bool:
    """Whether `workload.poisson.cdf` names a file, read relative to the
    scenario (else it names a built-in CDF)."""
    return os.sep in cdf or cdf.endswith(".txt")


def class_is_in_a_file(ref: str) -> bool:
    """Whether `cc.class` is `file.py:ClassName`, its file read relative to
    the scenario (else `package.module:ClassName`)."""
    return ":" in ref and ref.rsplit(":", 1)[0].endswith(".py")


def _load_python_controller(cc: dict, base: Path):
    """Resolve `cc: {algorithm: python, class: ..., params: {...}}` to a factory."""
    import importlib
    import importlib.util
    import inspect

    allowed = {"algorithm", "class", "params"}
    for k in cc:
        if k not in allowed:
            raise ScenarioError(f"cc.{k}: unknown key; allowed here: algorithm, class, params")
    ref = cc.get("class")
    if not isinstance(ref, str) or ":" not in ref:
        raise ScenarioError(
            f"cc.class: `{ref}` — required for algorithm python: `file.py:ClassName` (relative to the scenario) "
            "or `package.module:ClassName`"
        )
    where, cls_name = ref.rsplit(":", 1)
    try:
        if class_is_in_a_file(ref):
            path = base / where
            spec = importlib.util.spec_from_file_location(f"rdmalab_user_cc_{path.stem}", path)
            if spec is None or not path.exists():
                raise ScenarioError(f"cc.class: `{ref}` — file `{path}` cannot be read")
            module = importlib.util.module_from_spec(spec)
            # Its imports are looked up beside it, as when a script runs: a
            # controller split over files imports its own modules. Searched
            # last, so a file there named like an installed module (random.py)
            # does not hide that module from the rest of the process.
            if str(path.parent) not in sys.path:
                sys.path.append(str(path.parent))
            spec.loader.exec_module(module)
            # Absolute, as a C controller's paths: a sweep's worker loads
            # the expanded scenario again, from its own directory.
            cc["class"] = f"{path.resolve()}:{cls_name}"
        else:
            module = importlib.import_module(where)
    except ScenarioError:
        raise
    except Exception as e:  # the user's module failed to import
        raise ScenarioError(f"cc.class: `{ref}` — importing it raised {type(e).__name__}: {e}") from None
    cls = getattr(module, cls_name, None)
    if not inspect.isclass(cls):
        raise ScenarioError(f"cc.class: `{ref}` — `{where}` has no class `{cls_name}`")
    params = cc.get("params") or {}
    if not isinstance(params, dict):
        raise ScenarioError(f"cc.params: must be a mapping of constructor keyword arguments, not {params!r}")
    if not callable(getattr(cls, "on_event", None)):
        raise ScenarioError(f"cc.class: `{ref}` has no on_event(self, event, ctx) method; "
                            f"subclass rdmalab.Controller and define it")
    try:
        inspect.signature(cls).bind(**params)
    except TypeError as e:
        raise ScenarioError(f"cc.params: {params} do not fit `{cls_name}`'s constructor: {e}") from None
    except ValueError as e:  # a class whose signature cannot be read (a built-in type)
        raise ScenarioError(f"cc.class: `{ref}`: its constructor cannot be inspected ({e}); "
                            f"subclass rdmalab.Controller in Python") from None
    subs = getattr(cls, "subscriptions", None)
    if not (isinstance(subs, (list, tuple)) and all(isinstance(x, str) for x in subs)):
        raise ScenarioError(f"cc.class: `{ref}` has subscriptions = {subs!r}; allowed: a list of event kind "
                            f"names, like [\"ACK\", \"CNP\"]")
    try:  # one instance now, so a failing constructor is reported before the run
        cls(**params)
    except Exception as e:
        raise ScenarioError(f"cc.class: constructing `{ref}` with params {params} raised "
                            f"{type(e).__name__}: {e}{_user_frame(e)}") from None
    return (lambda: cls(**params)), f"python:{cls_name}", _code_hash(module, cls)


def _code_hash(module, cls) -> str | None:
    """SHA-256 of the file of `module`, or of the module that defines `cls`
    if that is another: what a change to the controller changes. If that
    file imports modules of the user's own (see `_user_modules`), the hash
    covers their files too, by module name, so editing a helper module
    makes new runs. None for a module without a file."""
    defining = sys.modules.get(cls.__module__, module) if cls.__module__ != module.__name__ else module
    path = getattr(defining, "__file__", None)
    if not path:
        return None
    try:
        own = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None
    imported = _user_modules(Path(path), getattr(defining, "__package__", None) or "")
    if not imported:
        return own  # as before modules were covered: earlier stores stay valid
    h = hashlib.sha256(own.encode())
    for name, file in sorted(imported.items()):
        h.update(f"\n{name} ".encode() + hashlib.sha256(file.read_bytes()).digest())
    return h.hexdigest()


def _library_dirs() -> list[Path]:
    """Where Python's own and installed modules live, rdmalab's included:
    code there is not the user's controller."""
    import site
    import sysconfig

    dirs = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    dirs.add(site.getusersitepackages())
    dirs.add(str(Path(__file__).resolve().parent))
    return [Path(d).resolve() for d in dirs if d]


def _user_modules(file: Path, package: str) -> dict[str, Path]:
    """The user's own modules that `file` imports, directly or through one
    another: name -> file. Found from the import statements (those inside
    functions too), among the modules already loaded or, for a top-level
    name not loaded yet, where Python would find it; a module inside the
    Python installation, its site-packages or rdmalab is not the user's."""
    import ast
    import importlib.util

    libs = _library_dirs()

    def users_file(name: str) -> Path | None:
        mod = sys.modules.get(name)
        origin = getattr(mod, "__file__", None) if mod is not None else None
        if mod is None and "." not in name:
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                spec = None
            origin = spec.origin if spec is not None and spec.has_location else None
        if not origin or not origin.endswith(".py"):
            return None
        f = Path(origin).resolve()
        return None if any(f.is_relative_to(d) for d in libs) else f

    def imported_names(f: Path, pkg: str) -> set[str]:
        try:
            tree = ast.parse(f.read_bytes())
        except (OSError, SyntaxError, ValueError):
            return set()
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    parts = a.name.split(".")
                    names.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1] if pkg else []
                    if not up:
                        continue  # a relative import outside a package cannot run
                    base = ".".join(up + ([base] if base else []))
                if base:
                    names.add(base)
                # `from pkg import sub` may name a submodule.
                names.update(f"{base}.{a.name}" if base else a.name for a in node.names)
        return names

    found: dict[str, Path] = {}
    todo = [(file.resolve(), package)]
    while todo:
        f, pkg = todo.pop()
        for name in imported_names(f, pkg):
            if name in found:
                continue
            g = users_file(name)
            if g is None or g == file.resolve():
                continue
            found[name] = g
            is_pkg = g.name == "__init__.py"
            todo.append((g, name if is_pkg else name.rpartition(".")[0]))
    return found


def _user_frame(e: BaseException) -> str:
    """Where in the user's code `e` was raised: its innermost frame."""
    import traceback

    frames = traceback.extract_tb(e.__traceback__)
    if not frames:
        return ""
    f = frames[-1]
    return f" (at {f.filename}, line {f.lineno}: {f.line})"


def _build_c_controller(cc: dict, base: Path) -> None:
    """`cc.source` (relative to the scenario) is compiled into a cached
    library, and `cc.library` set to it; a given `cc.library` is made absolute."""
    from rdmalab import ccompile

    if "source" in cc:
        # A scenario loaded before holds the library built from its source:
        # build (a cache hit) again rather than refuse it.
        built = isinstance(cc.get("library"), str) and Path(cc["library"]).parent == ccompile.cache_dir()
        if "library" in cc and not built:
            raise ScenarioError("cc.library: give cc.source or cc.library, not both")
        src = cc["source"]
        if not isinstance(src, str):
            raise ScenarioError(f"cc.source: `{src!r}` — must be a path to a C file")
        try:
            lib = ccompile.build(base / src)
        except ccompile.CompileError as e:
            raise ScenarioError(str(e)) from None
        cc["source"] = str(base / src)
        cc["library"] = str(lib)
        cc.setdefault("name", Path(src).stem)
    elif isinstance(cc.get("library"), str):
        cc["library"] = str(base / cc["library"])


def _flow_file_csv(name, base: Path) -> str:
    """`workload.flow_file`: a CSV file (header src,dst,size[,start,verb,dport,tenant],
    values as in YAML) read as text for the core, or a Parquet file with those
    columns converted to it."""
    key = "workload.flow_file"
    if not isinstance(name, str):
        raise ScenarioError(f"{key}: `{name!r}` — must be a path to a .csv or .parquet file")
    path = base / name
    if path.suffix == ".parquet":
        import polars as pl

        try:
            if path.exists() and not path.is_file():
                raise ScenarioError(f"{key}: `{path}` is not a regular file")
            if path.stat().st_size > MAX_INPUT_BYTES:
                raise ScenarioError(f"{key}: `{path}` is {path.stat().st_size} bytes — allowed: at most {MAX_INPUT_BYTES}")
            df = pl.read_parquet(path)
        except ScenarioError:
            raise
        except Exception as e:  # missing, not Parquet, unreadable
            raise ScenarioError(f"{key}: `{path}` cannot be read as Parquet ({e})") from None
        return _parquet_flows_csv(df, f"{key}: `{path}`")
    if path.suffix != ".csv":
        raise ScenarioError(f"{key}: `{path}` — allowed: a .csv or .parquet file")
    try:
        return read_input(path, key)
    except OSError as e:
        raise ScenarioError(f"{key}: `{path}` cannot be read ({e.strerror})") from None


def _parquet_flows_csv(df, where: str) -> str:
    """The flows of a Parquet file as the CSV text the core reads. Each
    cell must survive as one CSV field, and no row may read as a comment
    or a blank line, or a flow would be split, merged or silently lost."""
    import polars as pl

    for name, dtype in df.schema.items():
        # What casts to the text a CSV cell would hold; a time type
        # (Duration, Datetime) does not say in which unit it is meant, and
        # polars cannot cast a Duration to text at all.
        plain = (dtype.is_integer() or dtype.is_float() or dtype.is_decimal()
                 or dtype in (pl.String, pl.Categorical, pl.Boolean, pl.Null) or isinstance(dtype, pl.Enum))
        if not plain:
            hint = ("; write times as text with their unit (`5us`) or as integer picoseconds"
                    if dtype.is_temporal() else "")
            raise ScenarioError(f"{where}: column `{name}` is {dtype}; allowed: text, integer or float columns{hint}")
    text = df.cast(pl.String)
    for name in text.columns:
        bad = text.with_row_index("row").filter(pl.col(name).str.contains(r'[,"\r\n]'))
        if bad.height:
            row, value = bad["row"][0] + 1, bad[name][0]
            raise ScenarioError(f"{where}: row {row}, column `{name}`: `{value!r}` — a value may not hold a comma, "
                                f"a double quote or a line break")
    first = text.columns[0] if text.width else None
    if first is not None:
        lead = text.with_row_index("row").filter(
            pl.col(first).fill_null("").str.starts_with("#")
            | pl.all_horizontal(pl.col(c).fill_null("").str.strip_chars() == "" for c in text.columns))
        if lead.height:
            row = lead["row"][0] + 1
            raise ScenarioError(f"{where}: row {row}: `{lead[first][0]}` in column `{first}` — a row may not be "
                                f"empty or start with `#` (it would be read as a comment)")
    return text.write_csv()


def _resolve_paths(data: dict, base: Path) -> None:
    topo = data.get("topology")
    if isinstance(topo, dict) and "path" in topo and topo["path"] is None:
        del topo["path"]  # null is absent, as for every key
    if isinstance(topo, dict) and topo.get("kind") == "hpcc_file" and "path" in topo:
        others = [k for k in ("text", "builtin") if k in topo]
        if others:
            raise ScenarioError(f"topology.path: given with topology.{others[0]}; give exactly one of builtin, "
                                f"path or text")
        path = base / str(topo.pop("path"))
        try:
            topo["text"] = read_input(path, "topology.path")
        except OSError as e:
            raise ScenarioError(f"topology.path: `{path}` cannot be read ({e.strerror})") from None
    workload = data.get("workload")
    if isinstance(workload, dict) and "flow_file" in workload:
        workload["flows_csv"] = _flow_file_csv(workload.pop("flow_file"), base)
    if isinstance(workload, dict):
        poisson = workload.get("poisson")
        items = poisson if isinstance(poisson, list) else [poisson] if isinstance(poisson, dict) else []
        for i, p in enumerate(items):
            cdf = p.get("cdf") if isinstance(p, dict) else None
            if isinstance(cdf, str) and cdf_is_a_file(cdf):
                key = "workload.poisson" + (f"[{i}]" if isinstance(poisson, list) else "") + ".cdf"
                path = base / cdf
                try:
                    lines = read_input(path, key).splitlines()
                except OSError as e:
                    raise ScenarioError(f"{key}: `{path}` cannot be read ({e.strerror})") from None
                points = []
                for n, line in enumerate(lines, 1):
                    line = line.strip()
                    if not line or line.startswith("#"):
                        continue
                    parts = line.split()
                    try:
                        x, y = (float(t) for t in parts)
                    except ValueError:
                        raise ScenarioError(
                            f"{key}: `{path}` line {n} `{line}` must be `size_bytes cdf_percent`"
                        ) from None
                    if not (math.isfinite(x) and math.isfinite(y)):
                        raise ScenarioError(f"{key}: `{path}` line {n} `{line}` — allowed: finite numbers")
                    points.append([x, y])
                p["cdf"] = points


def integer(value) -> int | None:
    """`value` as a Python int if it is a whole number a Python int stands
    for: an int, or an integer of another type (a NumPy integer scalar, or
    anything else with `__index__`), so that a scenario built from NumPy or
    pandas values takes them as it takes ints. None for anything else, and
    for booleans (True is no count), Python's or NumPy's. NumPy itself is
    not imported: `operator.index` asks the value."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def numpy_scalar(value) -> bool | float | None:
    """`value` as the Python bool or float it stands for if it is a NumPy
    boolean or floating-point scalar (`numpy.bool_`, `numpy.float32`, ...),
    which are neither bools nor floats to Python; None for anything else.
    (`numpy.float64` is a float already; integers are `integer`'s.) NumPy
    itself is not imported: the scalar's own `item` gives its value, exactly."""
    if getattr(type(value), "__module__", None) != "numpy" or not hasattr(value, "item"):
        return None
    v = value.item()
    return v if type(v) in (bool, float) else None


_SCALARS = frozenset((str, int, float, bool, type(None)))


def plain(value, _memo: dict | None = None):
    """A deep copy of `value`, as `copy.deepcopy` makes it (a mapping or
    list reached twice, as YAML aliases make them, is copied once), with
    every integer of another type than int (see `integer`) made a Python
    int, and every NumPy boolean or float a Python one (see `numpy_scalar`):
    for overrides and sweeps built in Python."""
    import copy

    memo = {} if _memo is None else _memo
    if isinstance(value, (dict, list)):
        done = memo.get(id(value))
        if done is not None:
            return done
        # Text, numbers and null are kept without a call: they are most of a scenario.
        if isinstance(value, dict):
            out = memo[id(value)] = {}
            for k, v in value.items():
                out[k] = v if type(v) in _SCALARS else plain(v, memo)
        else:
            out = memo[id(value)] = []
            out.extend(v if type(v) in _SCALARS else plain(v, memo) for v in value)
        return out
    if not isinstance(value, (int, float, str, type(None))):
        i = integer(value)
        if i is not None:
            return i
        x = numpy_scalar(value)
        if x is not None:
            return x
    return copy.deepcopy(value, memo)


def _json_scalar(value) -> int | bool | float:
    """`json.dumps`'s `default`: an integer of another type than int as the
    int it stands for (within 64 bits: past them the walk names it), a
    NumPy boolean or float as the Python one (finite: the walk names a NaN
    or an infinity)."""
    i = integer(value)
    if i is not None and -2**63 <= i < 2**64:
        return i
    x = numpy_scalar(value)
    if x is not None and (type(x) is bool or math.isfinite(x)):
        return x
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def scenario_from_dict(data: dict, base_dir: str | os.PathLike = ".", source: str = "<dict>") -> LoadedScenario:
    """Wrap an in-memory scenario (for sweeps and notebooks)."""
    return _from_dict(data, base_dir, source, None)


def _from_dict(data, base_dir, source: str, read_flows: list | None) -> LoadedScenario:
    """`scenario_from_dict`; `read_flows` is the list at `workload.flows` as
    yamlio's fast reader made it (new mappings of text and numbers, referenced
    nowhere else), which is counted rather than walked and not copied:
    walking and copying 100,000 flows took longer than reading them."""
    if not isinstance(data, dict):
        raise ScenarioError(f"(scenario): must be a mapping of keys to values, not {type(data).__name__}")
    workload = data.get("workload")
    if read_flows is None or not isinstance(workload, dict) or workload.get("flows") is not read_flows:
        read_flows = None
    _check_finite(data, "", read_flows)
    if read_flows is not None:
        workload["flows"] = None
    try:
        # A deep copy that also rejects non-JSON values, and takes NumPy integers, booleans and floats as Python's.
        data = json.loads(json.dumps(data, default=_json_scalar))
    except TypeError:
        _refuse_non_json(data, "")
        raise
    finally:
        if read_flows is not None:
            workload["flows"] = read_flows
    if read_flows is not None:
        data["workload"]["flows"] = read_flows
    figures = _figures(data.pop("figures", None), "figures")
    _resolve_paths(data, Path(base_dir))
    controller = code = None
    cc = data.get("cc")
    if isinstance(cc, dict) and cc.get("algorithm") == "python":
        factory, name, code = _load_python_controller(cc, Path(base_dir))
        controller = (factory, name)
    if isinstance(cc, dict) and cc.get("algorithm") == "c":
        _build_c_controller(cc, Path(base_dir))
    return LoadedScenario(data=data, source=source, controller=controller, figures=figures,
                          controller_code=code)


#: Values a scenario may hold once YAML aliases are expanded, and how deep
#: it may nest: far above any real scenario (a topology of 10K links is
#: ~100K values), far below what exhausts memory or the stack.
MAX_VALUES = 5_000_000
MAX_DEPTH = 64


#: Largest input file rdmalab reads (scenario, topology, CDF): far above the
#: shipped 320-host topology (~20 KB), far below what exhausts memory.
MAX_INPUT_BYTES = 64 * 1024 * 1024


def read_input(path: Path, key: str) -> str:
    """Read an input file as UTF-8 text, refusing what is not a regular file
    (a device such as /dev/zero, a FIFO, a directory), what is larger than
    MAX_INPUT_BYTES, and what is not text, with the key named."""
    if "\0" in str(path):
        raise ScenarioError(f"{key}: `{path!s}` is not a file name (it holds a NUL character)")
    if path.exists() and not path.is_file():
        raise ScenarioError(f"{key}: `{path}` is not a regular file — give a text file")
    size = path.stat().st_size
    if size > MAX_INPUT_BYTES:
        raise ScenarioError(f"{key}: `{path}` is {size} bytes — allowed: at most {MAX_INPUT_BYTES}")
    try:
        # A byte-order mark (Excel's "CSV UTF-8") says the encoding; it is no part of the text.
        return path.read_text(encoding="utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise ScenarioError(f"{key}: `{path}` is not UTF-8 text (byte {e.start})") from None


def _check_finite(value, path: str, read_flows: list | None = None) -> None:
    """Refuse NaN, infinities (YAML's `.nan`, `.inf`) and integers beyond
    64 bits, naming the key;
    refuse scenarios too large (an alias bomb) or too deep to read.
    `read_flows` (see `_from_dict`) holds only finite scalars two levels
    down: its values are counted, not walked. The core checks first, and
    only when it finds a problem does the walk here run to name it."""
    from rdmalab import _core

    if _core.values_ok(value, MAX_VALUES, MAX_DEPTH):
        return
    budget = [MAX_VALUES]

    def walk(v, p: str, depth: int) -> None:
        counted = read_flows is not None and v is read_flows
        if counted:
            # The list, each mapping and each value, as the walk would count them.
            budget[0] -= 1 + len(v) + sum(map(len, v))
        else:
            budget[0] -= 1
        if budget[0] < 0:
            raise ScenarioError(f"(scenario): more than {MAX_VALUES} values (YAML aliases that repeat a mapping?)"
                                f" — allowed: at most {MAX_VALUES}")
        if depth > MAX_DEPTH:
            raise ScenarioError(f"{p or '(scenario)'}: nested deeper than {MAX_DEPTH} levels — allowed: at most {MAX_DEPTH}")
        if counted:
            return
        if isinstance(v, float) and not math.isfinite(v):
            raise _not_finite(p or "(scenario)", v)
        _refuse_beyond_64_bits(v, p or "(scenario)")
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, f"{p}.{k}" if p else str(k), depth + 1)
        elif isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, f"{p}[{i}]", depth + 1)

    walk(value, path, 0)


def _refuse_beyond_64_bits(v, where: str) -> None:
    """Refuse an integer no key can hold, as written: on its way to the core
    it would become a float, and the core's message would show that."""
    if isinstance(v, int) and not -2**63 <= v < 2**64:
        raise ScenarioError(f"{where}: `{v}` — beyond 64 bits; allowed: an integer from -9223372036854775808 "
                            f"to 18446744073709551615 at most (each key states its own range)")


def _not_finite(where: str, shown) -> ScenarioError:
    return ScenarioError(f"{where}: `{shown}` — not a finite number; give a value like 0.5 or 100Gbps")


def _refuse_non_json(value, path: str) -> None:
    """Name the first value a scenario cannot hold (a YAML `!!binary` or
    `!!set`, a Python object): text, numbers, booleans, null, lists and
    mappings with text keys are allowed."""
    where = path or "(scenario)"
    if isinstance(value, dict):
        for k, x in value.items():
            if not isinstance(k, str):
                raise ScenarioError(f"{where}: key `{k!r}` is a {type(k).__name__}; allowed: text keys")
            _refuse_non_json(x, f"{path}.{k}" if path else k)
    elif isinstance(value, list):
        for i, x in enumerate(value):
            _refuse_non_json(x, f"{path}[{i}]")
    elif not isinstance(value, (str, int, float, bool, type(None))):
        i = integer(value)
        if i is not None:
            _refuse_beyond_64_bits(i, where)
            return
        x = numpy_scalar(value)
        if x is not None:
            if type(x) is float and not math.isfinite(x):
                raise _not_finite(where, repr(value))
            return
        raise ScenarioError(f"{where}: `{value!r}` is a {type(value).__name__}; allowed: text, a number, true/false, "
                            f"null, a list or a mapping")


def _figures(value, where: str) -> list:
    from rdmalab.casestudies import check_names

    try:
        return check_names(value, where)
    except ValueError as e:
        raise ScenarioError(str(e)) from None


def load_scenario(path: str | os.PathLike, overrides: dict[str, Any] | None = None,
                  labels: dict[str, str] | None = None) -> LoadedScenario:
    """Read a YAML scenario. `overrides` sets keys, dotted as `rdmalab.run`
    takes them (``{"seed": 3, "cc.algorithm": "hpcc"}``); `labels` names an
    override in an error where it came from (the CLI's ``--set KEY=VALUE``),
    `override` if not given."""
    p = Path(path)
    try:
        text = read_input(p, "(scenario)")
    except OSError as e:
        raise ScenarioError(f"(scenario): `{p}` cannot be read ({e.strerror})") from None
    try:
        data, read_flows = yamlio.load_with_flows(text)
    except yaml.YAMLError as e:
        raise ScenarioError(f"(scenario): `{p}` is not valid YAML: {e}") from None
    if data is None:
        raise ScenarioError(f"(scenario): `{p}` is empty")
    if overrides and isinstance(data, dict):
        # Dotted, as rdmalab.run and sweeps take them: `cc.algorithm` set
        # as one top-level key was refused as unknown only later.
        from rdmalab.sweep.spec import SweepError, parse_key, set_key

        for key, value in overrides.items():
            where = (labels or {}).get(key, "override")
            try:
                set_key(data, parse_key(key, where), value, where)
            except SweepError as e:
                raise ScenarioError(str(e)) from None
    return _from_dict(data, p.parent, str(p), read_flows)
