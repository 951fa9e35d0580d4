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


def _mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False):
    loader.flatten_mapping(node)
    seen: dict = {}
    for key_node, _ in node.value:
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


def load(text: str):
    """Parse YAML text; duplicate keys raise ``yaml.YAMLError``."""
    return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 (a SafeLoader subclass)
