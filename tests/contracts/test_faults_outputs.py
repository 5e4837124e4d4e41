"""Fault injection against what a run writes and reads in its logdir: links and FIFOs planted by
whoever may write in a shared logdir, the checkpoint key's place, a metrics history that survives
a kill during --resume, a malformed metrics.csv, a crafted checkpoint segment. Real runs, real
files; each refusal is one `error:` line with rc 2, and nothing outside the logdir changes."""

import csv
import os
import shutil
import stat
import subprocess
import time

import numpy as np
import pytest

from hts_jax.config import LearnerConfig, RunConfig
from hts_jax.runtime import modes
from hts_jax.runtime.outputs import checkpoint, reporting, video
from tests.support import ROOT
from tests.support.cli import cmd, error_lines, run_cli, summary

# Segments of 32 steps per env: CartPole episodes end inside the first one.
RUN = dict(env="CartPole-v1", alpha=32, num_envs=4, num_executors=2, seed=3, log_every_s=1e9,
           eval_episodes=1, tensorboard=False, learner=LearnerConfig(algo="a2c",
                                                                     unroll_length=32))
STEPS = 4 * 32 * 4
# The same run as flags (a resumed run's config must match the checkpoint's).
FLAGS = ["--env=CartPole-v1", "--alpha=32", "--num_envs=4", "--num_executors=2", "--seed=3",
         "--log_every_s=1000", "--eval_episodes=1", "--notensorboard", "--algo=a2c",
         "--unroll_length=32", f"--total_steps={STEPS}"]


def _run(logdir, **kw):
  return modes.run(RunConfig.make(total_steps=STEPS, logdir=str(logdir), **dict(RUN, **kw)))


@pytest.fixture(scope="module")
def template(tmp_path_factory):
  """A 4-segment run checkpointed at every update (two kept: 2 and 1, or 0 when the writer
  skipped 1), done in one go."""
  logdir = tmp_path_factory.mktemp("template") / "run"
  s = _run(logdir, checkpoint_every=1)
  # Its last checkpoint (kept beside the two before it) set aside: a run stopped there.
  shutil.rmtree(os.path.join(checkpoint.directory(str(logdir)), str(s["updates"])))
  return logdir


def _copy(template, tmp_path):
  logdir = tmp_path / "run"
  shutil.copytree(template, logdir, symlinks=True)
  return logdir


def _rows(logdir):
  with open(os.path.join(logdir, "metrics.csv"), newline="") as f:
    return list(csv.DictReader(f))


def _warnings(stderr):
  return [l for l in stderr.splitlines() if l.startswith("warning:")]


# ------------------------------------------------------------ planted links
@pytest.mark.parametrize("name", [".lock", "metrics.csv"])
def test_a_planted_link_is_refused_and_its_target_kept(tmp_path, name):
  """A `.lock` symlink was opened (following it) and truncated: its target got the run's pid; a
  `metrics.csv` symlink to an outside file was filled with the run's rows."""
  logdir, victim = tmp_path / "run", tmp_path / "precious"
  logdir.mkdir()
  victim.write_text("precious\n")
  os.symlink(victim, logdir / name)
  proc = run_cli(str(logdir), *FLAGS)
  assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
  assert error_lines(proc.stderr) == [
      f"error: {logdir}/{name} is a symlink, not a regular file: a run never makes one and "
      "neither writes nor reads through it (remove it); nothing was written"]
  assert victim.read_text() == "precious\n"
  assert sorted(os.listdir(logdir)) == [name]  # the refused run took and removed its lock


