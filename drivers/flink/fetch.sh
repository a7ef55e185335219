#!/usr/bin/env bash
# Puts Flink 2.3.0's flink-dist jar (and the log4j jars beside it) into <repo>/target/flink/lib/.
#
#   drivers/flink/fetch.sh                          # download apache-flink-libraries 2.3.0 from PyPI
#   FLINK_DIST=/path/to/flink-dist.jar drivers/flink/fetch.sh   # use your own build instead
#
# Idempotent: does nothing when the jars are already in place. The wheel is cached in
# <repo>/target/flink/cache (override with FLINK_WHEEL_CACHE).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
lib="$repo/target/flink/lib"
cache="${FLINK_WHEEL_CACHE:-$repo/target/flink/cache}"
version=2.3.0
wheel_sha256=38ece876553286b3a285cf344c2d2038f8a7ca10da5df54d5107250386d64151

die() { echo "fetch.sh: $*" >&2; exit 1; }

mkdir -p "$lib"

if [[ -n "${FLINK_DIST:-}" ]]; then
  [[ -f "$FLINK_DIST" ]] || die "FLINK_DIST=$FLINK_DIST is not a file"
  case "$FLINK_DIST" in
    *.jar) ;;
    *) die "FLINK_DIST=$FLINK_DIST does not end in .jar (point it at flink-dist-*.jar)";;
  esac
  # A link, so that a rebuilt jar is picked up; other flink-dist jars are moved out of the way.
  dist_abs="$(cd "$(dirname "$FLINK_DIST")" && pwd)/$(basename "$FLINK_DIST")"
  for old in "$lib"/flink-dist*.jar; do
    [[ -e "$old" || -L "$old" ]] || continue
    [[ "$(readlink -f "$old")" == "$(readlink -f "$dist_abs")" ]] && continue
    rm -f "$old"
  done
  ln -sf "$dist_abs" "$lib/flink-dist.jar"
  # The log4j jars are optional (they only silence SLF4J); take them from beside the jar if any.
  for j in "$(dirname "$dist_abs")"/log4j-*.jar; do
    [[ -f "$j" ]] && ln -sf "$j" "$lib/$(basename "$j")"
  done
  echo "fetch.sh: using $dist_abs" >&2
  exit 0
fi

if [[ -f "$lib/flink-dist-$version.jar" ]] && ls "$lib"/log4j-*.jar >/dev/null 2>&1; then
  exit 0
fi

# A link left by an earlier FLINK_DIST run would shadow the downloaded jar.
rm -f "$lib/flink-dist.jar"

wheel="$(ls "$cache"/apache_flink_libraries-"$version"-*.whl 2>/dev/null | head -n1 || true)"
if [[ -z "$wheel" ]]; then
  command -v pip >/dev/null 2>&1 || command -v pip3 >/dev/null 2>&1 \
    || die "neither pip nor pip3 found: install pip, or set FLINK_DIST=/path/to/flink-dist.jar"
  pip_cmd="$(command -v pip || command -v pip3)"
  mkdir -p "$cache"
  echo "fetch.sh: downloading apache-flink-libraries==$version from PyPI (about 330 MB) into $cache" >&2
  "$pip_cmd" download --no-deps --only-binary=:all: "apache-flink-libraries==$version" -d "$cache" >&2 \
    || "$pip_cmd" download --no-deps "apache-flink-libraries==$version" -d "$cache" >&2 \
    || die "pip download failed (no network?); set FLINK_DIST=/path/to/flink-dist.jar to use a local jar"
  wheel="$(ls "$cache"/apache_flink_libraries-"$version"*.whl "$cache"/apache-flink-libraries-"$version"*.tar.gz 2>/dev/null | head -n1 || true)"
  [[ -n "$wheel" ]] || die "pip download succeeded but no apache-flink-libraries $version file is in $cache"
fi

actual="$(sha256sum "$wheel" | cut -d' ' -f1)"
if [[ "$actual" != "$wheel_sha256" ]]; then
  die "sha256 of $wheel is $actual, expected $wheel_sha256 (delete it to download again)"
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if command -v unzip >/dev/null 2>&1; then
  unzip -q -o "$wheel" "pyflink/lib/flink-dist-$version.jar" 'pyflink/lib/log4j-*.jar' -d "$tmp" \
    || die "$wheel does not hold pyflink/lib/flink-dist-$version.jar"
else
  # No unzip on the machine: Python's zipfile takes the same members.
  python3 - "$wheel" "$tmp" "$version" <<'PY' || die "$wheel does not hold pyflink/lib/flink-dist-$version.jar"
import fnmatch, sys, zipfile
wheel, out, version = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist()
             if n == f"pyflink/lib/flink-dist-{version}.jar" or fnmatch.fnmatch(n, "pyflink/lib/log4j-*.jar")]
    if not any(n.endswith(f"flink-dist-{version}.jar") for n in names):
        sys.exit(1)
    for n in names:
        z.extract(n, out)
PY
fi
mv "$tmp"/pyflink/lib/*.jar "$lib/"
echo "fetch.sh: $(ls "$lib" | tr '\n' ' ')in $lib" >&2
