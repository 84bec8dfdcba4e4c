package triton

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/tensorforge/tensorforge/dialects/loop"
	"github.com/tensorforge/tensorforge/ir"
)

// ---------------------------------------------------------------------------
// Tuned configurations
//
// A matmul kernel's launch configurations (CONFIGS, by rows) default to
// matmulConfigs. A tuning cache replaces them with configurations measured
// on the device: a JSON file of entries keyed by the kernel's key, the
// hash of its loop IR (its name left out) and the target:
//
//	{"version": 1, "entries": {"3f2a...": {"target": "h200", "kernel": "down_k0",
//	  "configs": [{"max_m": 16, "BM": 16, "BN": 128, "BK": 128, "GROUP_M": 1,
//	               "num_warps": 4, "num_stages": 4, "SPLIT_K": 4}, ...],
//	  "measured": {...}}}}
//
// The emitted module lists every matmul kernel's key in KEYS, which is how
// the tuner (tfc --tune, tune.py) files what it measures. The same module
// and cache give the same text: the cache only chooses among constants.

// TuneCache holds the tuned configurations by kernel key.
type TuneCache struct {
	Version int                  `json:"version"`
	Entries map[string]TuneEntry `json:"entries"`
}

// TuneEntry is one kernel's tuned configurations.
type TuneEntry struct {
	Target string `json:"target"`
	// Kernel names the kernel it was measured as, for people reading the file.
	Kernel  string            `json:"kernel,omitempty"`
	Configs []json.RawMessage `json:"configs"`
	// Measured is what the tuner recorded (times per configuration); the
	// emitter does not read it.
	Measured json.RawMessage `json:"measured,omitempty"`
}

// configKeys are the keys a matmul configuration may have, and which of
// them it must.
var configKeys = map[string]bool{"max_m": true, "BM": true, "BN": true, "BK": true, "GROUP_M": true,
	"num_warps": true, "num_stages": true, "SPLIT_K": false}

// ParseTuneCache reads a tuning cache, checking every configuration; file
// names the file in messages.
func ParseTuneCache(file string, data []byte) (*TuneCache, error) {
	var c TuneCache
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%s: not a tuning cache: %v", file, err)
	}
	if c.Version != 1 {
		return nil, fmt.Errorf("%s: tuning cache version %d, expected 1", file, c.Version)
	}
	keys := make([]string, 0, len(c.Entries))
	for k := range c.Entries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		e := c.Entries[k]
		if len(e.Configs) == 0 {
			return nil, fmt.Errorf("%s: entry %s has no configurations", file, k)
		}
		last := -1
		for i, raw := range e.Configs {
			cfg, err := checkConfig(raw)
			if err != nil {
				return nil, fmt.Errorf("%s: entry %s, configuration %d: %v", file, k, i, err)
			}
			if cfg["max_m"] == 0 && i != len(e.Configs)-1 {
				return nil, fmt.Errorf("%s: entry %s, configuration %d: max_m 0 (any rows) must come last", file, k, i)
			}
			if m := cfg["max_m"]; m != 0 && int(m) <= last {
				return nil, fmt.Errorf("%s: entry %s, configuration %d: max_m %d does not increase", file, k, i, m)
			}
			last = int(cfg["max_m"])
		}
	}
	return &c, nil
}

// checkConfig checks one configuration: its keys, positive powers of two
// for the tile sizes, sane warps and stages.
func checkConfig(raw json.RawMessage) (map[string]int64, error) {
	var cfg map[string]int64
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("not an object of integers: %v", err)
	}
	for k := range cfg {
		if _, ok := configKeys[k]; !ok {
			return nil, fmt.Errorf("unknown key %q", k)
		}
	}
	for k, required := range configKeys {
		if _, ok := cfg[k]; required && !ok {
			return nil, fmt.Errorf("missing %q", k)
		}
	}
	for _, k := range []string{"BM", "BN", "BK"} {
		if v := cfg[k]; v < 16 || v > 512 || v&(v-1) != 0 {
			return nil, fmt.Errorf("%s = %d is not a power of two in [16, 512]", k, v)
		}
	}
	if v := cfg["num_warps"]; v < 1 || v > 32 || v&(v-1) != 0 {
		return nil, fmt.Errorf("num_warps = %d is not a power of two in [1, 32]", v)
	}
	if v := cfg["num_stages"]; v < 1 || v > 8 {
		return nil, fmt.Errorf("num_stages = %d is not in [1, 8]", v)
	}
	if v := cfg["GROUP_M"]; v < 1 || v > 64 {
		return nil, fmt.Errorf("GROUP_M = %d is not in [1, 64]", v)
	}
	if v, ok := cfg["SPLIT_K"]; ok && (v < 1 || v > 64) {
		return nil, fmt.Errorf("SPLIT_K = %d is not in [1, 64]", v)
	}
	if cfg["max_m"] < 0 {
		return nil, fmt.Errorf("max_m = %d is negative", cfg["max_m"])
	}
	return cfg, nil
}

var symNameAttr = regexp.MustCompile(`sym_name = "[^"]*"`)

// KernelKey is the tuning key of kernel k compiled for target: the first
// 16 bytes of the SHA-256 of the target name and the kernel's printed IR
// without its name, in hex.
func KernelKey(k loop.KernelOp, target string) string {
	text := symNameAttr.ReplaceAllString(ir.Print(k.Operation, ir.PrintOptions{}), `sym_name = ""`)
	sum := sha256.Sum256([]byte(target + "\n" + text))
	return hex.EncodeToString(sum[:16])
}

// configText is the CONFIGS entry of a tuned kernel: its configurations
// in the cache's order, keys sorted.
func (e TuneEntry) configText() string {
	parts := make([]string, len(e.Configs))
	for i, raw := range e.Configs {
		var cfg map[string]int64
		_ = json.Unmarshal(raw, &cfg) // checked by ParseTuneCache
		keys := make([]string, 0, len(cfg))
		for k := range cfg {
			keys = append(keys, k)
		}
		// max_m first, then the order matmulConfigText writes
		order := map[string]int{"max_m": 0, "BM": 1, "BN": 2, "BK": 3, "GROUP_M": 4, "num_warps": 5, "num_stages": 6, "SPLIT_K": 7}
		sort.Slice(keys, func(a, b int) bool { return order[keys[a]] < order[keys[b]] })
		var kv []string
		for _, k := range keys {
			kv = append(kv, fmt.Sprintf("%q: %d", k, cfg[k]))
		}
		parts[i] = "{" + strings.Join(kv, ", ") + "}"
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// lookup returns the entry of key for target; a nil cache has none.
func (c *TuneCache) lookup(key, target string) (TuneEntry, bool) {
	if c == nil {
		return TuneEntry{}, false
	}
	e, ok := c.Entries[key]
	return e, ok && e.Target == target
}
