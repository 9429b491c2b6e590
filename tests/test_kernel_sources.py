"""Checks on the Cython kernel sources (csrc/*.pyx) that no run of the compiled code shows
reliably.

Cython makes a variable private to the threads of a ``prange`` loop (or a ``parallel()``
block) only when the body assigns it; a local whose address the body passes to a function
(``row_view(..., &val, &idx)`` writes the row's pointers through it) is shared by every
thread, a data race the optimizer may hide (it keeps the value in a register at -O3) and
a less optimized build exposes.  Such out-pointers belong in a ``cdef`` function the body
calls (each call has its own locals) or must be assigned in the body.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PARALLEL = re.compile(r"\b(prange|parallel)\(")
ADDRESS = re.compile(r"&(\w+)\b(?![\[.])")


def parallel_bodies(text):
    """(line number, header, body text) of every prange loop and parallel() block: the
    header is the statement's lines joined up to its ':' (a header may continue over
    several lines inside its parentheses), the body the lines after it indented deeper
    than its first line."""
    lines = [line.split("#", 1)[0] for line in text.split("\n")]
    n = 0
    while n < len(lines):
        first = n
        if not PARALLEL.search(lines[n]):
            n += 1
            continue
        header, depth = lines[n], 0
        while True:  # join continuation lines until the parentheses close at the ':'
            depth += lines[n].count("(") - lines[n].count(")")
            if depth <= 0 or n + 1 == len(lines):
                break
            n += 1
            header += " " + lines[n].strip()
        n += 1
        if not header.rstrip().endswith(":"):
            continue
        indent = len(lines[first]) - len(lines[first].lstrip())
        body = []
        for later in lines[n:]:
            if later.strip() and len(later) - len(later.lstrip()) <= indent:
                break
            body.append(later)
        yield first + 1, header, "\n".join(body)


def parallel_calls(text):
    """The number of prange( and parallel( calls in the code of ``text`` (comments
    excluded)."""
    return sum(len(PARALLEL.findall(line.split("#", 1)[0])) for line in text.split("\n"))


def shared_out_pointers(text):
    """(line, name) of each local whose address a parallel body takes without assigning
    the local in that body (nor as a loop variable of the body or of its header)."""
    found = []
    for line, header, body in parallel_bodies(text):
        for name in sorted(set(ADDRESS.findall(body))):
            assigned = re.compile(
                rf"(^|[^\w.])({name}\s*([-+*/]?=)(?!=)|for\s+{name}\s+in\b)", re.M)
            if not assigned.search(body) and not assigned.search(header):
                found.append((line, name))
    return found


def test_the_check_finds_a_shared_out_pointer():
    """The check flags the pattern (an address taken in the body of an unassigned local)
    and passes its two repairs (the local assigned in the body; the call moved into a
    cdef function, so the body takes no address)."""
    racy = ("    for t in prange(n, nogil=True):\n"
            "        nnz = row_view(data, i, &val, &idx)\n"
            "        out[t] = dot(val, idx, nnz)\n")
    assigned = racy.replace("        nnz = row_view", "        val = NULL\n        idx = NULL\n"
                                                       "        nnz = row_view")
    moved = ("    for t in prange(n, nogil=True):\n"
             "        out[t] = row_dot(data, i, &w[0])\n")
    assert shared_out_pointers(racy) == [(1, "idx"), (1, "val")]
    assert shared_out_pointers(assigned) == []
    assert shared_out_pointers(moved) == []


def test_the_check_reads_a_header_continued_over_lines():
    """A prange header continued inside its parentheses (as in csrc/_cd.pyx), or a
    parallel() one, is one header: its body (up to the first line indented no deeper
    than the header) is checked, and it is one call in the count of prange( calls."""
    racy = ("    for t in prange(n, nogil=True, num_threads=n_threads,\n"
            "                    schedule=\"static\", chunksize=1):  # (comment)\n"
            "        nnz = row_view(data, t, &val, &idx)\n"
            "        out[t] = dot(val, idx, nnz)\n"
            "    done = 1\n")
    assert [line for line, _, _ in parallel_bodies(racy)] == [1]
    assert shared_out_pointers(racy) == [(1, "idx"), (1, "val")]
    assert parallel_calls(racy) == 1
    block = ("    with nogil, parallel(\n"
             "            num_threads=P):\n"
             "        f(&val)\n")
    assert shared_out_pointers(block) == [(1, "val")]


def test_no_parallel_body_shares_an_out_pointer():
    """No prange loop or parallel() block of csrc/*.pyx passes the address of a local it
    does not assign (the race described in the module docstring)."""
    sources = sorted((ROOT / "csrc").glob("*.pyx"))
    assert sources, "csrc/*.pyx not found next to tests/"
    found = [f"{path.name}:{line}: &{name}" for path in sources
             for line, name in shared_out_pointers(path.read_text(encoding="utf-8"))]
    assert not found, found


def test_every_parallel_call_has_its_body_read():
    """The check reads one body per prange( / parallel( call of csrc/*.pyx: a header
    the reader does not recognize would leave its body unchecked."""
    for path in sorted((ROOT / "csrc").glob("*.pyx")):
        text = path.read_text(encoding="utf-8")
        bodies = [line for line, _, _ in parallel_bodies(text)]
        assert len(bodies) == parallel_calls(text), (path.name, bodies)
