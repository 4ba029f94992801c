#!/usr/bin/env bash
# Inputs are read once (issue 30, item 7), run by tests/test_inputs.c:
#   bash tests/test_inputs.sh LNKIT
# For every command and every input option it takes (the table CASES below:
# one line a command, its input options and the outputs to compare), the
# input is given three ways: as a regular file, as a FIFO that a writer
# fills once, and as /dev/fd/N (bash process substitution).  Each run must
# end within LIMIT seconds (an input opened a second time waits for a writer
# that is gone: a hang, or reads nothing); its outputs (files and standard
# output) must equal the regular-file run's byte for byte (a sidecar: apart
# from its times and command line); and a sidecar must record the path as
# given, with the size and SHA-256 of the content (sha256sum's).  lnkit meta
# takes regular files only: there a FIFO is refused in one line, exit 2.
# A completeness check: every option of every command's --help whose value
# is a FILE and that is not an output is in the table.
# Prints "ok - ..." / "not ok - ..." and "tests: N passed, N failed, N skipped".
set -u
L=$1
. "$(cd "$(dirname "$0")" && pwd)/harness.sh"
export OPENBLAS_NUM_THREADS=1
LIMIT=${LIMIT:-60}

# --- inputs: a seq2seq and an lm model, batches, a vector, texts, vocabularies, keys
{
    "$L" init --task seq2seq --d 8 --h 2 --L 1 --V 14 --seed 3 -o s.safetensors &&
    "$L" batch --synthetic --config s.json --rows 4 --len 5 --rng-seed 1 -o sb.safetensors &&
    "$L" init --d 8 --h 2 --L 1 --V 20 --seed 4 -o m.safetensors &&
    "$L" batch --synthetic --config m.json --rows 3 --len 6 --rng-seed 2 -o mb.safetensors &&
    "$L" vector --config m.json --random --rng-seed 7 -o v.safetensors &&
    printf 'a b c d\nb c d e f\nc d a\n' > text.txt &&
    printf 'x y z\ny z w v\nz x\n' > tgt.txt &&
    "$L" batch --text text.txt -o tb.safetensors --vocab-out text.vocab &&
    "$L" batch --src text.txt --tgt tgt.txt -o pb.safetensors &&
    printf '1,0\n0,1\n-1,0\n0.2,0.1\n' > keys.csv &&
    printf '{"what": "rows"}' > extra.json &&
    printf 'x\n1\n' > r.csv
} >/dev/null 2>setup.err || { bad "set-up: $(cat setup.err)"; echo "tests: 0 passed, 1 failed, 0 skipped"; exit 1; }

M=(--config m.json --weights m.safetensors --batch mb.safetensors)
# command | input options (the first word of the option's value in ARGS is replaced) |
#   outputs compared (files; "-" the standard output) | ARGS
CASES=(
  "init|--config|w.safetensors w.json|init --config m.json -o w.safetensors --config-out w.json"
  "params|--config|-|params --config m.json"
  "batch|--config|o.safetensors|batch --synthetic --config m.json --rows 2 --len 4 -o o.safetensors"
  "batch text|--text --vocab-in|o.safetensors|batch --text text.txt --vocab-in text.vocab -o o.safetensors --vocab-out o.vocab"
  "batch s2s|--src --tgt --vocab-src --vocab-tgt|o.safetensors|batch --src text.txt --tgt tgt.txt --vocab-src pb.src.vocab --vocab-tgt pb.tgt.vocab -o o.safetensors"
  "eval|--config --weights --batch|-|eval ${M[*]}"
  "hvp|--config --weights --batch --vector|hv.safetensors|hvp ${M[*]} --vector v.safetensors -o hv.safetensors"
  "vector|--config --weights --batch|g.safetensors|vector --gradient ${M[*]} -o g.safetensors"
  "eigs|--config --weights --batch|e.csv e.meta.json|eigs ${M[*]} -k 2 --rng-seed 1 --quiet -o e.csv"
  "trace|--config --weights --batch|t.csv t.meta.json -|trace ${M[*]} --probes 4 --quiet -o t.csv"
  "density|--config --weights --batch|d.csv d.meta.json|density ${M[*]} --runs 2 --steps 6 --sigma-fraction 0.05 --quiet -o d.csv"
  "blocks|--config --weights --batch|bl.csv bl.meta.json|blocks ${M[*]} --block '*.attn.wq' --probes 2 --max-steps 64 --runs 1 --steps 6 --quiet -o bl.csv"
  "select|--keys|sel.csv sel.meta.json|select --keys keys.csv -o sel.csv"
  "meta|--input --config --extra-file|REFUSED|meta -o r.csv --start 2026-01-01T00:00:00Z --seconds 1 --input text.txt --config m.json --extra-file extra.json --quiet -- prog"
)
OUTPUT_OPTS=" -o --output --config-out --vocab-out --grad-out --vectors --mass --nodes --pairs --density --checkpoint "

