#!/bin/bash
# Tries lnkit as a new user would, on a fresh Debian 12 (bookworm) root.
#
#   bash tools/fresh-root.sh ['COMMANDS']       (run from the checkout, as root)
#
# Builds a minimal root with debootstrap (variant minbase, plus gcc, make, libc6-dev, git and
# ca-certificates: what a new machine of this kind has), caches it in $FRESH_BASE (default
# /var/tmp/lnkit-fresh-base), copies it afresh to $FRESH_ROOT (default
# /var/tmp/lnkit-fresh-root), makes a plain clone of the checkout's committed HEAD in
# /work/lnkit inside it (nothing beside it: the repository alone, as a user who clones it gets
# it), and runs there, in a chroot with /proc, /dev and /sys mounted, the README's two commands
# (the first ```sh block of README.md), each on its own and timed, or COMMANDS if given. Then it
# checks that `git status` in the clone is clean. Exit status: 0 if every command passed and the
# tree is clean. Full log: $FRESH_LOG (default /tmp/fresh-root.log); its last lines and the
# times are printed. Needs root and the Debian mirror of /etc/apt; installs debootstrap with
# apt-get when missing. The first run takes a few minutes for debootstrap.
set -u
base=${FRESH_BASE:-/var/tmp/lnkit-fresh-base} root=${FRESH_ROOT:-/var/tmp/lnkit-fresh-root}
log=${FRESH_LOG:-/tmp/fresh-root.log}
top=$(git rev-parse --show-toplevel) || { echo "fresh-root: run it inside the project's checkout"; exit 2; }
if [[ $# -gt 0 ]]; then
  cmds=("$1")
else
  # the README's two commands, without their comments
  mapfile -t cmds < <(awk '/^```sh$/ { f = 1; next } f && /^```$/ { exit }
                           f { sub(/[ \t]*#.*/, ""); if ($0 != "") print }' "$top/README.md")
  [[ ${#cmds[@]} -ge 1 ]] || { echo "fresh-root: no command block at the top of README.md"; exit 2; }
fi
[[ $(id -u) == 0 ]] || { echo "fresh-root: needs root (chroot, mount)"; exit 2; }
command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null; } \
  || { echo "fresh-root: cannot install debootstrap"; exit 2; }
mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
[[ -n $mirror ]] || mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null)
: > "$log"
if [[ ! -f $base/.ready ]]; then
  rm -rf "$base"
  debootstrap --variant=minbase --include=gcc,make,libc6-dev,ca-certificates,git bookworm "$base" "$mirror" >>"$log" 2>&1 \
    || { echo "fresh-root: debootstrap failed: $(tail -n 2 "$log")"; exit 2; }
  cp /etc/apt/sources.list.d/*.sources "$base/etc/apt/sources.list.d/" 2>/dev/null
  cp /etc/apt/sources.list "$base/etc/apt/" 2>/dev/null
  touch "$base/.ready"
fi
cleanup() { for m in proc dev sys; do mountpoint -q "$root/$m" && umount "$root/$m"; done; true; }
trap cleanup EXIT
cleanup
for m in proc dev sys; do mountpoint -q "$root/$m" && { echo "fresh-root: $root/$m still mounted"; exit 2; }; done
rm -rf --one-file-system "$root" && cp -a "$base" "$root" || exit 2
mkdir -p "$root/work" && git clone -q "$top" "$root/work/lnkit" || exit 2
head=$(git -C "$root/work/lnkit" rev-parse HEAD)
mount --bind /proc "$root/proc"; mount --bind /dev "$root/dev"; mount --bind /sys "$root/sys"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null
in_root() { chroot "$root" /bin/bash -c "cd /work/lnkit && export HOME=/root CI=true && $1"; }
in_root "apt-get update -qq" >>"$log" 2>&1
rc=0 times=()
start=$(date +%s)
for c in "${cmds[@]}"; do
  t0=$(date +%s)
  echo "fresh-root: \$ $c" >>"$log"
  in_root "$c" >>"$log" 2>&1; st=$?
  times+=("'$c' exit $st in $(( $(date +%s) - t0 )) s")
  if [[ $st != 0 ]]; then rc=$st; break; fi
done
if [[ $rc == 0 ]]; then
  dirty=$(in_root "git status --porcelain" 2>&1)
  if [[ -n $dirty ]]; then
    echo "fresh-root: git status is not clean after the commands:" >>"$log"
    echo "$dirty" >>"$log"
    times+=("git status: not clean ($(echo "$dirty" | wc -l) entries)"); rc=1
  else
    times+=("git status: clean")
  fi
fi
tail -n 8 "$log"
echo "fresh-root: commit $head, a plain clone on a fresh Debian 12 root:"
for t in "${times[@]}"; do echo "fresh-root:   $t"; done
echo "fresh-root: exit $rc in $(( $(date +%s) - start )) s (log: $log)"
exit $rc
