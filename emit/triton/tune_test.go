package triton

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseTuneCacheChecksConfigurations(t *testing.T) {
	good := `{"version": 1, "entries": {"k": {"target": "h200", "configs": [
	  {"max_m": 16, "BM": 16, "BN": 128, "BK": 128, "GROUP_M": 1, "num_warps": 4, "num_stages": 4, "SPLIT_K": 4},
	  {"max_m": 0, "BM": 128, "BN": 256, "BK": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3}]}}}`
	c, err := ParseTuneCache("t.json", []byte(good))
	require.NoError(t, err)
	e, ok := c.lookup("k", "h200")
	require.True(t, ok)
	assert.Equal(t, `[{"max_m": 16, "BM": 16, "BN": 128, "BK": 128, "GROUP_M": 1, "num_warps": 4, "num_stages": 4, "SPLIT_K": 4}, `+
		`{"max_m": 0, "BM": 128, "BN": 256, "BK": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3}]`, e.configText())
	_, ok = c.lookup("k", "h100")
	assert.False(t, ok, "an entry serves its own target only")
	var none *TuneCache
	_, ok = none.lookup("k", "h200")
	assert.False(t, ok)

	for _, bad := range []struct{ cfg, want string }{
		{`{"max_m": 0, "BM": 1024, "BN": 64, "BK": 64, "GROUP_M": 1, "num_warps": 4, "num_stages": 3}`, "BM = 1024"},
		{`{"max_m": 0, "BM": 64, "BN": 64, "BK": 8, "GROUP_M": 1, "num_warps": 4, "num_stages": 3}`, "BK = 8"},
		{`{"max_m": 0, "BM": 64, "BN": 64, "BK": 64, "GROUP_M": 1, "num_warps": 3, "num_stages": 3}`, "num_warps = 3"},
		{`{"max_m": 0, "BM": 64, "BN": 64, "BK": 64, "GROUP_M": 1, "num_warps": 4, "num_stages": 0}`, "num_stages = 0"},
		{`{"max_m": 0, "BM": 64, "BN": 64, "BK": 64, "GROUP_M": 0, "num_warps": 4, "num_stages": 3}`, "GROUP_M = 0"},
		{`{"max_m": 0, "BM": 64, "BN": 64, "BK": 64, "GROUP_M": 1, "num_warps": 4, "num_stages": 3, "SPLIT_K": 100}`, "SPLIT_K = 100"},
		{`{"max_m": -1, "BM": 64, "BN": 64, "BK": 64, "GROUP_M": 1, "num_warps": 4, "num_stages": 3}`, "max_m = -1"},
		{`{"max_m": 0, "BM": 64.5, "BN": 64, "BK": 64, "GROUP_M": 1, "num_warps": 4, "num_stages": 3}`, "not an object of integers"},
	} {
		_, err := ParseTuneCache("t.json", []byte(`{"version": 1, "entries": {"k": {"target": "h200", "configs": [`+bad.cfg+`]}}}`))
		require.Error(t, err, bad.cfg)
		assert.Contains(t, err.Error(), "t.json: entry k, configuration 0: "+bad.want)
	}
}

// FuzzParseTuneCache: any bytes give a cache or an error naming the file,
// never a panic, and a cache that parses renders every entry.
func FuzzParseTuneCache(f *testing.F) {
	f.Add([]byte(`{"version": 1, "entries": {"k": {"target": "h200", "configs": [{"max_m": 0, "BM": 64, "BN": 64, "BK": 64, "GROUP_M": 1, "num_warps": 4, "num_stages": 3}]}}}`))
	f.Add([]byte(`{"version": 1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseTuneCache("f.json", data)
		if err != nil {
			assert.Contains(t, err.Error(), "f.json")
			return
		}
		for _, e := range c.Entries {
			assert.NotEmpty(t, e.configText())
		}
	})
}