def test_links_planted_after_the_check_are_replaced_never_written_through(tmp_path):
  """A link planted where the writers open (metrics.csv, summary.json's temporary file) once the
  logdir was checked: each is replaced by the run's own file; the targets stay as they were."""
  victim = tmp_path / "victim"
  victim.write_text("precious\n")
  logdir = tmp_path / "run"
  logdir.mkdir()
  for name in ("metrics.csv", "metrics.csv.tmp", "summary.json.tmp"):
    os.symlink(victim, logdir / name)
  writer = reporting.MetricsWriter(str(logdir))
  writer.write({"env_steps": 1, "updates": 1})
  writer.close()
  reporting.write_json_atomic(str(logdir / "summary.json"), {"a": 1})
  assert victim.read_text() == "precious\n"
  for name in ("metrics.csv", "summary.json"):
    assert stat.S_ISREG(os.lstat(logdir / name).st_mode)
  assert _rows(logdir) == [{"env_steps": "1", "updates": "1"}]


def test_a_write_that_fails_leaves_neither_a_partial_file_nor_its_temporary(tmp_path,
                                                                             monkeypatch):
  """A full disk at summary.json's write (ENOSPC mid-write): no summary.json, no .tmp left (the
  launcher's test of it wrote through a planted link to /dev/full, which is now replaced)."""
  def full(obj, f, **kw):
    f.write('{"a": ')
    raise OSError(28, "No space left on device")

  monkeypatch.setattr(reporting.json, "dump", full)
  with pytest.raises(OSError, match="No space left"):
    reporting.write_json_atomic(str(tmp_path / "summary.json"), {"a": 1})
  assert os.listdir(tmp_path) == []


# ------------------------------------------------------------ the key file
def test_a_key_file_inside_the_logdir_or_readable_by_others_is_refused(tmp_path):
  """HTS_JAX_KEY_FILE=<logdir>/checkpoint.key was made there (and survived --overwrite), and a key
  others may read was used: whoever has either can sign checkpoints a resume unpickles."""
  logdir = tmp_path / "run"
  inside = logdir / "checkpoint.key"
  proc = run_cli(str(logdir), *FLAGS, env=dict(os.environ, HTS_JAX_KEY_FILE=str(inside)))
  assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
  assert error_lines(proc.stderr) == [
      f"error: the checkpoint key {inside} is inside --logdir={logdir}: whoever is given the "
      "folder could sign checkpoints with it; keep it outside every logdir (HTS_JAX_KEY_FILE, "
      "default ~/.config/hts_jax/checkpoint.key)"]
  assert not inside.exists()
  shared = tmp_path / "shared.key"
  shared.write_bytes(os.urandom(32))
  shared.chmod(0o644)
  proc = run_cli(str(logdir), *FLAGS, env=dict(os.environ, HTS_JAX_KEY_FILE=str(shared)))
  assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
  assert error_lines(proc.stderr) == [
      f"error: the checkpoint key {shared} may be read or changed by others (mode 0644): they "
      f"could sign checkpoints that a resume unpickles; chmod 600 {shared}"]
  assert not (logdir / "metrics.csv").exists()


# ------------------------------------------------------------ FIFOs and links in checkpoints
def test_a_fifo_or_a_dev_zero_link_in_a_checkpoint_is_refused_not_read(template, tmp_path):
  """`mkfifo <logdir>/checkpoints/N/state/x` made --resume hang until killed (the hashing of the
  checkpoint's files read it); a link to /dev/zero would read forever."""
  logdir = _copy(template, tmp_path)
  newest, older = checkpoint.steps(str(logdir))[:2]
  root = checkpoint.directory(str(logdir))
  os.mkfifo(os.path.join(root, str(newest), "state", "x"))
  os.remove(os.path.join(root, str(older), "state", "_METADATA"))
  os.symlink("/dev/zero", os.path.join(root, str(older), "state", "_METADATA"))
  proc = run_cli(str(logdir), *FLAGS, "--resume", timeout=120)
  assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
  (line,) = error_lines(proc.stderr)
  assert line.startswith(f"error: --resume: no checkpoint in {root} can be restored: "), line
  assert (f"checkpoint {root}/{newest}: its file state/x is a FIFO, not a regular file or folder"
          in line), line
  assert (f"checkpoint {root}/{older}: its file state/_METADATA is a symlink, not a regular file "
          "or folder" in line), line


