"""`.ci/slim_wheel.py` (the repacking `.ci/gpu_wheels.sh` uses to carry envpool's Atari part to an
offline GPU machine): on a tiny wheel built here, without network."""

import base64
import csv
import hashlib
import importlib.util
import io
import os
import subprocess
import sys
import zipfile

import pytest

from tests.support import ROOT

_spec = importlib.util.spec_from_file_location("slim_wheel",
                                               os.path.join(ROOT, ".ci", "slim_wheel.py"))
slim = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(slim)

NAME = "demo_pool-1.0-py3-none-any.whl"
DIST = "demo_pool-1.0.dist-info/"
METADATA = """Metadata-Version: 2.1
Name: demo-pool
Version: 1.0
Requires-Dist: numpy >=1.19
Requires-Dist: Demo_Pool.Assets <0.4,>=0.3
Requires-Dist: demo-pool-assets-large >=0.3
Requires-Dist: demo-pool-assets-humanoid ; extra == "mujoco"
Requires-Dist: packaging

Requires-Dist: this line is the description, not a header
"""
FILES = {
    "demo_pool/__init__.py": b"from demo_pool import entry\n",
    "demo_pool/entry.py": b"import demo_pool.atari\nimport demo_pool.box2d\n",
    "demo_pool/python/api.py": b"X = 1\n",
    "demo_pool/python/sub/deep.py": b"Y = 2\n",
    "demo_pool/atari/__init__.py": b"",
    "demo_pool/atari/atari_pool.so": bytes(range(256)) * 40,
    "demo_pool/box2d/__init__.py": b"",
    "demo_pool/box2d/box2d_pool.so": b"\x7fELF" * 1000,
    "demo_pool/vizdoom/bin/vizdoom": b"\x7fELF" * 2000,
    "demo_pool.libs/libEGL.so": b"\x7fELF" * 10,
    DIST + "METADATA": METADATA.encode(),
    DIST + "WHEEL": (b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                     b"Tag: py3-none-any\n"),
    DIST + "top_level.txt": b"demo_pool\n",
    DIST + "RECORD.jws": b"{}",
}
KEEP = ["demo_pool/*", "demo_pool/python/**", "demo_pool/atari/**"]
NEW_ENTRY = b"import demo_pool.atari\n"


def record_hash(data):
  return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")


def make_wheel(directory):
  path = directory / NAME
  with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
    rows = []
    for name, data in FILES.items():
      info = zipfile.ZipInfo(name, date_time=(2026, 5, 20, 19, 52, 36))
      info.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
      z.writestr(info, data)
      rows.append(f"{name},{record_hash(data)},{len(data)}")
    z.writestr(DIST + "RECORD", "\n".join(rows + [DIST + "RECORD,,"]) + "\n")
  return path


@pytest.fixture
def slimmed(tmp_path):
  (tmp_path / "src").mkdir()
  src = make_wheel(tmp_path / "src")
  out = slim.slim_wheel(src, tmp_path / "out", KEEP,
                        drop_requires_names=["demo-pool-assets-large", "Demo.Pool_Assets-Humanoid"],
                        replace={"demo_pool/entry.py": NEW_ENTRY})
  return src, out


def test_keeps_what_the_globs_match_and_the_dist_info(slimmed):
  src, out = slimmed
  assert out.name == src.name and out.parent.name == "out"
  with zipfile.ZipFile(out) as z:
    names = set(z.namelist())
    assert names == {
        "demo_pool/__init__.py", "demo_pool/entry.py", "demo_pool/python/api.py",
        "demo_pool/python/sub/deep.py", "demo_pool/atari/__init__.py",
        "demo_pool/atari/atari_pool.so",
        DIST + "METADATA", DIST + "WHEEL", DIST + "top_level.txt", DIST + "RECORD"}
    assert z.read("demo_pool/atari/atari_pool.so") == FILES["demo_pool/atari/atari_pool.so"]
    assert z.read("demo_pool/entry.py") == NEW_ENTRY
    # Timestamps and permissions kept (the output is the same bytes for the same input).
    info = z.getinfo("demo_pool/atari/atari_pool.so")
    assert info.date_time == (2026, 5, 20, 19, 52, 36) and info.external_attr >> 16 == 0o755


