"""The documentation stays buildable and true to the code: the mkdocs site builds with --strict, its
nav lists every page, every `hts-train` command in README.md and docs/*.md builds a launcher config,
and every launcher flag is documented.

A command is checked the way `hts-train` reads it (absl flags into `build_config()`, which
validates the values and the packages they need but starts no env and touches no file), all of
them in one subprocess: the launcher's flags are process-global, and importing it defines them.
"""

import glob
import json
import os
import re
import shlex
import subprocess
import sys
from typing import Dict, List, Sequence, Tuple

import pytest
import yaml

from tests.support import ROOT

DOCS = os.path.join(ROOT, "docs")

# How a command names the training launcher, and the launcher that passes its flags after `--`.
TRAIN = ("hts-train", "experiments.train", "hts_jax.cli.train")
LAUNCH = ("hts-launch", "experiments.launch", "hts_jax.cli.launch")
LAUNCH_PROCESSES = 2  # hts-launch's --num_processes default (hts_jax/cli/launch.py)

# Runs in the subprocess: reads a JSON list of flag lists on stdin, prints on its last stdout line
# a JSON object with each command's error (None when it built a config) and the launcher's flags.
_CHECK = r"""
import json, sys
from absl import app, flags, logging  # their flags are absl's own, not the launcher's
before = set(flags.FLAGS)
from hts_jax.cli import train
errors = []
for args in json.load(sys.stdin):
  try:
    flags.FLAGS.unparse_flags()
    flags.FLAGS(["train", *args])
    train.build_config()
    errors.append(None)
  except (Exception, SystemExit) as e:  # absl's parse errors, ConfigError, a flag that exits
    errors.append(f"{type(e).__name__}: {e}")
print(json.dumps({"errors": errors, "flags": sorted(set(flags.FLAGS) - before)}))
"""

# Fenced blocks that hold shell commands; others (```text, ```python) are not read for commands.
SHELL = ("", "bash", "sh", "shell", "console")

# A command every check must reject: the check itself is tested with it.
BAD = ("(the check's own bad command)", ["--num_envs=15", "--num_executors=4"])


def doc_files() -> List[str]:
  """README.md and every docs/*.md, the files whose commands users copy."""
  return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(DOCS, "*.md")))


def fenced_lines(text: str, languages: Sequence[str] = SHELL) -> List[str]:
  """The logical lines of the fenced code blocks of a markdown text whose language is one of
  `languages` (none given counts as ""): backslash-continued lines joined into one."""
  out, fence, pending = [], None, ""
  for line in text.splitlines():
    if line.lstrip().startswith("```"):
      fence = line.lstrip()[3:].strip() if fence is None else None
      pending = ""
      continue
    if fence is None or fence not in languages:
      continue
    if line.rstrip().endswith("\\"):
      pending += line.rstrip()[:-1] + " "
      continue
    out.append(pending + line)
    pending = ""
  return out


def _program(tokens: List[str], i: int, names: Sequence[str]) -> int:
  """How many tokens at `i` name one of `names` (`hts-train`, `.venv/bin/hts-train`,
  `python -m experiments.train`), 0 when they do not."""
  tok = tokens[i]
  if os.path.basename(tok) in names:
    return 1
  if tok == "-m" and i + 1 < len(tokens) and tokens[i + 1] in names:
    return 2
  return 0


def _is_operator(token: str) -> bool:
  """A shell operator (`;`, `&&`, `|`, `>`, ...) ends a command's arguments."""
  return bool(token) and all(c in "();<>|&" for c in token)


def train_commands(line: str) -> List[List[str]]:
  """The training flags of every launcher command on one shell line: `hts-train <flags>` and
  `python -m experiments.train <flags>` give their flags, `hts-launch <its flags> -- <flags>` the
  flags after `--` plus what the launcher adds for process 0. Comments after `#` are ignored."""
  if not any(name in line for name in TRAIN + LAUNCH):
    return []
  lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
  lexer.whitespace_split = True
  tokens = list(lexer)
  commands, i = [], 0
  while i < len(tokens):
    n_train, n_launch = _program(tokens, i, TRAIN), _program(tokens, i, LAUNCH)
    if not n_train and not n_launch:
      i += 1
      continue
    i += n_train or n_launch
    args = []
    while i < len(tokens) and not _is_operator(tokens[i]):
      args.append(tokens[i])
      i += 1
    if n_launch:
      split = args.index("--") if "--" in args else len(args)
      own, args = args[:split], args[split + 1:]
      processes = LAUNCH_PROCESSES
      for a in own:
        if a.startswith("--num_processes="):
          processes = int(a.split("=", 1)[1])
      args += [f"--num_processes={processes}", "--process_id=0",
               "--coordinator_address=127.0.0.1:1"]
    commands.append(args)
  return commands


