#!/usr/bin/env bash
# The documents against what they describe (make test-docs, part of make test):
#  1. docs/guide/commands.md and study-options.md are what `make docs` (tools/cli_doc
#     --markdown from the option tables; tools/study_doc.sh from the study programs'
#     --help) makes now: an option added, renamed or given a new default without
#     `make docs` fails here, and so does a study program missing from the reference;
#  2. every relative link of README.md and docs/**/*.md resolves: the file exists and,
#     for FILE#anchor, FILE has a heading of that anchor (GitHub's rule);
#  3. every man page renders (man -l, groff warnings on) without a warning;
#  4. lnkit(1)'s ENVIRONMENT names every environment variable that src/, studies/,
#     bench/ and python/lnkit read (getenv, os.environ);
#  5. every lnkit-CMD(1)'s SYNOPSIS is `lnkit CMD --help`'s usage, and its text names no
#     option by an old name.
#
#   bash tests/test_docs.sh [BUILD_DIR]
set -euo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
fail() { echo "test-docs: FAILED: $*" >&2; exit 1; }
T=$(mktemp -d /tmp/lnkit-docs.XXXXXX)
trap 'rm -rf "$T"' EXIT

# 1. the generated command reference
"$BUILD/tools/cli_doc" --markdown > "$T/commands.md" || fail "cli_doc --markdown failed"
if ! cmp -s "$T/commands.md" docs/guide/commands.md; then
    diff -u docs/guide/commands.md "$T/commands.md" | head -n 20 >&2 || true
    fail "docs/guide/commands.md differs from the option tables: run make docs"
fi
n_cmd=$(grep -c '^## lnkit ' docs/guide/commands.md)
n_help=$(bin/lnkit --help | awk '/^Commands:/ {f = 1; next} f && /^$/ {exit} f' | wc -l)
[ "$n_cmd" = "$n_help" ] || fail "commands.md has $n_cmd commands, lnkit --help lists $n_help"

# ... and the study programs' reference (their --help), one section for every studies/*.c
bash tools/study_doc.sh "$BUILD" > "$T/study-options.md" || fail "tools/study_doc.sh failed"
if ! cmp -s "$T/study-options.md" docs/guide/study-options.md; then
    diff -u docs/guide/study-options.md "$T/study-options.md" | head -n 20 >&2 || true
    fail "docs/guide/study-options.md differs from the programs' --help: run make docs"
