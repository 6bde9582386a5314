"""Every `>>>` example of docs/PYTHON.md, run against the built package: the doc's outputs are what the build prints,
so the doc cannot go stale (issue 47 item 5).

The examples run in order in one namespace, from the source tree's root (the doc's paths are relative to it), as
doctest runs them (ELLIPSIS, NORMALIZE_WHITESPACE; an exception as "Traceback (most recent call last):", "  ...",
then its last line). After a change to the model, regenerate the outputs rather than typing them:

    PYTHONPATH=build/python STEPSIM_PYTHON_API=1 /usr/bin/python3 python/tests/test_api_docs.py --update

Runs under CTest's PythonAPI entry (the built package first on PYTHONPATH); elsewhere it skips.
"""
import contextlib
import doctest
import io
import os
import sys
import traceback
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "PYTHON.md")
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def blocks(text):
    """(first line, last line) of each fenced ```python block holding `>>>` lines, 0-based, fences excluded."""
    lines, out, start = text.split("\n"), [], None
    for i, line in enumerate(lines):
        if start is None and line.strip() == "```python":
            start = i + 1
        elif start is not None and line.strip() == "```":
            if any(x.startswith(">>>") for x in lines[start:i]):
                out.append((start, i))
            start = None
    return out


def run(example, globs):
    """What the interpreter prints for one example: its output, the value of an expression, or the exception."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            # 'single' echoes an expression's value through sys.displayhook, as the interactive prompt does.
            exec(compile(example.source, "<PYTHON.md>", "single"), globs)
        except Exception:
            exc = traceback.format_exception_only(*sys.exc_info()[:2])[-1]
            return out.getvalue() + "Traceback (most recent call last):\n  ...\n" + exc
    return out.getvalue()


def examples():
    with open(DOC) as f:
        text = f.read()
    parser = doctest.DocTestParser()
    return text, [(b, parser.get_examples("\n".join(text.split("\n")[b[0]:b[1]]) + "\n")) for b in blocks(text)]


def render(exs):
    """A block's text from its examples: each source with its prompts, then its output."""
    lines = []
    for ex in exs:
        src = ex.source.rstrip("\n").split("\n")
        lines += [">>> " + src[0]] + ["... " + s for s in src[1:]]
        lines += [" " * ex.indent + w if w else w for w in ex.want.rstrip("\n").split("\n")] if ex.want else []
    return lines


def update():
    """Rewrite the doc's outputs with what the examples print now."""
    text, found = examples()
    lines, globs = text.split("\n"), {}
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        new = []
        for (first, last), exs in found:
            for ex in exs:
                got = run(ex, globs)
                ex.want = "" if not got.strip() else "\n".join(x.rstrip() for x in got.rstrip("\n").split("\n")) + "\n"
            new.append((first, last, render(exs)))
    finally:
        os.chdir(cwd)
    for first, last, block in reversed(new):
        lines[first:last] = block
    with open(DOC, "w") as f:
        f.write("\n".join(lines))


class PythonDocTest(unittest.TestCase):
    def setUp(self):
        if not os.environ.get("STEPSIM_PYTHON_API"):
            raise unittest.SkipTest("run by CTest's PythonAPI entry (needs the built extension)")
        import stepsim  # noqa: F401  (fails here, not in the first example, when the package is not built)

    def test_every_example_prints_what_the_doc_says(self):
        _, found = examples()
        total = sum(len(exs) for _, exs in found)
        self.assertGreaterEqual(total, 10)  # the worked example is there, parsed
        checker, globs = doctest.OutputChecker(), {}
        cwd = os.getcwd()
        os.chdir(ROOT)
        try:
            for _, exs in found:
                for ex in exs:
                    got = run(ex, globs)
                    if not checker.check_output(ex.want, got, FLAGS):
                        self.fail("docs/PYTHON.md: >>> %s\n%s(regenerate: python/tests/test_api_docs.py --update)"
                                  % (ex.source.strip(), checker.output_difference(ex, got, FLAGS)))
        finally:
            os.chdir(cwd)


if __name__ == "__main__":
    if sys.argv[1:] == ["--update"]:
        update()
    else:
        unittest.main()
