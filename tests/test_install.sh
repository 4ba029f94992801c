#!/usr/bin/env bash
# make install into a temporary DESTDIR and check what a user gets: the files
# (program, headers, static and shared library with its versioned soname,
# lnkit.pc, man pages), the man pages against --help (tests/check_man.py), the
# example built against the installed lnkit.pc, shared and static, whose top
# eigenvalues must equal `lnkit eigs` on the same inputs (1e-12 relative), the
# Python package imported from the DESTDIR (the same eigenvalues), and make
# uninstall, which must leave no file behind.
#
#   bash tests/test_install.sh [BUILD_DIR]        (make test-install)
set -euo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
T=$(mktemp -d /tmp/lnkit-install.XXXXXX)
trap 'rm -rf "$T"' EXIT
D=$T/dest P=/usr/local
fail() { echo "test-install: FAILED: $*" >&2; exit 1; }

make -s BUILD="$BUILD" install DESTDIR="$D" PREFIX="$P" >/dev/null
R=$D$P
ver=$(sed -n 's/^#define LNK_VERSION "\(.*\)"/\1/p' include/lnkit/sys.h)
sover=${ver%.*}
for f in bin/lnkit lib/liblnkit.a "lib/liblnkit.so.$ver" lib/pkgconfig/lnkit.pc \
         include/lnkit/lnkit.h share/man/man1/lnkit.1 share/man/man1/lnkit-eigs.1; do
    [ -e "$R/$f" ] || fail "$R/$f not installed"
