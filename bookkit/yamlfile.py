"""YAML files read safely: a size cap, a bound on alias expansion, no duplicate keys, and the line of every
value, so that an error can say ``file:line``.

PyYAML's ``SafeLoader`` builds only plain data, but it reads a file of any size and expands aliases without
limit when the result is walked (a "billion laughs" document of a few hundred bytes stands for 10⁹ nodes).
:func:`load_yaml` refuses a file over :data:`MAX_BYTES` before parsing it, and a document that stands for more than
:data:`MAX_NODES` nodes once its aliases are expanded (or that refers to itself) before anything walks it; it also
refuses a mapping with the same key twice (PyYAML silently keeps the last).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["MAX_BYTES", "MAX_NODES", "YamlDocument", "YamlFileError", "load_yaml"]

#: the largest YAML file read (the largest claims file is under 20 kB)
MAX_BYTES = 1 << 20
#: the most nodes a document may stand for with its aliases expanded (the largest claims file: a few thousand)
MAX_NODES = 200_000


class YamlFileError(ValueError):
    """A YAML file that cannot be read safely; the message names the file and, where known, the line."""


@dataclass
class YamlDocument:
    """The parsed document and the line (1-based) of each value, by its path of keys and indices."""

    path: Path
    data: Any
    lines: dict[tuple, int] = field(default_factory=dict)

    def line_of(self, where: tuple) -> int | None:
        """The line of the value at ``where``, else of its nearest enclosing value that has one."""
        where = tuple(where)
        while where not in self.lines and where:
            where = where[:-1]
        return self.lines.get(where)

    def at(self, where: tuple = ()) -> str:
        """``file:line`` of the value at ``where`` (``file`` alone when no line is known)."""
        line = self.line_of(where)
        return f"{self.path}:{line}" if line is not None else str(self.path)


class _Problem(Exception):
    """A problem at a line of the document (made into a :class:`YamlFileError` with the file's name)."""

    def __init__(self, node: yaml.Node, message: str):
        super().__init__(message)
        self.line = node.start_mark.line + 1


class _Loader(yaml.SafeLoader):
    """``SafeLoader`` that refuses a mapping with the same key twice."""


def _no_duplicates(loader: _Loader, node: yaml.MappingNode, deep: bool = False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if isinstance(key, (dict, list)):
            raise _Problem(key_node, f"a key must be a plain value, not {key!r}")
        if key in seen:
            raise _Problem(key_node, f"duplicate key {key!r}")
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)


def _expanded_size(root: yaml.Node) -> int:
    """How many nodes ``root`` stands for with every alias expanded; stops at the first count over
    :data:`MAX_NODES` and refuses a node that contains itself. Shared nodes are counted once per use, computed
    once (memoised), so a document of nested aliases is measured in time linear in its text."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node) -> int:
        if id(node) in sizes:
            return sizes[id(node)]
        if id(node) in open_nodes:
            raise _Problem(node, "an alias refers to the value that contains it")
        open_nodes.add(id(node))
        total = 1
        pairs = node.value if isinstance(node, yaml.MappingNode) else ()
        for child in node.value if isinstance(node, yaml.SequenceNode) else [n for pair in pairs for n in pair]:
            total += size(child)
            if total > MAX_NODES:
                raise _Problem(
                    node,
                    f"the document stands for more than {MAX_NODES:,} values once its aliases are expanded "
                    "(an alias bomb?)",
                )
        open_nodes.discard(id(node))
        sizes[id(node)] = total
        return total

    return size(root)


def _index(loader: _Loader, node: yaml.Node, where: tuple, lines: dict[tuple, int]) -> None:
    """Record the line of every value under ``node`` (keys by their scalar value, items by index)."""
    lines[where] = node.start_mark.line + 1
    if isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _index(loader, item, (*where, i), lines)
    elif isinstance(node, yaml.MappingNode):
        for key_node, value in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                _index(loader, value, (*where, loader.construct_object(key_node)), lines)


def load_yaml(path: str | Path, *, what: str = "YAML file") -> YamlDocument:
    """Read one YAML document safely (see the module docstring).

    Parameters
    ----------
    path : the file
    what : what the file is, for the messages ("claims file")

    Raises
    ------
    YamlFileError
        ``"<path>:<line>: <what is wrong>"`` for a file too large, not UTF-8, not valid YAML, with a duplicate
        key, an alias bomb or a self-referring alias.
    """
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise YamlFileError(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        raise YamlFileError(f"{path}: a {what} is at most {MAX_BYTES:,} bytes; this one is larger")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlFileError(f"{path}: a {what} is UTF-8 text; byte {exc.start} is not") from None
    try:
        loader = _Loader(text)  # the reader refuses control characters here, before any parsing
    except yaml.reader.ReaderError as exc:
        line = text[: exc.position].count("\n") + 1
        char = chr(exc.character) if isinstance(exc.character, int) else exc.character
        raise YamlFileError(
            f"{path}:{line}: a {what} holds the control character {char!r}, which YAML does not allow; remove it"
        ) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return YamlDocument(path, None, {})
        _expanded_size(node)
        data = loader.construct_document(node)
        lines: dict[tuple, int] = {}
        _index(loader, node, (), lines)
    except _Problem as exc:
        raise YamlFileError(f"{path}:{exc.line}: {exc}") from None
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark is not None else None
        at = f"{path}:{line}" if line is not None else str(path)
        raise YamlFileError(f"{at}: not valid YAML: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        one = " ".join(str(exc).split())
        raise YamlFileError(f"{path}: not valid YAML: {one}") from None
    except RecursionError:
        raise YamlFileError(f"{path}: not valid YAML: nested too deeply") from None
    finally:
        loader.dispose()
    return YamlDocument(path, data, lines)
