package execution

import (
	"strconv"
	"strings"

	"github.com/groundgate/groundgate/execution/frame"
	"github.com/groundgate/groundgate/execution/kernel"
	"github.com/groundgate/groundgate/hashing"
)

// Artifact encodings a footprint may record. Footprints made before the
// binary encoding record none: their artifacts are CSV, and Replay
// re-encodes them that way so that they keep reproducing bit for bit.
const (
	EncodingSeries = "series/1" // package series, canonical form version 1
	EncodingCSV    = ""         // the previous release's CSV (below)
)

// legacyArtifacts digests res's P&L and weights as the previous release
// encoded them: CSV with a header row, one row per frame row — the ISO
// date and the values in Go's shortest round-trip decimal form, NA an
// empty cell, LF line endings, column names quoted only when they hold a
// delimiter, a quote or surrounding space. Only Replay uses it, and
// stores nothing.
func legacyArtifacts(days []int32, res *kernel.Result) []Artifact {
	dates := make([]string, len(days))
	for i, d := range days {
		dates[i] = frame.Date(d).String()
	}
	pnl, weights := encodePnLCSV(dates, res.PnL), encodeWeightsCSV(dates, res)
	return []Artifact{
		{Name: "pnl", Digest: hashing.SumBLAKE3(pnl), Bytes: len(pnl)},
		{Name: "weights", Digest: hashing.SumBLAKE3(weights), Bytes: len(weights)},
	}
}

func encodePnLCSV(dates []string, pnl []float64) []byte {
	b := make([]byte, 0, len(dates)*32)
	b = append(b, "date,pnl\n"...)
	for t, d := range dates {
		b = append(b, d...)
		b = append(b, ',')
		b = appendCSVValue(b, pnl[t])
		b = append(b, '\n')
	}
	return b
}

func encodeWeightsCSV(dates []string, res *kernel.Result) []byte {
	b := make([]byte, 0, len(dates)*(12+24*len(res.Weights)))
	b = append(b, "date"...)
	for _, a := range res.Assets {
		b = append(b, ',')
		b = append(b, csvName(a)...)
	}
	b = append(b, '\n')
	for t, d := range dates {
		b = append(b, d...)
		for _, w := range res.Weights {
			b = append(b, ',')
			b = appendCSVValue(b, w[t])
		}
		b = append(b, '\n')
	}
	return b
}

func appendCSVValue(b []byte, v float64) []byte {
	if v != v {
		return b
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

func csvName(s string) string {
	if !strings.ContainsAny(s, ",;\"\r\n") && strings.TrimSpace(s) == s {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