done
[ "$(readlink "$R/lib/liblnkit.so.$sover")" = "liblnkit.so.$ver" ] || fail "liblnkit.so.$sover link"
[ "$(readlink "$R/lib/liblnkit.so")" = "liblnkit.so.$sover" ] || fail "liblnkit.so link"
# (outputs captured first: grep -q would end the pipe early under pipefail)
dyn=$(readelf -d "$R/lib/liblnkit.so.$ver")
grep -q "SONAME.*\[liblnkit.so.$sover\]" <<<"$dyn" || fail "soname"
n_h=$(ls include/lnkit/*.h | wc -l)
[ "$(ls "$R/include/lnkit/"*.h | wc -l)" = "$n_h" ] || fail "headers: not all $n_h installed"
grep -q "^prefix=$P$" "$R/lib/pkgconfig/lnkit.pc" || fail "lnkit.pc prefix"
echo "test-install: installed $(find "$D" -type f | wc -l) files under DESTDIR"

# the man pages against --help of the installed program
python3 tests/check_man.py "$R/bin/lnkit" "$R/share/man/man1" >"$T/man.log" ||
    { cat "$T/man.log"; fail "man pages and --help differ"; }
echo "test-install: man pages agree with --help ($(grep -c options "$T/man.log") pages)"
if command -v man >/dev/null; then
    page=$(man -l "$R/share/man/man1/lnkit-eigs.1" 2>/dev/null)
    grep -q "rng-seed" <<<"$page" || fail "man -l lnkit-eigs.1 does not render"
fi

# the example against the installed lnkit.pc: a staged install is used with
# its prefix pointed at the staging folder (as a sysroot build would)
mkdir -p "$T/pc"
sed "s|^prefix=.*|prefix=$R|" "$R/lib/pkgconfig/lnkit.pc" > "$T/pc/lnkit.pc"
export PKG_CONFIG_PATH=$T/pc
cc -O2 -Wall -Wextra -Werror examples/top_eigs.c $(pkg-config --cflags --libs lnkit) -o "$T/top_eigs"
cc -O2 -Wall -Wextra -Werror examples/top_eigs.c $(pkg-config --cflags lnkit) -Wl,--as-needed \
    -Wl,-Bstatic -llnkit -Wl,-Bdynamic $(pkg-config --static --libs lnkit) -o "$T/top_eigs_static"
libs=$(LD_LIBRARY_PATH=$R/lib ldd "$T/top_eigs")
grep -q "liblnkit.so.$sover => $R/lib/" <<<"$libs" ||
    fail "the shared example does not use the installed liblnkit.so"
libs=$(ldd "$T/top_eigs_static")
! grep -q liblnkit <<<"$libs" || fail "the static example needs liblnkit.so"

W=$T/run
mkdir -p "$W"
cd "$W"
L=$R/bin/lnkit
"$L" init --d 16 --h 2 --L 2 --V 24 --norm-pos pre --seed 3 -o w.safetensors --quiet
"$L" batch --synthetic --config w.json --rows 4 --len 8 --rng-seed 1 -o b.safetensors --quiet
LD_LIBRARY_PATH=$R/lib "$T/top_eigs" w.json w.safetensors b.safetensors 3 > shared.csv 2>/dev/null
"$T/top_eigs_static" w.json w.safetensors b.safetensors 3 > static.csv 2>/dev/null
"$L" eigs --config w.json --weights w.safetensors --batch b.safetensors -k 3 --tol 1e-10 \
    -o cli.csv --quiet
cmp -s shared.csv static.csv || fail "shared and static examples differ"
python3 - <<'PY' || fail "example and lnkit eigs differ"
import csv
ex = [float(r["eigenvalue"]) for r in csv.DictReader(open("shared.csv"))]
cli = [float(r["eigenvalue"]) for r in csv.DictReader(open("cli.csv")) if r["which"] == "top"]
assert len(ex) == 3 and len(cli) == 3, (ex, cli)
for a, b in zip(ex, cli):
    assert abs(a - b) <= 1e-12 * abs(b), (a, b)
print("test-install: example top eigenvalues", ", ".join(f"{x:.12g}" for x in ex), "= lnkit eigs")
PY

# the Python package: installed where Debian's python3 looks (for the real
# PREFIX), imported from the DESTDIR copy with nothing of the clone on the
# path, it loads the DESTDIR's liblnkit.so and gives the top eigenvalues of
# lnkit eigs (1e-12 relative)
PY=${PYTHON:-/usr/bin/python3}
pyver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
pkg=$R/lib/python$pyver/dist-packages
[ -f "$pkg/lnkit/__init__.py" ] && [ -f "$pkg/lnkit/_install.py" ] ||
    fail "the Python package is not in $pkg"
"$PY" -c "import sys; sys.exit('$P/lib/python$pyver/dist-packages' not in sys.path)" ||
    fail "$P/lib/python$pyver/dist-packages is not on $PY's sys.path"
env -u LNKIT_LIB PYTHONPATH="$pkg" "$PY" -I - "$R" <<'PY' ||
import csv, os, sys
sys.path.insert(0, os.environ.get("PYTHONPATH", ""))
import lnkit
root = sys.argv[1]
assert lnkit.__file__.startswith(root), lnkit.__file__
assert os.path.realpath(lnkit.library_path) == os.path.realpath(
    os.path.join(root, "lib", os.path.basename(lnkit.library_path))), lnkit.library_path
m = lnkit.Model.load("w.json", "w.safetensors")
r = lnkit.eigs(m, "b.safetensors", k=3, tol=1e-10)
cli = [float(x["eigenvalue"]) for x in csv.DictReader(open("cli.csv")) if x["which"] == "top"]
assert all(abs(a - b) <= 1e-12 * abs(b) for a, b in zip(r.top, cli)), (r.top, cli)
print("test-install: the installed Python package (%s) gives lnkit eigs's top eigenvalues"
      % lnkit.library_path)
PY
    fail "the installed Python package does not work (run: PYTHONPATH=$pkg $PY -c 'import lnkit')"
cd - >/dev/null

make -s BUILD="$BUILD" uninstall DESTDIR="$D" PREFIX="$P" >/dev/null
left=$(find "$D" -type f -o -type l)
[ -z "$left" ] || fail "make uninstall left: $left"
[ ! -e "$pkg/lnkit" ] || fail "make uninstall left $pkg/lnkit"
echo "test-install: passed (install, man pages, example shared and static, Python package, uninstall)"