def test_record_lists_every_file_with_its_hash_and_size(slimmed):
  _, out = slimmed
  with zipfile.ZipFile(out) as z:
    rows = list(csv.reader(io.StringIO(z.read(DIST + "RECORD").decode())))
    assert sorted(r[0] for r in rows) == sorted(z.namelist())
    for name, digest, size in rows:
      if name == DIST + "RECORD":
        assert (digest, size) == ("", "")
        continue
      data = z.read(name)
      assert digest == record_hash(data) and "=" not in digest[len("sha256="):]
      assert int(size) == len(data)


def test_requires_dist_drops_only_the_named_distributions(slimmed):
  _, out = slimmed
  with zipfile.ZipFile(out) as z:
    metadata = z.read(DIST + "METADATA").decode()
  assert metadata == METADATA.replace(
      "Requires-Dist: demo-pool-assets-large >=0.3\n", "").replace(
      'Requires-Dist: demo-pool-assets-humanoid ; extra == "mujoco"\n', "")
  assert "Requires-Dist: Demo_Pool.Assets <0.4,>=0.3" in metadata  # a prefix is another name


def test_same_input_gives_the_same_bytes(slimmed, tmp_path):
  src, out = slimmed
  again = slim.slim_wheel(src, tmp_path / "again", KEEP,
                          drop_requires_names=["demo-pool-assets-large",
                                               "demo-pool-assets-humanoid"],
                          replace={"demo_pool/entry.py": NEW_ENTRY})
  assert again.read_bytes() == out.read_bytes()


def test_pip_installs_the_result_offline(slimmed, tmp_path):
  _, out = slimmed
  target = tmp_path / "site"
  env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
  env["PIP_CONFIG_FILE"] = os.devnull
  r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--no-deps",
                      "--disable-pip-version-check", "--target", str(target), str(out)],
                     capture_output=True, text=True, env=env, timeout=120)
  assert r.returncode == 0, r.stdout + r.stderr
  assert (target / "demo_pool" / "atari" / "atari_pool.so").is_file()
  assert (target / "demo_pool" / "entry.py").read_bytes() == NEW_ENTRY
  assert not (target / "demo_pool" / "box2d").exists()
  assert not (target / "demo_pool.libs").exists()
  assert (target / "demo_pool-1.0.dist-info" / "METADATA").is_file()


@pytest.mark.parametrize("kwargs, message", [
    (dict(keep=KEEP + ["demo_pool/mujoco/**"]), "matches no file"),
    (dict(keep=KEEP, drop_requires_names=["not-there"]), "no Requires-Dist line for not-there"),
    (dict(keep=KEEP, replace={"demo_pool/box2d/__init__.py": b""}), "no such kept file"),
    (dict(keep=[]), "no --keep glob"),
])
def test_a_filter_that_does_not_fit_the_wheel_fails(tmp_path, kwargs, message):
  src = make_wheel(tmp_path)
  with pytest.raises(slim.SlimError, match=message):
    slim.slim_wheel(src, tmp_path / "out", **kwargs)
  assert not (tmp_path / "out" / NAME).exists()


def test_globs():
  rx = slim.glob_regex
  assert rx("pkg/*").match("pkg/a.py") and not rx("pkg/*").match("pkg/sub/a.py")
  assert rx("pkg/**").match("pkg/sub/a.py") and rx("pkg/*.so").match("pkg/x.so")
  assert not rx("pkg/?.py").match("pkg/ab.py") and not rx("pkg/a.py").match("pkg/a_py")


def test_command_line(tmp_path, capsys):
  src = make_wheel(tmp_path)
  entry = tmp_path / "entry.py"
  entry.write_bytes(NEW_ENTRY)
  args = [str(src), str(tmp_path / "out"), "--drop-requires", "demo-pool-assets-large",
          "--replace", f"demo_pool/entry.py={entry}"] + [f"--keep={g}" for g in KEEP]
  assert slim.main(args) == 0
  assert "10 of 15 files" in capsys.readouterr().out
  with zipfile.ZipFile(tmp_path / "out" / NAME) as z:
    assert z.read("demo_pool/entry.py") == NEW_ENTRY
  assert slim.main([str(src), str(tmp_path / "out2"), "--keep", "nothing/**"]) == 1
  assert "matches no file" in capsys.readouterr().err
