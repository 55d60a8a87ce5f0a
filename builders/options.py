"""Typed source options: each builder declares ``Options``, a frozen dataclass of its own
settings (as HF datasets' ``BUILDER_CONFIG_CLASS``), and the CLI draws them from it.

A field's ``metadata`` says how the CLI offers it: ``flag`` (the option's name, e.g.
``--family``; without one the setting is reached with ``--option key=value`` or
``--options FILE.yaml``), ``help``, ``path`` ("file", "dir" or "any": must exist), ``min`` (for
numbers), ``choices`` (the words the flag takes; another is a usage error), ``multiple``
(a repeatable flag), ``show_default`` and ``required`` (the text after ``--source X needs
FLAG``).

The CLI coerces what the user typed once (``options_from_values``: unknown names, required
fields and paths checked too) and hands the typed dataclass to the build in
``BuildOptions.settings``, which travels to the workers as it is. A library caller may give
plain values in ``BuildOptions.extra`` instead: ``typed_options`` coerces them once, with the
same rules, when the builder is made. Either way ``Builder.settings`` is the typed object.
"""
from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from pathlib import Path

from dataset_spec.errors import PtxdsError


class OptionError(PtxdsError, ValueError):
    """An option the chosen source does not take, or a value of the wrong type: a usage
    error (the CLI exits with status 2, as for its own options)."""
    usage = True


@dataclass(frozen=True)
class NoOptions:
    """A source with no settings of its own."""


def option_fields(options_cls) -> dict:
    """name -> dataclasses.Field of a source's Options."""
    return {f.name: f for f in dataclasses.fields(options_cls)}


def flag_of(field: dataclasses.Field) -> str:
    return field.metadata.get("flag") or f"--option {field.name}=..."


def field_type(options_cls, field: dataclasses.Field):
    """(type, is_list) of a field from its annotation (Optional unwrapped)."""
    hint = typing.get_type_hints(options_cls)[field.name]
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and args:
        hint = args[0]
    if typing.get_origin(hint) in (list, tuple):
        return (typing.get_args(hint) or (str,))[0], True
    return hint, False


def _coerce(options_cls, field: dataclasses.Field, value, source: str, strict: bool = True):
    """``value`` (from a flag, ``--option`` text, a YAML file or a library caller) as the
    field's type. ``strict`` (the CLI): a path must exist. Not strict (a library caller's
    ``BuildOptions.extra``): a value that is neither text, a number nor a list is the
    caller's own object and kept as it is (a ``ShapeSet`` for ``shapes``)."""
    if value is None:
        return None
    kind, is_list = field_type(options_cls, field)
    if is_list:
        if isinstance(value, str):
            items = [v.strip() for v in value.split(",") if v.strip()]
        elif isinstance(value, (list, tuple)):
            items = list(value)
        else:
            items = [value]
        return tuple(_coerce_one(kind, item, field, source, strict) for item in items)
    return _coerce_one(kind, value, field, source, strict)


# YAML 1.1 reads on/off/yes/no as booleans: a field of words takes them back
_BOOL_WORDS = ({True: "on", False: "off"}, {True: "yes", False: "no"}, {True: "true", False: "false"})


def _coerce_one(kind, value, field, source, strict=True):
    choices = field.metadata.get("choices")
    if kind is str and isinstance(value, bool):
        words = next((w for w in _BOOL_WORDS if choices and w[value] in choices), _BOOL_WORDS[2])
        value = words[value]
    elif not strict and not isinstance(value, (str, int, float, Path)):
        return value
    try:
        if kind is bool and isinstance(value, str):
            if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(value)
            return value.lower() in ("true", "1", "yes")
        if kind is int and isinstance(value, float) and not value.is_integer():
            raise ValueError(value)
        converted = kind(value)
    except (TypeError, ValueError):
        raise OptionError(f"{flag_of(field)}: {value!r} is not a {kind.__name__} "
                          f"(option {field.name} of --source {source})") from None
    minimum = field.metadata.get("min")
    if minimum is not None and converted < minimum:
        raise OptionError(f"{flag_of(field)}: {converted} is below {minimum} (option {field.name} of --source {source})")
    if choices and converted not in choices:
        raise OptionError(f"{flag_of(field)}: {converted!r} is not one of {', '.join(map(str, choices))} "
                          f"(option {field.name} of --source {source})")
    path = field.metadata.get("path")
    exists = {"dir": Path.is_dir, "file": Path.is_file, "any": Path.exists}.get(path)
    if strict and exists is not None and not exists(Path(converted)):
        what = {"dir": "folder", "file": "file", "any": "file or folder"}[path]
        raise OptionError(f"{flag_of(field)}: {converted} is not an existing {what}")
    return converted


def options_from_values(options_cls, values: dict, source: str, takers: dict):
    """The source's Options from ``values`` (name -> value, only those the user gave),
    validated: a name the source does not take is an error naming the sources that do
    (``takers``: name -> (its flag, [sources])); a required field left out is an error
    naming its flag."""
    fields = option_fields(options_cls)
    for name in values:
        if name not in fields:
            flag, others = takers.get(name, (None, ()))
            if others:
                raise OptionError(f"{flag or 'option ' + name} applies to --source {' and '.join(sorted(others))}, "
                                  f"not {source}")
            raise OptionError(f"no source takes option {name!r}; --source {source} takes: "
                              f"{', '.join(fields) or 'no options'}")
    kwargs = {name: _coerce(options_cls, fields[name], value, source) for name, value in values.items()}
    for name, field in fields.items():
        if field.metadata.get("required") and kwargs.get(name) is None:
            raise OptionError(f"--source {source} needs {field.metadata.get('flag')} {field.metadata['required']}")
    return options_cls(**kwargs)


def parse_option_pairs(pairs) -> dict:
    """``--option key=value`` texts -> {key: value text}."""
    values = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise OptionError(f"--option {pair!r}: write it as key=value (e.g. --option batch_size=4)")
        values[key.strip().replace("-", "_")] = value.strip()
    return values


def load_options_file(path) -> dict:
    """``--options FILE.yaml``: a mapping of option names to values."""
    from dataset_spec.documents import load_document
    data = load_document(path)
    if not isinstance(data, dict):
        raise OptionError(f"--options {path}: expected a mapping of option names to values, got {type(data).__name__}")
    return {str(k).replace("-", "_"): v for k, v in data.items()}


def given_values(options) -> dict:
    """The fields of an Options object that are set (not None), by name."""
    return {f.name: getattr(options, f.name) for f in dataclasses.fields(options)
            if getattr(options, f.name) is not None}


def typed_options(options_cls, values: dict, source: str):
    """A source's Options from a library caller's plain ``values`` (``BuildOptions.extra``,
    or another source's Options a builder hands over), coerced once with the CLI's rules.
    Names the class does not declare are left out: they are a test builder's own
    settings, read from ``BuildOptions.extra`` directly."""
    fields = option_fields(options_cls)
    return options_cls(**{name: _coerce(options_cls, fields[name], value, source, strict=False)
                          for name, value in values.items() if name in fields and value is not None})
