"""YAML as rdmalab reads it: like ``yaml.safe_load``, but a key given twice
in one mapping is an error (YAML would silently keep the last one, so a
scenario could run with a value its author did not mean)."""

from __future__ import annotations

import yaml


#: LibYAML's parser when PyYAML has it (about 10x faster on large flow
#: lists), else the pure-Python one; both construct the same values.
_Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_Base):
    pass


#: The tag YAML 1.1 gives a plain `on`, `off`, `yes`, `no`, `true`, `false`.
_BOOL_TAG = "tag:yaml.org,2002:bool"


def _mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False):
    loader.flatten_mapping(node)
    seen: dict = {}
    for key_node, _ in node.value:
        # A key is a name as written: no scenario key is a boolean, and YAML
        # 1.1 would turn `control.trigger.on` into `true` (and a tenant named
        # `no` into `false`), so the core would refuse a documented key.
        if isinstance(key_node, yaml.ScalarNode) and key_node.tag == _BOOL_TAG and not key_node.style:
            key_node.tag = "tag:yaml.org,2002:str"
        key = loader.construct_object(key_node, deep=deep)
        try:
            hash(key)
        except TypeError:
            continue  # the base constructor reports unhashable keys
        if key in seen:
            raise yaml.constructor.ConstructorError(
                "while reading a mapping", node.start_mark,
                f"key `{key}` given twice (first on line {seen[key] + 1}); give each key once", key_node.start_mark)
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
# A date or time (`name: 2024-05-01`) stays the text it was written as: no
# key of a scenario or sweep takes a date object.
_StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node))


def load(text: str):
    """Parse YAML text; duplicate keys raise ``yaml.YAMLError``."""
    return load_with_flows(text)[0]


def load_with_flows(text: str) -> tuple:
    """`load`, and the list under `workload.flows` when the core's reader
    read it (else None): a new list of new mappings of text and numbers,
    which the scenario loader need neither copy nor check value by value."""
    data = _load_with_fast_flows(text)
    if data is not _NOT_FAST:
        return data, data["workload"]["flows"]
    return yaml.load(text, Loader=_StrictLoader), None  # noqa: S506 (a SafeLoader subclass)


#: What the fast path put where the list under `workload.flows` was, for
#: PyYAML to read back: a value no scenario holds.
_FLOWS_HERE = "rdmalab-workload-flows-read-by-the-core-reader"
_NOT_FAST = object()


def _load_with_fast_flows(text: str):
    """A scenario whose `workload.flows` is a long block list: the list read
    by the core's reader (100,000 flows in a fraction of a second, where
    PyYAML takes about 10 s), the rest by PyYAML. Gives up (``_NOT_FAST``)
    whenever the result could differ from PyYAML's own: the reader gives up
    on anything outside the plain shapes it knows, and any problem PyYAML
    finds in the rest is reported by PyYAML reading the whole file, so every
    message (a key given twice, with its lines) is PyYAML's, as before."""
    from rdmalab import _core

    if _FLOWS_HERE in text:
        return _NOT_FAST
    found = _core.read_yaml_flows(text)
    if found is None:
        return _NOT_FAST
    start, end, flows = found
    # Blank lines keep every later line where it was, for PyYAML's line numbers.
    rest = text[:start] + " " + _FLOWS_HERE + "\n" * text.count("\n", start, end) + text[end:]
    try:
        data = yaml.load(rest, Loader=_StrictLoader)  # noqa: S506 (a SafeLoader subclass)
    except Exception:  # noqa: BLE001 (PyYAML reading the whole file names it)
        return _NOT_FAST
    workload = data.get("workload") if isinstance(data, dict) else None
    # The placeholder must be that key's value, reached once: no alias or
    # merge key may share the mapping that holds it or copy it.
    if not isinstance(workload, dict) or workload.get("flows") != _FLOWS_HERE or not _tree_with_one_placeholder(data):
        return _NOT_FAST
    workload["flows"] = flows
    return data


def _tree_with_one_placeholder(data) -> bool:
    """Whether `data` shares no mapping or list between two places (YAML
    aliases do) and holds `_FLOWS_HERE` once."""
    seen: set = set()
    count = 0
    todo = [data]
    while todo:
        v = todo.pop()
        if isinstance(v, (dict, list)):
            if id(v) in seen:
                return False
            seen.add(id(v))
            if isinstance(v, dict):
                todo.extend(v.keys())
                todo.extend(v.values())
            else:
                todo.extend(v)
        elif v == _FLOWS_HERE:
            count += 1
    return count == 1
