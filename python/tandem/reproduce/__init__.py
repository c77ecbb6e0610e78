"""`tandem reproduce`: the papers' figures and tables as experiments, side by side with
the papers' own numbers.

- ``papers/*.yaml``  the papers' values, one file per paper, each value citing its
  section/figure and labelled ``calibrated`` (it set a model constant) or ``predicted``.
- ``registry.py``    the experiments: name, paper, figure, what it shows, run time, and
  the function that runs it (``run(out_dir, quick) -> dict``).
- ``runner.py``      runs experiments (in parallel processes), writes summary.json.
- ``report.py``      DIR/report.html and docs/reproduction.md from the summaries.
- ``exp_*.py``       the experiments of each paper.
"""
