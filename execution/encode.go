package execution

import (
	"strconv"
	"strings"

	"github.com/groundgate/groundgate/execution/frame"
	"github.com/groundgate/groundgate/execution/kernel"
)

// Artifacts are CSV files that the frame loader, pandas and a spreadsheet
// all read: a header row, then one row per frame row — the ISO date and the
// values in Go's shortest round-trip decimal form (strconv 'g', -1: parsing
// the text gives back the exact float64), NA as an empty cell. LF line
// endings, no trailing spaces, column names quoted only when they hold a
// delimiter, a quote or surrounding space. The bytes are a pure function of
// the values, so an artifact's digest is too.
//
//	pnl:     date,pnl
//	weights: date,<asset>,<asset>,...   (the traded columns, in frame order)

// dateStrings formats a frame's dates once per execution.
func dateStrings(f *frame.Frame) []string {
	out := make([]string, f.Len())
	for i, d := range f.Dates() {
		out[i] = d.String()
	}
	return out
}

func encodePnL(dates []string, pnl []float64) []byte {
	b := make([]byte, 0, len(dates)*32)
	b = append(b, "date,pnl\n"...)
	for t, d := range dates {
		b = append(b, d...)
		b = append(b, ',')
		b = appendValue(b, pnl[t])
		b = append(b, '\n')
	}
	return b
}

func encodeWeights(dates []string, res *kernel.Result) []byte {
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
			b = appendValue(b, w[t])
		}
		b = append(b, '\n')
	}
	return b
}

func appendValue(b []byte, v float64) []byte {
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
