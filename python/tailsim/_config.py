"""Turning what a user hands us (a TOML path, a dict, a builder) into what the Rust core loads."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Union

# The TOML reader the package's Python side uses (the CLI's sweep files, flows added to a configuration).
try:
    import tomllib  # noqa: F401 (for the other modules)
except ImportError:  # Python < 3.11
    import tomli as tomllib  # type: ignore # noqa: F401

ConfigLike = Union[str, "os.PathLike[str]", Mapping[str, Any], Any]


def normalize(config: ConfigLike) -> tuple[str, str, str, str]:
    """Return (kind, text, origin, base_dir) for ``_core``: kind is "toml" or "json".

    A str or path is a TOML file (relative paths inside it resolve against its folder); a mapping is the
    same structure as the TOML file (relative paths resolve against the current directory); an object
    with ``to_dict()`` (the builders in :mod:`tailsim.builders`) is turned into a mapping.
    """
    if hasattr(config, "to_dict") and not isinstance(config, Mapping):
        config = config.to_dict()
    if isinstance(config, Mapping):
        return "json", json.dumps(_plain(config)), "<dict>", os.getcwd()
    if isinstance(config, (str, os.PathLike)):
        path = Path(config)
        try:
            text = path.read_text()
        except OSError as e:
            from ._core import ConfigError

            raise ConfigError(f"{path}: cannot read the experiment file: {e.strerror}") from None
        return "toml", text, str(path), str(path.resolve().parent)
    raise TypeError(f"a configuration is a TOML file path, a dict or a builder object, not {type(config).__name__}")


def _plain(v: Any) -> Any:
    """Builders and tuples inside a dict become plain JSON values."""
    if hasattr(v, "to_dict") and not isinstance(v, Mapping):
        return _plain(v.to_dict())
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    return v


def toml_value(v: Any) -> str:
    """A Python value as a TOML literal, for ``--set key=value`` overrides."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a valid TOML basic string
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot use {v!r} as an override value")


def overrides(values: Mapping[str, Any] | None) -> list[str]:
    """``{"workload[0].load": 0.5}`` -> ``["workload[0].load=0.5"]``."""
    return [f"{k}={toml_value(v)}" for k, v in (values or {}).items()]
