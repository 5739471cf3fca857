"""An English prose corpus from Debian's documentation packages:
`python -m tfrecords_tools.english_prose_corpus --output-dir DIR`.

Why this corpus: it is real English prose (manuals, handbooks, guides: not
code, not docstrings), tens of megabytes of it, under free licences (each
package's `/usr/share/doc/<package>/copyright`, recorded in the manifest),
and anyone can rebuild it from the same package versions with one
`apt-get install` and this script; nothing is downloaded by the script.

Sources (Debian package, markup read):

  debian-handbook      The Debian Administrator's Handbook (HTML, en-US)
  debian-reference-en  Debian Reference (HTML)
  linux-doc            the Linux kernel's Documentation/ (reStructuredText
                       and plain text, gzipped; translations/ and
                       devicetree/ left out)
  python3-doc          the Python documentation (HTML)
  postgresql-doc       the PostgreSQL manual (HTML)
  perl-doc             Perl's manual pages (POD)
  libreoffice-help-en-us  LibreOffice's help (HTML)
  sqlite3-doc          SQLite's documentation (HTML, public domain)
  python-django-doc    Django's documentation (HTML)
  nodejs-doc           Node.js's API documentation (HTML)
  gnome-user-docs      the GNOME help (Mallard XML, read as HTML)
  erlang-doc           Erlang/OTP's documentation (HTML)
  openjdk-17-doc       the Java SE API documentation (javadoc HTML)
  git-doc              Git's manuals and guides (HTML)

Markup is stripped lightly (HTML with the standard library's `html.parser`,
`<pre>` blocks dropped; reStructuredText literal blocks, code directives,
tables and comments dropped; POD verbatim paragraphs dropped), then every
paragraph is kept only if it reads as prose (`is_prose`: several words,
mostly letters, common English function words, few code symbols, a
sentence end) and was not seen before (exact duplicates, case and
punctuation ignored, are dropped: page footers, repeated notices).

Layout written: the original's corpus format, one sentence per line (kept
paragraphs are split at sentence ends) and a blank line between documents.
A document is one source file; files under about 1,000 characters are
joined with the next ones of the same folder, so that examples pack to
full length. Documents are dealt round-robin over
`<output-dir>/corpus/english_prose_<i>.txt` (the folder to give the builders:
they read every file in it). `<output-dir>/manifest.json` records the sources (package, version,
licence, copyright file and its sha256, files read, bytes and lines kept),
each output file's bytes, lines and sha256, and a sha256 over all of them.

Usage:
  apt-get install -y debian-handbook debian-reference-en linux-doc python3-doc \\
      postgresql-doc perl-doc libreoffice-help-en-us sqlite3-doc python-django-doc \\
      nodejs-doc gnome-user-docs erlang-doc openjdk-17-doc git-doc
  python -m tfrecords_tools.english_prose_corpus --output-dir DIR [--num-files 16]
"""

import argparse
import contextlib
import dataclasses
import glob
import gzip
import hashlib
import html.parser
import json
import os
import re
import subprocess
import sys
from typing import Optional

from electra_tf.utils import exit_codes
from electra_tf.utils import file_io
from electra_tf.utils.file_io import atomic_path
from electra_tf.utils.file_io import write_atomic
from tfrecords_tools import runner_flags


@dataclasses.dataclass(frozen=True)
class Source:
  """One documentation package and how to read it.

  Args:
    name: short name in the manifest.
    package: the Debian package (a glob: the newest installed match is used).
    install: what to `apt-get install` when it is missing (a metapackage).
    root: folder holding the files; `{package}` and `{stem}` (the package
      name without `-doc`) are filled in, then it is globbed (last match).
    suffixes: file name endings to read.
    markup: "html", "rst" or "pod".
    licence: the licence of the documentation, as its copyright file says.
    skip_dirs: folder names not entered.
  """

  name: str
  package: str
  install: str
  root: str
  suffixes: tuple
  markup: str
  licence: str
  skip_dirs: tuple = ()


