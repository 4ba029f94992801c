#!/usr/bin/python3
"""The man pages agree with --help: every option a command's --help defines is
defined in its man page (lnkit-COMMAND(1)), and every option the page defines
is in --help; the same for `lnkit --help` and lnkit(1), whose command list must
name every command.

usage: check_man.py LNKIT MAN1_DIR      (exit 0 if they agree, 1 with the differences)

An option is "defined" in --help on an option line (1 to 4 spaces, then '-'),
and in a man page on the tag line after .TP.  -h/--help of the commands are
left out on both sides: every command takes them and lnkit(1) says so.
"""
import os
import re
import subprocess
import sys

OPT = re.compile(r"(?<![\w-])(--[A-Za-z][\w-]*|-[A-Za-z])(?![\w-])")


def help_options(text):
    opts = set()
    for line in text.splitlines():
        if re.match(r"^ {1,4}-", line):
            opts.update(OPT.findall(line))
    return opts


def man_options(path):
    lines = open(path, encoding="utf-8").read().splitlines()
    opts = set()
    for i, line in enumerate(lines[:-1]):
        if line.strip() == ".TP":
            tag = re.sub(r"\\f[BIRP]", "", lines[i + 1]).replace("\\-", "-")
            opts.update(OPT.findall(tag))
    return opts


def run(*args):
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"check_man: {' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def main():
    lnkit, mandir = sys.argv[1], sys.argv[2]
    top = run(lnkit, "--help")
    cmds = re.findall(r"^  ([a-z]+)  ", top.split("Commands:")[1].split("\n\n")[0], re.M)
    bad = []
    if len(cmds) < 10:
        bad.append(f"lnkit --help lists only {cmds}")
    pages = {"lnkit": (top, os.path.join(mandir, "lnkit.1"))}
    for c in cmds:
        text = run(lnkit, c, "--help")
        pages[c] = (text, os.path.join(mandir, f"lnkit-{c}.1"))
    for name, (text, page) in pages.items():
        if not os.path.exists(page):
            bad.append(f"{name}: no man page {page}")
            continue
        h, m = help_options(text), man_options(page)
        if name != "lnkit":
            h -= {"-h", "--help"}
            m -= {"-h", "--help"}
        if not h:
            bad.append(f"{name}: no options found in --help")
        for o in sorted(h - m):
            bad.append(f"{name}: {o} is in --help but not in {os.path.basename(page)}")
        for o in sorted(m - h):
            bad.append(f"{name}: {o} is in {os.path.basename(page)} but not in --help")
        print(f"check_man: {name}: {len(h)} options in --help, {len(m)} in the page")
    index = open(pages["lnkit"][1], encoding="utf-8").read()
    for c in cmds:
        if f"lnkit-{c}(1)" not in index:
            bad.append(f"lnkit.1 does not name lnkit-{c}(1)")
    extra = sorted(set(f for f in os.listdir(mandir) if f.startswith("lnkit"))
                   - {os.path.basename(p) for _, p in pages.values()})
    for f in extra:
        bad.append(f"{f}: a man page for no command")
    for b in bad:
        print("check_man: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
