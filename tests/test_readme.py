"""The README's Quickstart and `.ci/run` must not drift apart, nor the hparam
reference of docs/hparams.md and the config classes."""

import re

from tests.conftest import REPO_ROOT


def test_ci_runs_readme_test_command():
  readme = (REPO_ROOT / "README.md").read_text()
  commands = re.findall(r"^python3 -m venv .*$", readme, flags=re.M)
  assert len(commands) >= 2, "README Quickstart must show two commands"
  ci = (REPO_ROOT / ".ci" / "run").read_text()
  assert commands[1] in ci.splitlines(), ".ci/run must run README command (2) exactly"


def test_hparam_reference_is_current():
  from electra_tf.configs import reference as hparams_reference

  page = (REPO_ROOT / hparams_reference.PAGE).read_text()
  assert hparams_reference.page_section(page) == hparams_reference.reference_markdown(), (
    "docs/hparams.md is out of date: python -m electra_tf.hparams_reference --write docs/hparams.md"
  )


def test_every_hparam_has_a_description():
  from electra_tf.configs import reference as hparams_reference

  text = hparams_reference.reference_markdown()  # raises KeyError naming a missing description
  assert "| `disc_weight` | `50.0` |" in text
