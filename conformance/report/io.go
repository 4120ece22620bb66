package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Write encodes r as indented JSON.
func Write(w io.Writer, r *ConformanceReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	return nil
}

// Read decodes a report and checks its apiVersion and kind.
func Read(rd io.Reader) (*ConformanceReport, error) {
	var r ConformanceReport
	dec := json.NewDecoder(rd)
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("decode report: %w", err)
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("invalid report: %w", err)
	}
	return &r, nil
}

// WriteFile writes r to path as JSON.
func WriteFile(path string, r *ConformanceReport) error {
	var b bytes.Buffer
	if err := Write(&b, r); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// ReadFile reads a JSON report from path.
func ReadFile(path string) (*ConformanceReport, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	defer f.Close()
	r, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}
