"""README.md stays a one-screen entry point and the docs/ tree stays linked:
every relative link (and its #anchor) resolves, and README's docs map names
every page."""

import re

from tests.conftest import REPO_ROOT

DOCS = REPO_ROOT / "docs"
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _pages():
  return [REPO_ROOT / "README.md"] + sorted(DOCS.glob("*.md"))


def _prose(text):
  """`text` without its fenced code blocks and inline code spans."""
  text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
  return re.sub(r"`[^`\n]*`", "", text)


def _anchors(path):
  """The GitHub anchors of the headings in `path`."""
  anchors = set()
  for line in re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M).splitlines():
    match = re.match(r"#+ (.*)", line)
    if match:
      slug = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower()).replace(" ", "-")
      anchors.add(slug)
  return anchors


def _links(path):
  return LINK.findall(_prose(path.read_text()))


def test_readme_fits_on_two_screens():
  lines = (REPO_ROOT / "README.md").read_text().splitlines()
  assert len(lines) < 250, f"README.md has {len(lines)} lines; move detail into docs/"


def test_relative_links_resolve():
  broken = []
  for page in _pages():
    for target in _links(page):
      if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
        continue
      file_part, _, anchor = target.partition("#")
      linked = (page.parent / file_part).resolve() if file_part else page
      if not linked.exists():
        broken.append(f"{page.relative_to(REPO_ROOT)}: {target} (no such file)")
      elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
        broken.append(f"{page.relative_to(REPO_ROOT)}: {target} (no such heading)")
  assert not broken, "broken links:\n" + "\n".join(broken)


def test_every_docs_page_is_in_the_readme_map():
  linked = {target.partition("#")[0] for target in _links(REPO_ROOT / "README.md")}
  pages = sorted(f"docs/{page.name}" for page in DOCS.glob("*.md"))
  assert pages, "docs/ has no pages"
  missing = [page for page in pages if page not in linked]
  assert not missing, f"README.md's docs map does not link {missing}"


def test_every_command_block_says_whether_it_runs_on_the_demo_output():
  """Each ```bash/```python block is either run on the demo's output by
  tests/test_demo.py (`<!-- demo:<name> -->`) or says what it needs
  (`<!-- needs: ... -->`); a demo block names only what the demo makes."""
  from tests.helpers import doc_blocks

  blocks = doc_blocks.all_blocks()
  unmarked = [b.where() for b in blocks if b.kind is None]
  assert not unmarked, (
    f"command blocks without <!-- demo:NAME --> or <!-- needs: ... -->: {unmarked}"
  )
  assert all(b.label for b in blocks), "a marker without a name or a reason"
  names = [b.label for b in blocks if b.kind == "demo"]
  assert len(names) == len(set(names)), f"demo block names repeat: {names}"
  for block in blocks:
    if block.kind == "demo":
      assert "demo_output" in block.code, (
        f"{block.where()}: a demo block that does not use demo_output"
      )
      assert not re.search(r"\$[A-Z_]+DIR", block.code), f"{block.where()}: a placeholder dir"


# Dotted names in the docs that are not Python modules of the repo.
NOT_MODULES = {"electra_tf.build": "the Beam counter namespace of docs/data.md"}
DOTTED = re.compile(r"(?<![\w./-])((?:electra_tf|bench|tfrecords_tools)(?:\.[A-Za-z_]\w*)+)")
SOURCE_PATH = re.compile(r"(?<![\w./-])((?:electra_tf|bench|tfrecords_tools|tests)/[\w/.-]*\.py)\b")


def _module_file(parts):
  base = REPO_ROOT.joinpath(*parts)
  for candidate in (base.with_suffix(".py"), base / "__init__.py"):
    if candidate.is_file():
      return candidate
  return None


def _missing_part(name):
  """None when `name` (a.b.c) is a module of the repo or a name its longest
  module prefix defines or imports; else what is missing."""
  parts = name.split(".")
  for i in range(len(parts), 0, -1):
    found = _module_file(parts[:i])
    if found is None:
      continue
    if i == len(parts):
      return None
    attr = parts[i]
    defined = rf"^\s*(?:def|class)\s+{attr}\b|^\s*{attr}\s*[:=]|^\s*(?:from|import)\b.*\b{attr}\b"
    if re.search(defined, found.read_text(), flags=re.M):
      return None
    return f"{'.'.join(parts[:i])} has no {attr}"
  return "no such module"


def _moved_from_column(page, text):
  """architecture.md's "Moved modules" table names the old paths on purpose:
  its first column is left out."""
  if page.name != "architecture.md":
    return text
  return re.sub(r"^\| `[^|]*\|", "|", text, flags=re.M)


def test_modules_and_source_files_named_in_the_docs_exist():
  missing = []
  for page in _pages():
    text = _moved_from_column(page, page.read_text())
    for number, line in enumerate(text.splitlines(), 1):
      where = f"{page.relative_to(REPO_ROOT)}:{number}"
      for name in DOTTED.findall(line):
        problem = None if name in NOT_MODULES else _missing_part(name)
        if problem:
          missing.append(f"{where}: {name} ({problem})")
      for path in SOURCE_PATH.findall(line):
        if not (REPO_ROOT / path).is_file():
          missing.append(f"{where}: {path} (no such file)")
  assert not missing, "the docs name modules or files that do not exist:\n" + "\n".join(missing)
