#!/bin/sh
# fetch-recorded.sh - put real recorded point clouds into workloads/recorded/ (git-ignored) without
# installing anything system-wide: download Debian's python3-pcl package (which ships PCL's tutorial
# data), unpack it in a temporary folder and copy the .pcd files listed in workloads/recorded.sha256,
# checking every SHA-256 sum. Idempotent: does nothing when all files are present with the right sums.
#
#   table_scene_lms400.pcd               460,400 points, SICK LMS400 laser scan (binary_compressed)
#   bun0.pcd                             112,586 points; despite the name not the Stanford bunny in this
#                                        package but a ~29 x 14 x 3 m outdoor scan (binary_compressed)
#   table_scene_mug_stereo_textured.pcd  organized 640x480 stereo cloud with NaN holes
#   milk_cartoon_all_small_clorox.pcd    organized 640x480 Kinect cloud with NaN holes
#   milk.pcd                             small object cloud, x y z rgba (U4 field)
#   lamppost.pcd                         small ascii cloud
#
# Options via environment: F3D_PCL_DEB=/path/to/python3-pcl_*.deb uses a .deb copied by hand (for a
# machine without apt access). Exit status: 0 files present and verified, 1 failure, 2 no way to fetch.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
dest="$here/recorded"
sums="$here/recorded.sha256"
pkg=python3-pcl

sha256_check() { # reads "sum  name" lines on stdin, run inside $dest
  if command -v sha256sum >/dev/null 2>&1; then sha256sum -c --quiet -
  elif command -v shasum >/dev/null 2>&1; then shasum -a 256 -c --quiet -
  else echo "fetch-recorded: neither sha256sum nor shasum found" >&2; return 1; fi
}

all_present() {
  while read -r _sum name; do [ -f "$dest/$name" ] || return 1; done < "$sums"
  (cd "$dest" && sha256_check < "$sums") >/dev/null 2>&1
}

if [ -d "$dest" ] && all_present; then
  echo "fetch-recorded: recorded clouds present and verified in $dest"
  exit 0
fi

no_apt_help() {
  cat >&2 <<HELP
fetch-recorded: cannot fetch the recorded clouds here ($1).
  What to do: on any Debian 12 / Ubuntu machine with apt, run
      apt-get download $pkg
  copy the downloaded ${pkg}_*.deb to this machine, then run
      F3D_PCL_DEB=/path/to/${pkg}_*.deb $0
  (or run this script there and copy $dest/ over). Everything else works without these files:
  the synthetic workloads need nothing, and the tests that read recorded clouds skip.
HELP
  exit 2
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/f3d-recorded.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

if [ -n "${F3D_PCL_DEB:-}" ]; then
  [ -f "$F3D_PCL_DEB" ] || { echo "fetch-recorded: F3D_PCL_DEB=$F3D_PCL_DEB is not a file" >&2; exit 1; }
  cp "$F3D_PCL_DEB" "$tmp/pkg.deb"
else
  command -v apt-get >/dev/null 2>&1 || no_apt_help "no apt-get"
  # apt-get download needs no root; it writes into the current directory
  if ! (cd "$tmp" && apt-get download "$pkg" >"$tmp/apt.log" 2>&1); then
    cat "$tmp/apt.log" >&2
    no_apt_help "apt-get download $pkg failed (no network, or no package lists: try 'apt-get update' as root)"
  fi
  mv "$tmp"/${pkg}_*.deb "$tmp/pkg.deb"
fi

mkdir -p "$tmp/x"
if command -v dpkg-deb >/dev/null 2>&1; then
  dpkg-deb -x "$tmp/pkg.deb" "$tmp/x"
elif command -v ar >/dev/null 2>&1; then # a .deb is an ar archive holding data.tar.*
  (cd "$tmp" && ar x pkg.deb && tar -xf data.tar.* -C x)
else
  no_apt_help "neither dpkg-deb nor ar to unpack the .deb"
fi

mkdir -p "$dest"
missing=0
while read -r _sum name; do
  src=$(find "$tmp/x" -name "$name" -type f | head -n 1)
  if [ -z "$src" ]; then
    echo "fetch-recorded: $name is not in $pkg" >&2
    missing=1
    continue
  fi
  cp "$src" "$dest/.$name.tmp" && mv "$dest/.$name.tmp" "$dest/$name"
done < "$sums"

if ! (cd "$dest" && sha256_check < "$sums"); then
  echo "fetch-recorded: SHA-256 mismatch (listed above); the package content changed or a download was corrupted." >&2
  echo "  Delete $dest and retry; if it persists, update workloads/recorded.sha256 after checking the files." >&2
  exit 1
fi
[ "$missing" -eq 0 ] || exit 1
echo "fetch-recorded: $(wc -l < "$sums" | tr -d ' ') recorded clouds verified in $dest:"
while read -r _sum name; do echo "  $name ($(wc -c < "$dest/$name" | tr -d ' ') bytes)"; done < "$sums"