# the value of OPT in the word list ARGS
value_of() { local opt=$1; shift; while [ $# -gt 1 ]; do [ "$1" = "$opt" ] && { echo "$2"; return; }; shift; done; }
# ARGS with OPT's value replaced by NEW
with_value() {
    local opt=$1 new=$2; shift 2; local out=() v=0
    for a in "$@"; do
        if [ $v = 1 ]; then out+=("$new"); v=0; continue; fi
        out+=("$a"); [ "$a" = "$opt" ] && v=1
    done
    printf '%s\0' "${out[@]}"
}
# a sidecar's content without what differs between two runs of one command
# (times, command line, folder, inputs), the path GIVEN read as FILE
sidecar_stable() {
    python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
for k in ("start_time", "wall_seconds", "command_line", "command_line_bytes_hex", "cwd",
          "cwd_bytes_hex", "inputs"):
    m.pop(k, None)
def same(x):
    if isinstance(x, dict):
        return {k: same(v) for k, v in x.items()}
    if isinstance(x, list):
        return [same(v) for v in x]
    return sys.argv[3] if x == sys.argv[2] else x
print(json.dumps(same(m), sort_keys=True))' "$1" "$2" "$3"
}
# two safetensors files hold the same tensors and metadata, the path GIVEN read as FILE
# (a data set records the names of its source files)
st_same() {
    python3 -c '
import json, struct, sys
def load(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    md = {k: (sys.argv[4] if v == sys.argv[3] else v) for k, v in h.pop("__metadata__", {}).items()}
    return h, md, b[8 + n:]
sys.exit(0 if load(sys.argv[1]) == load(sys.argv[2]) else 1)' "$1" "$2" "$3" "$4"
}
# the entry of the sidecar's inputs with this path: "bytes sha256", or nothing
sidecar_input() {
    python3 -c '
import json, sys
for e in json.load(open(sys.argv[1]))["inputs"]:
    if e["path"] == sys.argv[2]:
        print(e["bytes"], e["sha256"])' "$1" "$2"
}
# run WHERE ARGS...: the command in folder WHERE, standard output to WHERE/stdout; exit status
run_in() { local d=$1; shift; (cd "$d" && timeout -k 5 $LIMIT "$L" "$@" > stdout 2> stderr); }

for c in "${CASES[@]}"; do
    IFS='|' read -r name opts outs args <<< "$c"
    eval "A=($args)"
    # the reference: every input a regular file
    rm -rf ref && mkdir ref && cp ./*.* ref/ 2>/dev/null
    # the reference's exit status (0, or 3 where a command reports eigenpairs that did not
    # converge) is what every other run must give
    refrc=0
    if [ "$outs" != REFUSED ]; then
        run_in ref "${A[@]}"; refrc=$?
        [ $refrc = 0 ] || [ $refrc = 3 ] || { bad "$name: reference run: $(cat ref/stderr)"; continue; }
    fi
    for opt in $opts; do
        file=$(value_of "$opt" "${A[@]}")
        [ -n "$file" ] || { bad "$name $opt: not in the arguments"; continue; }
        want=$(sha256sum < "$file" | cut -d' ' -f1); size=$(stat -c %s "$file")
        for how in fifo devfd; do
            rm -rf run && mkdir run && cp ./*.* run/ 2>/dev/null
            if [ $how = fifo ]; then
                given=in.fifo; mkfifo run/in.fifo
                timeout -k 5 $LIMIT sh -c 'cat "$1" > "$2"' sh "$file" run/in.fifo 2>/dev/null &
                writer=$!
                mapfile -d '' B < <(with_value "$opt" "$given" "${A[@]}")
                run_in run "${B[@]}"; rc=$?
                kill $writer 2>/dev/null; wait $writer 2>/dev/null
            else # a pipe, as <(cat FILE) gives
                exec {fd}< <(cat "$file")
                given=/dev/fd/$fd
                mapfile -d '' B < <(with_value "$opt" "$given" "${A[@]}")
                run_in run "${B[@]}"; rc=$?
                exec {fd}<&-
            fi
            what="$name $opt as a $how"
            if [ $rc = 124 ] || [ $rc = 137 ]; then bad "$what: no end within $LIMIT s (hang)"; continue; fi
            if [ "$outs" = REFUSED ]; then
                if [ $rc = 2 ] && [ "$(wc -l < run/stderr)" = 1 ] && grep -q -- "$opt" run/stderr; then
                    ok "$what: refused ($(cat run/stderr))"
                else
                    bad "$what: exit $rc, expected a one-line refusal naming $opt: $(cat run/stderr)"
                fi
                continue
            fi
            [ $rc = $refrc ] || { bad "$what: exit $rc (the file's: $refrc): $(cat run/stderr)"; continue; }
            diffs=""
            for o in $outs; do
                f=$o; [ "$o" = - ] && f=stdout
                case $f in
                  *.meta.json)
                    [ "$(sidecar_stable "run/$f" "$given" "$file")" = \
                      "$(sidecar_stable "ref/$f" "$given" "$file")" ] || diffs+=" $f"
                    rec=$(sidecar_input "run/$f" "$given")
                    [ "$rec" = "$size $want" ] || diffs+=" $f:inputs[$given]='$rec'" ;;
                  *.safetensors) st_same "run/$f" "ref/$f" "$given" "$file" || diffs+=" $f" ;;
                  *) cmp -s "run/$f" "ref/$f" || diffs+=" $f" ;;
                esac
            done
            if [ -z "$diffs" ]; then ok "$what"; else bad "$what: differs from the regular-file run:$diffs"; fi
        done
    done
done

# completeness: every FILE-valued option of every command that is not an output is in the table
covered=" "
for c in "${CASES[@]}"; do IFS='|' read -r name opts _ _ <<< "$c"; covered+="${name%% *}:${opts// / ${name%% *}:} "; done
missing=""
for cmd in init batch eval hvp vector eigs trace density blocks select params meta; do
    for o in $("$L" "$cmd" --help 2>/dev/null | grep -oE -- '--[a-z-]+ (FILE|C\.json)\b|--extra-file F\b' | cut -d' ' -f1 | sort -u); do
        case "$OUTPUT_OPTS" in *" $o "*) continue ;; esac
        case "$covered" in *" $cmd:$o "*) ;; *) missing+=" $cmd $o," ;; esac
    done
done
if [ -z "$missing" ]; then ok "every input option of every command is covered"; else bad "input options not covered:$missing"; fi

echo "tests: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
