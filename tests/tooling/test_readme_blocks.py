"""README's result blocks are their committed JSON rendered (the MuJoCo and memory tables)."""

import os

from tests.support import ROOT


def test_readme_mujoco_block_is_the_committed_json_rendered():
  from hts_jax.results import mujoco as rm  # pylint: disable=import-outside-toplevel
  from hts_jax.results import publish  # pylint: disable=import-outside-toplevel
  root = ROOT
  assert publish.stale(os.path.join(root, "results", "mujoco"), rm.render_markdown,
                       [(publish.readme_path(), rm.BLOCK, rm.render_summary),
                        (publish.docs_path(), rm.DOCS_BLOCK, rm.render_markdown)]) == []


def test_readme_memory_block_is_the_committed_json_rendered():
  from hts_jax.results import memory as rm  # pylint: disable=import-outside-toplevel
  from hts_jax.results import publish  # pylint: disable=import-outside-toplevel
  root = ROOT
  assert publish.stale(os.path.join(root, "results", "memory"), rm.render_markdown,
                       [(publish.readme_path(), rm.BLOCK, rm.render_markdown)]) == []
