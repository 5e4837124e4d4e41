r"""The headline: HTS against sync, time to each task's top target, from the committed
results only (`hts_jax.results.headline`). Writes results/headline.json, results/headline.png,
README's `headline` block (three plain sentences and the figure) and docs/results.md's
`headline-details` block (the statistics and both tables). `hts-reproduce <grid>` runs it too when
it writes the repository's README and docs for a grid the headline reads.

  python -m experiments.headline             # after any grid's report (--report_only) changed
  python -m experiments.headline --noreadme  # the JSON and the figure only
"""

from absl import app
from absl import flags

from hts_jax.results import headline, provenance

flags.DEFINE_bool("readme", True, "Also write README's `headline` block and docs/results.md's "
                  "`headline-details` block.")
FLAGS = flags.FLAGS


def main(argv):
  del argv
  out = headline.refresh(provenance.ROOT, readme=FLAGS.readme)
  print(f"wrote {headline.JSON}, {headline.FIGURE}"
        + " and the blocks of README and docs/results.md" * FLAGS.readme)
  for line in headline.plain_sentences(out):
    print(line)


if __name__ == "__main__":
  app.run(main)
