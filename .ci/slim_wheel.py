#!/usr/bin/env python3
"""Repacks a wheel keeping only the files a filter keeps (standard library only).

    python3 .ci/slim_wheel.py WHEEL OUT_DIR --keep GLOB [--keep GLOB ...]
        [--drop-requires NAME ...] [--replace ARCNAME=FILE ...]

Writes OUT_DIR/<the same file name>: a valid wheel with the same name, version and tags that
holds
  - every file of the `<name>-<version>.dist-info/` folder (signatures `RECORD.jws`/`RECORD.p7s`
    left out: they would no longer match),
  - the other files whose path matches a `--keep` glob (`*` and `?` stay inside one path
    component, `**` crosses `/`: `pkg/*` is pkg's top-level files, `pkg/sub/**` all of sub/),
with `--replace ARCNAME=FILE` members' content taken from FILE, METADATA's `Requires-Dist`
lines for the `--drop-requires` distributions removed (names compared normalized, PEP 503), and
a regenerated RECORD (sha256 as urlsafe base64 without padding, and sizes; RECORD's own row
empty), as the wheel spec says. Kept members keep their timestamps and permissions, so the same
input gives the same bytes. Every `--keep` glob must match a file, every `--drop-requires` name a
Requires-Dist line and every `--replace` member a kept file: a changed upstream layout fails
here, not on the machine the wheel is carried to.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import os
import re
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Sequence

SIGNATURES = ("RECORD.jws", "RECORD.p7s")


class SlimError(Exception):
  """A filter that does not fit the wheel (the message says which)."""


def glob_regex(pattern: str) -> "re.Pattern[str]":
  """The regex of a path glob: `**` any characters, `*` any but `/`, `?` one but `/`."""
  out = []
  i = 0
  while i < len(pattern):
    if pattern.startswith("**", i):
      out.append(".*")
      i += 2
    elif pattern[i] == "*":
      out.append("[^/]*")
      i += 1
    elif pattern[i] == "?":
      out.append("[^/]")
      i += 1
    else:
      out.append(re.escape(pattern[i]))
      i += 1
  return re.compile("".join(out) + r"\Z")


def normalize(name: str) -> str:
  """PEP 503's normalized distribution name."""
  return re.sub(r"[-_.]+", "-", name).lower()


def record_hash(data: bytes) -> str:
  digest = hashlib.sha256(data).digest()
  return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def dist_info_dir(names: Iterable[str]) -> str:
  """The wheel's `<name>-<version>.dist-info/` folder (the one at the root holding RECORD)."""
  found = sorted({n.split("/", 1)[0] + "/" for n in names
                  if re.fullmatch(r"[^/]+\.dist-info/RECORD", n)})
  if len(found) != 1:
    raise SlimError(f"expected one *.dist-info/RECORD at the wheel's root, found {found or 'none'}")
  return found[0]


def drop_requires(metadata: bytes, names: Sequence[str]) -> bytes:
  """METADATA without the `Requires-Dist` lines of the distributions `names` (header only)."""
  want = {normalize(n) for n in names}
  seen = set()
  text = metadata.decode("utf-8")
  lines = text.splitlines(keepends=True)
  out: List[str] = []
  in_header = True
  for line in lines:
    if in_header and not line.strip():
      in_header = False
    if in_header and line.lower().startswith("requires-dist:"):
      m = re.match(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)", line.split(":", 1)[1])
      if m and normalize(m.group(1)) in want:
        seen.add(normalize(m.group(1)))
        continue
    out.append(line)
  missing = sorted(want - seen)
  if missing:
    raise SlimError(f"no Requires-Dist line for {', '.join(missing)} in METADATA")
  return "".join(out).encode("utf-8")


