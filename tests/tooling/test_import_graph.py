"""The package's import graph, read from the source (imports at any depth, but those under `if
TYPE_CHECKING:`, which only annotate): no import cycle inside hts_jax, the runtime and the pure core
never reach the experiments library (what starts runs, what reports them) or the command-line
programs, the reports never reach what starts runs, and the registries and config modules stay
JAX-free. Modules split where the design has a seam, not at a line count."""

import ast
import os

from tests.support import ROOT


def _modules():
  out = {}
  for folder, _, files in os.walk(os.path.join(ROOT, "hts_jax")):
    for name in files:
      if name.endswith(".py"):
        path = os.path.join(folder, name)
        module = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
        out[module[:-len(".__init__")] if module.endswith(".__init__") else module] = path
  return out


def _type_checking(node) -> bool:
  test = getattr(node, "test", None)
  return isinstance(node, ast.If) and (
      (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or
      (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _imports(path, module, known):
  """The hts_jax modules `module` imports (a `from package import name` counts the submodule)."""
  out = set()

  def visit(node):
    if _type_checking(node):
      return
    if isinstance(node, ast.Import):
      out.update(a.name for a in node.names)
    elif isinstance(node, ast.ImportFrom):
      base = node.module or ""
      if node.level:
        parts = module.split(".")
        package = parts if path.endswith("__init__.py") else parts[:-1]
        base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
      out.add(base)
      out.update(f"{base}.{a.name}" for a in node.names)
    for child in ast.iter_child_nodes(node):
      visit(child)

  with open(path) as f:
    visit(ast.parse(f.read()))
  return {m for m in out if m in known and m != module}


def _graph():
  known = _modules()
  return {m: _imports(p, m, known) for m, p in known.items()}


def _cycles(graph):
  """Strongly connected components of more than one module (Tarjan)."""
  index, low, stack, on, found = {}, {}, [], set(), []

  def connect(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on.add(v)
    for w in graph[v]:
      if w not in index:
        connect(w)
        low[v] = min(low[v], low[w])
      elif w in on:
        low[v] = min(low[v], index[w])
    if low[v] == index[v]:
      component = []
      while True:
        w = stack.pop()
        on.discard(w)
        component.append(w)
        if w == v:
          break
      if len(component) > 1:
        found.append(sorted(component))

  for v in graph:
    if v not in index:
      connect(v)
  return found


def _reach(graph, start):
  seen, todo = set(), [start]
  while todo:
    for w in graph[todo.pop()] - seen:
      seen.add(w)
      todo.append(w)
  return seen


def test_no_import_cycle_inside_the_package():
  assert _cycles(_graph()) == []


def test_the_runtime_and_the_core_never_import_the_library_or_the_programs():
  graph = _graph()
  outer = ("hts_jax.results", "hts_jax.runs", "hts_jax.cli")
  for module in graph:
    if module.startswith(outer) or module == "hts_jax.__main__":
      continue
    assert not {m for m in graph[module] if m.startswith(outer)}, module


def test_the_reports_never_import_what_starts_runs():
  """hts_jax.runs starts runs and reads them through hts_jax.results; the report never reaches
  back into the runner."""
  graph = _graph()
  for module in graph:
    if module.startswith("hts_jax.results"):
      assert not {m for m in graph[module] if m.startswith("hts_jax.runs")}, module


def test_the_config_and_the_registries_import_no_jax():
  graph = _graph()
  light = ("hts_jax.config", "hts_jax.choices", "hts_jax.presets")
  for module in light:
    for m in {module} | _reach(graph, module):
      with open(_modules()[m]) as f:
        tree = ast.parse(f.read())
      names = {a.name.split(".")[0] for n in tree.body if isinstance(n, ast.Import)
               for a in n.names}
      names |= {(n.module or "").split(".")[0] for n in tree.body
                if isinstance(n, ast.ImportFrom)}
      assert not names & {"jax", "flax", "optax", "numpy"} or m == "hts_jax.presets", (module, m)


def test_the_cycle_check_finds_a_cycle():
  assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]


def test_the_runtime_wings_depend_one_way():
  """runtime/loops (the modes) compose the core's parts; the core (but `modes`, the registry and
  entry point) never imports a loop, and runtime/outputs (what a run writes) never imports one."""
  graph = _graph()
  loops = "hts_jax.runtime.loops"
  for module in graph:
    if module.startswith(loops) or module == "hts_jax.runtime.modes":
      continue
    assert not {m for m in graph[module] if m.startswith(loops)}, module


def test_the_programs_tests_import_in_one_process_define_each_flag_once():
  """absl flags are process-global: two experiments modules defining one flag name cannot both be
  imported by one xdist worker (CI failed so when bench_cleanrl and bench_gpu met there)."""
  import re  # pylint: disable=import-outside-toplevel
  import subprocess  # pylint: disable=import-outside-toplevel
  import sys  # pylint: disable=import-outside-toplevel
  found = set()
  for folder, _, files in os.walk(os.path.join(ROOT, "tests")):
    for name in files:
      if name.endswith(".py"):
        with open(os.path.join(folder, name), encoding="utf-8") as f:
          text = f.read()
        found.update(re.findall(r"^\s*from experiments import (\w+)", text, re.M))
        found.update(re.findall(r"^\s*import experiments\.(\w+)", text, re.M))
  assert {"bench_cleanrl", "bench_gpu"} <= found, found
  code = "".join(f"import experiments.{m}\n" for m in sorted(found))
  proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                        timeout=300)
  assert proc.returncode == 0, proc.stderr[-1500:]
