package calls

import (
	"strconv"
	"strings"
	"testing"
)

// benchBodies are a typical tool-call body and a ~10 KB one.
func benchBodies() []struct {
	name string
	doc  []byte
} {
	small := `{"tool":11,"action":"search","arguments":{"query":"latest AI research papers","max_results":5}}`
	var b strings.Builder
	b.WriteString(`{"tool":"tavily","action":"search","arguments":{"items":[`)
	for i := 0; b.Len() < 10<<10; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`{"id":` + strconv.Itoa(i) + `,"title":"Result number ` + strconv.Itoa(i) +
			`","score":0.` + strconv.Itoa(i*37%100) + `,"tags":["news","ai"],"url":"https://example.com/a/` +
			strconv.Itoa(i) + `","snippet":"caf\u00e9 <b>bold</b> & \"quoted\"","seen":false,"extra":null}`)
	}
	b.WriteString(`],"query":"latest AI research papers"}}`)
	return []struct {
		name string
		doc  []byte
	}{{"typical", []byte(small)}, {"10KB", []byte(b.String())}}
}

func BenchmarkCanonical(b *testing.B) {
	for _, c := range benchBodies() {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.doc)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Canonical(c.doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCanonicalReference measures the original encoding/json-based
// implementation on the same bodies, for comparison.
func BenchmarkCanonicalReference(b *testing.B) {
	for _, c := range benchBodies() {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.doc)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := referenceCanonical(c.doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