def test_a_fifo_in_another_checkpoints_metadata_is_named_in_one_line(template, tmp_path):
  """Orbax reads every checkpoint's metadata when it lists them: a FIFO in the older one's hung
  the restore of the newer one."""
  logdir = _copy(template, tmp_path)
  newest, older = checkpoint.steps(str(logdir))[:2]
  root = checkpoint.directory(str(logdir))
  os.remove(os.path.join(root, str(older), "_CHECKPOINT_METADATA"))
  os.mkfifo(os.path.join(root, str(older), "_CHECKPOINT_METADATA"))
  proc = run_cli(str(logdir), *FLAGS, "--resume", timeout=120)
  assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
  assert error_lines(proc.stderr) == [
      f"error: checkpoint {root}/{older}: its file _CHECKPOINT_METADATA is a FIFO, not a regular "
      "file or folder (a checkpoint holds nothing else, and links, FIFOs and devices are not "
      f"read): remove it, or move it out of {root}"]
  assert checkpoint.steps(str(logdir))[:2] == [newest, older]  # nothing set aside


def test_a_crafted_negative_segment_is_refused_on_restore(tmp_path, monkeypatch):
  """A checkpoint whose host record says segment -3, its digest rebuilt to match, failed later
  with an OverflowError in an actor."""
  real = checkpoint.save
  monkeypatch.setattr(checkpoint, "save", lambda logdir, step, state, storage, envs, host, **k:
                      real(logdir, step, state, storage, envs, dict(host, segment=-3), **k))
  logdir = tmp_path / "run"
  _run(logdir, checkpoint_every=1)
  monkeypatch.undo()
  proc = run_cli(str(logdir), *FLAGS, "--resume")
  assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
  (line,) = error_lines(proc.stderr)
  assert line.startswith("error: --resume: no checkpoint in"), line
  assert "its host record's segment is -3, not a segment index (an integer >= 0)" in line, line


# ------------------------------------------------------------ metrics.csv on --resume
def test_a_resumed_metrics_csv_is_replaced_never_truncated_in_place(tmp_path):
  """On --resume metrics.csv was truncated and its rows kept in memory until the first new row:
  a kill in that window left it empty, and the next --resume lost the rows silently. Now the
  kept rows go to a new file renamed onto it: the old file is whole until the rename."""
  path = tmp_path / "metrics.csv"
  text = "env_steps,updates\n" + "".join(f"{40 * u},{u}\n" for u in range(1, 11))
  path.write_text(text)
  with open(path) as old:  # the file as a process killed before the rename would leave it
    inode = os.fstat(old.fileno()).st_ino
    writer = reporting.MetricsWriter(str(tmp_path), keep_updates=6)
    assert old.read() == text
  assert os.stat(path).st_ino != inode
  assert [r["updates"] for r in _rows(tmp_path)] == [str(u) for u in range(1, 7)]
  writer.write({"env_steps": 280, "updates": 7})
  writer.close()
  assert [r["updates"] for r in _rows(tmp_path)] == [str(u) for u in range(1, 8)]


