"""Sphinx directives that read their text from the code at build time.

* ``fastrisk-auto-rule``: the rule of ``solver="auto"``, i.e. the docstring of
  ``fastrisk.solvers.auto`` (reStructuredText), so the page cannot drift from
  the rule the code applies.
* ``fastrisk-cli-help``: ``fastrisk --help`` and the help of every
  sub-command, from the argparse parser of ``fastrisk.cli``.

It also makes the API reference tolerant of docstrings written as plain text
rather than reStructuredText: a docstring that docutils cannot parse cleanly
(roles replaced by literals for the check) is shown verbatim, as a literal
block, instead of failing the ``-W`` build or rendering half-parsed markup.
The pages name such docstrings in a build message ("shown verbatim").
"""

import argparse
import inspect
import io
import re

import docutils.core
from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)
_ROLE = re.compile(r":[A-Za-z][\w:.+-]*:`([^`]*)`")
_RAW = {}          # (what, name) -> the docstring's lines when they are not valid reST


class AutoRule(SphinxDirective):
    has_content = False

    def run(self):
        from fastrisk.solvers import auto

        text = inspect.cleandoc(auto.__doc__ or "")
        if not _clean_rest(text):            # plain text: show it as written
            return [nodes.literal_block(text, text)]
        container = nodes.container()
        self.state.nested_parse(StringList(text.splitlines(), source="fastrisk/solvers/auto.py"),
                                self.content_offset, container)
        return container.children


class CliHelp(SphinxDirective):
    has_content = False

    def run(self):
        from fastrisk.cli import build_parser

        parser = build_parser()
        parser.prog = "fastrisk"
        blocks = [("fastrisk", parser.format_help())]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    sub.prog = f"fastrisk {name}"
                    blocks.append((f"fastrisk {name}", sub.format_help()))
        out = []
        for title, text in blocks:
            para = nodes.paragraph()
            para += nodes.strong(text=title)
            out.append(para)
            out.append(nodes.literal_block(text, text))
        return out


def _clean_rest(text):
    """True when docutils parses ``text`` (Sphinx roles made literals) without a message."""
    messages = io.StringIO()
    try:
        doctree = docutils.core.publish_doctree(
            _ROLE.sub(r"``\1``", text),
            settings_overrides={"report_level": 2, "halt_level": 5, "warning_stream": messages})
    except Exception:  # a Sphinx-only directive needs the build environment: be safe
        return False
    return not messages.getvalue() and not any(
        node.get("level", 0) >= 2 for node in doctree.findall(nodes.system_message))


def _check_docstring(app, what, name, obj, options, lines):
    """Before numpydoc: remember docstrings that are not valid reStructuredText."""
    text = "\n".join(lines)
    if text.strip() and not _clean_rest(text):
        _RAW[what, name] = list(lines)
        logger.info("fastrisk_docs: docstring of %s is not valid reST; shown verbatim", name)


def _verbatim(app, what, name, obj, options, lines):
    """After numpydoc: replace an invalid docstring by a literal block of its text."""
    raw = _RAW.get((what, name))
    if raw is not None:
        lines[:] = ["::", ""] + ["    " + line for line in raw] + [""]


def setup(app):
    app.connect("autodoc-process-docstring", _check_docstring, priority=100)
    app.connect("autodoc-process-docstring", _verbatim, priority=900)
    app.add_directive("fastrisk-auto-rule", AutoRule)
    app.add_directive("fastrisk-cli-help", CliHelp)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
