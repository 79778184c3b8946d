// Package layout holds the repository's shape as tests: which of this
// repository's packages each package may import (layering_test.go) and how
// long a file and a function may grow (size_test.go), and that the documents
// hold together: every relative link of every README.md resolves, and the
// front README stays short (docs_test.go). It reads the source
// with go/parser and compiles nothing else, so `make vet` runs it in a
// second, without cgo or libvips.
package layout
