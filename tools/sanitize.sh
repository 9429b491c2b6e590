#!/usr/bin/env bash
# Build the extensions with AddressSanitizer + UndefinedBehaviorSanitizer and run tests on them.
#
#   tools/sanitize.sh            the kernel tests, the fuzz suite, then every other test
#   tools/sanitize.sh --kernels  the kernel tests and the fuzz suite only (what CI runs)
#   tools/sanitize.sh [--kernels] -- PYTEST_ARGS...   extra pytest arguments
#
# The checkout's sources are built into a wheel (pip, isolated build environment) with the
# sanitizer flags under $FASTRISK_SANITIZE_DIR (default: a temporary directory), unpacked
# there, and the tests run from a copy of tests/ against it, so the checkout's own build is
# untouched.  The current Python runs them (it needs the test extra), with the sanitizer
# runtimes preloaded (the interpreter itself is not instrumented).  Any sanitizer report
# fails the run: the runtimes halt on the first error and also write it to a log file,
# which this script checks afterwards (a report in a subprocess of a test would otherwise
# go unseen).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
KERNEL_TESTS=(test_oracle test_sdca test_sdca_cocoa test_conj test_qp test_pgs test_rda test_pegasos test_newton
              test_voracle test_scaled test_losses test_vector_losses test_data test_fuzz test_cd
              test_multiclass)
only_kernels=0
if [[ "${1:-}" == "--kernels" ]]; then only_kernels=1; shift; fi
if [[ "${1:-}" == "--" ]]; then shift; fi
CC="${CC:-gcc}"
PY="${PYTHON:-python}"

WORK="${FASTRISK_SANITIZE_DIR:-$(mktemp -d -t fastrisk-sanitize.XXXXXX)}"
SRC="$WORK/src"
SITE="$WORK/site"
RUN="$WORK/run"
LOGS="$WORK/logs"
rm -rf "$SRC" "$SITE" "$RUN" "$LOGS" "$WORK/wheel"
mkdir -p "$SRC" "$SITE" "$RUN" "$LOGS"
# the checkout's sources: tracked and new files, nothing built or git-ignored
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard \
     | while IFS= read -r -d '' f; do [[ -e "$f" ]] && printf '%s\0' "$f"; done \
     | xargs -0 cp -p --parents -t "$SRC")

SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
echo "sanitize: building a wheel from $SRC ($SAN)"
# -O1: the optimization level the sanitizers recommend, and a much quicker build than -O3
CC="$CC" CFLAGS="$SAN -g" LDFLAGS="$SAN" FASTRISK_OPT=-O1 \
    "$PY" -m pip wheel --no-deps -w "$WORK/wheel" "$SRC" >"$WORK/build.log" 2>&1 \
    || { tail -n 40 "$WORK/build.log"; exit 1; }
"$PY" -m pip install -q --no-deps --target "$SITE" "$WORK"/wheel/fastrisk-*.whl
cp -r "$ROOT/tests" "$ROOT/conftest.py" "$RUN/"

export LD_PRELOAD="$("$CC" -print-file-name=libasan.so) $("$CC" -print-file-name=libubsan.so)"
# CPython leaks by design at exit; PYTHONMALLOC=malloc puts Python objects on ASan's heap;
# an impossible allocation returns NULL (NumPy's MemoryError, which tests expect) instead
# of aborting
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=1:allocator_may_return_null=1:log_path=$LOGS/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$LOGS/ubsan"
export PYTHONMALLOC=malloc
export PYTHONPATH="$SITE"
export PYTHONDONTWRITEBYTECODE=1
SHARED="${FASTRISK_SHARED_DATA:-$ROOT/../shared/data}"
if [[ -d "$SHARED" ]]; then export FASTRISK_SHARED_DATA="$(cd "$SHARED" && pwd)"; fi

cd "$RUN"
"$PY" -c "
import fastrisk, fastrisk._buildinfo as b
assert fastrisk.__file__.startswith('$SITE/'), fastrisk.__file__
assert '-fsanitize=address,undefined' in b.CFLAGS, b.CFLAGS
print('sanitize: fastrisk from', fastrisk.__file__, '| cflags', b.CFLAGS)"

kernel_files=()
for t in "${KERNEL_TESTS[@]}"; do
    if [[ -f "tests/$t.py" ]]; then kernel_files+=("tests/$t.py"); fi
done
status=0
echo "sanitize: ${kernel_files[*]}"
"$PY" -m pytest -q -p no:cacheprovider "${kernel_files[@]}" "$@" || status=$?
if [[ $only_kernels == 0 && $status == 0 ]]; then
    others=()
    for f in tests/test_*.py; do
        [[ " ${kernel_files[*]} " == *" $f "* ]] || others+=("$f")
    done
    echo "sanitize: the other test modules"
    "$PY" -m pytest -q -p no:cacheprovider "${others[@]}" "$@" || status=$?
fi

if compgen -G "$LOGS/*" >/dev/null; then
    cat "$LOGS"/* >&2
    # errors fail the run; warnings (e.g. an allocation refused as above) are only shown
    if grep -qE "ERROR: |runtime error" "$LOGS"/*; then
        echo "sanitize: sanitizer errors reported (above)" >&2
        status=1
    fi
fi
if [[ $status == 0 && -z "${FASTRISK_SANITIZE_DIR:-}" ]]; then rm -rf "$WORK"; fi
exit $status
