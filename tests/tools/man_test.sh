#!/usr/bin/env bash
# `cmake --install` puts ipusim and its manual page under a prefix; man renders the page with
# no warning, and it documents every command and every option that the command's --help lists.
#   tests/tools/man_test.sh BUILD_DIR
set -euo pipefail
build="$1"
prefix="$(mktemp -d)"
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
page="$prefix/share/man/man1/ipusim.1"
[[ -x "$prefix/bin/ipusim" ]] || { echo "ipusim not installed in $prefix/bin" >&2; exit 1; }
[[ -f "$page" ]] || { echo "no manual page at $page" >&2; exit 1; }

warnings="$(groff -man -Tutf8 -ww -z "$page" 2>&1)"
if [[ -n "$warnings" ]]; then
  echo "groff warns about the page: $warnings" >&2
  exit 1
fi
text="$(MANWIDTH=200 man -l "$page" 2>/dev/null | col -b)"

expect() {  # expect TEXT: the rendered page holds TEXT
  if ! grep -qF -- "$1" <<<"$text"; then
    echo "the manual page lacks '$1'" >&2
    exit 1
  fi
}

expect "EXIT STATUS"
expect "CONFIG KEYS"
# Every declared key of the pipeline, hardware and data sections, as the README's key tables list them.
readme="$(dirname "$0")/../../README.md"
for section in pipeline hardware data; do
  keys="$(awk -v heading="### \`$section\`" '$0 == heading {on = 1; next}
    on && /^\| `/ {split($0, cell, "`"); print cell[2]; next} on && /^\|/ {table = 1; next}
    table {exit}' "$readme")"
  [[ "$(wc -w <<<"$keys")" -ge 8 ]] || { echo "too few $section keys in the README: $keys" >&2; exit 1; }
  for key in $keys; do
    expect "$key (default: "
  done
done
expect "3 does not fit in memory"
# The commands and options as --help prints them, which CLI11 formats apart from the page.
commands="$("$prefix/bin/ipusim" --help | awk '/^Subcommands:/ {on = 1; next} on && !NF {exit} on {print $1}')"
[[ "$(wc -w <<<"$commands")" -ge 14 ]] || { echo "too few commands: $commands" >&2; exit 1; }
for command in $commands; do
  expect "ipusim $command"
  for option in $("$prefix/bin/ipusim" "$command" --help | grep -oE -- '--[a-z][a-z0-9-]+' | sort -u); do
    [[ "$option" == "--help" ]] && continue
    expect "$option"
  done
done
echo "man: installed, renders without warnings, documents $(wc -w <<<"$commands") commands"
