package execution_test

import (
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/groundgate/groundgate/execution"
	"github.com/groundgate/groundgate/hashing"
)

// The execution hash is SHA-256 over the eight layer digests in SPEC order,
// each followed by a newline: `sha256sum` of the lines reproduces it.
func ExampleLayers_Hash() {
	d := func(s string) hashing.Digest { return hashing.SumSHA256([]byte(s)) }
	l := execution.Layers{
		Registry: d("registry"), Request: d("request"), Morphisms: d("morphisms"), Plans: d("plans"),
		Artifacts: d("artifacts"), Score: d("score"), Selection: d("selection"),
		Data: hashing.SumBLAKE3([]byte("Date,Price\n2020-04-20,-36.98\n")),
	}
	var lines strings.Builder
	for _, x := range l.List() {
		lines.WriteString(x.String() + "\n")
	}
	fmt.Println(execution.LayerNames)
	fmt.Println(l.Hash() == hashing.New(hashing.SHA256, sha256Sum(lines.String())))
	// Output:
	// [registry request morphisms plans artifacts score selection data]
	// true
}

func sha256Sum(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}