def slim_wheel(wheel: os.PathLike, out_dir: os.PathLike, keep: Sequence[str],
               drop_requires_names: Sequence[str] = (),
               replace: Optional[Mapping[str, bytes]] = None) -> Path:
  """Writes the slimmed copy of `wheel` into `out_dir` (same file name); returns its path."""
  wheel = Path(wheel)
  out_dir = Path(out_dir)
  replace = dict(replace or {})
  if not keep:
    raise SlimError("no --keep glob given")
  patterns = [(g, glob_regex(g)) for g in keep]
  with zipfile.ZipFile(wheel) as src:
    infos = [i for i in src.infolist() if not i.filename.endswith("/")]
    dist_info = dist_info_dir(i.filename for i in infos)
    record_name = dist_info + "RECORD"
    matched = {g: 0 for g in keep}
    kept: List[zipfile.ZipInfo] = []
    for info in infos:
      name = info.filename
      if name.startswith(dist_info):
        if name[len(dist_info):] not in SIGNATURES:
          kept.append(info)
        continue
      hits = [g for g, rx in patterns if rx.match(name)]
      for g in hits:
        matched[g] += 1
      if hits:
        kept.append(info)
    unmatched = [g for g, n in matched.items() if n == 0]
    if unmatched:
      raise SlimError(f"--keep {' '.join(unmatched)} matches no file of {wheel.name}")
    kept_names = {i.filename for i in kept}
    absent = sorted(set(replace) - kept_names)
    if absent:
      raise SlimError(f"--replace {', '.join(absent)}: no such kept file in {wheel.name}")
    if drop_requires_names and dist_info + "METADATA" not in kept_names:
      raise SlimError(f"{wheel.name} has no {dist_info}METADATA")

    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / wheel.name
    if target.resolve() == wheel.resolve():
      raise SlimError(f"{target} would overwrite its input")
    rows: List[List[str]] = []
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=".slim-", suffix=".whl")
    os.close(fd)
    try:
      with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
        record_info = None
        for info in kept:
          name = info.filename
          if name == record_name:
            record_info = info
            continue
          data = replace[name] if name in replace else src.read(info)
          if name == dist_info + "METADATA" and drop_requires_names:
            data = drop_requires(data, drop_requires_names)
          dst.writestr(_copy_info(info), data)
          rows.append([name, record_hash(data), str(len(data))])
        rows.append([record_name, "", ""])
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(rows)
        dst.writestr(_copy_info(record_info), buf.getvalue().encode("utf-8"))
      umask = os.umask(0)
      os.umask(umask)
      os.chmod(tmp, 0o666 & ~umask)  # mkstemp's file is 0600
      os.replace(tmp, target)
    except BaseException:
      os.unlink(tmp)
      raise
  return target


def _copy_info(info: zipfile.ZipInfo) -> zipfile.ZipInfo:
  """A fresh ZipInfo with `info`'s name, timestamp and permissions, deflated."""
  out = zipfile.ZipInfo(info.filename, date_time=info.date_time)
  out.external_attr = info.external_attr
  out.create_system = info.create_system
  out.compress_type = zipfile.ZIP_DEFLATED
  return out


def main(argv: Optional[Sequence[str]] = None) -> int:
  parser = argparse.ArgumentParser(
      description="Repack a wheel keeping only the files --keep globs match (see the docstring).")
  parser.add_argument("wheel", type=Path)
  parser.add_argument("out_dir", type=Path)
  parser.add_argument("--keep", action="append", default=[], metavar="GLOB",
                      help="keep the files whose path in the wheel matches (repeatable)")
  parser.add_argument("--drop-requires", action="append", default=[], metavar="NAME",
                      help="remove this distribution's Requires-Dist lines (repeatable)")
  parser.add_argument("--replace", action="append", default=[], metavar="ARCNAME=FILE",
                      help="take this kept member's content from FILE (repeatable)")
  args = parser.parse_args(argv)
  replace: Dict[str, bytes] = {}
  for item in args.replace:
    arcname, sep, path = item.partition("=")
    if not sep or not arcname or not path:
      parser.error(f"--replace wants ARCNAME=FILE, got {item!r}")
    replace[arcname] = Path(path).read_bytes()
  try:
    target = slim_wheel(args.wheel, args.out_dir, args.keep, args.drop_requires, replace)
  except (SlimError, zipfile.BadZipFile, OSError) as e:
    print(f"slim_wheel: {args.wheel.name}: {e}", file=sys.stderr)
    return 1
  with zipfile.ZipFile(args.wheel) as a, zipfile.ZipFile(target) as b:
    n_in, n_out = len(a.infolist()), len(b.infolist())
  mib = lambda p: os.path.getsize(p) / 2**20  # noqa: E731
  print(f"slim_wheel: {target.name}: {n_out} of {n_in} files, "
        f"{mib(args.wheel):.1f} MiB -> {mib(target):.1f} MiB")
  return 0


if __name__ == "__main__":
  sys.exit(main())
