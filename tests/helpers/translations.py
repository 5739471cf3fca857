"""Real German and Japanese text that needs no network: the translated
message catalogues (`.mo`) Django ships, one message a line, one catalogue a
document. Django is in the `test` extra for this only; tests skip without it."""

import gettext
import glob
import os

import pytest


def catalogue_messages(language):
  """Every translated message of Django's `language` catalogues (sorted
  files, catalogue order), or a skip when Django is not installed."""
  django = pytest.importorskip(
    "django", reason="Django's translated catalogues (the test extra) are not installed"
  )
  root = os.path.dirname(django.__file__)
  files = sorted(glob.glob(f"{root}/**/locale/{language}/LC_MESSAGES/*.mo", recursive=True))
  if not files:
    pytest.skip(f"this Django ships no {language!r} catalogues")
  documents = []
  for path in files:
    with open(path, "rb") as f:
      catalogue = gettext.GNUTranslations(f)
    messages = []
    for key, value in catalogue._catalog.items():  # pylint: disable=protected-access
      if key == "":
        continue  # the catalogue's header, not a message
      # Plural forms are separate entries; a message may span lines.
      for line in (value if isinstance(value, str) else "").splitlines():
        if line.strip():
          messages.append(line.strip())
    if messages:
      documents.append(messages)
  return documents


def write_corpus(directory, language):
  """Writes `language`'s catalogues into `directory` as a corpus (one file,
  a blank line between catalogues) and returns its lines (blank ones too)."""
  lines = []
  for document in catalogue_messages(language):
    lines += document + [""]
  os.makedirs(directory, exist_ok=True)
  with open(os.path.join(directory, f"{language}.txt"), "w", encoding="utf-8") as f:
    f.write("\n".join(lines) + "\n")
  return lines