fi
have=$(sed -n 's/^## //p' docs/guide/study-options.md | sort | tr '\n' ' ')
want=$(ls studies/*.c | xargs -n1 basename | sed 's/\.c$//' | sort | tr '\n' ' ')
[ "$have" = "$want" ] || fail "study-options.md documents '$have', studies/ has '$want'"
# ... and the benchmarks' (bench-options.md), one section for every bench/*.c
bash tools/study_doc.sh "$BUILD" bench > "$T/bench-options.md" || fail "tools/study_doc.sh bench failed"
if ! cmp -s "$T/bench-options.md" docs/guide/bench-options.md; then
    diff -u docs/guide/bench-options.md "$T/bench-options.md" | head -n 20 >&2 || true
    fail "docs/guide/bench-options.md differs from the benchmarks' --help: run make docs"
fi
have_b=$(sed -n 's/^## //p' docs/guide/bench-options.md | sort | tr '\n' ' ')
want_b=$(ls bench/*.c | xargs -n1 basename | sed 's/\.c$//' | sort | tr '\n' ' ')
[ "$have_b" = "$want_b" ] || fail "bench-options.md documents '$have_b', bench/ has '$want_b'"

# the README stays a front page (issue 31: at most 250 lines); the rest is the guide's
n_readme=$(wc -l < README.md)
[ "$n_readme" -le 250 ] || fail "README.md has $n_readme lines (at most 250: move detail to docs/guide/)"

# 2. links
"$PY" - README.md docs/*.md docs/guide/*.md <<'PY' || fail "links (above)"
import os, re, sys
def slug(h):
    h = re.sub(r"[`*_]|<[^>]*>", "", h.strip().lower())
    return re.sub(r"[^\w\- ]", "", h).replace(" ", "-")
def anchors(path, cache={}):
    if path not in cache:
        text, seen, out = open(path, encoding="utf-8").read(), {}, set()
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        for h in re.findall(r"^#{1,6} +(.*?) *#*$", text, re.M):
            s = slug(h)
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
        cache[path] = out
    return cache[path]
bad, n = [], 0
for md in sys.argv[1:]:
    text = re.sub(r"```.*?```", "", open(md, encoding="utf-8").read(), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        n += 1
        f, _, anchor = target.partition("#")
        path = os.path.normpath(os.path.join(os.path.dirname(md), f)) if f else md
        if not os.path.exists(path):
            bad.append(f"{md}: link to {target}: no file {path}")
        elif anchor and path.endswith(".md") and anchor not in anchors(path):
            bad.append(f"{md}: link to {target}: no heading #{anchor} in {path}")
for b in bad:
    print("test-docs:", b, file=sys.stderr)
print(f"test-docs: {n} links in {len(sys.argv) - 1} files", "resolve" if not bad else "")
sys.exit(1 if bad else 0)
PY

# 3. the man pages render without a warning (the built ones: OPTIONS generated)
if command -v man >/dev/null; then
    for p in "$BUILD"/man/*.1; do
        # (a long word that cannot be adjusted or broken is layout, not a defect)
        warn=$(MANWIDTH=80 man --warnings -l "$p" 2>&1 >/dev/null |
               grep -v 'cannot adjust line\|cannot break line' || true)
        [ -z "$warn" ] || fail "man -l $p: $warn"
        MANWIDTH=80 man -l "$p" 2>/dev/null | grep -q . || fail "man -l $p printed nothing"
    done
    man_ok="$(ls "$BUILD"/man/*.1 | wc -l) man pages render"
else
    man_ok="man pages not rendered (no man: apt-get install man-db)"
fi

# 4. every environment variable read is documented in lnkit(1)'s ENVIRONMENT
env_sec=$(awk '/^\.SH ENVIRONMENT/ {f = 1; next} f && /^\.SH/ {exit} f' man/lnkit.1)
# (names passed to getenv/env/os.environ, and whole string literals LNK_*, LNKIT*, OPENBLAS_*,
# which tables of names hand to such calls)
vars=$( { grep -rhoE '(getenv|[^a-z_]env|environ\.get|environ\[)\(? *"[A-Z][A-Z0-9_]+"' \
              src studies bench python/lnkit --include='*.c' --include='*.h' --include='*.py'
          grep -rhoE '"(LNK_|LNKIT|OPENBLAS_)[A-Z0-9_]*[A-Z0-9]"' \
              src studies bench python/lnkit --include='*.c' --include='*.h' --include='*.py'; } |
       grep -oE '"[A-Z][A-Z0-9_]+"' | tr -d '"' | sort -u)
[ -n "$vars" ] || fail "found no environment variable read: the search is broken"
missing=""
for v in $vars; do
    grep -q "^\.B $v\$" <<<"$env_sec" || missing="$missing $v"
done
[ -z "$missing" ] || fail "man/lnkit.1 ENVIRONMENT does not describe:$missing"
# 5. each man page's SYNOPSIS is its command's usage in --help (rendered, spaces collapsed),
#    and its hand-written text names no option by its old name (.was; the column eig_steps
#    is a file's, not an option's)
n_syn=0
if command -v man >/dev/null; then
    for p in "$BUILD"/man/lnkit-*.1; do
        c=${p##*/lnkit-}; c=${c%.1}
        syn=$(LC_ALL=C MANWIDTH=2000 man -l "$p" 2>/dev/null |
              awk '/^SYNOPSIS/ {f = 1; next} /^[A-Z]/ {f = 0} f' | tr -s ' \n' '  ' |
              sed 's/^ //; s/ $//')
        use=$(bin/lnkit "$c" --help | awk 'NR == 1 {sub(/^usage: /, "")} /^$/ {e = 1} !e' |
              tr -s ' \n' '  ' | sed 's/^ //; s/ $//')
        [ "$syn" = "$use" ] || fail "man lnkit-$c SYNOPSIS '$syn' is not its --help usage '$use'"
        n_syn=$((n_syn + 1))
        txt=$(sed 's/\\-/-/g' "man/lnkit-$c.1")
        for old in $(LNK_TEST_OPTIONS=table bin/lnkit "$c" | cut -f5 | grep . || true); do
            w=--$old
            case $old in *-*) w=$old;; esac
            if grep -nwF -- "$w" <<<"$txt" >&2; then
                fail "man/lnkit-$c.1 names --$old, now --$(LNK_TEST_OPTIONS=table bin/lnkit "$c" |
                      awk -F'\t' -v o="$old" '$5 == o {print $1}')"
            fi
        done
    done
fi
[ "$n_syn" -ge 12 ] || [ -z "$(command -v man)" ] || fail "only $n_syn man pages' SYNOPSIS checked"

echo "test-docs: passed: $n_syn SYNOPSIS = --help usage; commands.md = the option tables ($n_cmd commands), study-options.md = the $(wc -w <<<"$have") studies' --help, bench-options.md = the $(wc -w <<<"$have_b") benchmarks'; $man_ok;" \
     "ENVIRONMENT names all $(wc -w <<<"$vars") variables read ($(echo $vars))"
