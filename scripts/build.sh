#!/bin/bash
# Build ctsyncd out of tree: scripts/build.sh [BUILD_DIR [configure options...]]
# Default BUILD_DIR is build/default.  Prints the build directory's path last.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$top/build/default}
shift || true

if [[ -f $top/config.status ]]; then
	echo "build: $top was configured in place; run 'make distclean' there first (builds go to build/)" >&2
	exit 1
fi
if [[ ! -x $top/configure || $top/configure.ac -nt $top/configure || $top/Makefile.am -nt $top/configure ]]; then
	(cd "$top" && autoreconf -fi >/dev/null 2>&1) || { (cd "$top" && autoreconf -fi); exit 1; }
fi
mkdir -p "$dir"
cd "$dir"
want="$*"
if [[ ! -f Makefile || ! -f config.status ]] || [[ "$(./config.status --config)" != "$want" ]]; then
	"$top/configure" "$@" >configure.out 2>&1 || { cat configure.out; exit 1; }
fi
make -j"$(nproc)" >make.out 2>&1 || { cat make.out; exit 1; }
echo "$dir"
