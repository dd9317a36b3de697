//go:build ignore

// Writes go-reference.json: time.ParseDuration and time.Duration.String over generated inputs.
// go run reference.go go-reference.json

package main

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"time"
)

type parseCase struct {
	In    string  `json:"in"`
	Nanos *string `json:"nanos"`
}
type formatCase struct {
	Nanos string `json:"nanos"`
	Out   string `json:"out"`
}

func main() {
	r := rand.New(rand.NewSource(2257))
	atoms := []string{"0", "1", "9", "12", "007", ".", ".5", "5.", "1.25", "ns", "us", "µs", "μs", "ms", "s", "m", "h", "d", " ", "-", "+", "x", "99999999999"}
	seen := map[string]bool{}
	var parses []parseCase
	add := func(s string) {
		if seen[s] {
			return
		}
		seen[s] = true
		c := parseCase{In: s}
		if d, err := time.ParseDuration(s); err == nil {
			n := fmt.Sprint(int64(d))
			c.Nanos = &n
		}
		parses = append(parses, c)
	}
	for _, s := range []string{"", "0", "-0", "+0", "1h30m", "1.5h", "-1.5h", "300ms", "-.5s", ".s", "1..5s", "2562047h47m16.854775807s", "2562047h47m16.854775808s", "1e3s", "1h 30m"} {
		add(s)
	}
	valid := []string{"1", "2", "10", "0.5", ".25", "3.", "15", "250"}
	units := []string{"ns", "us", "µs", "μs", "ms", "s", "m", "h"}
	for i := 0; i < 400; i++ {
		s := ""
		if r.Intn(5) == 0 {
			s = []string{"-", "+"}[r.Intn(2)]
		}
		for n := 1 + r.Intn(3); n > 0; n-- {
			s += valid[r.Intn(len(valid))] + units[r.Intn(len(units))]
		}
		add(s)
	}
	for i := 0; i < 400; i++ {
		s := ""
		for n := 1 + r.Intn(5); n > 0; n-- {
			s += atoms[r.Intn(len(atoms))]
		}
		add(s)
	}
	var formats []formatCase
	for i := 0; i < 300; i++ {
		var n int64
		switch i % 4 {
		case 0:
			n = r.Int63n(1000000)
		case 1:
			n = r.Int63n(10000000000)
		case 2:
			n = r.Int63n(100000000000000) / 1000000 * 1000000
		default:
			n = r.Int63()
		}
		if r.Intn(4) == 0 {
			n = -n
		}
		formats = append(formats, formatCase{Nanos: fmt.Sprint(n), Out: time.Duration(n).String()})
	}
	out, _ := json.MarshalIndent(map[string]any{"source": "Go " + "time.ParseDuration / time.Duration.String", "parse": parses, "format": formats}, "", " ")
	os.WriteFile(os.Args[1], append(out, '\n'), 0o644)
}
