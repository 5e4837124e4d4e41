"""The validation base every config shares: `ConfigError` (a user-facing error of one line),
`check`, `check_finite` and `flag_name` (a config field's launcher flag). Imports nothing of the
project: config sections, registries and env modules use it."""

import math
from typing import Any, Mapping, Optional


class ConfigError(ValueError):
  """A user-facing configuration error; its message is one line."""


def check(cond: bool, message: str) -> None:
  if not cond:
    raise ConfigError(message)


def flag_name(cls, field_name: str) -> str:
  """The launcher flag of the config dataclass `cls`'s field: its name after the dataclass's
  `FLAG_PREFIX`, if it has one."""
  return getattr(cls, "FLAG_PREFIX", "") + field_name


def check_finite(cls, values: Mapping[str, Any],
                 renamed: Optional[Mapping[str, str]] = None) -> None:
  """Every float among `values` (the config dataclass `cls`'s fields by name) is finite. NaN
  passes every range check (`nan > 0` and `nan < 0` are both False, so `if x < 0: refuse` lets it
  through) and inf passes `> 0`: either then reached the learner and failed at its first update,
  naming no flag. `renamed`: flag names that are not the field's (the launcher's `--lr`)."""
  for field, value in values.items():
    if isinstance(value, float) and not math.isfinite(value):
      name = (renamed or {}).get(field, flag_name(cls, field))
      raise ConfigError(f"--{name} must be a finite number, got {value}")
