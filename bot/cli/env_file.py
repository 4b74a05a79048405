"""The `.env` that `manzoori init` writes: fresh keys, DATABASE_URL set, and every other setting
(bot.config.Settings) at its default, commented, with its description."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet

from bot.config import KEY_VARIABLES, Settings
from core.errors import ConfigError


def write_env_file(path: Path, *, force: bool = False) -> Path:
    """Write a .env (mode 0o600) with fresh keys and every other variable at its default."""
    keys = {name: Fernet.generate_key().decode("ascii") for name in KEY_VARIABLES}
    text = render_env(keys)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        raise ConfigError(f"{path} exists; pass --force to overwrite it") from None
    except OSError as error:  # no such folder, not a folder, not ours to write
        raise ConfigError(f"cannot write {path}: {error.strerror or error}") from None
    try:
        # The umask cannot widen 0o600, but a file overwritten with force keeps its own mode.
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as error:  # a full disk, or a file that is not a file (/proc, a device)
        raise ConfigError(f"cannot write {path}: {error.strerror or error}") from None
    return path


def render_env(keys: dict[str, str]) -> str:
    """The text of a .env: `keys` filled in, DATABASE_URL set, every other variable commented."""
    lines = ["# Manzoori configuration. Keep this file private: it holds the keys.", ""]
    for field_name, field in Settings.model_fields.items():
        name = field_name.upper()
        if name in KEY_VARIABLES:
            lines += _comment(f"{field.description}. Required; generate with `manzoori init`.")
            lines += [f"{name}={keys.get(name, '')}", ""]
            continue
        default = _env_text(field.default)
        lines += _comment(f"{field.description}. Default: {default or '(empty)'}.")
        prefix = "" if name == "DATABASE_URL" else "# "
        lines += [f"{prefix}{name}={default}", ""]
    return "\n".join(lines)


def _env_text(value: Any) -> str:
    """A default as it would be written in a .env file."""
    if value is None:
        return ""
    if isinstance(value, frozenset):
        return ",".join(str(item) for item in sorted(value))
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _comment(text: str) -> list[str]:
    """`text` as `# ` comment lines that fit in 100 columns."""
    return ["# " + line for line in textwrap.wrap(text, width=98)]
