from tfrecords_tools.python_docs_corpus import write_python_docs_corpus


def test_docstrings_become_documents(tmp_path):
  src = tmp_path / "src"
  src.mkdir()
  (src / "mod.py").write_text('''"""Module text that explains many things here.

    >>> code_is_dropped()
"""

def f():
  """Return the answer to the question asked.

  Second paragraph with several words in it.
  """

class C:
  """x"""
''')
  (src / "broken.py").write_text("def (:\n")
  (src / "other.py").write_text('"""Another module with its own words in it."""\n')
  paths, written = write_python_docs_corpus(str(tmp_path / "out"), num_files=2, roots=[str(src)])
  texts = [open(p).read() for p in paths]
  assert written == sum(len(t.encode()) for t in texts)
  # one document per source file, its docstrings' prose paragraphs one per line
  assert texts[0] == (
    "Module text that explains many things here.\n"
    "Return the answer to the question asked.\n"
    "Second paragraph with several words in it.\n\n"
  )
  assert texts[1] == "Another module with its own words in it.\n\n"


def test_default_roots_give_real_text(tmp_path):
  paths, written = write_python_docs_corpus(str(tmp_path), max_megabytes=0.2, num_files=2)
  assert written >= 0.2 * 2**20
  text = open(paths[0]).read()
  assert " the " in text and "\n\n" in text
