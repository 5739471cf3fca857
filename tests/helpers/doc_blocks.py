"""The command blocks (```bash and ```python) of README.md and docs/*.md, in
the documented order, with the marker comment on the line before each:

- `<!-- demo:<name> -->`: runs as written in the folder that holds
  `demo_output/` (after `python -m electra_tf.demo`), after the demo blocks
  before it;
- `<!-- needs: <what> -->`: needs something the demo does not make (the
  page says what in a sentence beside it).

The order is README.md, then the pages in the order README links them (its
docs map lists the workflow pages in the order a project meets them)."""

import dataclasses
import re

from tests.conftest import REPO_ROOT

MARKER = re.compile(r"<!-- (demo|needs):\s*(.*?)\s*-->$")
LINK = re.compile(r"\]\((docs/[^)#\s]+\.md)")


@dataclasses.dataclass
class Block:
  page: str  # relative to the repo root
  line: int  # 1-based line of the opening fence
  lang: str
  code: str
  kind: str | None  # "demo", "needs" or None (no marker)
  label: str  # the demo block's name or what it needs

  def where(self):
    return f"{self.page}:{self.line}"


def pages_in_documented_order():
  readme = (REPO_ROOT / "README.md").read_text()
  linked = list(dict.fromkeys(LINK.findall(readme)))
  rest = sorted(
    f"docs/{p.name}" for p in (REPO_ROOT / "docs").glob("*.md") if f"docs/{p.name}" not in linked
  )
  return ["README.md"] + linked + rest


def page_blocks(page):
  """The ```bash/```python blocks of one page (other fences are skipped)."""
  lines = (REPO_ROOT / page).read_text().splitlines()
  blocks, i = [], 0
  while i < len(lines):
    if not lines[i].startswith("```"):
      i += 1
      continue
    lang, start = lines[i][3:].strip(), i
    end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
    if lang in ("bash", "python"):
      marker = MARKER.match(lines[start - 1].strip()) if start else None
      blocks.append(
        Block(
          page,
          start + 1,
          lang,
          "\n".join(lines[start + 1 : end]) + "\n",
          marker.group(1) if marker else None,
          marker.group(2) if marker else "",
        )
      )
    i = end + 1
  return blocks


def all_blocks():
  return [block for page in pages_in_documented_order() for block in page_blocks(page)]


def demo_blocks():
  return [block for block in all_blocks() if block.kind == "demo"]
