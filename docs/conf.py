"""Sphinx configuration for the fastrisk documentation."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(HERE, "_ext"))

project = "fastrisk"
author = "the fastrisk developers"
copyright = "the fastrisk developers"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "fastrisk_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

# The docstrings are plain numpydoc or free text; do not fail the build on their style.
autosummary_generate = True
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_validation_checks = set()
numpydoc_xref_param_type = False
nitpicky = False
# benchmarks/RESULTS.md embeds the reports of several scripts: their heading levels may skip
suppress_warnings = ["myst.header"]

templates_path = ["_templates"]
html_theme = "alabaster"
html_title = "fastrisk"
