"""What every launcher shares: user errors are one `error:` line and exit code 2; flags made from
the config dataclasses' fields."""

import ast
import dataclasses
import inspect
import json
import logging
import os
import sys
import textwrap
import typing

from absl import flags

from hts_jax import choices
from hts_jax import config as hts_config
from hts_jax.choices import check_finite

# The DEFINE_* calls below define their caller's flags: `--help` lists them as the launcher's own.
flags.disclaim_key_flags()
# JAX logs at INFO each backend it probes and does not find ("Unable to initialize backend
# 'tpu'"), which absl's handler prints under app.run: not news to users of any command here.
logging.getLogger("jax._src.xla_bridge").setLevel(logging.WARNING)


def fail(message: str, code: int = 2):
  print(f"error: {message}", file=sys.stderr)
  sys.exit(code)


def fail_now(message: str, code: int):
  """`fail` without the interpreter's exit handlers (they may wait for other processes)."""
  print(f"error: {message}", file=sys.stderr, flush=True)
  sys.stdout.flush()
  os._exit(code)


def parse_flags(argv):
  """absl's parsing, with flag errors reported like every other user error: one line, exit 2."""
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:
    fail(str(e).splitlines()[0], 2)


def short_help(module_name: str, names: typing.Sequence[str] = ()) -> str:
  """The program's docstring and the flags most runs change (`names`; else the module's own),
  each with its default, wrapped: what `--help` and `--helpshort` print."""
  fl = flags.FLAGS
  chosen = [fl[n] for n in names] or list(fl.get_key_flags_for_module(module_name))
  lines = [(sys.modules[module_name].__doc__ or "").strip(), "", "Flags most runs change:"]
  for flag in chosen:
    default = "" if flag.default is None else f" (default: {flag.default_as_str})"
    lines += textwrap.wrap(f"--{flag.name}: {flag.help}{default}", 100, initial_indent="  ",
                           subsequent_indent="      ", break_long_words=False,
                           break_on_hyphens=False)
  lines.append(f"--helpfull: all {len(fl)} flags.")
  return "\n".join(lines)


def run_main(main, module_name: str, common: typing.Sequence[str] = ()) -> None:
  """Runs `main` as the program (absl's app.run, flag errors as one line). `--help` and
  `--helpshort` print `short_help` (the `common` flags, else the module's own) and `--helpfull`
  every flag, each with exit code 0. The flags of `module_name` are made the program's key flags
  (absl lists those of the file in sys.argv[0]: a console script or an experiments/ shim)."""
  from absl import app  # pylint: disable=import-outside-toplevel
  sys.modules["__main__"].__doc__ = sys.modules[module_name].__doc__
  for flag in flags.FLAGS.get_key_flags_for_module(module_name):
    flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)
  asked = {a.split("=")[0] for a in sys.argv[1:]}
  if asked & {"--help", "-h", "-?", "--helpshort", "--helpfull"}:
    print(flags.FLAGS.get_help() if "--helpfull" in asked else short_help(module_name, common))
    sys.exit(0)
  app.run(main, flags_parser=parse_flags)


def field_docs(cls) -> typing.Dict[str, str]:
  """A dataclass's field docstrings (the string literal under a field, as Sphinx and tyro read
  them) by field name, white space folded."""
  body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
  return {node.target.id: " ".join(doc.value.value.split())
          for node, doc in zip(body, body[1:])
          if isinstance(node, ast.AnnAssign) and isinstance(doc, ast.Expr)
          and isinstance(doc.value, ast.Constant) and isinstance(doc.value.value, str)}


def _fields(cls, skip):
  """(field, type) of the dataclass `cls`'s fields but those in `skip`; Optional[T] is T."""
  hints = typing.get_type_hints(cls)
  for field in dataclasses.fields(cls):
    if field.name in skip:
      continue
    kind = hints[field.name]
    if typing.get_origin(kind) is typing.Union:  # Optional[T]: a T flag whose default is None
      kind, = [arg for arg in typing.get_args(kind) if arg is not type(None)]
    yield field, typing.get_origin(kind) or kind


def _flag_name(cls, field, renamed) -> str:
  return renamed.get(field.name, hts_config.flag_name(cls, field.name))


def define_config_flags(cls, renamed=None, skip=()) -> None:
  """Defines a flag for every field of the config dataclass `cls` (a nested config's fields are
  flags of their own), named as the field (after the dataclass's `FLAG_PREFIX`, if it has one) or
  `renamed[field name]`, with the field's default and its docstring as help. Types: bool, int,
  float, str (an enum where `choices.CHOICES` lists the values), dict (a JSON object), tuple
  (of ints, comma separated). Fields in `skip` get none."""
  renamed, docs = renamed or {}, field_docs(cls)
  for field, kind in _fields(cls, skip):
    if dataclasses.is_dataclass(kind):
      define_config_flags(kind, renamed, skip)
      continue
    name = _flag_name(cls, field, renamed)
    if field.name not in docs:
      raise TypeError(f"{cls.__name__}.{field.name} has no docstring (the help of --{name})")
    default = (field.default if field.default_factory is dataclasses.MISSING
               else field.default_factory())
    if kind is str and name in choices.CHOICES:
      flags.DEFINE_enum(name, default, list(choices.CHOICES[name]), docs[field.name])
    elif kind is tuple:  # of ints: a comma-separated list
      flags.DEFINE_list(name, ",".join(str(x) for x in default), docs[field.name])
    elif kind in (bool, int, float, str, dict):
      define = {bool: flags.DEFINE_bool, int: flags.DEFINE_integer, float: flags.DEFINE_float,
                str: flags.DEFINE_string, dict: flags.DEFINE_string}[kind]
      define(name, json.dumps(default) if kind is dict else default, docs[field.name])
    else:
      raise TypeError(f"{cls.__name__}.{field.name}: no flag type for {kind}")


def config_from_flags(cls, value, renamed=None, skip=()):
  """The config dataclass `cls` built from the flags `define_config_flags` defined: `value(flag
  name)` gives each flag's value; fields in `skip` keep their defaults. Raises ConfigError."""
  renamed, kwargs = renamed or {}, {}
  for field, kind in _fields(cls, skip):
    if dataclasses.is_dataclass(kind):
      kwargs[field.name] = config_from_flags(kind, value, renamed, skip)
      continue
    name = _flag_name(cls, field, renamed)
    if kind is dict:
      kwargs[field.name] = _json_object(name, value(name))
    elif kind is tuple:
      kwargs[field.name] = _int_tuple(name, value(name))
    else:
      kwargs[field.name] = value(name)
  check_finite(cls, kwargs, renamed)  # every float flag, before the config's checks
  return cls(**kwargs)


def _int_tuple(name, items):
  """A list flag's strings (or a preset's ints) as a tuple of ints."""
  try:
    return tuple(int(x) for x in items)
  except (TypeError, ValueError):
    raise hts_config.ConfigError(f"--{name} takes comma-separated integers, got {items!r}") from None


def _json_object(name, text):
  if isinstance(text, dict):  # a preset's
    return text
  try:
    obj = json.loads(text)
  except json.JSONDecodeError as e:
    raise hts_config.ConfigError(f"--{name} is not valid JSON: {e}") from None
  if not isinstance(obj, dict):
    raise hts_config.ConfigError(f"--{name} must be a JSON object")
  return obj
