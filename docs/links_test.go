package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// linkRE is a Markdown link or image: its target, up to a fragment.
var linkRE = regexp.MustCompile(`\]\(([^)#\s]+)(#[^)\s]*)?\)`)

// TestDocLinks: every relative link of the README and the guides names a
// file of the repository, and the README links every guide.
func TestDocLinks(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	guides, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(root, "README.md")
	linked := map[string]bool{}
	for _, path := range append([]string{readme}, guides...) {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range linkRE.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file := filepath.Join(filepath.Dir(path), filepath.FromSlash(target))
			if _, err := os.Stat(file); err != nil {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s links %s, which does not exist", rel, target)
			}
			if path == readme {
				linked[file] = true
			}
		}
	}
	for _, g := range guides {
		if !linked[g] {
			t.Errorf("the README does not link %s", filepath.Base(g))
		}
	}
}