SOURCES = (
  Source(
    "debian-handbook",
    "debian-handbook",
    "debian-handbook",
    "/usr/share/doc/{package}/html/en-US",
    (".html",),
    "html",
    "GPL-2.0+ or CC-BY-SA-3.0",
  ),
  Source(
    "debian-reference",
    "debian-reference-en",
    "debian-reference-en",
    "/usr/share/debian-reference",
    (".en.html",),
    "html",
    "GPL-2+",
  ),
  Source(
    "linux-doc",
    "linux-doc-[0-9]*",
    "linux-doc",
    "/usr/share/doc/{package}/Documentation",
    (".rst.gz", ".txt.gz", ".rst", ".txt"),
    "rst",
    "GPL-2 (the Linux kernel's documentation; a few files other free licences)",
    ("translations", "devicetree", "sphinx", "sphinx-static", "output"),
  ),
  Source(
    "python-docs",
    "python3.[0-9]*-doc",
    "python3-doc",
    "/usr/share/doc/{stem}/html",
    (".html",),
    "html",
    "PSF-2.0 (Python Software Foundation License)",
    ("_sources", "_static", "_images"),
  ),
  Source(
    "postgresql-docs",
    "postgresql-doc-[0-9]*",
    "postgresql-doc",
    "/usr/share/doc/{package}/html",
    (".html",),
    "html",
    "PostgreSQL",
  ),
  Source(
    "perl-docs",
    "perl-doc",
    "perl-doc",
    "/usr/share/perl/5*/pod",
    (".pod",),
    "pod",
    "GPL-1+ or Artistic",
  ),
  Source(
    "libreoffice-help",
    "libreoffice-help-en-us",
    "libreoffice-help-en-us",
    "/usr/share/libreoffice/help/en-US",
    (".html",),
    "html",
    "MPL-2.0",
  ),
  Source(
    "sqlite-docs",
    "sqlite3-doc",
    "sqlite3-doc",
    "/usr/share/doc/sqlite3",
    (".html",),
    "html",
    "public-domain",
  ),
  Source(
    "django-docs",
    "python-django-doc",
    "python-django-doc",
    "/usr/share/doc/{package}/html",
    (".html",),
    "html",
    "BSD-3-Clause",
    ("_modules", "_sources", "_static", "_images"),
  ),
  Source(
    "nodejs-docs",
    "nodejs-doc",
    "nodejs-doc",
    "/usr/share/doc/nodejs/api",
    (".html",),
    "html",
    "Expat (MIT)",
  ),
  Source(
    "gnome-help",
    "gnome-user-docs",
    "gnome-user-docs",
    "/usr/share/help/C",
    (".page",),
    "html",
    "CC-BY-SA-3.0",
  ),
  Source(
    "erlang-docs",
    "erlang-doc",
    "erlang-doc",
    "/usr/share/doc/{package}",
    (".html",),
    "html",
    "Apache-2.0",
  ),
  Source(
    "openjdk-api-docs",
    "openjdk-[0-9]*-doc",
    "openjdk-17-doc",
    "/usr/share/doc/{package}/api",
    (".html",),
    "html",
    "GPL-2 with the Classpath exception",
    ("legal", "resources", "script-dir"),
  ),
  Source(
    "git-docs",
    "git-doc",
    "git-doc",
    "/usr/share/doc/{package}",
    (".html",),
    "html",
    "GPL-2",
  ),
)

# A file of fewer characters of prose is joined with the next ones of its folder.
MIN_DOCUMENT_CHARS = 1000

# -----------------------------------------------------------------------------
# what prose is
# -----------------------------------------------------------------------------

_FUNCTION_WORDS = frozenset(
  "the a an is are was were be been of to and or in on for with this that these those it its "
  "as by from at not can will you your which when if there than then has have may must should "
  "they their we our".split()
)
_CODE_CHARS = frozenset("{}[]<>=;|\\$#@^~*`")
_SENTENCE_END = re.compile(r"[.!?:][\"')\]]*$")
# Words that end in a full stop without ending a sentence.
_ABBREVIATIONS = frozenset(
  "e.g. i.e. etc. vs. cf. mr. mrs. dr. no. fig. sec. approx. incl. resp. al. st. jr. ch. vol.".split()
)


