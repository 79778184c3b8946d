package layout

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// maxFrontLines is the length of the front README: what a newcomer reads in
// ten minutes. Topics go to the README of the folder that implements them.
const maxFrontLines = 400

// TestREADMELinks follows every relative link of every README.md in the
// repository: the file it names exists, inside the repository, and a
// #fragment names a heading of the document it points at, as GitHub makes
// anchors of headings. It also holds the front README to maxFrontLines.
func TestREADMELinks(t *testing.T) {
	root, _ := repo(t)
	docs := readmes(t, root)
	if len(docs) == 0 {
		t.Fatal("no README.md found")
	}
	anchors := map[string]map[string]bool{} // by slash path from the root
	for _, doc := range docs {
		src, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		anchors[doc] = headingAnchors(string(src))
	}
	for _, doc := range docs {
		src, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links(string(src)) {
			checkLink(t, root, doc, l, anchors)
		}
	}

	front, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := lineCount(front); n > maxFrontLines {
		t.Errorf("README.md is %d lines, over the limit of %d: move a topic to the README of the folder that implements it", n, maxFrontLines)
	}
}

// checkLink reports a link of doc whose file or heading does not exist.
func checkLink(t *testing.T, root, doc string, l link, anchors map[string]map[string]bool) {
	t.Helper()
	target, frag, _ := strings.Cut(l.target, "#")
	file := doc
	if target != "" {
		file = path.Clean(path.Join(path.Dir(doc), target))
		if file == ".." || strings.HasPrefix(file, "../") {
			t.Errorf("%s:%d: link %s leaves the repository", doc, l.line, l.target)
			return
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(file))); err != nil {
			t.Errorf("%s:%d: link %s names %s, which the repository does not hold", doc, l.line, l.target, file)
			return
		}
	}
	if frag == "" {
		return
	}
	heads, ok := anchors[file]
	if !ok && strings.HasSuffix(file, ".md") {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			t.Errorf("%s:%d: %v", doc, l.line, err)
			return
		}
		heads = headingAnchors(string(src))
		anchors[file] = heads
	}
	if !heads[frag] {
		t.Errorf("%s:%d: link %s: %s has no heading whose anchor is #%s", doc, l.line, l.target, file, frag)
	}
}

// readmes lists every README.md of the repository as a slash path from the
// root, skipping what goFiles skips (testdata, hidden folders, ./data) and
// installed packages (node_modules).
func readmes(t *testing.T, root string) []string {
	t.Helper()
	var docs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if p == filepath.Join(root, "data") {
				return filepath.SkipDir
			}
			return nil
		}
		if name != "README.md" {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		docs = append(docs, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// link is one inline Markdown link or image: its target and its line.
type link struct {
	target string
	line   int
}

var (
	linkRE     = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	codeSpanRE = regexp.MustCompile("`[^`]*`")
	headingRE  = regexp.MustCompile(`^#{1,6}[ \t]+(.*?)[ \t#]*$`)
	externalRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`) // https:, mailto:, ...
)

// links returns the relative links of a Markdown document, outside fenced
// code blocks and code spans.
func links(src string) []link {
	var out []link
	for i, line := range proseLines(src) {
		if line == "" {
			continue
		}
		line = codeSpanRE.ReplaceAllString(line, "")
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			if externalRE.MatchString(m[1]) {
				continue
			}
			out = append(out, link{target: m[1], line: i + 1})
		}
	}
	return out
}

// headingAnchors returns the anchors GitHub gives the ATX headings of a
// Markdown document: the slug of each, and slug-1, slug-2, ... for repeats.
func headingAnchors(src string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLines(src) {
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			anchors[s+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[s] = true
		}
		seen[s]++
	}
	return anchors
}

// slug is GitHub's anchor of a heading: lower case, spaces to '-', and every
// other character that is not a letter, a digit, '-' or '_' dropped.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// proseLines returns the document's lines with those of fenced code blocks
// (``` or ~~~) blanked, so that a shell comment is no heading and a code
// sample no link; line numbers stay as they are.
func proseLines(src string) []string {
	lines := strings.Split(src, "\n")
	fence := ""
	for i, line := range lines {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
			lines[i] = ""
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			lines[i] = ""
		}
	}
	return lines
}

// TestSlug checks slug on headings of this repository's documents and on
// GitHub's rules for punctuation.
func TestSlug(t *testing.T) {
	t.Parallel()
	for heading, want := range map[string]string{
		"Perceptual quality":                          "perceptual-quality",
		"schema/: what engine, filters and api share": "schema-what-engine-filters-and-api-share",
		"The manifest, `filter.json`":                 "the-manifest-filterjson",
		"Vendored: tus-js-client":                     "vendored-tus-js-client",
		"Rate limits: cost":                           "rate-limits-cost",
		"snake_case and  two spaces":                  "snake_case-and--two-spaces",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}
