"""Sidecars of the results that Python scripts write (the study summaries,
studies/summary; bench/*.py), through lnkit's one writer: `lnkit meta` (src/cli/cmd_meta.c over
lnk_meta_write, docs/MODEL.md §9), so that they carry the same provenance keys
as the commands' and the C studies' sidecars, written the same way (atomically).

    import sidecar                      # sys.path: studies/summary
    run = sidecar.Run()                 # start time and clock, now
    ...write results/DIR/fits.csv...
    run.write("results/DIR/fits.csv", inputs=[...], extra={"what": ...})

The recorded command line is this interpreter and its arguments
([sys.executable] + sys.argv, or argv as given); the script itself is recorded
as the first input (its SHA-256 ties the sidecar to the code that ran, beside the git commit
lnkit was built from); threads and ranks are 1 unless given (a Python
summariser is one single-threaded process); "python" (the interpreter's
version) is added to the extra keys.  The lnkit program: $LNKIT, else
build/bin/lnkit of this checkout.  An error of lnkit meta (a missing input, an
unwritable sidecar, ...) ends the script with lnkit's one line and status 2.
Standard library only.
"""
import datetime
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def program():
    """The lnkit program that writes the sidecars."""
    return os.environ.get("LNKIT") or os.path.join(ROOT, "build", "bin", "lnkit")


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def os_string(obj, key, index=None):
    """A string the system gave (a path, an argument) as a sidecar records it
    (docs/MODEL.md section 9), exactly: from KEY_bytes_hex when present, else
    KEY (index: the element of an array such as command_line).  A str as os
    functions take paths: bytes that are not UTF-8 as surrogate escapes."""
    h = obj.get(key + "_bytes_hex")
    if index is not None:
        h = h[index] if h is not None else None
    if h is not None:
        return os.fsdecode(bytes.fromhex(h))
    return obj[key] if index is None else obj[key][index]


def os_form(extra):
    """extra with each string that is not UTF-8 (a path's surrogate escapes)
    in the sidecar's form: its text with U+FFFD for each stray byte, and its
    exact bytes in KEY_bytes_hex (docs/MODEL.md section 9)."""
    out = {}
    for k, v in extra.items():
        out[k] = v
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                b = os.fsencode(v)
                # one U+FFFD a stray byte, as the C writer (surrogateescape: one escape a byte)
                t = b.decode("utf-8", "surrogateescape")
                out[k] = "".join("\ufffd" if "\udc80" <= c <= "\udcff" else c for c in t)
                out[k + "_bytes_hex"] = b.hex()
    return out


def die(who, msg):
    print(f"{who}: {msg}", file=sys.stderr)
    sys.exit(2)


class Run:
    """One run of a script: its start time and clock, what every sidecar it
    writes shares."""

    def __init__(self, argv=None, start=None, script=True):
        self.start = start or now_iso()
        self.t0 = time.monotonic()
        self.argv = list(argv) if argv is not None else [sys.executable] + sys.argv
        self.script = sys.argv[0] if script and sys.argv and \
            os.path.isfile(sys.argv[0]) else None

    def write(self, out, inputs=(), extra=None, seeds=None, threads=1, ranks=1, seconds=None,
              lnkit=None):
        """Write OUT's sidecar (NAME.csv -> NAME.meta.json): inputs (paths,
        recorded with size and SHA-256), extra (a dict of the script's own keys),
        seeds ({name: int}), threads, ranks, the wall seconds (default: since
        the Run began)."""
        prog = lnkit or program()
        who = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "sidecar"
        if not os.access(prog, os.X_OK):
            die(who, f"{prog}: lnkit program not found (run make, or set LNKIT): it writes "
                     "the sidecars")
        ext = dict(extra or {})
        ext.setdefault("python", sys.version.split()[0])
        secs = time.monotonic() - self.t0 if seconds is None else seconds
        cmd = [prog, "meta", "--quiet", "-o", out, "--start", self.start,
               "--seconds", repr(float(secs)), "--threads", str(threads), "--ranks", str(ranks),
               "--extra-file", "-"]
        for p in ([self.script] if self.script else []) + list(inputs):
            cmd += ["--input", p]
        for k, v in (seeds or {}).items():
            cmd += ["--named-seed", f"{k}={int(v)}"]
        cmd += ["--"] + self.argv
        r = subprocess.run(cmd, input=json.dumps(os_form(ext)), capture_output=True, text=True)
        if r.returncode != 0:
            msg = (r.stderr.strip().splitlines() or [f"exit status {r.returncode}"])[-1]
            die(who, f"{out}: sidecar not written: {msg}")
