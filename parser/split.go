package parser

import "strings"

// Chunk is one part of a file split on `// -----` lines.
type Chunk struct {
	Text string
	// FirstLine is the 1-based line number, in the original file, of the
	// chunk's first line; pass it to ParseAt.
	FirstLine int
}

// SplitInput splits a file on lines that are exactly `// -----` (surrounding
// whitespace allowed), as `tfc --split-input-file` does. The separator lines
// belong to no chunk; a file without them is one chunk.
func SplitInput(src string) []Chunk {
	var chunks []Chunk
	start, startLine := 0, 1
	line := 1
	for off := 0; off < len(src); {
		end := strings.IndexByte(src[off:], '\n')
		next := len(src)
		if end >= 0 {
			end += off
			next = end + 1
		} else {
			end = len(src)
		}
		if strings.TrimSpace(src[off:end]) == "// -----" {
			chunks = append(chunks, Chunk{Text: src[start:off], FirstLine: startLine})
			start, startLine = next, line+1
		}
		off = next
		line++
	}
	return append(chunks, Chunk{Text: src[start:], FirstLine: startLine})
}
