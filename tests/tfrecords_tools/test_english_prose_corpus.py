import hashlib
import json

from tfrecords_tools import english_prose_corpus as corpus


def test_html_markup_stripped_and_code_dropped():
  page = (
    "<html><head><title>T</title><style>p {color: red}</style></head><body>"
    "<nav><p>Home and the previous page of the manual.</p></nav>"
    "<h1>Installing</h1>"
    "<p>The installer copies the <code>base</code> system to the disk &amp; then reboots.</p>"
    "<pre>sudo apt-get install foo\nfoo --bar</pre>"
    "<ul><li>It asks for a password, which is kept in the configuration.</li></ul>"
    "</body></html>"
  )
  assert corpus.html_paragraphs(page) == [
    "Installing",
    "The installer copies the base system to the disk & then reboots.",
    "It asks for a password, which is kept in the configuration.",
  ]


def test_rst_literal_blocks_directives_tables_dropped():
  text = (
    ".. SPDX-License-Identifier: GPL-2.0\n\n"
    "Locking\n=======\n\n"
    "The lock is taken by the caller and released\nwhen the work is done. Example::\n\n"
    "    spin_lock(&l);\n    spin_unlock(&l);\n\n"
    ".. code-block:: c\n\n   int x = 1;\n\n"
    ".. note::\n\n   A note is prose and stays in the text.\n\n"
    "+-----+-----+\n| a   | b   |\n+-----+-----+\n\n"
    "- A bullet that uses ``inline code`` and :c:func:`kmalloc` in it.\n"
  )
  assert corpus.rst_paragraphs(text) == [
    "Locking",
    "The lock is taken by the caller and released when the work is done. Example:",
    "A note is prose and stays in the text.",
    "A bullet that uses inline code and kmalloc in it.",
  ]


def test_pod_verbatim_and_commands_dropped():
  text = (
    "=head1 DESCRIPTION\n\n"
    "The B<open> function opens a file, see L<perlfunc/open> and E<lt>STDINE<gt>.\n\n"
    "    open(my $fh, '<', $path) or die;\n\n"
    "=over 4\n\n=item * Each item is a paragraph of its own text here.\n\n=back\n\n"
    "=begin html\n\n<p>Only for HTML.</p>\n\n=end html\n\n=cut\n\nsub code { 1 }\n"
  )
  assert corpus.pod_paragraphs(text) == [
    "The open function opens a file, see perlfunc and <STDIN>.",
    "Each item is a paragraph of its own text here.",
  ]


def test_prose_kept_code_and_fragments_dropped():
  assert corpus.is_prose("The kernel keeps a list of the devices that are attached to the bus.")
  assert corpus.is_prose("Set CONFIG_FOO to enable the driver when the board has the chip.")
  for not_prose in (
    "if (x > 0) { return y; } else { return z; }",
    "def f(a, b): return a_b(c_d, e_f) + g_h(i_j)",
    "Installation",
    "Jamal Hadi Salim <hadi@example.org>",
    "Der Kernel hält eine Liste der Geräte, die am Bus hängen, für später bereit.",
  ):
    assert not corpus.is_prose(not_prose), not_prose


def test_sentences_split_not_at_abbreviations():
  assert corpus.split_sentences("Use a tool, e.g. Vim. It is fine. Call Dr. Who? Yes.") == [
    "Use a tool, e.g. Vim.",
    "It is fine.",
    "Call Dr. Who?",
    "Yes.",
  ]


def _source(tmp_path, name, markup, suffix, files):
  root = tmp_path / name
  root.mkdir()
  for filename, text in files.items():
    (root / filename).write_text(text)
  source = corpus.Source(name, name, name, str(root), (suffix,), markup, "test-licence")
  return corpus.ResolvedSource(source, None, None, str(root))


def test_corpus_files_and_manifest(tmp_path):
  long_html = "<p>" + " ".join(["This sentence is about the handbook and its pages."] * 30) + "</p>"
  html_source = _source(
    tmp_path,
    "html",
    "html",
    ".html",
    {
      "a.html": long_html + "<p>A footer that is the same on every page of it.</p>",
      "b.html": "<p>A footer that is the same on every page of it.</p>"
      "<p>The second page has a paragraph of its own to say.</p>",
      "skip.txt": "<p>Not read, since it has the wrong ending for this source.</p>",
    },
  )
  pod_source = _source(
    tmp_path, "pod", "pod", ".pod", {"x.pod": "=head1 NAME\n\nThe manual says it is a fine tool.\n"}
  )
  out = tmp_path / "out"
  manifest = corpus.write_english_prose_corpus(str(out), [html_source, pod_source], num_files=2)
  assert sorted(p.name for p in (out / "corpus").iterdir()) == [
    "english_prose_0.txt",
    "english_prose_1.txt",
  ]
  texts = [(out / "corpus" / f"english_prose_{i}.txt").read_text() for i in range(2)]
  sentence = "This sentence is about the handbook and its pages.\n"
  footer = "A footer that is the same on every page of it.\n"
  # documents dealt round-robin: a.html, b.html (the footer, seen before, dropped), x.pod
  assert texts[0] == sentence * 30 + footer + "\n" + "The manual says it is a fine tool.\n\n"
  assert texts[1] == "The second page has a paragraph of its own to say.\n\n"
  assert "Not read" not in "".join(texts)

  assert manifest == json.loads((out / "manifest.json").read_text())
  for record in manifest["files"]:
    data = (out / "corpus" / record["name"]).read_bytes()
    assert record["bytes"] == len(data)
    assert record["lines"] == data.count(b"\n")
    assert record["sha256"] == hashlib.sha256(data).hexdigest()
  assert manifest["total_bytes"] == sum(len("".join(texts).encode()) for _ in [0])
  assert [s["name"] for s in manifest["sources"]] == ["html", "pod"]
  html_stats = manifest["sources"][0]
  assert html_stats["files_read"] == 2 and html_stats["duplicates_dropped"] == 1
  assert html_stats["licence"] == "test-licence"
  assert manifest["documents"] == 3
  assert sum(s["bytes"] for s in manifest["sources"]) == manifest["total_bytes"]


def test_missing_package_gives_the_apt_line():
  source = corpus.Source(
    "none", "no-such-package-electra-tf", "no-such-package-electra-tf", "/nonexistent",
    (".html",), "html", "x",
  )  # fmt: skip
  (resolved,) = corpus.resolve_sources((source,))
  assert resolved.root is None
  assert corpus.install_command([resolved]) == "apt-get install -y no-such-package-electra-tf"
