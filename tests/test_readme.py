"""The README's Quickstart and `.ci/run` must not drift apart."""

import re

from conftest import REPO_ROOT


def test_ci_runs_readme_test_command():
  readme = (REPO_ROOT / "README.md").read_text()
  commands = re.findall(r"^python3 -m venv .*$", readme, flags=re.M)
  assert len(commands) >= 2, "README Quickstart must show two commands"
  ci = (REPO_ROOT / ".ci" / "run").read_text()
  assert commands[1] in ci.splitlines(), ".ci/run must run README command (2) exactly"
