#!/usr/bin/env bash
# Follows a tutorial of README.md (this folder) literally, so that the page
# and what works cannot drift apart: the fenced blocks tagged TAG (the first
# argument; "tutorial", the Go one, by default) are turned into one shell
# script, in the order of the page ("sh TAG" runs as it stands, "go TAG
# main.go" and the like write that file in the current folder), which runs
# with HOME in a temporary folder (the tutorial's ~/filters) and $VITRINE a
# checkout made of this folder and the server binary. It ends with `vitrine
# filter test`; this script then checks that ~/filters/tint/out.png is the
# portrait tinted orange.
#
#   wasm-sdk/tutorial_test.sh [TAG]      builds the server binary first
#   VITRINE_BIN=./vitrine wasm-sdk/tutorial_test.sh [TAG]   uses a built one
#
# check-readme.sh runs it for every language's tag. Needs Go ($GO, else go;
# the check and the Go tutorial run go), libvips (the server binary) and
# the tutorial's own toolchain; nothing from the network (npm runs offline,
# from the npm cache that make test-deps filled).
set -euo pipefail
TAG=${1:-tutorial}
GO=${GO:-go}
sdk=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$sdk")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The Go caches stay where they are: HOME moves, and a fresh cache would
# rebuild the standard library for wasip1.
export GOCACHE GOMODCACHE GOPATH
GOCACHE=$("$GO" env GOCACHE)
GOMODCACHE=$("$GO" env GOMODCACHE)
GOPATH=$("$GO" env GOPATH)
# npm too keeps its cache, and installs from it alone.
export npm_config_cache=${npm_config_cache:-$HOME/.npm} npm_config_offline=true npm_config_update_notifier=false

checkout=$tmp/vitrine
mkdir -p "$checkout" "$tmp/home"
ln -s "$sdk" "$checkout/wasm-sdk"
if [ -n "${VITRINE_BIN:-}" ]; then
	ln -s "$(cd "$(dirname "$VITRINE_BIN")" && pwd)/$(basename "$VITRINE_BIN")" "$checkout/vitrine"
else
	echo "building the server binary"
	(cd "$repo" && "$GO" build -o "$checkout/vitrine" .)
fi

# The tutorial as a script: each tagged block in order.
awk -v tag="$TAG" '
	inblock && /^```[ \t]*$/ { if (file != "") print "TUTORIAL_EOF"; inblock = 0; next }
	inblock { print; next }
	$0 ~ "^```[a-z]+ " tag "([ \t]|$)" {
		n = split($0, w, /[ \t]+/)
		file = n >= 3 ? w[3] : ""
		if (file != "") print "cat > " file " <<'\''TUTORIAL_EOF'\''"
		inblock = 1
	}
' "$sdk/README.md" >"$tmp/tutorial.sh"
if ! grep -q 'filter test' "$tmp/tutorial.sh"; then
	echo "tutorial_test.sh: no $TAG blocks ending with vitrine filter test in README.md" >&2
	exit 1
fi

echo "running the $TAG blocks of wasm-sdk/README.md in $tmp/home"
(cd "$tmp/home" && HOME=$tmp/home VITRINE=$checkout bash -euxo pipefail "$tmp/tutorial.sh")

# out.png is where the tutorial left it: in the filter's folder.
out=$tmp/home/filters/tint/out.png
mkdir -p "$tmp/check"
cat >"$tmp/check/main.go" <<'EOF'
// Command check fails unless the image it is given is tinted towards
// ff8000: on average clearly more red than green, and more green than blue.
package main

import (
	"fmt"
	"image"
	_ "image/png"
	"os"
)

func main() {
	f, err := os.Open(os.Args[1])
	if err != nil {
		fail(err)
	}
	img, _, err := image.Decode(f)
	if err != nil {
		fail(err)
	}
	var r, g, b float64
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			r, g, b = r+float64(cr), g+float64(cg), b+float64(cb)
		}
	}
	n := float64(bounds.Dx()*bounds.Dy()) * 257
	r, g, b = r/n, g/n, b/n
	if r < 1.3*g || g < 1.3*b {
		fail(fmt.Errorf("%s: mean colour %.0f,%.0f,%.0f is not tinted orange", os.Args[1], r, g, b))
	}
	fmt.Printf("%s: %dx%d, mean colour %.0f,%.0f,%.0f: tinted orange\n", os.Args[1], bounds.Dx(), bounds.Dy(), r, g, b)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "tutorial_test.sh:", err)
	os.Exit(1)
}
EOF
(cd "$tmp/check" && "$GO" run main.go "$out")
echo "tutorial_test.sh $TAG: ok"
