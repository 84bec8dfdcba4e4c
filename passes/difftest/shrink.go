package difftest

import (
	"strconv"
	"strings"
)

// smallExtents maps the extents of model-sized programs (Llama hidden and
// MLP sizes, sequence lengths, a 64 Mi-element vector) to extents the
// interpreter runs in microseconds. Distinct extents stay distinct, so
// that shapes that must differ still do.
var smallExtents = map[int64]int64{
	1024:     8,
	2048:     8,
	4096:     8,
	8192:     16,
	11008:    20,
	14336:    24,
	16384:    16,
	28672:    12,
	32768:    4,
	65536:    32,
	131072:   32,
	67108864: 64,
}

// smallExtent returns the replacement of a large extent: from the table,
// or n/512 for other multiples of 512; 0 if n stays.
func smallExtent(n int64) int64 {
	if s, ok := smallExtents[n]; ok {
		return s
	}
	if n >= 1024 && n%512 == 0 && n/512 <= 64 {
		return n / 512
	}
	return 0
}

// ShrinkShapes rewrites a .tir text so that its tensors are small: every
// large extent of a type (`tensor<4096x8192xbf16>`) and every integer
// that equals one elsewhere (`sizes = [4096, 16]`, `row_len = 8192`) is
// replaced consistently, 4096 by 8, 8192 by 16, 28672 by 12 and so on.
// Float literals (`4096.0`) and names (`%x4096`) are left alone. A text
// whose shapes no longer fit together (a reshape to a product of large
// extents) then fails to verify and is skipped by the tests.
func ShrinkShapes(text string) string {
	var sb strings.Builder
	sb.Grow(len(text))
	for i := 0; i < len(text); {
		c := text[i]
		if c < '0' || c > '9' {
			sb.WriteByte(c)
			i++
			continue
		}
		j := i
		for j < len(text) && text[j] >= '0' && text[j] <= '9' {
			j++
		}
		num := text[i:j]
		if n, err := strconv.ParseInt(num, 10, 64); err == nil && isExtentToken(text, i, j) {
			if s := smallExtent(n); s > 0 {
				num = strconv.FormatInt(s, 10)
			}
		}
		sb.WriteString(num)
		i = j
	}
	return sb.String()
}

// isExtentToken reports whether text[i:j], a run of digits, is a whole
// integer: a dimension of a type (between '<' or 'x' and 'x' or '>') or
// an integer standing alone in attributes.
func isExtentToken(text string, i, j int) bool {
	var prev, next byte = ' ', ' '
	if i > 0 {
		prev = text[i-1]
	}
	if j < len(text) {
		next = text[j]
	}
	if next == '.' || next == 'e' || next == 'E' {
		return false
	}
	if prev == '<' || prev == 'x' && i >= 2 && (isDigit(text[i-2]) || text[i-2] == '?' || text[i-2] == '<') {
		return next == 'x' || next == '>'
	}
	return strings.IndexByte(" [,(=-\t\n", prev) >= 0 && strings.IndexByte(" ],)}:\t\n", next) >= 0
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
