package parser

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestTmpSlow(t *testing.T) {
	dir := os.Getenv("CORPUS")
	files, _ := filepath.Glob(dir + "/*")
	worst := time.Duration(0)
	for _, f := range files {
		b, _ := os.ReadFile(f)
		s := string(b)
		i := strings.Index(s, "string(")
		if i < 0 {
			continue
		}
		src, err := strconv.Unquote(strings.TrimSpace(s[i+7 : len(strings.TrimSpace(s))-1]))
		if err != nil {
			continue
		}
		start := time.Now()
		requireSameTokens(t, src)
		p := newParser("fuzz.tir", src, 1)
		m, err := p.parse()
		if err == nil && !p.sawForwardRef {
			roundTrip(t, m)
		}
		d := time.Since(start)
		if d > worst {
			worst = d
			t.Logf("%s: %v (%d bytes)", filepath.Base(f), d, len(src))
		}
	}
}
