#!/bin/bash
# Build the Debian package from a clean copy of this tree and check it
# with lintian:
#   scripts/build-deb.sh [OUTDIR]          (default build/deb)
# The copy holds the files git tracks (and new ones it does not ignore),
# so nothing of an earlier build leaks in.  Ends with the path of the .deb;
# exits non-zero if the build fails or lintian reports an error or a
# warning.  DEB_BUILD_OPTIONS is passed on (the suite sets nocheck: it
# runs the tests itself).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$top/build/deb}")
version=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
ac_version=$(sed -n 's/^AC_INIT(\[ctsyncd\], \[\([^]]*\)\].*/\1/p' "$top/configure.ac")
if [[ $version != "$ac_version" ]]; then
	echo "build-deb: debian/changelog says $version, configure.ac's AC_INIT $ac_version" >&2
	exit 1
fi

rm -rf "$out"
mkdir -p "$out/ctsyncd-$version"
(cd "$top" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$out/ctsyncd-$version")
cd "$out/ctsyncd-$version"
if ! dpkg-buildpackage -us -uc -b -j2 >"$out/build.log" 2>&1; then
	tail -n 40 "$out/build.log"
	echo "build-deb: dpkg-buildpackage failed (log: $out/build.log)" >&2
	exit 1
fi
cd "$out"
deb=$(ls "$out"/ctsyncd_"$version"_*.deb)
changes=$(ls "$out"/ctsyncd_"$version"_*.changes)
# Every tag lintian prints at E: or W: fails; I: (information) and the
# overridden ones (each with its reason in debian/*lintian-overrides) do not.
lintian --fail-on error,warning "$changes" >"$out/lintian.out" 2>&1 || {
	cat "$out/lintian.out"
	echo "build-deb: lintian found errors or warnings" >&2
	exit 1
}
cat "$out/lintian.out"
echo "$deb"
