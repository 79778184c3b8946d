#!/usr/bin/env bash
# Follows every tutorial of README.md (this folder), one per language, with
# tutorial_test.sh: each takes a new author from an empty folder to the same
# filter, tint, built and run by `vitrine filter test`, and checks its
# output. A language whose toolchain is missing is skipped, naming what to
# install, unless VITRINE_TEST_ALL_GUESTS=1 (as make test sets it).
#
#   wasm-sdk/check-readme.sh                   builds the server binary first
#   VITRINE_BIN=./vitrine wasm-sdk/check-readme.sh
#
# Run by `make -C wasm-sdk tutorial` and so by `make test`.
set -euo pipefail
GO=${GO:-go}
sdk=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$sdk")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -z "${VITRINE_BIN:-}" ]; then
	echo "building the server binary"
	(cd "$repo" && "$GO" build -o "$tmp/vitrine" .)
	VITRINE_BIN=$tmp/vitrine
fi
export VITRINE_BIN GO

# missing names what a tutorial needs and this machine lacks.
missing() {
	case $1 in
	c-tutorial)
		printf 'int main(void){return 0;}' | clang --target=wasm32-wasi -x c - -o "$tmp/probe.wasm" >/dev/null 2>&1 ||
			echo "clang for wasm32-wasi (apt-get install clang lld wasi-libc libclang-rt-dev-wasm32)" ;;
	as-tutorial)
		# The tutorial installs assemblyscript offline, from the npm cache
		# that make test-deps filled when it installed the compiler.
		command -v npm >/dev/null || echo "npm (apt-get install npm)"
		[ -x "${ASC:-$HOME/.cache/vitrine-test-tools/assemblyscript-0.28.20/node_modules/.bin/asc}" ] ||
			echo "assemblyscript 0.28.20 in the npm cache (make test-deps installs it)" ;;
	rust-tutorial)
		[ -d /usr/lib/rustlib/wasm32-wasi ] || echo "Debian's rustc for wasm32-wasi (apt-get install rustc libstd-rust-dev-wasm32)" ;;
	esac
}

for tag in tutorial c-tutorial as-tutorial rust-tutorial; do
	why=$(missing "$tag")
	if [ -n "$why" ]; then
		if [ "${VITRINE_TEST_ALL_GUESTS:-}" = 1 ]; then
			echo "check-readme.sh: $tag needs $why" >&2
			exit 1
		fi
		echo "check-readme.sh: skipping $tag: it needs $why"
		continue
	fi
	"$sdk/tutorial_test.sh" "$tag"
done
echo "check-readme.sh: ok"
