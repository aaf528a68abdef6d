// Go peer for crates/multipart/benches/parse.rs: parses the same multipart
// body with the standard library's mime/multipart and prints GB/s.
//
//	go run . -gen body.bin            # write the deterministic body and exit
//	go run . -body body.bin -n 20     # benchmark (without -body: generate in memory)
//
// The body is read through a reader that hands out at most 64 KiB per Read
// (like a socket read into a 64 KiB chunk), and every part is discarded with
// io.CopyBuffer and a 64 KiB buffer. Stdlib only.
package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"os"
	"time"
)

// Keep in sync with crates/multipart/benches/parse.rs (gen_body).
const (
	boundary  = "----WirespeedBenchBoundary7MA4YWxkTrZu0gW"
	numFields = 1000
	fileSize  = 64 << 20
	chunk     = 64 << 10
	seed      = 0x9E3779B97F4A7C15
)

// genBody builds 1000 small fields followed by one 64 MiB file of
// xorshift64* bytes; the Rust generator produces the same bytes.
func genBody() []byte {
	var b bytes.Buffer
	b.Grow(fileSize + numFields*128 + 1024)
	for i := 0; i < numFields; i++ {
		fmt.Fprintf(&b, "--%s\r\nContent-Disposition: form-data; name=\"field%d\"\r\n\r\nvalue-%d\r\n", boundary, i, i)
	}
	fmt.Fprintf(&b, "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"blob.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n", boundary)
	x := uint64(seed)
	var w [8]byte
	for n := 0; n < fileSize; n += 8 {
		x ^= x >> 12
		x ^= x << 25
		x ^= x >> 27
		binary.LittleEndian.PutUint64(w[:], x*0x2545F4914F6CDD1D)
		b.Write(w[:])
	}
	fmt.Fprintf(&b, "\r\n--%s--\r\n", boundary)
	return b.Bytes()
}

// chunkReader delivers at most `max` bytes per Read.
type chunkReader struct {
	r   *bytes.Reader
	max int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(p) > c.max {
		p = p[:c.max]
	}
	return c.r.Read(p)
}

// discard hides io.Discard's ReadFrom so io.CopyBuffer really uses our
// 64 KiB buffer instead of io.Discard's internal 8 KiB one.
type discard struct{ io.Writer }

func parse(body []byte, buf []byte) (parts int, bytesOut int64) {
	mr := multipart.NewReader(&chunkReader{r: bytes.NewReader(body), max: chunk}, boundary)
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return
		}
		if err != nil {
			panic(err)
		}
		n, err := io.CopyBuffer(discard{io.Discard}, p, buf)
		if err != nil {
			panic(err)
		}
		parts++
		bytesOut += n
	}
}

func main() {
	gen := flag.String("gen", "", "write the body to this file and exit")
	bodyPath := flag.String("body", "", "read the body from this file (default: generate)")
	n := flag.Int("n", 20, "timed iterations")
	flag.Parse()

	if *gen != "" {
		if err := os.WriteFile(*gen, genBody(), 0o644); err != nil {
			panic(err)
		}
		return
	}
	var body []byte
	if *bodyPath != "" {
		var err error
		if body, err = os.ReadFile(*bodyPath); err != nil {
			panic(err)
		}
	} else {
		body = genBody()
	}
	buf := make([]byte, chunk)
	parts, out := parse(body, buf) // warm-up + sanity check
	if parts != numFields+1 || out != fileSize+int64(numFields)*int64(len("value-"))+digits() {
		fmt.Fprintf(os.Stderr, "unexpected parse: %d parts, %d bytes\n", parts, out)
		os.Exit(1)
	}
	var total time.Duration
	best := time.Duration(1 << 62)
	for i := 0; i < *n; i++ {
		t := time.Now()
		parse(body, buf)
		d := time.Since(t)
		total += d
		if d < best {
			best = d
		}
	}
	mean := total / time.Duration(*n)
	gbps := func(d time.Duration) float64 { return float64(len(body)) / float64(d.Nanoseconds()) }
	fmt.Printf("go mime/multipart: mean %.3f GB/s, best %.3f GB/s (%d iterations, %d-byte body, 64 KiB reads)\n",
		gbps(mean), gbps(best), *n, len(body))
}

// digits is the number of decimal digits in 0..numFields-1 (the field values
// are "value-<i>").
func digits() int64 {
	var d int64
	for i := 0; i < numFields; i++ {
		d += int64(len(fmt.Sprint(i)))
	}
	return d
}