def test_a_kill_while_resume_rewrites_metrics_csv_loses_no_row(template, tmp_path):
  """The reported attack: SIGKILL --resume just after it replaced metrics.csv (old code: just
  after it truncated it, which left 0 bytes); the next --resume has every row, 1 to the end."""
  logdir = _copy(template, tmp_path)
  path, newest = logdir / "metrics.csv", checkpoint.steps(str(logdir))[0]
  inode = os.stat(path).st_ino
  proc = subprocess.Popen(cmd(str(logdir), *FLAGS, "--resume"), cwd=ROOT,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  deadline = time.monotonic() + 120
  while os.stat(path).st_ino == inode and os.path.getsize(path) > 0:
    assert proc.poll() is None and time.monotonic() < deadline
    time.sleep(0.001)
  proc.kill()
  proc.wait()
  assert [int(r["updates"]) for r in _rows(logdir)][:newest] == list(range(1, newest + 1))
  proc = run_cli(str(logdir), *FLAGS, "--resume")
  assert proc.returncode == 0 and not _warnings(proc.stderr), proc.stderr
  updates = [int(r["updates"]) for r in _rows(logdir)]
  assert updates == list(range(1, summary(str(logdir))["updates"] + 1))


@pytest.mark.parametrize("damage", ["cut_short", "no_updates_column"])
def test_a_malformed_metrics_tail_is_dropped_with_one_warning(template, tmp_path, damage):
  """A last row cut short (a kill mid-write), or a file without the `updates` column, made
  --resume crash with a TypeError / KeyError traceback."""
  logdir = _copy(template, tmp_path)
  newest = checkpoint.steps(str(logdir))[0]
  path = logdir / "metrics.csv"
  lines = path.read_text().splitlines(keepends=True)
  if damage == "cut_short":
    lines = lines[:newest + 1] + [lines[newest + 1][:12]]
    expected = (f"warning: {path} ends in 1 malformed row(s) (cut short, or without the updates "
                f"column): dropped; {newest} rows kept")
  else:
    lines = [l.replace(",updates,", ",update,", 1) for l in lines]
    expected = (f"warning: {path} ends in {len(lines) - 1} malformed row(s) (cut short, or "
                "without the updates column): dropped; 0 rows kept")
  path.write_text("".join(lines))
  proc = run_cli(str(logdir), *FLAGS, "--resume")
  assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
  assert _warnings(proc.stderr) == [expected]
  updates = [int(r["updates"]) for r in _rows(logdir)]
  first = 1 if damage == "cut_short" else newest + 1
  assert updates == list(range(first, summary(str(logdir))["updates"] + 1))


def test_a_run_resumed_from_checkpoint_0_writes_the_same_first_row(tmp_path):
  """Resuming from checkpoint 0 rewrote row 1's train_return (23.9048 against 22.0488
  uninterrupted), param_sha256 unchanged: the row of update 1 is booked at the boundary after
  segment 1 with the returns of segments 0 and 1, and a resumed run starts it empty."""
  logdir = tmp_path / "run"
  straight = _run(logdir, checkpoint_every=100)  # one checkpoint: at update 0
  first_row = _rows(logdir)[0]
  assert checkpoint.steps(str(logdir))[-1] == 0 and first_row["train_return"]
  # The finished run's last checkpoint set aside: this resumes from checkpoint 0.
  shutil.rmtree(os.path.join(checkpoint.directory(str(logdir)), str(straight["updates"])))
  proc = run_cli(str(logdir), *FLAGS, "--resume")
  assert proc.returncode == 0, proc.stderr
  assert summary(str(logdir))["param_sha256"] == straight["param_sha256"]
  assert _rows(logdir)[0]["train_return"] == first_row["train_return"]


@pytest.mark.parametrize("gif", [False, True], ids=["mp4", "gif"])
def test_a_video_is_never_written_through_a_planted_link(tmp_path, monkeypatch, gif):
  """A link planted at `videos/eval-<N>.mp4` (or `.gif`) was written through by the encoder."""
  if gif:
    monkeypatch.setattr(video, "ffmpeg_exe", lambda: None)
  elif video.ffmpeg_exe() is None:
    pytest.skip("no ffmpeg here")
  victim = tmp_path / "victim"
  victim.write_text("precious\n")
  stem = tmp_path / "videos" / "eval-40"
  stem.parent.mkdir()
  path = f"{stem}.{'gif' if gif else 'mp4'}"
  os.symlink(victim, path)
  out = video.VideoFile(str(stem), 10)
  for i in range(4):
    out.add(np.full((16, 16, 3), 40 * i, np.uint8))
  assert out.close().path == path
  assert victim.read_text() == "precious\n"
  assert stat.S_ISREG(os.lstat(path).st_mode) and os.path.getsize(path) > 0