def documented_commands() -> List[Tuple[str, List[str]]]:
  """(where: `file: the line`, flags) of every launcher command in the docs' code blocks."""
  out = []
  for path in doc_files():
    with open(path) as f:
      text = f.read()
    for line in fenced_lines(text):
      where = f"{os.path.relpath(path, ROOT)}: {' '.join(line.split())}"
      try:
        commands = train_commands(line)
      except ValueError as e:  # shlex: an unbalanced quote
        raise AssertionError(f"{where}: {e}") from None
      out.extend((where, args) for args in commands)
  return out


def check_train_commands(commands: Sequence[Tuple[str, List[str]]]) -> Tuple[Dict[str, str],
                                                                             List[str]]:
  """Builds a launcher config from each command's flags, in one subprocess. Returns the failures
  ({where: error}) and the names of the launcher's flags."""
  proc = subprocess.run([sys.executable, "-c", _CHECK], cwd=ROOT, capture_output=True, text=True,
                        input=json.dumps([args for _, args in commands]), timeout=300)
  assert proc.returncode == 0, proc.stderr[-3000:]
  result = json.loads(proc.stdout.strip().splitlines()[-1])
  failures = {where: error for (where, _), error in zip(commands, result["errors"]) if error}
  return failures, result["flags"]


@pytest.fixture(scope="module")
def checked():
  commands = documented_commands()
  failures, flag_names = check_train_commands(commands + [BAD])
  return commands, failures, flag_names


def test_every_documented_train_command_builds_a_launcher_config(checked):
  commands, failures, _ = checked
  assert len(commands) >= 30, [where for where, _ in commands]
  failures = {k: v for k, v in failures.items() if k != BAD[0]}
  assert failures == {}, "\n".join(f"{where}\n  -> {error}" for where, error in failures.items())


def test_the_check_rejects_a_bad_command(checked):
  _, failures, _ = checked
  assert "must be divisible by num_executors" in failures.get(BAD[0], ""), failures


def test_command_parsing():
  line = ("for s in 0 1; do .venv/bin/python -m experiments.train --seed=1 "
          "--env_kwargs='{\"a\": 1}'; done  # a comment --seed=9")
  assert train_commands(line) == [["--seed=1", '--env_kwargs={"a": 1}']]
  assert train_commands("xvfb-run -a hts-train --env=vstep > out.txt") == [["--env=vstep"]]
  assert train_commands("hts-launch --num_processes=3 -- --num_envs=6") == [
      ["--num_envs=6", "--num_processes=3", "--process_id=0", "--coordinator_address=127.0.0.1:1"]]
  assert fenced_lines("x\n```\na \\\n  b\n```\nc\n") == ["a    b"]


def test_every_launcher_flag_is_documented(checked):
  _, _, flag_names = checked
  assert {"env", "lr", "preset", "resume", "lr_decay"} <= set(flag_names)
  text = "".join(open(p).read() for p in glob.glob(os.path.join(DOCS, "*.md")))
  missing = [n for n in flag_names if not re.search(rf"--(no)?{n}\b", text)]
  assert missing == [], f"document these flags in docs/training.md: {missing}"


def _nav_pages(nav) -> List[str]:
  if isinstance(nav, str):
    return [nav]
  if isinstance(nav, dict):
    return [p for v in nav.values() for p in _nav_pages(v)]
  return [p for item in nav for p in _nav_pages(item)]


def test_the_nav_lists_every_page_and_only_pages_that_exist():
  with open(os.path.join(ROOT, "mkdocs.yml")) as f:
    config = yaml.safe_load(f)
  pages = _nav_pages(config["nav"])
  assert len(pages) == len(set(pages)), pages
  on_disk = sorted(os.path.relpath(p, DOCS) for p in glob.glob(os.path.join(DOCS, "**", "*.md"),
                                                               recursive=True))
  assert sorted(pages) == on_disk


def test_readme_keeps_the_ci_command_and_links_to_pages_that_exist():
  with open(os.path.join(ROOT, "README.md")) as f:
    text = f.read()
  assert any(line.split("#")[0].split() == ["make", "test"] for line in fenced_lines(text))
  links = re.findall(r"\]\((docs/[^)#]+)", text)
  assert links, "README links into docs/"
  assert [l for l in links if not os.path.exists(os.path.join(ROOT, l))] == []


def test_the_site_builds_with_strict(tmp_path):
  env = dict(os.environ, NO_MKDOCS_2_WARNING="1")  # mkdocs-material's banner about its successor
  proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
                         os.path.join(ROOT, "mkdocs.yml"), "-d", str(tmp_path / "site")],
                        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  for page in ("index", "training", "library"):
    path = tmp_path / "site" / ("index.html" if page == "index" else f"{page}/index.html")
    assert path.exists(), path


def _sentences(text: str) -> List[str]:
  """README's prose sentences: fenced code, tables, headings and markers left out; a list item
  or a paragraph is split at '. ' before a capital, a backtick, a '*', '(' or '['."""
  units, cur = [], []
  for line in re.sub(r"```.*?```", "", text, flags=re.S).splitlines():
    if not line.strip() or line.startswith(("|", "<!--", "#", "- ", "![")):
      units += [" ".join(cur)] if cur else []
      cur = [line[2:]] if line.startswith("- ") else []
    else:
      cur.append(line.strip())
  units += [" ".join(cur)] if cur else []
  return [s for u in units for s in re.split(r"(?<=[.!?])\s+(?=[A-Z*(\[`])", u)]


