package parser

import (
	"strings"
	"testing"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lexed is a token as the lexer comparison sees it.
type lexed struct {
	Kind   string
	Value  string
	Offset int
}

// lexAll lexes src with def; errAt is the offset of a lexical error, or -1.
func lexAll(t testing.TB, def lexer.Definition, src string) (toks []lexed, errAt int) {
	names := lexer.SymbolsByRune(def)
	l, err := def.(lexer.StringDefinition).LexString("x.tir", src)
	require.NoError(t, err)
	for {
		tok, err := l.Next()
		if err != nil {
			return toks, err.(*lexer.Error).Pos.Offset
		}
		if tok.EOF() {
			return toks, -1
		}
		toks = append(toks, lexed{names[tok.Type], tok.Value, tok.Pos.Offset})
	}
}

// requireSameTokens checks that the scanner produces exactly the tokens of
// the reference Rules.
func requireSameTokens(t testing.TB, src string) {
	want, wantErr := lexAll(t, Rules, src)
	got, gotErr := lexAll(t, Lexer, src)
	require.Equal(t, want, got, "tokens of %q", src)
	require.Equal(t, wantErr, gotErr, "lexical error offset in %q", src)
}

var lexerCases = []string{
	"%x = graph.add %a, %b : tensor<4x?x8xf32>",
	"%r:2 = test.op %r#1 : (f32) -> (f32, f32)",
	"tensor<0x8xf32> memref<?x8192xbf16, dram> vector<8xf32> tensor<f32> tensor<*xf32> tensor<-1xf32>",
	"tensor <4xf32> tensorx<4> tensor.x<4> mytensor<4xf32>",
	"tensor<4x // comment\n f32>",
	"tensor<4x%y>",
	"1 -12 0x1F 0xg 1.5 1. 1.e5 -2.0e-05 1e5 1e 1e+ 2E-3 0x1F.5 007",
	"inf -inf nan true false dense<[1, 2]>",
	`"" "a\"b" "\\" "\n\t" "unterminated`,
	`"bad \` + "\n" + `"`,
	"^bb0(%a: f32): @sym @a.b-c $ ->-> - = , : ( ) { } [ ] < > ?",
	"%a.b$c-d_e %0 %1#23 %x# % ^ @",
	"a / b // comment\n//\n",
	"\t\r\n \x00 \u00e9 \xff",
	"loc(\"f.tir\":3:5) loc(unknown)",
}

func TestLexerMatchesRules(t *testing.T) {
	for _, src := range lexerCases {
		requireSameTokens(t, src)
	}
	for name, src := range validInputs(t) {
		t.Run(name, func(t *testing.T) { requireSameTokens(t, src) })
	}
}

func TestLexerTokens(t *testing.T) {
	toks, errAt := lexAll(t, Lexer, "%y = graph.add %x#1, %z : tensor<4x?xf32>\n  0x1F")
	require.Equal(t, -1, errAt)
	assert.Equal(t, []lexed{
		{"ValueID", "%y", 0}, {"Equal", "=", 3}, {"Ident", "graph.add", 5}, {"ValueID", "%x#1", 15},
		{"Comma", ",", 19}, {"ValueID", "%z", 21}, {"Colon", ":", 24}, {"ShapedOpen", "tensor<", 26},
		{"Dim", "4", 33}, {"X", "x", 34}, {"Question", "?", 35}, {"X", "x", 36}, {"Ident", "f32", 37},
		{"Greater", ">", 40}, {"Int", "0x1F", 44},
	}, toks)
}

func TestLexerPositions(t *testing.T) {
	l, err := Lexer.(lexer.StringDefinition).LexString("p.tir", "a\n\tbé c")
	require.NoError(t, err)
	var pos []lexer.Position
	for {
		tok, err := l.Next()
		if err != nil {
			// é is not a token; columns count bytes, as Render does
			assert.Equal(t, lexer.Position{Filename: "p.tir", Offset: 4, Line: 2, Column: 3}, err.(*lexer.Error).Pos)
			assert.Equal(t, "unexpected character 'é'", err.(*lexer.Error).Msg)
			break
		}
		pos = append(pos, tok.Pos)
	}
	assert.Equal(t, []lexer.Position{
		{Filename: "p.tir", Offset: 0, Line: 1, Column: 1},
		{Filename: "p.tir", Offset: 3, Line: 2, Column: 2},
	}, pos)

	// Lex reads from an io.Reader too.
	l2, err := Lexer.Lex("r.tir", strings.NewReader("f32"))
	require.NoError(t, err)
	tok, err := l2.Next()
	require.NoError(t, err)
	assert.Equal(t, "f32", tok.Value)
}

// shapeGrammar is a participle grammar over Lexer's tokens: the lexer is a
// regular participle lexer.Definition.
type shapeGrammar struct {
	Kind  string   `parser:"@ShapedOpen"`
	Dims  []string `parser:"( @( Dim | Question ) X )*"`
	Elem  string   `parser:"@Ident"`
	Space string   `parser:"( Comma @Ident )? Greater"`
}

func TestLexerDrivesParticiple(t *testing.T) {
	p := participle.MustBuild[shapeGrammar](participle.Lexer(Lexer))
	g, err := p.ParseString("t.tir", "memref<?x8192xbf16, sram>")
	require.NoError(t, err)
	assert.Equal(t, &shapeGrammar{Kind: "memref<", Dims: []string{"?", "8192"}, Elem: "bf16", Space: "sram"}, g)
}
