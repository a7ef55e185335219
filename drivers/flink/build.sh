#!/usr/bin/env bash
# Compiles the Flink conformance driver (drivers/flink/src, and the fixes of drivers/flink/fixes) into <repo>/target/flink/classes (only when a source is
# newer than the last build, or the jar changed). Needs a JDK 17+ `javac` and drivers/flink/fetch.sh.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
lib="$repo/target/flink/lib"
classes="$repo/target/flink/classes"
stamp="$classes/.built"

die() { echo "build.sh: $*" >&2; exit 1; }

command -v javac >/dev/null 2>&1 || die "javac not found: install a JDK 17 or newer"
ls "$lib"/flink-dist*.jar >/dev/null 2>&1 || die "no flink-dist jar in $lib: run drivers/flink/fetch.sh first"

jar="$(ls "$lib"/flink-dist*.jar | head -n1)"
if [[ -f "$stamp" ]] \
  && [[ -z "$(find "$here/src" "$here/fixes" -name '*.java' -newer "$stamp" -print -quit)" ]] \
  && [[ ! "$(readlink -f "$jar")" -nt "$stamp" ]] \
  && [[ "$(cat "$stamp")" == "$(readlink -f "$jar")" ]]; then
  exit 0
fi

rm -rf "$classes"
mkdir -p "$classes"
find "$here/src" "$here/fixes" -name '*.java' > "$classes/.sources"
# Flink's own deprecations are used on purpose (2.3.0's API as it is): no notes about them.
javac --release 17 -nowarn -Xlint:-deprecation -encoding UTF-8 -cp "$jar" -d "$classes" @"$classes/.sources" \
  2> >(grep -v '^Note: ' >&2) \
  || die "javac failed (is $jar a Flink 2.3.x flink-dist?)"
rm -f "$classes/.sources"
readlink -f "$jar" > "$stamp"
echo "build.sh: compiled into $classes" >&2
