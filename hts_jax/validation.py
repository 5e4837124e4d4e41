"""The validation base every config shares: `ConfigError` (a user-facing error of one line),
`check`, and `flag_name` (a config field's launcher flag). Imports nothing: config sections,
registries and env modules use it."""


class ConfigError(ValueError):
  """A user-facing configuration error; its message is one line."""


def check(cond: bool, message: str) -> None:
  if not cond:
    raise ConfigError(message)


def flag_name(cls, field_name: str) -> str:
  """The launcher flag of the config dataclass `cls`'s field: its name after the dataclass's
  `FLAG_PREFIX`, if it has one."""
  return getattr(cls, "FLAG_PREFIX", "") + field_name