def is_prose(paragraph):
  """Whether a paragraph (one line of collapsed whitespace) reads as English
  prose rather than code, a heading, a table row or a list of names.

  Args:
    paragraph: the text.

  Returns:
    bool.

  Example:
  >>> is_prose("The handbook explains how the system is installed and kept up to date.")
  True
  >>> is_prose("for (i = 0; i < n; i++) { total += x[i]; }")
  False
  """
  words = paragraph.split()
  # a sentence end, or a long run of words (a paragraph whose last stop was lost)
  if len(words) < 6 or not (_SENTENCE_END.search(paragraph) or len(words) >= 15):
    return False
  chars = [c for c in paragraph if not c.isspace()]
  letters = [c for c in chars if c.isalpha()]
  if len(letters) < 0.75 * len(chars):
    return False
  # other languages (translations) and mojibake
  if sum(c.isascii() for c in letters) < 0.97 * len(letters):
    return False
  if sum(c in _CODE_CHARS for c in chars) > 0.03 * len(chars):
    return False
  # identifiers: a sentence may name one or two, code is mostly made of them
  code_words = sum(1 for w in words if "()" in w or "->" in w or "::" in w or "_" in w.strip(".,"))
  if code_words > max(1, 0.15 * len(words)):
    return False
  lowered = [w.strip(".,;:!?\"'()").lower() for w in words]
  return sum(w in _FUNCTION_WORDS for w in lowered) >= max(1, len(words) // 10)


_SENTENCE_BREAK = re.compile(r"[.!?][\"')\]]?(\s+)(?=[\"'(\[]?[A-Z0-9])")


def split_sentences(paragraph):
  """Splits a paragraph at sentence ends (a `.`, `!` or `?`, maybe closed by
  a quote or bracket, then a space and a capital or digit), but not after
  common abbreviations.

  Example:
  >>> split_sentences("It works, e.g. Here. Then it stops! Really?")
  ['It works, e.g. Here.', 'Then it stops!', 'Really?']
  """
  sentences, start = [], 0
  for match in _SENTENCE_BREAK.finditer(paragraph):
    before = paragraph[start : match.start(1)]
    last_word = before.rsplit(None, 1)[-1].lower() if before.strip() else ""
    if last_word in _ABBREVIATIONS or re.fullmatch(r"[a-z]\.", last_word):
      continue
    sentences.append(before.strip())
    start = match.end()
  sentences.append(paragraph[start:].strip())
  return [s for s in sentences if s]


def _collapse(text):
  return " ".join(text.split())


# -----------------------------------------------------------------------------
# markup
# -----------------------------------------------------------------------------

# Mallard (GNOME help pages) shares `p`, `title` and `section`, and adds `item`, `note`, `desc`.
_HTML_BLOCKS = frozenset(
  "p li dd dt h1 h2 h3 h4 h5 h6 td th tr div blockquote caption table ul ol dl section "
  "article header footer body title figcaption item note desc terms tree".split()
)
_HTML_SKIPPED = frozenset("pre script style head nav svg math screen synopsis info".split())


class _HtmlParagraphs(html.parser.HTMLParser):
  """Collects the text of block elements, one paragraph per block, without
  what sits in `<pre>`, `<script>`, `<style>`, `<head>` or `<nav>`."""

  def __init__(self):
    super().__init__(convert_charrefs=True)
    self.paragraphs, self._current, self._skip_depth = [], [], 0

  def _flush(self):
    text = _collapse("".join(self._current))
    if text:
      self.paragraphs.append(text)
    self._current = []

  def handle_starttag(self, tag, attrs):
    if tag in _HTML_SKIPPED:
      self._flush()
      self._skip_depth += 1
    elif tag in _HTML_BLOCKS:
      self._flush()
    elif tag == "br":
      self._current.append(" ")

  def handle_endtag(self, tag):
    if tag in _HTML_SKIPPED:
      self._skip_depth = max(0, self._skip_depth - 1)
      self._current = []
    elif tag in _HTML_BLOCKS:
      self._flush()

  def handle_data(self, data):
    if not self._skip_depth:
      self._current.append(data)

  def close(self):
    super().close()
    self._flush()


def html_paragraphs(text):
  """The paragraphs of an HTML page, markup stripped and entities decoded.

  Example:
  >>> html_paragraphs("<p>One &amp; <b>two</b>.</p><pre>x = 1</pre><li>Three</li>")
  ['One & two.', 'Three']
  """
  parser = _HtmlParagraphs()
  parser.feed(text)
  parser.close()
  return parser.paragraphs


# Directives whose indented body is prose (admonitions); any other directive's body is dropped.
_PROSE_DIRECTIVES = frozenset(
  "note warning attention caution danger error hint important tip seealso admonition "
  "topic sidebar rubric".split()
)
_RST_DIRECTIVE = re.compile(r"^\s*\.\.\s+([\w:-]+)::(.*)$")
_RST_ADORNMENT = re.compile(r"^\s*([=\-~^\"'`#*+:._])\1{2,}\s*$")
_RST_TABLE = re.compile(r"^\s*(\+[-=+]+\+?|\|.*\||=+(\s+=+)+)\s*$")
_RST_BULLET = re.compile(r"^\s*([-*+\u2022]|\d+[.)]|#\.|\(?[a-z]\))\s+")
_RST_FIELD = re.compile(r"^\s*:[\w][\w .-]*:(\s|$)")
_RST_ROLE = re.compile(r":[\w:+-]+:`([^`<]*?)(?:\s*<[^`>]*>)?`")
_RST_LINK = re.compile(r"`([^`<]+?)\s*(?:<[^`>]*>)?`__?")


def rst_inline(text):
  """reStructuredText inline markup replaced by its text.

  Example:
  >>> rst_inline("Use ``make`` and :ref:`the guide <guide>`, see `docs <http://x>`_ or *this*.")
  'Use make and the guide, see docs or this.'
  """
  text = text.replace("``", "")
  text = _RST_ROLE.sub(r"\1", text)
  text = _RST_LINK.sub(r"\1", text)
  text = re.sub(r"(?<!\w)\*\*?([^*\s][^*]*?)\*\*?(?!\w)", r"\1", text)
  text = re.sub(r"\|(\w[\w -]*)\|", r"\1", text)
  return text.replace("\\", "")


def _indent(line):
  return len(line) - len(line.lstrip())


def rst_paragraphs(text):
  """The paragraphs of a reStructuredText (or plain-text) document, without
  literal blocks (after `::`), code and other non-prose directives,
  comments, tables, section adornments and field lists.

  Example:
  >>> rst_paragraphs("Title\\n=====\\n\\nSome text\\nhere::\\n\\n    code()\\n\\nMore ``text``.\\n")
  ['Title', 'Some text here:', 'More text.']
  """
  paragraphs, current = [], []
  skip_indent = None  # inside a block dropped while lines are indented deeper than this

  def flush():
    if current:
      paragraphs.append(rst_inline(_collapse(" ".join(current))))
    current.clear()

  for raw in text.expandtabs(8).splitlines():
    line = raw.rstrip()
    if skip_indent is not None:
      if not line.strip() or _indent(line) > skip_indent:
        continue
      skip_indent = None
    if not line.strip():
      flush()
      continue
    directive = _RST_DIRECTIVE.match(line)
    if directive or line.strip() == "..":
      flush()
      name = directive.group(1).lower() if directive else ""
      if name in _PROSE_DIRECTIVES:
        rest = directive.group(2).strip()
        if rest:
          current.append(rest)
      else:
        skip_indent = _indent(line)
      continue
    if line.lstrip().startswith(".. "):  # a comment, a target or a footnote
      flush()
      skip_indent = _indent(line)
      continue
    if _RST_ADORNMENT.match(line) or _RST_TABLE.match(line) or _RST_FIELD.match(line):
      flush()
      continue
    bullet = _RST_BULLET.match(line)
    if bullet:
      flush()
      line = line[bullet.end() :]
    current.append(line.strip())
    if line.endswith("::"):
      # "text::" ends in one colon; "::" alone on a line says nothing
      current[-1] = current[-1][:-1].rstrip(" :") + (":" if current[-1] != "::" else "")
      if not current[-1]:
        current.pop()
      flush()
      skip_indent = _indent(raw.expandtabs(8)) if not bullet else _indent(raw.expandtabs(8)) + 1
  flush()
  return [p for p in paragraphs if p]


_POD_ESCAPES = {"lt": "<", "gt": ">", "sol": "/", "verbar": "|", "quot": '"', "amp": "&"}


def pod_inline(text):
  """POD formatting codes replaced by their text (`L<text|target>` by text,
  `E<gt>` by `>`, index entries `X<...>` and `Z<>` removed).

  Example:
  >>> pod_inline("Use B<open> with C<< $fh->print >> and L<the manual|perlfunc/open>.")
  'Use open with $fh->print and the manual.'
  """

  def replace(match):
    code, body = match.group(1), match.group(2)
    if code == "E":
      return _POD_ESCAPES.get(body, "")
    if code in "XZ":
      return ""
    if code == "L":
      body = body.split("|", 1)[0] if "|" in body else body.split("/", 1)[0]
      return body.strip('"')
    return body

  # `C<< $a->b >>` first: its body may hold a ">"
  text = re.sub(r"([A-Z])<{2,}\s+(.*?)\s+>{2,}", replace, text)
  inner = re.compile(r"([A-Z])<([^<>]*)>")
  while True:
    new = inner.sub(replace, text)
    if new == text:
      return new
    text = new


def pod_paragraphs(text):
  """The prose paragraphs of a POD document: ordinary paragraphs and
  `=item` texts; verbatim (indented) paragraphs, headings and `=begin`
  ... `=end` blocks are dropped.

  Example:
  >>> pod_paragraphs("=head1 NAME\\n\\nThis is I<fine> text.\\n\\n    my $x = 1;\\n\\n=cut\\n")
  ['This is fine text.']
  """
  paragraphs, in_begin, in_pod = [], False, True
  for block in re.split(r"\n[ \t]*\n", text):
    if not block.strip():
      continue
    if block.startswith("="):
      command, _, rest = block.partition(" ")
      command = command.split("\n", 1)[0]
      if command == "=begin":
        in_begin = True
      elif command == "=end":
        in_begin = False
      elif command == "=cut":
        in_pod = False
      elif command in ("=pod", "=head1", "=head2", "=head3", "=head4"):
        in_pod = True
      elif command == "=item" and in_pod and not in_begin:
        item = rest.strip().lstrip("*").strip()
        if item and not re.fullmatch(r"\d+\.?", item):
          paragraphs.append(pod_inline(_collapse(item)))
      continue
    if in_begin or not in_pod or block[0] in " \t":
      continue
    paragraphs.append(pod_inline(_collapse(block)))
  return [p for p in paragraphs if p]


_MARKUP = {"html": html_paragraphs, "rst": rst_paragraphs, "pod": pod_paragraphs}


def read_text(path):
  """A file's text (gunzipped when it ends in `.gz`), undecodable bytes replaced."""
  opener = gzip.open if path.endswith(".gz") else open
  with opener(path, "rb") as f:
    return f.read().decode("utf-8", errors="replace")


# -----------------------------------------------------------------------------
# sources and the corpus
# -----------------------------------------------------------------------------


def installed_package(pattern):
  """(name, version) of the newest installed Debian package matching a glob, or None."""
  try:
    out = subprocess.run(
      ["dpkg-query", "-W", "-f=${Package}\\t${Version}\\t${db:Status-Abbrev}\\n", pattern],
      capture_output=True,
      text=True,
      check=False,
    ).stdout
  except OSError:  # not a Debian system
    return None
  found = []
  for line in out.splitlines():
    parts = line.split("\t")
    if len(parts) == 3 and parts[2].startswith("ii"):
      found.append((parts[0], parts[1]))
  if not found:
    return None
  return max(found, key=lambda pv: [int(n) for n in re.findall(r"\d+", pv[0])] or [0])


def resolve_root(source, package):
  """The folder of a source's files for an installed package, or None."""
  stem = package[: -len("-doc")] if package.endswith("-doc") else package
  matches = sorted(glob.glob(source.root.format(package=package, stem=stem)))
  return matches[-1] if matches and os.path.isdir(matches[-1]) else None


def source_files(root, suffixes, skip_dirs=()):
  """The files under `root` with one of `suffixes`, in a fixed (sorted) order."""
  found = []
  for dirpath, dirnames, filenames in os.walk(root):
    dirnames[:] = sorted(d for d in dirnames if d not in skip_dirs)
    for name in sorted(filenames):
      if name.endswith(suffixes):
        found.append(os.path.join(dirpath, name))
  return found


def _licence_record(package):
  path = f"/usr/share/doc/{package}/copyright"
  if not os.path.exists(path):
    return {"copyright_file": None, "copyright_sha256": None}
  with open(path, "rb") as f:
    return {"copyright_file": path, "copyright_sha256": hashlib.sha256(f.read()).hexdigest()}


def _dedup_key(paragraph):
  key = re.sub(r"[^0-9a-z]+", "", paragraph.lower())
  return hashlib.blake2b(key.encode(), digest_size=8).digest()


def documents_of_files(files, markup, seen, stats):
  """Yields documents (lists of sentences) from `files`: each file's prose
  paragraphs not in `seen` (which grows), split into sentences; files with
  little prose are joined with the next ones of the same folder."""
  to_paragraphs = _MARKUP[markup]
  pending, pending_chars, pending_dir = [], 0, None
  for path in files:
    folder = os.path.dirname(path)
    if pending and folder != pending_dir:
      yield pending
      pending, pending_chars = [], 0
    pending_dir = folder
    stats["files_read"] += 1
    for paragraph in to_paragraphs(read_text(path)):
      stats["paragraphs_seen"] += 1
      if not is_prose(paragraph):
        continue
      key = _dedup_key(paragraph)
      if key in seen:
        stats["duplicates_dropped"] += 1
        continue
      seen.add(key)
      stats["paragraphs_kept"] += 1
      sentences = split_sentences(paragraph)
      pending.extend(sentences)
      pending_chars += len(paragraph)
    if pending_chars >= MIN_DOCUMENT_CHARS:
      yield pending
      pending, pending_chars = [], 0
  if pending:
    yield pending


@dataclasses.dataclass
class ResolvedSource:
  source: Source
  package: Optional[str]
  version: Optional[str]
  root: Optional[str]


def resolve_sources(sources=SOURCES):
  """Each source with its installed package, version and folder (None when missing)."""
  resolved = []
  for source in sources:
    found = installed_package(source.package)
    root = resolve_root(source, found[0]) if found else None
    resolved.append(
      ResolvedSource(source, found[0] if found else None, found[1] if found else None, root)
    )
  return resolved


def install_command(missing):
  """The one `apt-get` line that installs the missing sources."""
  return "apt-get install -y " + " ".join(r.source.install for r in missing)


def write_english_prose_corpus(output_dir, resolved, num_files=16, max_megabytes=None):
  """Writes the corpus files and the manifest; returns the manifest.

  Args:
    output_dir: folder for `corpus/english_prose_<i>.txt` and `manifest.json`
      (created); the corpus folder holds nothing else, since the builders read
      every file in it.
    resolved: `ResolvedSource`s (from `resolve_sources`, or made by hand with a
      `root`); those without a root are left out.
    num_files: documents are dealt round-robin over this many files.
    max_megabytes: stop after about this much text (None: all of it).
  """
  corpus_dir = os.path.join(output_dir, "corpus")
  os.makedirs(corpus_dir, exist_ok=True)
  names = [f"english_prose_{i}.txt" for i in range(num_files)]
  limit = None if max_megabytes is None else int(max_megabytes * 2**20)
  seen, written, index = set(), 0, 0
  manifest_sources = []
  with contextlib.ExitStack() as stack:
    # Files close (LIFO) before their temporary names are renamed into place.
    tmp_paths = [stack.enter_context(atomic_path(os.path.join(corpus_dir, n))) for n in names]
    files = [stack.enter_context(open(t, "w", encoding="utf-8")) for t in tmp_paths]
    for item in resolved:
      if item.root is None:
        continue
      stats = dict(
        files_read=0, paragraphs_seen=0, paragraphs_kept=0, duplicates_dropped=0, documents=0
      )
      bytes_kept = lines_kept = 0
      paths = source_files(item.root, item.source.suffixes, item.source.skip_dirs)
      for sentences in documents_of_files(paths, item.source.markup, seen, stats):
        text = "\n".join(sentences) + "\n\n"
        files[index % num_files].write(text)
        index += 1
        size = len(text.encode("utf-8"))
        written += size
        bytes_kept += size
        lines_kept += len(sentences)
        stats["documents"] += 1
        if limit is not None and written >= limit:
          break
      manifest_sources.append(
        dict(
          name=item.source.name,
          package=item.package,
          version=item.version,
          licence=item.source.licence,
          **_licence_record(item.package or ""),
          root=item.root,
          markup=item.source.markup,
          bytes=bytes_kept,
          lines=lines_kept,
          **stats,
        )
      )
      if limit is not None and written >= limit:
        break
    if written == 0:
      raise ValueError("no prose found in the sources given")
  return _write_manifest(output_dir, names, manifest_sources)


def _file_record(path):
  digest, size, lines = hashlib.sha256(), 0, 0
  with open(path, "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
      digest.update(chunk)
      size += len(chunk)
      lines += chunk.count(b"\n")
  return {"bytes": size, "lines": lines, "sha256": digest.hexdigest()}


def _write_manifest(output_dir, names, sources):
  files = [dict(name=n, **_file_record(os.path.join(output_dir, "corpus", n))) for n in names]
  # One checksum for the whole corpus: over the files' names and checksums, in order.
  overall = hashlib.sha256("".join(f"{f['sha256']}  {f['name']}\n" for f in files).encode())
  manifest = {
    "format": "one sentence per line, a blank line between documents",
    "corpus_dir": "corpus",
    "built_by": "python -m tfrecords_tools.english_prose_corpus",
    "total_bytes": sum(f["bytes"] for f in files),
    "total_lines": sum(f["lines"] for f in files),
    "documents": sum(s["documents"] for s in sources),
    "sha256": overall.hexdigest(),
    "sources": sources,
    "files": files,
  }
  write_atomic(os.path.join(output_dir, "manifest.json"), json.dumps(manifest, indent=2) + "\n")
  return manifest


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--output-dir", required=True)
  parser.add_argument("--num-files", type=int, default=16)
  parser.add_argument("--max-mb", type=float, default=None, help="stop after about this much")
  parser.add_argument(
    "--allow-missing", action="store_true", help="build from the sources that are installed"
  )
  args = parser.parse_args(argv)
  try:
    runner_flags.check_positive(args, "num_files", "max_mb")
    runner_flags.check_paths_given(args, "output_dir")
  except ValueError as e:
    print(f"error: {e}", file=sys.stderr)
    return exit_codes.BAD_INPUT
  resolved = resolve_sources()
  missing = [r for r in resolved if r.root is None]
  if missing and (not args.allow_missing or len(missing) == len(resolved)):
    names = ", ".join(r.source.name for r in missing)
    print(f"missing sources ({names}); install them: {install_command(missing)}", file=sys.stderr)
    return exit_codes.BAD_INPUT
  try:
    with file_io.full_disk_as_bad_input("--output-dir", args.output_dir):
      manifest = write_english_prose_corpus(args.output_dir, resolved, args.num_files, args.max_mb)
  except ValueError as e:
    print(f"error: {e}", file=sys.stderr)
    return exit_codes.BAD_INPUT
  for source in manifest["sources"]:
    print(
      f"{source['name']:18s} {source['package']} {source['version']}: "
      f"{source['bytes'] / 2**20:6.1f} MB, {source['lines']} lines, {source['files_read']} files"
    )
  print(
    f"wrote {manifest['total_bytes'] / 2**20:.1f} MB ({manifest['total_lines']} lines, "
    f"{manifest['documents']} documents) to {os.path.join(args.output_dir, 'corpus')}; "
    f"sha256 {manifest['sha256']}"
  )
  return exit_codes.OK


if __name__ == "__main__":
  sys.exit(main())