def test_readme_stays_a_front_page():
  """README gives the plain headline and sends
  the statistics and every table to docs/results.md and the benchmarks to docs/benchmarks.md: at
  most 120 lines, no sentence over 300 characters, and at most two numbers in a table cell (its
  first column, the row's label, aside)."""
  with open(os.path.join(ROOT, "README.md")) as f:
    text = f.read()
  assert len(text.splitlines()) <= 120
  assert [s[:80] for s in _sentences(text) if len(s) > 300] == []
  crowded = [cell for line in text.splitlines()
             if line.startswith("|") and not set(line) <= set("|-: ")
             for cell in [c.strip() for c in line.strip().strip("|").split("|")][1:]
             if len(re.findall(r"(?<![A-Za-z])\d[\d,.]*", cell)) > 2]
  assert crowded == []
  assert text.index("<!-- headline:begin") < text.index("## How it compares")
  assert "](docs/results.md#the-headline)" in text and "](docs/benchmarks.md" in text


# The statistics' words and marks, which belong to docs/results.md, not to README's first screen.
JARGON = ("paired block", "n=", "geometric mean", "≤", "≥", "calibrated", "protocol",
          "pre-registered", "censored")


def _method_keys() -> List[str]:
  """The method keys of every grid (`hts_ppo_none`, `sync_ppo`, ...): a reader meets them in
  docs/results.md's tables, never on README's first screen. Those that are plain words (`none`,
  `behaviour`) count only in backticks."""
  from hts_jax.results import spec  # pylint: disable=import-outside-toplevel
  return sorted({m.name for name in spec.names() for m in spec.load(name).methods})


def test_readmes_first_screen_is_plain_words():
  """What a reader meets before README's first table (what hts_jax is, the commands and
  what HTS buys) has no statistics jargon and no method key; the one preset it names is the one
  `make train` runs."""
  from hts_jax.presets import PRESETS  # pylint: disable=import-outside-toplevel
  with open(os.path.join(ROOT, "README.md")) as f:
    lines = f.read().splitlines()
  first = next((i for i, line in enumerate(lines) if line.startswith("|")), len(lines))
  screen = "\n".join(lines[:first])
  assert "What HTS buys" in screen and "make train" in screen and "pip install" in screen
  assert [w for w in JARGON if w.lower() in screen.lower()] == []
  keys = _method_keys()
  assert {"hts_ppo_none", "sync_ppo", "hts_a2c", "hts_lstm_none"} <= set(keys)
  found = [k for k in keys if re.search(rf"`{re.escape(k)}`", screen) or (
      re.search(r"[_\d]", k) and re.search(rf"(?<![\w-]){re.escape(k)}(?![\w-])", screen))]
  assert found == []
  assert [p for p in PRESETS if p in screen] == ["cartpole_ppo"]


def test_the_shared_rule_in_docs_states_the_code_s_threshold():
  """docs/results.md writes the statistics rules' shared-machine threshold out once (every table's
  source line points there); it must say the factor that `stats.CALIBRATION_SHARED` holds."""
  from hts_jax.analysis import stats
  with open(os.path.join(DOCS, "results.md")) as f:
    section = f.read().split("## Runs flagged shared", 1)[1].split("\n## ", 1)[0]
  factors = re.findall(r"(\d+(?:\.\d+)?)x", section)
  assert factors and set(factors) == {f"{stats.CALIBRATION_SHARED:g}"}, factors


def test_the_preset_table_says_what_each_preset_runs():
  """docs/training.md's preset table: a row per preset, whose mode, correction and policy lag are
  what the launcher builds from `--preset=<name>` (the table had drifted: it said `behaviour`
  where presets.py set `none`)."""
  from hts_jax.presets import PRESETS  # pylint: disable=import-outside-toplevel
  from tests.support.cli import launcher_configs  # pylint: disable=import-outside-toplevel
  with open(os.path.join(DOCS, "training.md")) as f:
    text = f.read()
  table = text[text.index("| preset | mode | correction | policy lag |"):].split("\n\n")[0]
  rows = {}
  for line in table.splitlines()[2:]:
    name, mode, correction, lag = [c.strip() for c in line.strip("|").split("|")][:4]
    rows[name.strip("`")] = (mode, correction, lag)
  assert sorted(rows) == sorted(PRESETS)
  names = sorted(PRESETS)
  for name, cfg in zip(names, launcher_configs([{"preset": n} for n in names])):
    hts = cfg["mode"] == "hts"
    want = (cfg["mode"], cfg["learner"]["correction"] if hts else "-",
            str(cfg["policy_lag"]) if hts else "-")
    assert rows[name] == want, (name, rows[name], want)
